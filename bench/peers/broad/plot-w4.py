#!/usr/bin/python3
"""plot-w4.py: Pouchol et al. 2009, Figure 4, from a side-by-side run: W4's total time
(build + 1M segment queries, medians) of every library against the fraction
of segments that hit at least one box, one point per N, one line per row.

    plot-w4.py RUN.csv OUT.png

The hit fraction of a size is read from the `hit_fraction=` key the peer
drivers print (prox's row does not carry it; it is the same for every row).
"""
import csv
import os
import statistics
import subprocess
import sys
from collections import OrderedDict


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: plot-w4.py RUN.csv OUT.png")
    runs, fraction = OrderedDict(), {}
    with open(sys.argv[1]) as f:
        for r in csv.DictReader(f):
            if r["workload"] != "W4":
                continue
            n = int(r["n"])
            runs.setdefault((r["library"], int(r["threads"])), {}).setdefault(n, []).append(
                float(r["total_s"]))
            for kv in (r.get("extra") or "").split():
                if kv.startswith("hit_fraction="):
                    fraction[n] = float(kv.split("=", 1)[1])
    if not runs:
        sys.exit(f"plot-w4.py: no W4 rows in {sys.argv[1]}")
    missing = {n for pts in runs.values() for n in pts} - set(fraction)
    if missing:
        sys.exit(f"plot-w4.py: no hit_fraction for N = {sorted(missing)}")
    data = sys.argv[2] + ".dat"
    with open(data, "w") as f:
        for (lib, thr), pts in runs.items():
            f.write(f'"{lib} ({thr} thr)"\n')
            for n in sorted(pts, key=lambda n: fraction[n]):
                f.write(f"{fraction[n]:.6f} {statistics.median(pts[n]):.6g} {n}\n")
            f.write("\n\n")
    # N labels staggered upwards: the fractions crowd towards 1 as N grows.
    labels = "\n".join(f"set label 'N = {n:,}' at {fr:.4f}, graph {0.04 + 0.06 * k:.2f} "
                       f"{'left' if k == 0 else 'right'}"
                       for k, (n, fr) in enumerate(sorted(fraction.items())))
    script = f"""set terminal pngcairo size 900,700 noenhanced
set output '{sys.argv[2]}'
set title 'W4 as Pouchol et al. 2009, Figure 4: N boxes, 1M segments, build + queries'
set xlabel 'fraction of segments hitting at least one box'
set ylabel 'seconds (median)'
set logscale y
set key below
set xrange [*:1.005]
set grid
{labels}
plot for [i=0:{len(runs) - 1}] '{data}' index i using 1:2 with linespoints title columnheader(1)
"""
    try:
        subprocess.run(["gnuplot"], input=script, text=True, check=True)
    finally:
        os.remove(data)
    print(sys.argv[2])


if __name__ == "__main__":
    main()
