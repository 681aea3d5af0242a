#!/usr/bin/python3
"""cell_bench.py: periodic cells of any shape (include/prox/cell.h) from Python.

Rows (medians of --runs, one thread unless said; the two W1 rows' runs
alternate):
  - W1 (docs/workloads.md) at N points in the periodic unit cube, sorted half
    pairs: prox.pairs(box=1.0), the grid's minimum-image path;
  - the same points mapped into a triclinic cell of volume 1 (the rows
    (1, 0, 0), (0.3, 0.95, 0), (0.2, 0.25, 0.9), scaled), the same radius:
    prox.neighbor_list("ij", full=False), the cell search; the ratio to the
    row above (target: within 1.25x);
  - MDAnalysis' FastNS self_search on the same triclinic points (float32),
    and its pair count against prox's (FastNS misses pairs in triclinic
    cells: an upstream defect);
  - a batch of --small 64-atom cells (cubic Si 2x2x2, primitive fcc Cu
    4x4x4, rattled), cutoff 5 A, "ijdDS": prox.neighbor_lists per structure
    (target: <= 50 us), and ASE's neighbor_list on a few of them;
  - LAMMPS' neighbour count (Debian's lmp, pair_style zero, half list) on a
    triclinic box of --lammps-n points against prox's half-pair count.
Usage: PYTHONPATH=build/python bench/cell_bench.py [--n 1e6] [--small 1000]
       [--runs 5] [--lammps-n 1e5] [--skip mdanalysis,lammps,ase] [--only small]
       [-o OUT.md]
(--only small: the small-cell rows alone, without ASE's.)
The C side of the same cases, with a hash of the output (and for
callgrind): build/bench_cell_points (bench/cell_points.c).
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

import prox

TRICLINIC = np.array([[1.0, 0.0, 0.0], [0.3, 0.95, 0.0], [0.2, 0.25, 0.9]])


def unit_volume(cell):
    return cell / abs(np.linalg.det(cell)) ** (1 / 3)


def median_time(fn, runs):
    times, out = [], None
    for _ in range(runs):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return float(np.median(times)), out


def w1(n, seed=1):
    x = np.random.default_rng(seed).random((n, 3))
    return x, (30 / (n * 4 / 3 * np.pi)) ** (1 / 3)


def lengths_angles(cell):
    a, b, c = (np.linalg.norm(v) for v in cell)
    ang = lambda u, v: np.degrees(np.arccos(u @ v / np.linalg.norm(u) / np.linalg.norm(v)))
    return [a, b, c, ang(cell[1], cell[2]), ang(cell[0], cell[2]), ang(cell[0], cell[1])]


def bench_w1(a, rows):
    x, r = w1(a.n)
    cell = unit_volume(TRICLINIC)
    xt = x @ cell
    # the two rows' runs alternate, so that both meet the same moments of
    # the machine (fresh memory on a VM comes at uneven cost); each result
    # is let go before the next run
    times_orth, times_tri = [], []
    for _ in range(a.runs):
        t, p = median_time(lambda: prox.pairs(x, r, box=1.0, threads=1), 1)
        times_orth.append(t)
        pairs_orth = len(p)
        del p
        t, (i, j) = median_time(lambda: prox.neighbor_list("ij", xt, r, cell=cell, pbc=True,
                                                          full=False, threads=1), 1)
        times_tri.append(t)
        pairs_tri = len(i)
        del i, j
    t_orth, t_tri = float(np.median(times_orth)), float(np.median(times_tri))
    rows.append(("W1 orthogonal periodic, sorted half pairs (prox.pairs box=1)", a.n, t_orth,
                 pairs_orth, ""))
    rows.append(("W1 triclinic cell, sorted half pairs (neighbor_list full=False)", a.n, t_tri,
                 pairs_tri, f"{t_tri / t_orth:.2f}x the orthogonal row (target 1.25x)"))
    if "mdanalysis" not in a.skip:
        try:
            from MDAnalysis.lib.nsgrid import FastNS
        except ImportError:
            rows.append(("MDAnalysis FastNS", a.n, None, None, "not installed"))
        else:
            # in Angstrom-like units (a cutoff of 3): FastNS slows down on a unit box
            scale = 3.0 / r
            box = np.array(lengths_angles(cell * scale), dtype=np.float32)
            coords = (xt * scale).astype(np.float32)
            t_md, res = median_time(
                lambda: FastNS(r * scale, coords, box=box, pbc=True).self_search(), 1)
            count = len(res.get_pairs())
            rows.append(("MDAnalysis FastNS self_search, same triclinic points (float32)", a.n,
                         t_md, count, f"prox {t_md / t_tri:.1f}x faster (target 15x); "
                                      f"{pairs_tri - count} pairs fewer than prox (float32)"))


def small_systems(count):
    from ase.build import bulk
    si, cu = [], []
    for k in range(count):
        s = bulk("Si", "diamond", a=5.43, cubic=True).repeat((2, 2, 2))
        s.rattle(0.05, seed=k)
        si.append(s)
        c = bulk("Cu", "fcc", a=3.6).repeat((4, 4, 4))
        c.rattle(0.05, seed=k)
        cu.append(c)
    return {"cubic Si 2x2x2": si, "primitive fcc Cu 4x4x4": cu}


def bench_small(a, rows):
    try:
        sets = small_systems(a.small)
    except ImportError:
        rows.append(("small cells", a.small, None, None, "ASE not installed (ase.build)"))
        return
    for name, systems in sets.items():
        t, res = median_time(lambda: prox.neighbor_lists("ijdDS", systems, 5.0, threads=1),
                             a.runs)
        per = t / len(systems)
        rows.append((f"{len(systems)} x {name} (64 atoms), 5 A, ijdDS, prox.neighbor_lists",
                     len(systems), t, sum(len(r[0]) for r in res),
                     f"{per * 1e6:.1f} us per structure (target 50)"))
        if "ase" in a.skip:
            continue
        from ase.neighborlist import neighbor_list as ase_nl
        few = systems[:a.ase_structures]
        t_ase, _ = median_time(lambda: [ase_nl("ijdDS", s, 5.0) for s in few], 1)
        rows.append((f"ASE neighbor_list, {len(few)} of the same", len(few), t_ase, None,
                     f"{t_ase / len(few) * 1e3:.1f} ms per structure; prox "
                     f"{t_ase / len(few) / per:.0f}x faster"))


def lammps_half_count(x, cell, cutoff):
    """LAMMPS' half neighbour list count (Debian's lmp, pair_style zero,
    newton on) of the points x in LAMMPS' restricted triclinic cell (rows
    a = (ax, 0, 0), b = (bx, by, 0), c = (cx, cy, cz)); None without lmp.
    RuntimeError with lmp's last output when it fails. Also the oracle of
    python/tests/test_cell.py."""
    lmp = shutil.which("lmp")
    if lmp is None:
        return None
    with tempfile.TemporaryDirectory(prefix="prox-cell-lammps-") as work:
        with open(os.path.join(work, "data.lmp"), "w") as out:
            out.write(f"prox cell\n\n{len(x)} atoms\n1 atom types\n\n"
                      f"0 {cell[0, 0]!r} xlo xhi\n0 {cell[1, 1]!r} ylo yhi\n"
                      f"0 {cell[2, 2]!r} zlo zhi\n{cell[1, 0]!r} {cell[2, 0]!r} {cell[2, 1]!r} "
                      "xy xz yz\n\nMasses\n\n1 1.0\n\nAtoms # atomic\n\n")
            out.writelines(f"{k + 1} 1 {p[0]!r} {p[1]!r} {p[2]!r}\n" for k, p in enumerate(x))
        with open(os.path.join(work, "in.lmp"), "w") as out:
            out.write(f"units lj\nboundary p p p\natom_style atomic\nbox tilt large\n"
                      f"read_data data.lmp\npair_style zero {cutoff!r}\npair_coeff * *\n"
                      "neighbor 0.0 bin\nneigh_modify every 1 delay 0 check no\n"
                      "thermo_style custom step\nrun 0\n")
        run = subprocess.run([lmp, "-in", "in.lmp", "-log", "none"], cwd=work, text=True,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             env=dict(os.environ, OMP_NUM_THREADS="1"))
    m = re.search(r"^Total # of neighbors = (\d+)", run.stdout, re.M)
    if run.returncode != 0 or not m:
        raise RuntimeError(f"lmp failed: {run.stdout[-300:]!r}")
    return int(m.group(1))


def bench_lammps(a, rows):
    if "lammps" in a.skip or shutil.which("lmp") is None:
        rows.append(("LAMMPS neighbour count, triclinic box", a.lammps_n, None, None,
                     "skipped" if "lammps" in a.skip else "lmp not found (Debian package lammps)"))
        return
    n = a.lammps_n
    f, r = w1(n, seed=2)
    cell = unit_volume(TRICLINIC) * 10.0  # LAMMPS lj units: a box of side ~10
    r *= 10.0
    x = f @ cell
    try:
        lammps = lammps_half_count(x, cell, r)
    except RuntimeError as e:
        rows.append(("LAMMPS neighbour count, triclinic box", n, None, None, str(e)))
        return
    i, _ = prox.neighbor_list("ij", x, r, cell=cell, pbc=True, full=False)
    rows.append(("LAMMPS neighbour count (half list), triclinic box", n, None, lammps,
                 f"prox {len(i)}: {'the same' if lammps == len(i) else 'DIFFERENT'}"))


def table(rows, a):
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo")
                if l.startswith("model name")), "unknown")
    lines = [
        "## Cells of any shape",
        "",
        f"`bench/cell_bench.py --n {a.n:g} --small {a.small} --runs {a.runs}`; CPU {cpu}, "
        f"{os.cpu_count()} cores, SIMD level {prox._prox.library_version and _simd()}, "
        f"load {open('/proc/loadavg').read().split()[0]} at the end.",
        "",
        "| case | N | median s | pairs | note |",
        "|---|---:|---:|---:|---|",
    ]
    for name, n, t, pairs, note in rows:
        lines.append(f"| {name} | {n:,} | {'' if t is None else f'{t:.4f}'} | "
                     f"{'' if pairs is None else f'{pairs:,}'} | {note} |")
    return "\n".join(lines) + "\n"


def _simd():
    exe = shutil.which("prox") or os.path.join(os.path.dirname(prox.__file__), "..", "..", "prox")
    try:
        v = subprocess.run([exe, "--version"], text=True, stdout=subprocess.PIPE).stdout
        return re.search(r"simd=(\S+)", v).group(1)
    except (OSError, AttributeError):
        return os.environ.get("PROX_SIMD", "default")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=float, default=1e6)
    ap.add_argument("--small", type=int, default=1000)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--lammps-n", type=float, default=1e5)
    ap.add_argument("--ase-structures", type=int, default=10)
    ap.add_argument("--skip", default="", help="comma list of mdanalysis, lammps, ase, w1, small")
    ap.add_argument("--only", choices=["small"], help="the small-cell rows alone (no ASE rows)")
    ap.add_argument("-o", "--output")
    a = ap.parse_args()
    a.n, a.lammps_n = int(a.n), int(a.lammps_n)
    a.skip = set(filter(None, a.skip.split(",")))
    if a.only == "small":
        a.skip |= {"w1", "lammps", "ase", "mdanalysis"}
    rows = []
    if "w1" not in a.skip:
        bench_w1(a, rows)
    if "small" not in a.skip:
        bench_small(a, rows)
    if a.only != "small":
        bench_lammps(a, rows)
    text = table(rows, a)
    if a.output:
        with open(a.output, "w") as f:
            f.write(text)
    sys.stdout.write(text)


if __name__ == "__main__":
    main()
