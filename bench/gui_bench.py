#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""volseg-gui's performance bars (run under xvfb-run; 2 ranks by default):
  1. the exact voxel count of a dragged range, from the histogram, against the
     threshold pass (volseg segment's job) of the same run; and that the two
     counts agree at bin edges;
  2. the first image in the window (level 2) against 'volseg render' making
     the same image, each from process start;
  3. a camera-drag frame (level 2, half the view) against a level-0 frame.
Writes docs/results/gui_bench.json and .md. Example:
  xvfb-run -a -s "-screen 0 1600x1200x24" /usr/bin/python3 bench/gui_bench.py \\
      --volseg build/app/cli/volseg --gui build/gui/volseg-gui --input volseg-data/shells-512.nhdr
"""
import argparse
import json
import os
import statistics
import subprocess
import tempfile
import time

p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
p.add_argument("--volseg", default="build/app/cli/volseg")
p.add_argument("--gui", default="build/gui/volseg-gui")
p.add_argument("--input", default="volseg-data/shells-512.nhdr")
p.add_argument("--ranks", type=int, default=2)
p.add_argument("--lo", type=float, default=2)
p.add_argument("--hi", type=float, default=5)
p.add_argument("--size", default="1024x768")
p.add_argument("--repeat", type=int, default=3)
p.add_argument("--out", default="docs/results/gui_bench")
a = p.parse_args()
mpi = ["mpirun", "-np", str(a.ranks), "--bind-to", "none"]
tmp = tempfile.mkdtemp(prefix="volseg-gui-bench-")

# The pyramid first (the GUI builds it on first open; both sides then use it).
subprocess.run([a.volseg, "pyramid", a.input, "--progress", "none"], capture_output=True)

render_s, first_s, rows = [], [], []
for k in range(a.repeat):
    start = time.time()
    subprocess.run(mpi + [a.volseg, "render", a.input, "--mode", "volume,mask", "--lo", str(a.lo), "--hi", str(a.hi),
                          "--level", "2", "--size", a.size, "--camera", "30,20", "--force", "--out",
                          os.path.join(tmp, "r.png"), "--progress", "none"], check=True, capture_output=True)
    render_s.append(time.time() - start)
    timings = os.path.join(tmp, "t%d.json" % k)
    start = time.time()
    subprocess.run(mpi + [a.gui, a.input, "--lo", str(a.lo), "--hi", str(a.hi), "--snap", "--segment", "--force", "--out",
                          os.path.join(tmp, "m.nhdr"), "--size", a.size, "--timings", timings, "--quit"],
                   check=True, capture_output=True)
    t = json.load(open(timings))
    first_s.append(t["first_image_epoch"] - start)
    rows.append(t)

t = rows[-1]
# Per run: 3 drag frames, then 3 level-0 frames. The first of each set also
# builds the scene of a level it switched to; the others only draw.
def frames(level, steady):
    out = []
    for r in rows:
        fs = [f["seconds"] for f in r["frames"] if f["level"] == level]
        out += fs[1:] if steady else fs[:1]
    return out
drag, full = frames(2, True), frames(0, True)
drag_switch, full_switch = frames(2, False), frames(0, False)
result = {
    "input": a.input, "ranks": a.ranks, "size": a.size,
    "count_query_s": statistics.median(r["count_query_seconds"] for r in rows),
    "threshold_pass_s": statistics.median(r["segment_seconds"] for r in rows),
    "histogram_count": t.get("histogram_count"), "segment_count": t.get("segment_count"),
    "histogram_count_exact": t.get("histogram_count_exact"),
    "render_level2_process_s": statistics.median(render_s),
    "gui_first_image_s": statistics.median(first_s), "gui_first_image_level": t["first_image_level"],
    "drag_frame_s": statistics.median(drag), "level0_frame_s": statistics.median(full),
    "drag_switch_frame_s": statistics.median(drag_switch), "level0_switch_frame_s": statistics.median(full_switch),
}
result["drag_switch_ratio"] = result["drag_switch_frame_s"] / result["level0_switch_frame_s"]
result["count_speedup"] = result["threshold_pass_s"] / result["count_query_s"]
result["first_image_ratio"] = result["gui_first_image_s"] / result["render_level2_process_s"]
result["drag_ratio"] = result["drag_frame_s"] / result["level0_frame_s"]
os.makedirs(os.path.dirname(a.out), exist_ok=True)
json.dump(result, open(a.out + ".json", "w"), indent=2)
lines = [
    "# volseg-gui benchmark (%s, %d ranks, view %s)" % (a.input, a.ranks, a.size), "",
    "| bar | measured | reference | ratio | target |", "|---|---|---|---|---|",
    "| exact count of a dragged range | %.2e s from the histogram | %.3f s threshold pass | %.0fx faster | >= 100x |"
    % (result["count_query_s"], result["threshold_pass_s"], result["count_speedup"]),
    "| window with first image (level %d) | %.2f s | %.2f s volseg render --level 2 | %.2fx | <= 1.2x |"
    % (result["gui_first_image_level"], result["gui_first_image_s"], result["render_level2_process_s"],
       result["first_image_ratio"]),
    "| camera-drag frame (level 2, half size) | %.3f s | %.3f s level-0 frame | %.3fx | <= 0.25x |"
    % (result["drag_frame_s"], result["level0_frame_s"], result["drag_ratio"]),
    "| the same, first frame after a level switch (scene built) | %.3f s | %.3f s | %.3fx | <= 0.25x |"
    % (result["drag_switch_frame_s"], result["level0_switch_frame_s"], result["drag_switch_ratio"]), "",
    "Counts at the segmented range: histogram %s (exact: %s), threshold pass %s." %
    (result["histogram_count"], result["histogram_count_exact"], result["segment_count"]), "",
    "Medians of %d runs; command: `%s`" % (a.repeat, "xvfb-run -a -s \"-screen 0 1600x1200x24\" /usr/bin/python3 bench/gui_bench.py"),
]
open(a.out + ".md", "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
