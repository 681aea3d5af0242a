#!/usr/bin/python3
"""knn_driver.py: the kNN rows of bench/knn.sh with scipy's cKDTree
(python3-scipy, workers=1 unless told) or pykdtree (python3-pykdtree).

Every point's k nearest others: query(x, k + 1), the point itself (first,
at distance 0) dropped. Prints the result line of README.md, `count` the
checksum of bench/knn_points.c (sum of (rank + 1) * index).
Usage: knn_driver.py FILE.f64 DIM K scipy|pykdtree WORKLOAD [--workers T] [--boxsize L]
(--boxsize: scipy's periodic box [0, L) on every axis, minimum images.)
"""
import argparse
import resource
import time

import numpy as np


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("file")
    ap.add_argument("dim", type=int)
    ap.add_argument("k", type=int)
    ap.add_argument("library", choices=["scipy", "pykdtree"])
    ap.add_argument("workload")
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--boxsize", type=float, default=None)
    a = ap.parse_args()
    x = np.fromfile(a.file, dtype="<f8").reshape(-1, a.dim)
    t0 = time.perf_counter()
    if a.library == "scipy":
        from scipy.spatial import cKDTree
        tree = cKDTree(x, boxsize=a.boxsize)
        t1 = time.perf_counter()
        _, ind = tree.query(x, a.k + 1, workers=a.workers)
    else:
        if a.boxsize is not None:
            ap.error("--boxsize is scipy's alone")
        from pykdtree.kdtree import KDTree
        tree = KDTree(x)
        t1 = time.perf_counter()
        _, ind = tree.query(x, k=a.k + 1)
    t2 = time.perf_counter()
    ind = ind.astype(np.int64)
    own = ind == np.arange(len(x))[:, None]
    keep = ~own
    keep[own.sum(axis=1) == 0, -1] = False  # itself not found (a duplicate won): drop the last
    rows = ind[keep].reshape(len(x), a.k)
    ranks = np.arange(1, a.k + 1, dtype=np.uint64)
    count = int((rows.astype(np.uint64) * ranks).sum(dtype=np.uint64))
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    name = "scipy-ckdtree" if a.library == "scipy" else "pykdtree"
    name += "-boxsize" if a.boxsize is not None else ""
    print(f"library={name} workload={a.workload} N={len(x)} build_s={t1 - t0:.6f} "
          f"query_s={t2 - t1:.6f} total_s={t2 - t0:.6f} count={count} peak_rss_mb={rss:.1f} "
          f"workers={a.workers}")


if __name__ == "__main__":
    main()
