#!/usr/bin/env python3
"""The Python binding's benchmark: W1 through Python against the same call
in C, and prox against scipy's cKDTree and ASE's neighbor_list on the same
data in the same run. Writes Markdown: a report of its own (bench/results/
by default), or with --section the Python section of docs/benchmarks.md
(`make bench-report` runs it so; bench/report/report.sh).

    make                                   # build/, the module and the drivers
    flock /work/bench.lock python3 bench/python_bench.py --build build

Part 1 (the binding's overhead): W1 (docs/workloads.md, sph3d) at --n-c
points, prox.pairs(x, r, threads=T) (sorted buffer) and prox.lists (CSR)
against build/bench_oneshot_points, the one-shot prox_pairs of C into a
fresh buffer (each C process warmed by one untimed call, as the Python
process is), alternated run by run, for each T of --c-threads; medians of
--runs.

Part 2 (peers): W1 at each --sizes N; prox.pairs vs
cKDTree(x).query_pairs(r, output_type="ndarray") (tree build included: a
one-shot call builds its structure too), prox.neighbor_list("ij", ...) vs
ASE's neighbor_list("ij", atoms, r) with the unit cell, open boundaries;
prox on one thread and on all; medians. scipy runs at sizes up to
--peers-max, ASE up to --ase-max, each ASE call in a child process of its
own (its time and peak resident set measured) under an address-space cap
(--ase-memory, GiB; default three quarters of the memory available at the
start) and a time limit (--ase-timeout). A size whose memory or time,
projected linearly in N from the largest size ASE ran at, exceeds the cap
or the limit is not started (--ase-attempt starts it anyway); the output
says why, with the figures.
"""
import argparse
import datetime
import json
import math
import os
import platform
import resource
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
GIB = 1024.0 ** 3


def cpu_name():
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def meminfo(key):
    """A /proc/meminfo figure in bytes (None where there is none)."""
    try:
        for line in open("/proc/meminfo"):
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def version_of(module):
    try:
        return __import__(module).__version__
    except ImportError:
        return "not installed"


def w1_radius(n):
    return (30.0 / (n * 4.0 / 3.0 * math.pi)) ** (1.0 / 3.0)


def w1_points(cli, n, tmp):
    """W1 bit for bit, from `prox gen` (raw doubles)."""
    path = Path(tmp) / f"w1-{n}.f64"
    if not path.exists():
        subprocess.run([cli, "gen", "sph3d", "--n", str(n), "-o", str(path)], check=True,
                       stdout=subprocess.DEVNULL)
    return path, np.fromfile(path, dtype="<f8").reshape(-1, 3)


def ase_scale(r):
    """ASE's bins are at least 3 (angstrom) wide: W1 scaled by a power of two
    (exact, the same pairs) to a cutoff >= 3."""
    return 2.0 ** math.ceil(math.log2(3.0 / r))


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


def fmt_gib(b):
    return f"{b / GIB:.1f} GiB"


def fmt_n(n):
    e = math.log10(n) if n > 0 else 0
    return f"10^{e:.0f}" if n > 0 and abs(e - round(e)) < 1e-9 else f"{n:,}"


