#!/usr/bin/env python3
"""The Python binding's benchmark: W1 through Python against the same call
in C, and prox against scipy's cKDTree and ASE's neighbor_list on the same
data in the same run. Writes a Markdown report (bench/results/ by default).

    make                                   # build/, the module and the drivers
    flock /work/bench.lock python3 bench/python_bench.py --build build

Part 1 (the binding's overhead): W1 (WORKLOADS.md, sph3d) at --n-c points,
prox.pairs(x, r, threads=T) (sorted buffer) and prox.lists (CSR) against
build/bench_oneshot_points, the one-shot prox_pairs of C into a fresh
buffer, alternated run by run; medians of --runs.

Part 2 (peers): W1 at each --sizes N; prox.pairs vs
cKDTree(x).query_pairs(r, output_type="ndarray") (tree build included: a
one-shot call builds its structure too), prox.neighbor_list("ij", ...) vs
ASE's neighbor_list("ij", atoms, r) with the unit cell, open boundaries;
prox on one thread and on all; medians. Peers run at sizes up to
--peers-max (default 10^6) and ASE up to --ase-max (default 10^5: minutes and
gigabytes at 10^6).
"""
import argparse
import datetime
import math
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent


def cpu_name():
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def w1_radius(n):
    return (30.0 / (n * 4.0 / 3.0 * math.pi)) ** (1.0 / 3.0)


def w1_points(cli, n, tmp):
    """W1 bit for bit, from `prox gen` (raw doubles)."""
    path = Path(tmp) / f"w1-{n}.f64"
    if not path.exists():
        subprocess.run([cli, "gen", "sph3d", "--n", str(n), "-o", str(path)], check=True)
    return path, np.fromfile(path, dtype="<f8").reshape(-1, 3)


def median_time(fn, runs):
    """Median seconds of `runs` calls, and the last call's result."""
    times, out = [], None
    for _ in range(runs):
        out = None  # the previous output released before the next call
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), out


def c_oneshot(driver, path, task, runs, threads, r):
    out = subprocess.run([driver, str(path), "3", task, str(runs), str(threads), repr(r)],
                         check=True, capture_output=True, text=True).stdout.split()
    times = [float(v) for v in out[:out.index(next(v for v in out if v.startswith("pairs=")))]]
    pairs = int(next(v for v in out if v.startswith("pairs=")).split("=")[1])
    return times, pairs


def part1(args, prox, cli, driver, lines):
    n = args.n_c
    path, x = w1_points(cli, n, args.tmp)
    r = w1_radius(n)
    lines += [f"## W1 {n:,} points: Python against the same call in C", "",
              f"radius {r!r}; threads {args.threads or 'default (all)'}; each run a fresh "
              "one-shot call into a fresh output (C: `prox_pairs` into a new "
              "`prox_pair_buffer` / `prox_lists`, build/bench_oneshot_points; Python: "
              "`prox.pairs` / `prox.lists`, the buffer handed to numpy); C and Python "
              f"alternated round by round, {args.runs} rounds of one run each; medians.", "",
              "| task | C median s | Python median s | Python / C | C runs | Python runs |",
              "|---|---:|---:|---:|---|---|"]
    for task, fn in (("buffer", lambda: prox.pairs(x, r, threads=args.threads)),
                     ("lists", lambda: prox.lists(x, r, threads=args.threads))):
        c_times, py_times = [], []
        fn()  # warm: the module's first call
        for _ in range(args.runs):
            t, c_pairs = c_oneshot(driver, path, task, 1, args.threads, r)
            c_times += t
            py_times.append(median_time(fn, 1)[0])  # its output released on return
        got = fn()
        py_pairs = len(got) if task == "buffer" else len(got[1]) // 2
        assert py_pairs == c_pairs, (py_pairs, c_pairs)
        c, p = statistics.median(c_times), statistics.median(py_times)
        lines.append(f"| {task} ({c_pairs:,} pairs) | {c:.4f} | {p:.4f} | {p / c:.3f} | "
                     f"{' '.join(f'{v:.3f}' for v in c_times)} | "
                     f"{' '.join(f'{v:.3f}' for v in py_times)} |")
        print(lines[-1], flush=True)
    lines.append("")


