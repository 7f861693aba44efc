#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Editing objects in a running `volseg web` job, each edit against a plain
write of the labels measured in the same run.

The volume: N^3 (512 by default) u8, about 10^5 cubes of 9^3 voxels one
voxel apart, and one dumbbell of two overlapping balls (about 10^6 voxels)
where a block of cubes was cleared. The job (2 ranks) segments it (v = 1)
and labels it, as the page does; then, through the page's protocol, each
edit is timed from its request to the page's view updated (the edit's reply,
then the slices through the edited labels):
  merge   two cubes (each under 10^5 voxels);
  delete  a cube;
  paint   a ball of radius 10 of a cube's id at its centre;
  erase   a ball of radius 10;
  split   the dumbbell by two seeds (its balls' centres);
  undo    the split;
  (before them, a first edit: it writes the edited labels whole);
  merge   the dumbbell's balls and a cube (an object of ~10^6 voxels);
  save    the page's Save: the edited labels written again, their whole
          object table beside them.
The reference: the labels' bytes written to a new file and fsync'ed (a
plain write of them), and `volseg edit` of an empty journal (read, write).
Then the page's journal is saved in batch (`volseg edit --stats`: labels
and table) against the same plain write.
Writes docs/results/edit_bench.json and .md. Example:
  /usr/bin/python3 bench/edit_bench.py --volseg build/app/cli/volseg
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "web"))
import bench_util  # noqa: E402

p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
p.add_argument("--volseg", default="build/app/cli/volseg")
p.add_argument("--side", type=int, default=512)
p.add_argument("--ranks", type=int, default=2)
p.add_argument("--repeat", type=int, default=2, help="runs of each edit (the median is reported)")
p.add_argument("--out", default="docs/results/edit_bench")
a = p.parse_args()
os.environ.update(bench_util.MPI_ENV)
os.environ["VOLSEG"] = os.path.abspath(a.volseg)
os.environ["VOLSEG_WEB_RANKS"] = str(a.ranks)
import web_util  # noqa: E402  (reads VOLSEG)
import wsclient  # noqa: E402

tmp = tempfile.mkdtemp(prefix="volseg-edit-bench-", dir=os.environ.get("TMPDIR", "/var/tmp"))
n = a.side


def make_volume(path):
    """Cubes of 9 in cells of 11; a dumbbell where the cells of a corner block were."""
    v = np.zeros((n, n, n), np.uint8)
    cells = n // 11
    ones = np.zeros(cells * 11, bool)
    for c in range(cells):
        ones[c * 11 + 1:c * 11 + 10] = True
    line = np.zeros(n, bool)
    line[:cells * 11] = ones
    v[np.ix_(line, line, line)] = 1
    block = 24 * 11  # the dumbbell's block: a corner of 24^3 cells cleared
    v[:block, :block, :block] = 0
    z, y, x = np.ogrid[:block, :block, :block]
    centres = [(132, 132, 80), (132, 132, 184)]
    for cz, cy, cx in centres:
        v[:block, :block, :block][(z - cz) ** 2 + (y - cy) ** 2 + (x - cx) ** 2 <= 56 ** 2] = 1
    raw = path[:-5] + ".raw"
    v.tofile(raw)
    with open(path, "w") as f:
        f.write(f"NRRD0004\ntype: uint8\ndimension: 3\nsizes: {n} {n} {n}\nencoding: raw\n"
                f"endian: little\ndata file: {os.path.basename(raw)}\n")
    return centres


def plain_write(raw):
    """Seconds to write raw's bytes to a new file and fsync it (the bytes already in memory)."""
    data = np.fromfile(raw, np.uint8)
    target = os.path.join(tmp, "plain-write.raw")
    start = time.perf_counter()
    with open(target, "wb") as f:
        f.write(data.tobytes())
        f.flush()
        os.fsync(f.fileno())
    seconds = time.perf_counter() - start
    os.remove(target)
    return seconds