def part1(args, prox, cli, driver, lines, h):
    n = args.n_c
    path, x = w1_points(cli, n, args.tmp)
    r = w1_radius(n)
    lines += [f"{h} W1 {n:,} points: Python against the same call in C", "",
              f"Radius {r!r}. Each run is a fresh one-shot call into a fresh output: C, "
              "`prox_pairs` into a new `prox_pair_buffer` (`buffer`) or `prox_lists` "
              "(`lists`), `build/bench_oneshot_points`; Python, `prox.pairs` or "
              "`prox.lists` with `index_dtype=numpy.uint32`, the library's buffer handed to "
              "numpy (the default intp adds a converted copy). C and Python "
              f"alternate round by round, {args.runs} round{'s' if args.runs > 1 else ''} of one "
              "timed run each, both warm (each C process makes one untimed call first, the "
              "Python process one before the rounds); medians. "
              "`threads` 0 is the library's default, every core. The target is Python / C "
              "within 1.10.", "",
              "| task | threads | C median s | Python median s | Python / C | C runs s | "
              "Python runs s |",
              "|---|---:|---:|---:|---:|---|---|"]
    for threads in args.c_threads:
        own = {"threads": threads, "index_dtype": np.uint32}  # the buffer itself, no copy
        for task, fn in (("buffer", lambda: prox.pairs(x, r, **own)),
                         ("lists", lambda: prox.lists(x, r, **own))):
            c_times, py_times = [], []
            fn()  # warm: the module's first call
            for _ in range(args.runs):
                t, c_pairs = c_oneshot(driver, path, task, 2, threads, r)
                c_times.append(t[-1])  # the first run warms the process, as fn() above
                py_times.append(median_time(fn, 1)[0])  # its output released on return
            got = fn()
            py_pairs = len(got) if task == "buffer" else len(got[1]) // 2
            assert py_pairs == c_pairs, (py_pairs, c_pairs)
            del got
            c, p = statistics.median(c_times), statistics.median(py_times)
            lines.append(f"| {task} ({c_pairs:,} pairs) | {threads} | {c:.4f} | {p:.4f} | "
                         f"{p / c:.3f} | {' '.join(f'{v:.3f}' for v in c_times)} | "
                         f"{' '.join(f'{v:.3f}' for v in py_times)} |")
            print(lines[-1], file=sys.stderr, flush=True)
    lines.append("")


