#!/usr/bin/python3
"""scipy_driver.py: W1/W2 with scipy's cKDTree (Debian's python3-scipy).

W1: query_pairs (every unordered pair once, as an ndarray); W2: query_ball_point
around every point (full lists: each point's neighbours, itself included).

Boundary: cKDTree's query_pairs and query_ball_point keep pairs at distance
<= r, comparing squared distances (summed x, y, z, as prox does) with r*r for
p = 2, so no correction is needed.
query_pairs has no threads; query_ball_point runs on --workers threads.
Usage: scipy_driver.py FILE --radius R [--workload W1|W2] [--task pairs|lists] [--workers T]
"""
import argparse
import resource
import sys
import time
import warnings

import numpy as np
from scipy.spatial import cKDTree


def read_points(path):
    dim = None
    with open(path) as f:
        for line in f:
            if not line.startswith("#"):
                break
            for word in line[1:].split():
                if word.startswith("dim="):
                    dim = int(word[4:])
    with warnings.catch_warnings():  # an empty file is no points, not an error
        warnings.simplefilter("ignore", UserWarning)
        pts = np.loadtxt(path, comments="#", dtype=np.float64, ndmin=2)
    if pts.size == 0:
        return np.zeros((0, dim or 3))
    if dim is not None and pts.shape[1] != dim:
        sys.exit(f"scipy_driver: {path}: {pts.shape[1]} numbers per line, header says dim={dim}")
    return pts


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("file")
    ap.add_argument("--radius", type=float, required=True)
    ap.add_argument("--workload", default="W1")
    ap.add_argument("--task", choices=["pairs", "lists"], default=None)
    ap.add_argument("--workers", type=int, default=1)  # query_ball_point's threads
    a = ap.parse_args()
    task = a.task or ("lists" if a.workload == "W2" else "pairs")
    if not a.radius > 0:
        sys.exit("scipy_driver: --radius must be > 0")
    pts = read_points(a.file)
    n = len(pts)

    t0 = time.perf_counter()
    tree = cKDTree(pts)
    t1 = time.perf_counter()
    if task == "pairs":
        pairs = tree.query_pairs(a.radius, output_type="ndarray")
        count = len(pairs)
    else:
        lists = tree.query_ball_point(pts, a.radius, workers=a.workers, return_sorted=False)
        entries = sum(len(row) for row in lists)
        count = (entries - n) // 2  # every point finds itself
    t2 = time.perf_counter()
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    name = "scipy-ckdtree" + ("-query-pairs" if task == "pairs" else "-ball-point")
    print(f"library={name} workload={a.workload} N={n} build_s={t1 - t0:.6f} "
          f"query_s={t2 - t1:.6f} total_s={t2 - t0:.6f} count={count} peak_rss_mb={rss:.1f} "
          f"task={task}")


if __name__ == "__main__":
    main()
