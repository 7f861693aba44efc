#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""volseg render against pvbatch: time to first image, full-resolution frame,
2-rank speed-up and peak memory per rank, at the same rank counts.

    /usr/bin/python3 bench/render_bench.py                 # 512^3 f32 shells, 1024x1024, ranks 1,2
    /usr/bin/python3 bench/render_bench.py --dims 128      # quick check

It prepares DIMS^3 f32 shells (volseg generate), its mask (segment --lo 20
--hi 24 --pyramid) and the volume's pyramid, then per round and rank count N:
  A  volseg render --mode volume --level 0 --progressive   (first image, full-res image, RSS)
  B  volseg render --mode volume --level 0 --orbit 3        (frame time once started)
  P  pvbatch script.py: the raw volume as a ParaView 'Volume' with the same
     colormap, opacity, shading, camera and background     (first = only image, RSS)
and once, at the largest N, volume+mask progressive for the gallery. Ranks
are not bound to cores (mpirun --bind-to none), so LP_NUM_THREADS = cores /
ranks threads really run on that many cores. Times are
taken by this script: Popen of mpirun to the PNG existing (both tools write
their PNG under its final name when complete: volseg renames, and the check
waits for the size to settle). Peak RSS is /usr/bin/time -f %M around each
rank process. Benchmarks measure; nothing here asserts on time.

