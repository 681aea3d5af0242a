#!/usr/bin/python3
"""lammps_driver.py: W1/W2 with LAMMPS' own neighbour-list build (Debian's `lammps`).

Writes a LAMMPS data file with one atom at each point of FILE and an input
script (non-periodic fixed box 'f f f' holding every point with a margin of r;
2D: 'dimension 2', 'f f p';
LAMMPS' defaults otherwise, so atoms are sorted by bin during the untimed
setup, as every LAMMPS run does),
`pair_style zero R` (a pair style that computes nothing but asks for a half
neighbour list with cutoff R), `neighbor 0.0 bin` (no skin), and runs one
step with a rebuild every step, so that LAMMPS times one full binned build
as "Neigh". Reports LAMMPS' "Total # of neighbors" (the half list: each pair
once) and its Neigh time; peak memory is the lmp process's peak RSS.

Boundary: LAMMPS keeps rsq <= cutneighsq with rsq summed x, y, z as prox does
and cutneighsq = cut*cut (cut = sqrt(cut*cut) = R exactly), so the counts
agree with no correction. LAMMPS does not separate binning from the pair
search: build_s is 0 and query_s is the whole Neigh time.
With --ranks 2 it runs `mpirun -np 2 lmp` (LAMMPS' own parallelism: domain
decomposition; this Debian build has no OPENMP package): the count is summed
over the ranks, the time is the slowest rank's Neigh time, and the memory is
the largest rank's peak RSS.
With --steps S it runs S steps, each rebuilding the list, and query_s is
their Neigh time over S (neigh_total_s the whole): the setup's untimed
first build allocates the list's pages, so every timed build reuses them,
and the total grows as S does.
Usage: lammps_driver.py FILE --radius R [--workload W1|W2] [--ranks P] [--steps S] [--lmp lmp]
"""
import argparse
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile


def fail(msg):
    print(f"lammps_driver: {msg}", file=sys.stderr)
    sys.exit(2)


def write_data(src, dst, radius):
    """Atoms of the data file: the point text copied as is (no rounding)."""
    dim, rows = None, []
    lo, hi = None, None
    with open(src) as f:
        for lineno, line in enumerate(f, 1):
            if line.startswith("#"):
                m = re.search(r"\bdim=(\d)", line)
                if m:
                    dim = int(m.group(1))
                continue
            words = line.split()
            if not words:
                continue
            if dim is None:
                dim = len(words)
            if len(words) != dim or dim not in (2, 3):
                fail(f"{src}:{lineno}: expected {dim} coordinates")
            v = [float(w) for w in words]
            lo = v if lo is None else [min(a, b) for a, b in zip(lo, v)]
            hi = v if hi is None else [max(a, b) for a, b in zip(hi, v)]
            rows.append(words if dim == 3 else words + ["0"])
    if not rows:
        return dim or 3, 0
    # A fixed box ('f') that holds every point with a margin of r on each side
    # (LAMMPS refuses bins much smaller than the cutoff, so a shrink-wrapped
    # box fails when all points share a coordinate).
    pad = [max(radius, 1e-9 * (abs(l) + abs(h))) for l, h in zip(lo, hi)]
    with open(dst, "w") as f:
        f.write(f"LAMMPS data file from {os.path.basename(src)}\n\n{len(rows)} atoms\n1 atom types\n\n")
        for k, name in enumerate("xyz"[:dim]):
            f.write(f"{lo[k] - pad[k]!r} {hi[k] + pad[k]!r} {name}lo {name}hi\n")
        if dim == 2:
            # LAMMPS refuses bins far smaller than the cutoff, z included (the
            # z thickness of a 2D box plays no other part).
            f.write(f"{-radius!r} {radius!r} zlo zhi\n")
        f.write("\nMasses\n\n1 1.0\n\nAtoms # atomic\n\n")
        f.writelines(f"{i} 1 {w[0]} {w[1]} {w[2]}\n" for i, w in enumerate(rows, 1))
    return dim, len(rows)


SCRIPT = """units lj
dimension {dim}
boundary {boundary}
atom_style atomic
read_data data.lmp
pair_style zero {radius!r}
pair_coeff * *
neighbor 0.0 bin
neigh_modify every 1 delay 0 check no
thermo_style custom step
run {steps}
"""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("file")
    ap.add_argument("--radius", type=float, required=True)
    ap.add_argument("--workload", default="W1")
    ap.add_argument("--lmp", default="lmp")
    ap.add_argument("--ranks", type=int, default=1)
    ap.add_argument("--steps", type=int, default=1)
    a = ap.parse_args()
    if a.steps < 1:
        fail("--steps must be >= 1")
    if not a.radius > 0:
        fail("--radius must be > 0")
    if shutil.which(a.lmp) is None:
        fail(f"{a.lmp} not found (Debian package lammps)")
    work = tempfile.mkdtemp(prefix="prox-lammps-")
    try:
        dim, n = write_data(a.file, os.path.join(work, "data.lmp"), a.radius)
        if n == 0:  # LAMMPS needs atoms; no points, no pairs
            print(f"library=lammps workload={a.workload} N=0 build_s=0.000000 query_s=0.000000 "
                  f"total_s=0.000000 count=0 peak_rss_mb=0.0 empty=1")
            return
        with open(os.path.join(work, "in.lmp"), "w") as f:
            f.write(SCRIPT.format(dim=dim, boundary="f f f" if dim == 3 else "f f p",
                                  radius=a.radius, steps=a.steps))
        env = dict(os.environ, OMP_NUM_THREADS="1")
        cmd = [a.lmp, "-in", "in.lmp", "-log", "none"]
        if a.ranks > 1:
            if shutil.which("mpirun") is None:
                fail("--ranks needs mpirun (Debian package openmpi-bin)")
            cmd = ["mpirun", "--allow-run-as-root", "--oversubscribe", "--bind-to", "none",
                   "-np", str(a.ranks)] + cmd
        run = subprocess.run(cmd, cwd=work, env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        out = run.stdout
        if run.returncode != 0:
            fail(f"lmp exited with {run.returncode}:\n{out[-2000:]}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    total = re.search(r"^Total # of neighbors = (\d+)", out, re.M)
    # "Neigh | min | avg | max | ...": the slowest rank's time.
    neigh = re.search(r"^Neigh\s*\|\s*[0-9.eE+-]+\s*\|\s*[0-9.eE+-]+\s*\|\s*([0-9.eE+-]+)",
                      out, re.M)
    atoms = re.search(rf"for {a.steps} steps with (\d+) atoms", out)
    if not (total and neigh and atoms):
        fail(f"cannot find the neighbour count or Neigh time in lmp's output:\n{out[-2000:]}")
    if int(atoms.group(1)) != n:
        fail(f"LAMMPS kept {atoms.group(1)} of {n} atoms")
    neigh_s = float(neigh.group(1))
    query_s = neigh_s / a.steps
    rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024.0
    print(f"library=lammps workload={a.workload} N={n} build_s=0.000000 query_s={query_s:.6f} "
          f"total_s={query_s:.6f} count={total.group(1)} peak_rss_mb={rss:.1f} list=half/bin/newton ranks={a.ranks} "
          f"steps={a.steps} neigh_total_s={neigh_s:.6f}")


if __name__ == "__main__":
    main()