def part2(args, prox, cli, lines):
    from scipy.spatial import cKDTree
    try:
        from ase import Atoms
        from ase.neighborlist import neighbor_list as ase_nl
    except ImportError:
        ase_nl = None
    lines += ["## Against scipy and ASE (W1, open unit cube)", "",
              "prox one-shot calls on 1 thread and on all threads; scipy "
              "`cKDTree(x).query_pairs(r, output_type=\"ndarray\")` (build included) "
              "against `prox.pairs`; ASE `neighbor_list(\"ij\", atoms, r)` (open cell) against "
              "`prox.neighbor_list(\"ij\", x, r)`, both on W1 scaled by a power of two "
              "(exactly: the same pairs) so that r >= 3, since ASE's bins are at least 3 "
              "(angstrom) wide and the unit cube would be one bin for it; peers are "
              "one-threaded. "
              "Ratio = peer time / prox time (higher: prox faster). Every count "
              "cross-checked.", "",
              "| N | pairs | prox.pairs 1T s | prox.pairs s | scipy s | scipy / prox 1T | "
              "scipy / prox | prox.neighbor_list 1T s | ASE s | ASE / prox 1T |",
              "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for n in args.sizes:
        _, x = w1_points(cli, n, args.tmp)
        r = w1_radius(n)
        runs = args.runs if n <= 100_000 else max(1, args.runs // 2)
        p1, _ = median_time(lambda: prox.pairs(x, r, threads=1), runs)
        pa, _ = median_time(lambda: prox.pairs(x, r, threads=args.threads), runs)
        m = len(prox.pairs(x, r))
        nl1, _ = median_time(lambda: prox.neighbor_list("ij", x, r, threads=1), runs)
        row = [f"{n:,}", f"{m:,}", f"{p1:.4f}", f"{pa:.4f}"]
        if n <= args.peers_max:
            peer_runs = max(1, runs if n <= 100_000 else 1)
            ts, got = median_time(lambda: cKDTree(x).query_pairs(r, output_type="ndarray"),
                                  peer_runs)
            assert len(got) == m
            del got
            row += [f"{ts:.4f}", f"{ts / p1:.1f}", f"{ts / pa:.1f}"]
        else:
            row += ["not run", "", ""]
        row.append(f"{nl1:.4f}")
        if ase_nl and n <= args.ase_max:
            # ASE's bins are at least 3 (angstrom) wide: W1 scaled by a
            # power of two (exact, the same pairs) to a cutoff >= 3
            s = 2.0 ** math.ceil(math.log2(3.0 / r))
            xs, rs = x * s, r * s
            atoms = Atoms(numbers=np.full(n, 18), positions=xs, cell=[s, s, s], pbc=False)
            ta, got = median_time(lambda: ase_nl("ij", atoms, rs), 1)
            assert len(got[0]) == 2 * m
            del got
            nl1, _ = median_time(lambda: prox.neighbor_list("ij", xs, rs, threads=1), runs)
            row[-1] = f"{nl1:.4f}"
            row += [f"{ta:.4f}", f"{ta / nl1:.1f}"]
        else:
            row += ["not run", ""]
        lines.append("| " + " | ".join(row) + " |")
        print(lines[-1], flush=True)
    lines += ["", f"Peers run up to N = {args.peers_max:,.0f} (scipy) and {args.ase_max:,.0f} "
              "(ASE: its bins hold every candidate pair in numpy arrays, minutes and "
              "gigabytes beyond); \"not run\" marks the others.", ""]


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=str(ROOT / "build"))
    ap.add_argument("--n-c", type=lambda s: int(float(s)), default=1_000_000)
    ap.add_argument("--sizes", default="1e4,1e5,1e6")
    ap.add_argument("--peers-max", type=float, default=1e6)
    ap.add_argument("--ase-max", type=float, default=1e5)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--skip-c", action="store_true")
    ap.add_argument("--skip-peers", action="store_true")
    ap.add_argument("--tmp", default="/tmp")
    ap.add_argument("-o", "--output")
    args = ap.parse_args()
    args.sizes = [int(float(s)) for s in args.sizes.split(",") if s]
    build = Path(args.build)
    sys.path.insert(0, str(build / "python"))
    import prox

    cli, driver = str(build / "prox"), str(build / "bench_oneshot_points")
    stamp = datetime.datetime.utcnow()
    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True).stdout.strip()
    lines = ["# prox from Python: overhead and peers", "",
             f"{stamp:%Y-%m-%d %H:%M} UTC, commit {commit}, {cpu_name()}, "
             f"{os.cpu_count()} CPUs; Python {platform.python_version()}, numpy "
             f"{np.__version__}, prox module {prox.__file__}.", "",
             "Command: `" + " ".join([Path(sys.argv[0]).name] + sys.argv[1:]) + "`", ""]
    if not args.skip_c:
        part1(args, prox, cli, driver, lines)
    if not args.skip_peers:
        part2(args, prox, cli, lines)
    out = Path(args.output) if args.output else (
        ROOT / "bench" / "results" / f"python-{platform.node()}-{stamp:%Y%m%d-%H%M}.md")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(lines))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