def ase_child(args):
    """--ase-child N: one ASE neighbor_list("ij") on W1, its seconds and pairs as JSON."""
    from ase import Atoms
    from ase.neighborlist import neighbor_list as ase_nl
    n = args.ase_child
    _, x = w1_points(str(Path(args.build) / "prox"), n, args.tmp)
    r = w1_radius(n)
    s = ase_scale(r)
    atoms = Atoms(numbers=np.full(n, 18), positions=x * s, cell=[s, s, s], pbc=False)
    t0 = time.perf_counter()
    i, _ = ase_nl("ij", atoms, r * s)
    t = time.perf_counter() - t0
    print(json.dumps({"seconds": t, "pairs": len(i) // 2}))


def run_ase(args, n, cap):
    """ASE at N in a child process under an address-space cap and a time limit:
    (seconds or None, pairs or None, peak resident bytes, error text or None)."""
    cmd = [sys.executable, os.path.abspath(__file__), "--ase-child", str(n),
           "--build", args.build, "--tmp", args.tmp]

    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))

    t0 = time.monotonic()
    out_f, err_f = tempfile.TemporaryFile("w+"), tempfile.TemporaryFile("w+")
    p = subprocess.Popen(cmd, stdout=out_f, stderr=err_f, text=True, preexec_fn=limit)
    deadline = t0 + args.ase_timeout
    timed_out = False
    while True:
        pid, status, usage = os.wait4(p.pid, os.WNOHANG)
        if pid:
            break
        if time.monotonic() > deadline:
            p.send_signal(signal.SIGKILL)
            pid, status, usage = os.wait4(p.pid, 0)
            timed_out = True
            break
        time.sleep(0.2)
    p.returncode = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen
    out_f.seek(0)
    err_f.seek(0)
    out, err = out_f.read(), err_f.read()
    out_f.close()
    err_f.close()
    elapsed = time.monotonic() - t0
    peak = usage.ru_maxrss * 1024
    if timed_out:
        return None, None, peak, f"stopped at the {args.ase_timeout:.0f} s limit"
    if p.returncode != 0:
        last = [l for l in err.strip().splitlines() if l.strip()]
        why = last[-1] if last else f"exit status {p.returncode}"
        if "MemoryError" in why:
            why += f" (the cap: {fmt_gib(cap)})"
        return None, None, peak, f"failed after {elapsed:.0f} s: `{why}`"
    res = json.loads(out.strip().splitlines()[-1])
    return res["seconds"], res["pairs"], peak, None


def part2(args, prox, cli, lines, h):
    from scipy.spatial import cKDTree
    try:
        import ase  # noqa: F401
        have_ase = True
    except ImportError:
        have_ase = False
    cap = int(args.ase_memory * GIB)
    lines += [f"{h} Against scipy and ASE (W1, open unit cube)", "",
              "prox's one-shot calls on one thread (1T) and on every core (the library's "
              "default); scipy's `cKDTree(x).query_pairs(r, output_type=\"ndarray\")` (the "
              "tree's build included) against `prox.pairs`; ASE's "
              "`neighbor_list(\"ij\", atoms, r)` (open cell) against "
              "`prox.neighbor_list(\"ij\", x, r)`, both on W1 scaled by a power of two "
              "(exactly: the same pairs) so that r >= 3, since ASE's bins are at least 3 "
              "(angstrom) wide and the unit cube would be one bin for it. The peers run on "
              "one thread. Ratio: the peer's time over prox's (higher: prox faster). Every "
              "count is checked against prox's. ASE runs once per size, in a child process "
              "of its own: `ASE peak` is that process's peak resident set, "
              "the interpreter and the points included.", "",
              "| N | pairs | prox.pairs 1T s | prox.pairs s | scipy s | scipy / prox 1T | "
              "scipy / prox | prox.neighbor_list 1T s | ASE s | ASE / prox 1T | ASE peak |",
              "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    notes = []
    ase_ran = None  # (n, seconds, peak bytes) of the largest size ASE finished
    for n in args.sizes:
        _, x = w1_points(cli, n, args.tmp)
        r = w1_radius(n)
        runs = args.runs if n <= 100_000 else max(1, args.runs // 2)
        p1, _ = median_time(lambda: prox.pairs(x, r, threads=1), runs)
        pa, _ = median_time(lambda: prox.pairs(x, r, threads=args.threads), runs)
        m = len(prox.pairs(x, r))
        row = [f"{n:,}", f"{m:,}", f"{p1:.4f}", f"{pa:.4f}"]
        if n <= args.peers_max:
            peer_runs = runs if n <= 100_000 else 1
            ts, got = median_time(lambda: cKDTree(x).query_pairs(r, output_type="ndarray"),
                                  peer_runs)
            assert len(got) == m, (len(got), m)
            del got
            row += [f"{ts:.4f}", f"{ts / p1:.1f}", f"{ts / pa:.1f}"]
        else:
            row += ["not run", "", ""]
        s = ase_scale(r)
        xs, rs = x * s, r * s
        nl1, _ = median_time(lambda: prox.neighbor_list("ij", xs, rs, threads=1), runs)
        row.append(f"{nl1:.4f}")
        skip = None
        if not have_ase:
            skip = "ASE is not installed (Debian: python3-ase)"
        elif n > args.ase_max:
            skip = f"above --ase-max ({args.ase_max:,.0f})"
        elif ase_ran and not args.ase_attempt:
            n0, t0, m0 = ase_ran
            need_m, need_t = m0 * n / n0, t0 * n / n0
            why = []
            total = meminfo("MemTotal") or 0
            if total and need_m > total:
                why.append(f"it would need about {fmt_gib(need_m)} of memory, more than the "
                           f"machine has ({fmt_gib(total)})")
            elif need_m > cap:
                why.append(f"it would need about {fmt_gib(need_m)} of memory, more than the "
                           f"{fmt_gib(cap)} this run allows it ({args.ase_memory_why}; the "
                           f"machine has {fmt_gib(total)})")
            if need_t > args.ase_timeout:
                why.append(f"it would take about {need_t:.0f} s, more than the "
                           f"{args.ase_timeout:.0f} s limit")
            if why:
                skip = (f"at {fmt_n(n0)} ASE took {t0:.1f} s and its process peaked at "
                        f"{fmt_gib(m0)} resident (ASE holds every candidate pair of "
                        f"neighbouring bins in numpy arrays of 8-byte integers, then copies "
                        f"them); projected linearly in N, at {fmt_n(n)} " + " and ".join(why))
        if skip:
            row += ["not run", "", ""]
            notes.append(f"ASE at N = {fmt_n(n)}, not run: {skip}.")
        else:
            print(f"ASE at N = {n:,} (cap {fmt_gib(cap)}, limit {args.ase_timeout:.0f} s)",
                  file=sys.stderr, flush=True)
            ta, pairs, peak, err = run_ase(args, n, cap)
            if err:
                row += ["failed", "", fmt_gib(peak)]
                notes.append(f"ASE at N = {fmt_n(n)}: {err}; its process peaked at "
                             f"{fmt_gib(peak)} resident.")
            else:
                assert pairs == m, (pairs, m)
                ase_ran = (n, ta, peak)
                row += [f"{ta:.4f}", f"{ta / nl1:.1f}", fmt_gib(peak)]
        lines.append("| " + " | ".join(row) + " |")
        print(lines[-1], file=sys.stderr, flush=True)
    lines.append("")
    if args.peers_max < max(args.sizes):
        notes.insert(0, f"scipy runs up to N = {args.peers_max:,.0f}; \"not run\" marks "
                        "the others.")
    lines += notes + ([""] if notes else [])


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=str(ROOT / "build"))
    ap.add_argument("--n-c", type=lambda s: int(float(s)), default=1_000_000)
    ap.add_argument("--c-threads", default="0",
                    help="thread counts of part 1, comma-separated (0: every core)")
    ap.add_argument("--sizes", default="1e4,1e5,1e6")
    ap.add_argument("--peers-max", type=float, default=1e6)
    ap.add_argument("--ase-max", type=float, default=1e6)
    ap.add_argument("--ase-memory", type=float,
                    help="ASE's address-space cap, GiB (default: 3/4 of MemAvailable)")
    ap.add_argument("--ase-timeout", type=float, default=900)
    ap.add_argument("--ase-attempt", action="store_true",
                    help="start ASE at every size up to --ase-max, whatever the projection")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--skip-c", action="store_true")
    ap.add_argument("--skip-peers", action="store_true")
    ap.add_argument("--tmp", default="/tmp")
    ap.add_argument("--section", action="store_true",
                    help="write the Python section of docs/benchmarks.md (### headings, no "
                         "title: the report's header names the machine)")
    ap.add_argument("--ase-child", type=int, help=argparse.SUPPRESS)
    ap.add_argument("-o", "--output")
    args = ap.parse_args()
    if args.ase_child is not None:
        ase_child(args)
        return
    args.sizes = [int(float(s)) for s in args.sizes.split(",") if s]
    args.c_threads = [int(t) for t in args.c_threads.split(",") if t]
    args.ase_memory_why = "--ase-memory"
    if args.ase_memory is None:
        args.ase_memory = 0.75 * (meminfo("MemAvailable") or 8 * GIB) / GIB
        args.ase_memory_why = "three quarters of the memory available at the start"
    build = Path(args.build)
    sys.path.insert(0, str(build / "python"))
    import prox

    cli, driver = str(build / "prox"), str(build / "bench_oneshot_points")
    stamp = datetime.datetime.now(datetime.timezone.utc)
    command = " ".join([Path(sys.argv[0]).name] + sys.argv[1:])
    if args.section:
        h = "###"
        here = str(ROOT) + os.sep
        module = str(Path(prox.__file__).resolve().parent)
        lines = [f"Python {platform.python_version()}, numpy {np.__version__}, scipy "
                 f"{version_of('scipy')}, ASE {version_of('ase')}; the module "
                 f"`{module.replace(here, '')}`, built by `make` beside the CLI, "
                 "over the same library. Command: `" + command.replace(here, "") + "`.", ""]
    else:
        h = "##"
        commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
                                capture_output=True, text=True).stdout.strip()
        lines = ["# prox from Python: overhead and peers", "",
                 f"{stamp:%Y-%m-%d %H:%M} UTC, commit {commit}, {cpu_name()}, "
                 f"{os.cpu_count()} CPUs; Python {platform.python_version()}, numpy "
                 f"{np.__version__}, prox module {prox.__file__}.", "",
                 "Command: `" + command + "`", ""]
    if not args.skip_c:
        part1(args, prox, cli, driver, lines, h)
    if not args.skip_peers:
        part2(args, prox, cli, lines, h)
    out = Path(args.output) if args.output else (
        ROOT / "bench" / "results" / f"python-{platform.node()}-{stamp:%Y%m%d-%H%M}.md")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(lines).rstrip("\n") + "\n")
    print(f"wrote {out}", file=sys.stderr)


if __name__ == "__main__":
    main()