def main():
    volume = os.path.join(tmp, "cubes.nhdr")
    centres = make_volume(volume)
    job = web_util.Job([volume, "--port", "0"], ranks=a.ranks)
    ws = wsclient.WebSocket(job.host, job.port, f"{job.base}ws?token={job.token}",
                            {"Origin": f"http://{job.host}:{job.port}"})
    ids = iter(range(1, 1 << 30))

    def ask(message):
        message["id"] = next(ids)
        ws.send(message)
        m, _ = ws.until(lambda m: isinstance(m, dict) and m.get("type") in ("reply", "error") and
                        m.get("id") == message["id"], limit=100000)
        if m["type"] == "error":
            raise SystemExit(f"edit_bench: {message['type']}: {m['message']}")
        return m["data"]

    def view_updated():
        message = {"type": "slices", "at": [0.3, 0.3, 0.3], "id": next(ids)}
        ws.send(message)
        ws.until(lambda m: isinstance(m, bytes) and wsclient.binary_header(m)[0].get("type") == "slices", limit=100000)

    start = time.perf_counter()
    ask({"type": "segment", "lo": 1, "hi": 1, "output": os.path.join(tmp, "mask.nhdr"), "force": True})
    segment_s = time.perf_counter() - start
    start = time.perf_counter()
    label = ask({"type": "label", "output": os.path.join(tmp, "labels.nhdr"), "force": True})
    label_s = time.perf_counter() - start
    labels_raw = os.path.join(tmp, "labels.raw")
    labels_bytes = os.path.getsize(labels_raw)
    table = sorted(label["table"], key=lambda r: -r["voxels"])
    big = table[0]
    cubes = [r for r in table if r["voxels"] == 729]
    print(f"edit_bench: {label['objects']} objects, the largest {big['voxels']} voxels; labels "
          f"{labels_bytes / 2**20:.0f} MiB; segment {segment_s:.1f} s, label {label_s:.1f} s", flush=True)

    references = {"plain_write_s": statistics.median(plain_write(labels_raw) for _ in range(a.repeat))}
    empty = os.path.join(tmp, "empty.json")
    with open(empty, "w") as f:
        json.dump({"edits": []}, f)
    runs = []
    for _ in range(a.repeat):
        start = time.perf_counter()
        subprocess.run(["mpirun", "-np", str(a.ranks), "--bind-to", "none", a.volseg, "edit",
                        os.path.join(tmp, "labels.nhdr"), "--edits", empty, "--out", os.path.join(tmp, "copy.nhdr"),
                        "--force", "--quiet"], check=True, capture_output=True)
        runs.append(time.perf_counter() - start)
    references["edit_empty_journal_s"] = statistics.median(runs)

    def timed(edit, kind="edit"):
        start = time.perf_counter()
        reply = ask(dict({"type": kind}, **edit))
        replied = time.perf_counter() - start
        view_updated()
        return reply, replied, time.perf_counter() - start

    rows = []

    def record(name, voxels, edit, kind="edit", undo=True, repeat=a.repeat):
        seconds, totals, job_seconds = [], [], []
        for k in range(repeat):
            reply, replied, total = timed(edit, kind)
            seconds.append(replied)
            totals.append(total)
            job_seconds.append(reply.get("seconds", 0))
            if undo and k + 1 < repeat:
                timed({"op": "undo"})
        rows.append({"edit": name, "object_voxels": voxels, "reply_s": statistics.median(seconds),
                     "view_updated_s": statistics.median(totals), "rewrite_s": statistics.median(job_seconds)})
        r = rows[-1]
        print(f"  {name:<28} {r['view_updated_s']:.2f} s (reply {r['reply_s']:.2f} s)", flush=True)

    c = cubes
    # The first edit writes the edited labels whole (NAME.edited.nhdr, from
    # the labels and the journal); the edits after it patch what they touch.
    record("first edit (writes them all)", 729, {"op": "delete", "ids": [c[5]["id"]]}, undo=False, repeat=1)
    record("merge two cubes", 2 * 729, {"op": "merge", "ids": [c[0]["id"], c[1]["id"]]})
    record("delete a cube", 729, {"op": "delete", "ids": [c[2]["id"]]})
    centre = [round(v) for v in reversed(c[3]["centroid"])]
    record("paint r = 10", 4189, {"op": "paint", "object": c[3]["id"], "center": centre, "radius": 10})
    record("erase r = 10", 4189, {"op": "erase", "center": centre, "radius": 10})
    seeds = [list(s) for s in centres]
    record("split ~10^6 by 2 seeds", big["voxels"], {"object": big["id"], "seeds": seeds, "apply": True},
           kind="split")
    record("undo", big["voxels"], {"op": "undo"}, undo=False)
    record("merge ~10^6 and a cube", big["voxels"] + 729, {"op": "merge", "ids": [big["id"], c[4]["id"]]})
    # Save in the page: the labels written again with their whole table.
    record("save (labels and table)", n ** 3, {"op": "save"}, undo=False)
    job.stop()

    # Saving in batch: the page's journal replayed with its table (labels
    # and --stats), against the plain write.
    journal = os.path.join(tmp, "labels.nhdr.edits.json")
    runs = []
    for _ in range(a.repeat):
        start = time.perf_counter()
        subprocess.run(["mpirun", "-np", str(a.ranks), "--bind-to", "none", a.volseg, "edit",
                        os.path.join(tmp, "labels.nhdr"), "--edits", journal, "--out", os.path.join(tmp, "saved.nhdr"),
                        "--stats", os.path.join(tmp, "saved.csv"), "--force", "--quiet"], check=True,
                       capture_output=True)
        runs.append(time.perf_counter() - start)
    references["edit_journal_with_stats_s"] = statistics.median(runs)

    result = {"side": n, "ranks": a.ranks, "objects": label["objects"], "labels_bytes": labels_bytes,
              "segment_s": segment_s, "label_s": label_s, **references, "edits": rows}
    os.makedirs(os.path.dirname(a.out) or ".", exist_ok=True)
    with open(a.out + ".json", "w") as f:
        json.dump(result, f, indent=1)
    w = references["plain_write_s"]
    lines = [f"# Editing objects in `volseg web` ({n}^3, {label['objects']:,} objects, {a.ranks} ranks)", "",
             "`/usr/bin/python3 bench/edit_bench.py` (docs/edit.md). Each edit from its request to the page's",
             "view updated (the reply, then the slices through the edited labels), the median of "
             f"{a.repeat}; against a plain write of the labels ({labels_bytes / 2**20:.0f} MiB written and "
             f"fsync'ed: {w:.2f} s) and `volseg edit` of an empty journal "
             f"({references['edit_empty_journal_s']:.2f} s), measured in the same run.", "",
             "| edit | object voxels | view updated (s) | reply (s) | x plain write |",
             "|---|---:|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| {r['edit']} | {r['object_voxels']:,} | {r['view_updated_s']:.2f} | {r['reply_s']:.2f} | "
                     f"{r['view_updated_s'] / w:.2f} |")
    lines += ["", f"Saving in batch: `volseg edit` of the page's journal with `--stats` (labels and table): "
              f"{references['edit_journal_with_stats_s']:.2f} s, "
              f"{references['edit_journal_with_stats_s'] / w:.2f} x the plain write."]
    with open(a.out + ".md", "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


main()
