#!/usr/bin/python3
# SPDX-License-Identifier: MIT
# Draws the figure of `volseg label --time A:B --track TRACK.csv`: from
# TRACK.steps.csv (step,objects,largest,births,deaths,merges,splits,
# continuing), which volseg wrote, the objects of each step and what became
# of them (births, deaths, merges, splits), and the largest object's size.
# Usage: /usr/bin/python3 track_plot.py TRACK.steps.csv OUT.png
import csv
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import MaxNLocator  # noqa: E402


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: track_plot.py TRACK.steps.csv OUT.png")
    with open(sys.argv[1], newline="") as f:
        rows = list(csv.DictReader(f))
    if not rows:
        sys.exit("track_plot.py: %s has no steps" % sys.argv[1])
    steps = [int(r["step"]) for r in rows]
    column = {key: [int(r[key]) for r in rows] for key in rows[0] if key != "step"}
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(8, 6), sharex=True, constrained_layout=True)
    top.plot(steps, column["objects"], "o-", color="#1f77b4", label="objects")
    for key, colour in (("continuing", "#2ca02c"), ("births", "#ff7f0e"), ("deaths", "#d62728"),
                        ("merges", "#9467bd"), ("splits", "#8c564b")):
        top.plot(steps[1:], column[key][1:], ".--", color=colour, label=key)
    top.set_ylabel("objects")
    top.set_title("Objects over time, and what became of the step before's")
    top.legend(fontsize="small", ncol=3)
    top.grid(alpha=0.3)
    bottom.plot(steps, column["largest"], "s-", color="#1f77b4")
    bottom.set_ylabel("largest object (voxels)")
    bottom.set_xlabel("step")
    bottom.grid(alpha=0.3)
    bottom.xaxis.set_major_locator(MaxNLocator(integer=True))
    fig.savefig(sys.argv[2], dpi=110)


if __name__ == "__main__":
    main()
