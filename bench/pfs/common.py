# SPDX-License-Identifier: MIT
"""What the simulator's studies share (bench/pfs/studies.py, validate.py): where the build is, running
volseg-twophase-plan, writing CSV and PNG files, least squares with x >= 0."""
import csv
import dataclasses
import os
import subprocess
import sys

import pfs_sim as ps

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_DIR = os.path.dirname(os.path.dirname(HERE))
MPI_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
           "OMPI_MCA_rmaps_base_oversubscribe": "1", "OMPI_MCA_btl_vader_single_copy_mechanism": "none"}


def build_dir():
    return os.environ.get("VOLSEG_BUILD_DIR", os.path.join(SOURCE_DIR, "build"))


def exe(name, sub):
    path = os.path.join(build_dir(), sub, name)
    if not os.access(path, os.X_OK):
        sys.exit("volseg-bench pfs-sim: %s is not built (set VOLSEG_BUILD_DIR or build first)" % path)
    return path


def plan(ranks, pattern="ncio", direction="write", hints=(), aggregators=0, ranks_per_node=4, **shape):
    """Runs volseg-twophase-plan; returns (facts, plan)."""
    cmd = [exe("volseg-twophase-plan", "bench"), "--ranks", str(ranks), "--pattern", pattern,
           "--direction", direction, "--ranks-per-node", str(ranks_per_node)]
    if aggregators:
        cmd += ["--aggregators", str(aggregators)]
    for k, v in shape.items():
        cmd += ["--" + k, str(v)]
    for h in hints:
        cmd += ["--hint", h]
    result = subprocess.run(cmd, capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit("volseg-bench pfs-sim: %s: %s" % (" ".join(cmd), result.stderr.strip()))
    return ps.read_plan(result.stdout.splitlines())


def savefig(fig, path):
    tmp = path + ".part.png"
    fig.savefig(tmp, dpi=110, bbox_inches="tight")
    os.replace(tmp, path)


def write_csv(path, rows):
    keys = list(rows[0].keys())
    for r in rows:
        keys += [k for k in r if k not in keys]
    tmp = path + ".part"
    with open(tmp, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=keys)
        w.writeheader()
        w.writerows(rows)
    os.replace(tmp, path)


def dataclasses_replace(prof, **kw):
    import dataclasses
    known = {f.name for f in dataclasses.fields(prof)}
    return dataclasses.replace(prof, **{k: v for k, v in kw.items() if k in known})



def nnls(A, b, iters=200):
    """Least squares with x >= 0 (Lawson & Hanson's active set), numpy only."""
    import numpy as np
    m, n = A.shape
    x = np.zeros(n)
    passive = np.zeros(n, bool)
    for _ in range(iters):
        w = A.T @ (b - A @ x)
        if passive.all() or (w[~passive] <= 1e-12).all():
            break
        j = int(np.argmax(np.where(passive, -np.inf, w)))
        passive[j] = True
        while True:
            z = np.zeros(n)
            z[passive] = np.linalg.lstsq(A[:, passive], b, rcond=None)[0]
            if (z[passive] > 0).all():
                x = z
                break
            neg = passive & (z <= 0)
            alpha = np.min(x[neg] / (x[neg] - z[neg]))
            x = x + alpha * (z - x)
            passive &= x > 1e-15
    return x