Needs an X server: without DISPLAY the script re-runs itself under xvfb-run.
"""
import argparse
import csv
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
BACKGROUND = (0.12, 0.12, 0.16)
# volseg's viridis (render/src/transfer.cpp): control points at equal steps, linear in RGB.
VIRIDIS = [(0.267, 0.005, 0.329), (0.283, 0.141, 0.458), (0.254, 0.265, 0.530), (0.207, 0.372, 0.553),
           (0.164, 0.471, 0.558), (0.128, 0.567, 0.551), (0.135, 0.659, 0.518), (0.267, 0.749, 0.441),
           (0.478, 0.821, 0.318), (0.741, 0.873, 0.150), (0.993, 0.906, 0.144)]
AZIMUTH, ELEVATION = 30.0, 20.0
BARS = {  # name: (what, limit, "le" = measured ratio must be <= limit, "ge" = >=)
    "first_image": ("time to first image (level<=1) / pvbatch", 0.5, "le"),
    "full_res": ("full-res image time / pvbatch", 1.0, "le"),
    "speedup": ("full-res frame speed-up, 2 ranks vs 1", 1.7, "ge"),
    "rss": ("max RSS per rank / pvbatch", 0.5, "le"),
}

PV_SCRIPT = r'''
import time, sys
T0 = time.time()
from paraview.simple import *
T_IMPORT = time.time()
RAW, DIMS, OUT, SIZE = {raw!r}, {dims}, {out!r}, {size}
reader = ImageReader(FileNames=[RAW])
reader.DataScalarType = 'float'
reader.DataByteOrder = 'LittleEndian'
reader.DataExtent = [0, DIMS - 1, 0, DIMS - 1, 0, DIMS - 1]
reader.DataSpacing = [1.0, 1.0, 1.0]
reader.DataOrigin = [0.0, 0.0, 0.0]
reader.ScalarArrayName = 'shells'
reader.UpdatePipeline()
lo, hi = reader.PointData['shells'].GetRange()
T_READ = time.time()

view = CreateView('RenderView')
view.ViewSize = [SIZE, SIZE]
view.UseColorPaletteForBackground = 0
view.Background = {background!r}
view.OrientationAxesVisibility = 0
display = Show(reader, view)
display.SetRepresentationType('Volume')
ColorBy(display, ('POINTS', 'shells'))
lut = GetColorTransferFunction('shells')
lut.ColorSpace = 'RGB'
cmap = {viridis!r}
points = []
for i in range(33):  # volseg samples its colormap at 33 points over [lo, hi]
    t = i / 32.0 * (len(cmap) - 1)
    k = min(int(t), len(cmap) - 2)
    f = t - k
    c = [cmap[k][j] + (cmap[k + 1][j] - cmap[k][j]) * f for j in range(3)]
    points += [lo + (hi - lo) * i / 32.0] + c
lut.RGBPoints = points
lut.AutomaticRescaleRangeMode = 'Never'
pwf = GetOpacityTransferFunction('shells')
pwf.Points = [lo, 0.0, 0.5, 0.0, hi, 0.6, 0.5, 0.0]   # volseg --tf ramp
pwf.AllowDuplicateScalars = 1
display.LookupTable = lut
display.ScalarOpacityFunction = pwf
display.ScalarOpacityUnitDistance = 1.0
display.InterpolationType = 'Linear'
display.Shade = 1                 # volseg shades by default: ambient 0.3, diffuse 0.7, specular 0.2, power 10
display.Ambient = 0.3
display.Diffuse = 0.7
display.Specular = 0.2
display.SpecularPower = 10.0
display.VolumeRenderingMode = {mode!r}

c = 0.5 * (DIMS - 1)
view.CameraFocalPoint = [c, c, c]
view.CameraPosition = [c, c, c + 1.0]
view.CameraViewUp = [0.0, 1.0, 0.0]
view.CameraViewAngle = 30.0
view.CameraParallelProjection = 0
camera = GetActiveCamera()
camera.Azimuth({azimuth})
camera.Elevation({elevation})
camera.OrthogonalizeViewUp()
view.ResetCamera(0.0, DIMS - 1.0, 0.0, DIMS - 1.0, 0.0, DIMS - 1.0)
Render(view)
T_RENDER = time.time()
SaveScreenshot(OUT, view, ImageResolution=[SIZE, SIZE])
T_SAVE = time.time()
print('PVTIMES import=%.3f read=%.3f render=%.3f save=%.3f range=%g,%g' % (
    T_IMPORT - T0, T_READ - T_IMPORT, T_RENDER - T_READ, T_SAVE - T_RENDER, lo, hi))
print('PVCAMERA position=%s focal=%s up=%s angle=%g' % (
    list(camera.GetPosition()), list(camera.GetFocalPoint()), list(camera.GetViewUp()), camera.GetViewAngle()))
sys.stdout.flush()
'''


LOG = []  # everything printed, also written to OUT_DIR/render_bench.txt


def log(*a):
    LOG.append(" ".join(str(x) for x in a))
    print(*a, flush=True)


def mpi_env(ranks):
    env = dict(os.environ)
    env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMPI_MCA_rmaps_base_oversubscribe="1", OMPI_MCA_btl_vader_single_copy_mechanism="none")
    env["LP_NUM_THREADS"] = str(max(1, (os.cpu_count() or 1) // ranks))
    return env


def check(cmd, ranks=2, **kw):
    log("  $", " ".join(str(c) for c in cmd))
    subprocess.run([str(c) for c in cmd], check=True, env=mpi_env(ranks), **kw)


def mpirun(ranks, rss_prefix, cmd):
    """mpirun -np N, each rank wrapped in /usr/bin/time writing RSS_PREFIX.RANK (KiB)."""
    wrapped = 'exec /usr/bin/time -f %M -o "$0.$OMPI_COMM_WORLD_RANK" "$@"'
    # --bind-to none: Open MPI binds each rank to one core when ranks <= 2,
    # which leaves a 1-rank run's LP_NUM_THREADS=2 threads on a single core
    # (measured: 3.1 s against 1.5 s a frame).
    return ["mpirun", "--bind-to", "none", "-np", str(ranks), "sh", "-c", wrapped, str(rss_prefix)] + [
        str(c) for c in cmd]


def stable(path):
    try:
        s1 = path.stat().st_size
    except FileNotFoundError:
        return False
    return s1 > 0


def run_timed(cmd, ranks, watch, log_path, timeout):
    """Runs CMD; returns (seconds from Popen to each WATCH path existing, total seconds, stdout)."""
    for p in watch:
        if p.exists():
            p.unlink()
    seen = {}
    with open(log_path, "w") as out:
        t0 = time.monotonic()
        proc = subprocess.Popen([str(c) for c in cmd], stdout=out, stderr=subprocess.STDOUT, env=mpi_env(ranks))
        while True:
            now = time.monotonic() - t0
            for p in watch:
                if p not in seen and stable(p):
                    seen[p] = now
            if proc.poll() is not None:
                break
            if now > timeout:
                proc.kill()
                proc.wait()
                raise RuntimeError(f"timed out after {timeout} s: see {log_path}")
            time.sleep(0.005)
        total = time.monotonic() - t0
    for p in watch:  # written in the last poll interval
        if p not in seen and p.exists():
            seen[p] = total
    if proc.returncode != 0:
        raise RuntimeError(f"exit {proc.returncode}: {' '.join(map(str, cmd))}\n{Path(log_path).read_text()[-3000:]}")
    return [seen.get(p) for p in watch], total, Path(log_path).read_text()


def read_rss(prefix, ranks):
    values = []
    for r in range(ranks):
        text = Path(f"{prefix}.{r}").read_text().split()
        values.append(int(text[-1]) / 1024.0)  # MiB
    return values


def load_png(path):
    import matplotlib.image as mpimg
    a = mpimg.imread(str(path))
    if a.dtype != np.uint8:
        a = np.round(a * 255).astype(np.int16)
    return a[..., :3].astype(np.int16)


def diff(a, b):
    d = np.abs(load_png(a) - load_png(b))
    return float(d.mean()), int(d.max()), float((d.max(axis=2) > 16).mean() * 100)


def small_copy(src, dst, title=None):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    a = load_png(src).astype(np.float32) / 255.0
    h, w = a.shape[:2]
    # 2x2 box filter to half size (1024 -> 512)
    a = a[: h - h % 2, : w - w % 2].reshape(h // 2, 2, w // 2, 2, 3).mean(axis=(1, 3))
    plt.imsave(str(dst), np.clip(a, 0, 1))


def prepare(volseg, work, dims, regen):
    vol = work / f"shells-{dims}.nhdr"
    mask = work / f"shells-{dims}-mask.nhdr"
    work.mkdir(parents=True, exist_ok=True)
    stamp = work / "prepared"
    if stamp.exists() and not regen:
        log(f"data: reusing {work}")
        return vol, mask
    log(f"data: {dims}^3 f32 shells in {work}")
    check(["mpirun", "-np", "2", volseg, "generate", vol, "--field", "shells", "--dims", dims, "--dtype", "f32",
           "--quiet"] + (["--force"] if vol.exists() else []))
    check(["mpirun", "-np", "2", volseg, "segment", vol, "--lo", "20", "--hi", "24", "--out", mask, "--pyramid",
           "--force", "--quiet"])
    check(["mpirun", "-np", "2", volseg, "pyramid", vol, "--force", "--quiet"])
    stamp.write_text("ok\n")
    return vol, mask


def raw_of(nhdr):
    for line in Path(nhdr).read_text().splitlines():
        if line.lower().startswith("data file:"):
            name = line.split(":", 1)[1].strip()
            p = Path(name)
            return p if p.is_absolute() else Path(nhdr).parent / p
    raise RuntimeError(f"{nhdr}: no 'data file' line")


def volseg_progressive(args, volseg, vol, mask, ranks, tag, work, modes):
    out = work / f"vs-{tag}.png"
    report = work / f"vs-{tag}.json"
    rss = work / f"vs-{tag}.rss"
    level1, level2 = out.with_name(f"vs-{tag}-level1.png"), out.with_name(f"vs-{tag}-level2.png")
    cmd = [volseg, "render", vol, "--mode", modes, "--size", f"{args.size}x{args.size}", "--level", "0",
           "--progressive", "--out", out, "--report", report, "--force", "--quiet"]
    if "mask" in modes:
        cmd += ["--mask", mask]
    (t2, t1, t0), total, _ = run_timed(mpirun(ranks, rss, cmd), ranks, [level2, level1, out], work / f"vs-{tag}.log",
                                      args.timeout)
    rep = json.loads(report.read_text())
    first_level = min((f for f in rep["frames"] if f["level"] <= 1), key=lambda f: f["seconds_since_start"])
    first_path = Path(first_level["path"])
    if not first_path.is_absolute():
        first_path = REPO / first_path
    t_first = t1 if first_level["level"] == 1 else t0
    return dict(first=t_first, first_level=first_level["level"], first_internal=first_level["seconds_since_start"],
                coarse=t2, full=t0, total=total, rss=read_rss(rss, ranks), report=rep, image=out,
                first_image=first_path, levels=[f["level"] for f in rep["frames"]])


def volseg_orbit(args, volseg, vol, ranks, tag, work):
    out = work / f"vo-{tag}.png"
    report = work / f"vo-{tag}.json"
    rss = work / f"vo-{tag}.rss"
    frames = [out.with_name(f"vo-{tag}-{i:03d}.png") for i in range(3)]
    cmd = [volseg, "render", vol, "--mode", "volume", "--size", f"{args.size}x{args.size}", "--level", "0",
           "--orbit", "3", "--out", out, "--report", report, "--force", "--quiet"]
    seen, total, _ = run_timed(mpirun(ranks, rss, cmd), ranks, frames, work / f"vo-{tag}.log", args.timeout)
    rep = json.loads(report.read_text())
    s = [f["seconds_since_start"] for f in rep["frames"]]
    later = [s[i] - s[i - 1] for i in range(1, len(s))]
    return dict(first_frame=seen[0], frame_later=statistics.mean(later), frame_intervals=later,
                frame0_internal=s[0], total=total, rss=read_rss(rss, ranks), report=rep)


def pvbatch(args, vol, ranks, tag, work):
    out = work / f"pv-{tag}.png"
    script = work / f"pv-{tag}.py"
    rss = work / f"pv-{tag}.rss"
    script.write_text(PV_SCRIPT.format(raw=str(raw_of(vol)), dims=args.dims, out=str(out), size=args.size,
                                       background=list(BACKGROUND), viridis=VIRIDIS, azimuth=AZIMUTH,
                                       elevation=ELEVATION, mode=args.pv_mode))
    (t,), total, text = run_timed(mpirun(ranks, rss, ["pvbatch", script]), ranks, [out], work / f"pv-{tag}.log",
                                  args.timeout)
    times = next((l for l in text.splitlines() if l.startswith("PVTIMES")), "")
    cam = next((l for l in text.splitlines() if l.startswith("PVCAMERA")), "")
    return dict(first=t, full=t, total=total, rss=read_rss(rss, ranks), image=out, times=times, camera=cam)


def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else float("nan")


def plot(rows, ranks, bars, path, dims, size):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, 3, figsize=(14, 4.6))
    panels = [("time to first image (s)", "first", "first_image"), ("full-resolution image (s)", "full", "full_res"),
              ("max RSS per rank (MiB)", "rss", "rss")]
    width = 0.38
    for ax, (title, key, bar) in zip(axes, panels):
        x = np.arange(len(ranks))
        v = [rows[n]["volseg"][key] for n in ranks]
        p = [rows[n]["pvbatch"][key] for n in ranks]
        b1 = ax.bar(x - width / 2, v, width, label="volseg render", color="#3b7dd8")
        b2 = ax.bar(x + width / 2, p, width, label="pvbatch", color="#d8823b")
        limit = BARS[bar][1]
        for i, n in enumerate(ranks):
            r = v[i] / p[i]
            ok = r <= limit
            ax.annotate(f"{r:.2f}x\n{'PASS' if ok else 'MISS'} (<= {limit}x)", (x[i], max(v[i], p[i])),
                        ha="center", va="bottom", fontsize=8, color="green" if ok else "red",
                        xytext=(0, 3), textcoords="offset points")
        ax.set_xticks(x)
        ax.set_xticklabels([f"{n} rank{'s' if n > 1 else ''}" for n in ranks])
        ax.set_title(title)
        ax.set_ylim(0, max(v + p) * 1.35)
        ax.legend(fontsize=8, loc="upper left")
    sp = bars.get("speedup")
    fig.suptitle(f"volseg render vs pvbatch: {dims}^3 f32 shells, {size}x{size}, 2 cores (medians)"
                 + (f"; full-res frame speed-up 2 vs 1 rank {sp:.2f}x (bar >= 1.7x)" if sp else ""), fontsize=10)
    fig.tight_layout()
    fig.savefig(str(path), dpi=110)
    plt.close(fig)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dims", type=int, default=512)
    ap.add_argument("--size", type=int, default=1024, help="image side (default 1024)")
    ap.add_argument("--ranks", default="1,2")
    ap.add_argument("--rounds", type=int, default=1, help="interleaved rounds; medians are reported")
    ap.add_argument("--out-dir", default=str(REPO / "docs" / "results"))
    ap.add_argument("--work-dir", default=None, help="default /tmp/volseg-render-bench-DIMS")
    ap.add_argument("--volseg", default=str(REPO / "build" / "app" / "cli" / "volseg"))
    ap.add_argument("--pv-mode", default="Smart", help="ParaView VolumeRenderingMode (Smart picks the GPU mapper)")
    ap.add_argument("--timeout", type=float, default=900)
    ap.add_argument("--regen", action="store_true", help="regenerate the data")
    ap.add_argument("--keep", action="store_true", help="keep the work directory")
    args = ap.parse_args()

    if not os.environ.get("DISPLAY"):
        os.execvp("xvfb-run", ["xvfb-run", "-a", "-s", "-screen 0 1280x1024x24", sys.executable,
                               os.path.abspath(__file__)] + sys.argv[1:])

    ranks = [int(r) for r in args.ranks.split(",")]
    volseg = Path(args.volseg).resolve()
    work = Path(args.work_dir or f"/tmp/volseg-render-bench-{args.dims}")
    out_dir = Path(args.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    log(f"volseg render bench: {args.dims}^3, {args.size}x{args.size}, ranks {ranks}, {args.rounds} round(s), "
        f"{os.cpu_count()} cores, LP_NUM_THREADS = cores / ranks, DISPLAY={os.environ['DISPLAY']}")
    vol, mask = prepare(volseg, work, args.dims, args.regen)

    runs = {n: {"A": [], "B": [], "P": []} for n in ranks}
    for rnd in range(args.rounds):
        for n in ranks:
            for kind in (("A", "B", "P") if rnd % 2 == 0 else ("P", "B", "A")):
                tag = f"{n}-r{rnd}"
                log(f"round {rnd + 1}/{args.rounds}, {n} rank(s): {kind}")
                if kind == "A":
                    r = volseg_progressive(args, volseg, vol, mask, n, tag, work, "volume")
                    log(f"    first image (level {r['first_level']}) {r['first']:.2f} s, full-res {r['full']:.2f} s, "
                        f"levels {r['levels']}, RSS {['%.0f' % x for x in r['rss']]} MiB")
                elif kind == "B":
                    r = volseg_orbit(args, volseg, vol, n, tag, work)
                    log(f"    orbit: first frame {r['first_frame']:.2f} s, later frames "
                        f"{['%.2f' % x for x in r['frame_intervals']]} s")
                else:
                    r = pvbatch(args, vol, n, tag, work)
                    log(f"    pvbatch image {r['first']:.2f} s, RSS {['%.0f' % x for x in r['rss']]} MiB; {r['times']}")
                runs[n][kind].append(r)

    gallery_n = max(ranks)
    log(f"gallery: volume+mask, {gallery_n} ranks")
    gal = volseg_progressive(args, volseg, vol, mask, gallery_n, f"mask-{gallery_n}", work, "volume,mask")

    # Summaries per rank count.
    rows = {}
    for n in ranks:
        A, B, P = runs[n]["A"], runs[n]["B"], runs[n]["P"]
        rows[n] = {
            "volseg": dict(first=med([a["first"] for a in A]), full=med([a["full"] for a in A]),
                           rss=med([max(a["rss"]) for a in A]),
                           full_direct=med([b["first_frame"] for b in B]),
                           frame_later=med([b["frame_later"] for b in B]),
                           rss_direct=med([max(b["rss"]) for b in B])),
            "pvbatch": dict(first=med([p["first"] for p in P]), full=med([p["full"] for p in P]),
                            rss=med([max(p["rss"]) for p in P])),
        }
    base = runs[min(ranks)]["A"][-1]["image"]
    n1 = min(ranks)
    bars = {}
    if 1 in ranks and 2 in ranks:
        bars["speedup"] = rows[1]["volseg"]["frame_later"] / rows[2]["volseg"]["frame_later"]

    # Table.
    lines = []
    hdr = f"{'ranks':>5} {'tool':<8} {'first img s':>11} {'full-res s':>10} {'direct L0 s':>11} {'frame s':>8} {'RSS MiB':>8}"
    lines.append(hdr)
    for n in ranks:
        v, p = rows[n]["volseg"], rows[n]["pvbatch"]
        lines.append(f"{n:>5} {'volseg':<8} {v['first']:>11.2f} {v['full']:>10.2f} {v['full_direct']:>11.2f} "
                     f"{v['frame_later']:>8.2f} {v['rss']:>8.0f}")
        lines.append(f"{n:>5} {'pvbatch':<8} {p['first']:>11.2f} {p['full']:>10.2f} {'':>11} {'':>8} {p['rss']:>8.0f}")
    log("\n" + "\n".join(lines))
    log("  first img: Popen to the first PNG at level <= 1 (volseg --progressive) / the PNG (pvbatch)")
    log("  full-res: Popen to the level-0 PNG of the same progressive run; direct L0: --level 0 without")
    log("  --progressive (first --orbit 3 frame); frame s: later --orbit frames (start-up excluded)")

    csv_rows = []
    log("\nBars:")
    for n in ranks:
        v, p = rows[n]["volseg"], rows[n]["pvbatch"]
        for key, value in (("first_image", v["first"] / p["first"]), ("full_res", v["full"] / p["full"]),
                           ("rss", v["rss"] / p["rss"])):
            what, limit, sense = BARS[key]
            ok = value <= limit if sense == "le" else value >= limit
            log(f"  {n} rank(s): {what}: {value:.2f}x (bar {'<=' if sense == 'le' else '>='} {limit}x) "
                f"{'PASS' if ok else 'MISS'}")
            csv_rows.append(dict(metric=key, ranks=n, volseg=v[{"first_image": "first", "full_res": "full",
                                                                 "rss": "rss"}[key]],
                                 pvbatch=p[{"first_image": "first", "full_res": "full", "rss": "rss"}[key]],
                                 ratio=value, bar=limit, result="PASS" if ok else "MISS"))
        csv_rows.append(dict(metric="full_res_direct", ranks=n, volseg=v["full_direct"], pvbatch=p["full"],
                             ratio=v["full_direct"] / p["full"], bar="", result=""))
    if "speedup" in bars:
        what, limit, _ = BARS["speedup"]
        ok = bars["speedup"] >= limit
        log(f"  {what}: {bars['speedup']:.2f}x (bar >= {limit}x) {'PASS' if ok else 'MISS'}  "
            f"[later --orbit frames: 1 rank {rows[1]['volseg']['frame_later']:.2f} s, "
            f"2 ranks {rows[2]['volseg']['frame_later']:.2f} s]")
        r1 = runs[1]["B"][-1]["report"]["per_rank"]
        r2 = runs[2]["B"][-1]["report"]["per_rank"]
        render_sp = max(x["render"] for x in r1) / max(x["render"] for x in r2)
        log(f"  (per_rank render time over 3 frames: 1 rank {max(x['render'] for x in r1):.2f} s, 2 ranks "
            f"{max(x['render'] for x in r2):.2f} s -> {render_sp:.2f}x)")
        csv_rows.append(dict(metric="speedup_frame", ranks="1->2", volseg=rows[1]["volseg"]["frame_later"],
                             pvbatch=rows[2]["volseg"]["frame_later"], ratio=bars["speedup"], bar=limit,
                             result="PASS" if ok else "MISS"))
        csv_rows.append(dict(metric="speedup_render_per_rank", ranks="1->2", volseg=max(x["render"] for x in r1),
                             pvbatch=max(x["render"] for x in r2), ratio=render_sp, bar="", result=""))

    log("\nImages (mean / max abs RGB difference of 255, % pixels off by > 16):")
    for n in ranks:
        a = runs[n]["A"][-1]
        if n != n1:
            m, mx, frac = diff(a["image"], base)
            log(f"  volseg full-res {n} ranks vs {n1} rank: mean {m:.2f}, max {mx}, {frac:.2f}%")
            csv_rows.append(dict(metric="image_diff_vs_1rank", ranks=n, volseg=m, pvbatch=mx, ratio=frac, bar="",
                                 result="mean,max,%>16"))
        m, mx, frac = diff(a["image"], runs[n]["P"][-1]["image"])
        log(f"  volseg vs pvbatch, {n} rank(s): mean {m:.2f}, max {mx}, {frac:.2f}% (volseg draws a colour bar, "
            f"axes and title)")
        csv_rows.append(dict(metric="image_diff_vs_pvbatch", ranks=n, volseg=m, pvbatch=mx, ratio=frac, bar="",
                             result="mean,max,%>16"))

    log("\nvolseg per_rank (progressive run A, last round): read / scene / render / composite / annotate / write s, "
        "bytes read, bricks (skipped)")
    for n in ranks:
        for pr in runs[n]["A"][-1]["report"]["per_rank"]:
            log(f"  {n} rank(s) r{pr['rank']}: {pr['read']:.2f} / {pr['scene']:.2f} / {pr['render']:.2f} / "
                f"{pr['composite']:.3f} / {pr['annotate']:.3f} / {pr['write']:.3f}  {pr['bytes_read'] / 2**20:.0f} MiB  "
                f"{pr['bricks']} ({pr['bricks_skipped']})")
        fr = runs[n]["A"][-1]["report"]["frames"]
        log(f"     frames: " + ", ".join(f"L{f['level']} {f['seconds_since_start']:.2f} s" for f in fr))
    log("\ncamera: volseg " + json.dumps(runs[n1]["A"][-1]["report"]["camera"]))
    log("        " + runs[n1]["P"][-1]["camera"])
    log("pvbatch: ray step not set (ParaView 5.11's volume representation exposes no SampleDistance; its "
        "vtkMultiBlockVolumeMapper is not wrapped in Python); volseg steps 0.5 voxel at level 0")

    csv_path = out_dir / "render_bench.csv"
    with open(csv_path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=["metric", "ranks", "volseg", "pvbatch", "ratio", "bar", "result"])
        w.writeheader()
        for r in csv_rows:
            w.writerow({k: (f"{v:.4g}" if isinstance(v, float) else v) for k, v in r.items()})
    plot(rows, ranks, bars, out_dir / "render_bench.png", args.dims, args.size)
    nmax = max(ranks)
    a = runs[nmax]["A"][-1]
    small_copy(a["image"], out_dir / "render_bench_volseg_full.png")
    small_copy(a["first_image"], out_dir / "render_bench_volseg_first.png")
    small_copy(runs[nmax]["P"][-1]["image"], out_dir / "render_bench_pvbatch.png")
    small_copy(gal["image"], out_dir / "render_bench_volseg_mask.png")
    log(f"\nwrote {csv_path}, {out_dir / 'render_bench.png'}, {out_dir}/render_bench_*.png "
        f"(images from the {nmax}-rank runs), {out_dir / 'render_bench.txt'} (this output)")
    (out_dir / "render_bench.txt").write_text("\n".join(LOG) + "\n")
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    else:
        log(f"kept {work}")


if __name__ == "__main__":
    main()
