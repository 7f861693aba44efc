#!/usr/bin/python3
# SPDX-License-Identifier: MIT
# Draws the figures of `volseg trace-report --plots DIR`: the request-size
# histogram (Darshan's buckets) and the CDFs by count and by bytes (Smirni
# et al., Fig. 2) from DIR/histogram.csv and DIR/cdf.csv, which volseg wrote,
# and a per-rank timeline from the trace itself.
# Usage: /usr/bin/python3 trace_plots.py DIR TRACE.csv
import csv
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402
from matplotlib.ticker import FuncFormatter, MaxNLocator  # noqa: E402

OPS = ["open", "close", "read", "write", "sync", "advise", "map", "unmap", "exchange", "wait"]
COLOURS = {
    "open": "#7f7f7f", "close": "#c7c7c7", "read": "#1f77b4", "write": "#d62728", "sync": "#9467bd",
    "advise": "#bcbd22", "map": "#17becf", "unmap": "#aec7e8", "exchange": "#ff7f0e", "wait": "#2ca02c",
}


def size_label(value, _position=None):
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if value >= scale:
            return f"{value / scale:g} {unit}"
    return f"{value:g} B"


def rows(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(line for line in f if not line.startswith("#")))


def histogram(folder):
    data = rows(os.path.join(folder, "histogram.csv"))
    labels = [r["label"] for r in data]
    reads = [int(r["reads"]) for r in data]
    writes = [int(r["writes"]) for r in data]
    x = range(len(labels))
    fig, ax = plt.subplots(figsize=(10, 4.8))
    width = 0.4
    bars_r = ax.bar([i - width / 2 for i in x], reads, width, label="reads", color=COLOURS["read"])
    bars_w = ax.bar([i + width / 2 for i in x], writes, width, label="writes", color=COLOURS["write"])
    for bars in (bars_r, bars_w):
        for bar in bars:
            if bar.get_height() > 0:
                ax.annotate(str(int(bar.get_height())), (bar.get_x() + bar.get_width() / 2, bar.get_height()),
                            ha="center", va="bottom", fontsize=8)
    ax.set_xticks(list(x))
    ax.set_xticklabels(labels, rotation=30, ha="right")
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_ylabel("requests")
    ax.set_xlabel("request size (Darshan's buckets; an upper edge belongs to its bucket)")
    ax.set_title("Request sizes")
    ax.legend()
    fig.tight_layout()
    fig.savefig(os.path.join(folder, "histogram.png"), dpi=120)
    plt.close(fig)


def cdf(folder):
    data = rows(os.path.join(folder, "cdf.csv"))
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.5), sharey=True)
    for ax, column, title in ((axes[0], "count_fraction", "by count"), (axes[1], "bytes_fraction", "by bytes")):
        for kind in ("read", "write"):
            points = [(int(r["size"]), float(r[column])) for r in data if r["kind"] == kind]
            if not points:
                continue
            # A log axis has no 0: empty requests are drawn at 1 B.
            sizes = [max(p[0], 1) for p in points]
            fractions = [p[1] for p in points]
            # The curve starts at 0 just below the smallest size, as a CDF does.
            ax.step([sizes[0] / 2] + sizes, [0.0] + fractions, where="post", label=kind + "s",
                    color=COLOURS[kind], linewidth=2)
        ax.set_xscale("log", base=2)
        ax.xaxis.set_major_locator(matplotlib.ticker.LogLocator(base=4))
        ax.xaxis.set_major_formatter(FuncFormatter(size_label))
        ax.tick_params(axis="x", labelrotation=30)
        ax.set_xlabel("request size (log scale; empty requests at 1 B)")
        ax.set_title("CDF of request sizes " + title)
        ax.grid(True, alpha=0.3)
        ax.set_ylim(0, 1.02)
        ax.legend(loc="lower right")
    axes[0].set_ylabel("cumulative fraction")
    fig.tight_layout()
    fig.savefig(os.path.join(folder, "cdf.png"), dpi=120)
    plt.close(fig)


def timeline(folder, trace):
    data = rows(trace)
    ranks = sorted({int(r["rank"]) for r in data})
    fig, ax = plt.subplots(figsize=(12, 1.2 + 0.6 * max(len(ranks), 1)))
    present = []
    starts = [float(r["start_s"]) for r in data]
    ends = [float(r["start_s"]) + float(r["duration_s"]) for r in data]
    # Calls shorter than this are widened to it, so that every call shows.
    least = (max(ends) - min(starts)) / 1500 if data else 0
    for op in OPS:
        per_rank = {}
        for r in data:
            if r["op"] == op:
                per_rank.setdefault(int(r["rank"]), []).append(
                    (float(r["start_s"]), max(float(r["duration_s"]), least)))
        if not per_rank:
            continue
        present.append(op)
        for rank, spans in per_rank.items():
            ax.broken_barh(spans, (rank - 0.4, 0.8), facecolors=COLOURS[op], edgecolor="none")
    ax.set_yticks(ranks)
    ax.set_yticklabels([f"rank {r}" for r in ranks])
    ax.invert_yaxis()
    ax.set_xlabel("seconds since the trace's epoch")
    ax.set_title("I/O calls per rank (calls under 1/1500 of the span drawn at that width)")
    ax.grid(True, axis="x", alpha=0.3)
    ax.legend(handles=[Patch(color=COLOURS[op], label=op) for op in present], loc="upper left",
              bbox_to_anchor=(1.01, 1.0), fontsize=9)
    fig.tight_layout()
    fig.savefig(os.path.join(folder, "timeline.png"), dpi=120)
    plt.close(fig)


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: trace_plots.py DIR TRACE.csv")
    folder, trace = sys.argv[1], sys.argv[2]
    histogram(folder)
    cdf(folder)
    timeline(folder, trace)


if __name__ == "__main__":
    main()
