#!/usr/bin/python3
"""report.py: the tables and plots of a side-by-side run (run.sh writes the CSV).

    report.py RUN.csv BASE [--machine M] [--compiler C] [--command C] [--commit C] ...

Writes BASE.md (one table per workload and size: rows the libraries; columns
medians of build, query and total time, the ratio of the total to prox's,
peak memory, memory per element, count), prints it, and draws with gnuplot
BASE-W1-time.png, BASE-W3-time.png (total time against N, log-log, one line
per library) and BASE-memory.png (peak memory per element against N).
"""
import argparse
import csv
import os
import shutil
import statistics
import subprocess
import sys
from collections import OrderedDict

MIB = 1024.0 * 1024.0
TITLES = {
    "W1": "W1 `sph3d`: every pair at distance <= r (3D, about 15 pairs per point)",
    "W2": "W2 `nns2d`: full neighbour lists (2D, wide domain)",
    "W3": "W3 `spheres3d`: broad phase over equal spheres",
    "W4": "W4 `mixed2d`: boxes of very different sizes against segments",
}


def load(path):
    cases = OrderedDict()  # (w, n, param) -> OrderedDict((lib, threads) -> [rows])
    with open(path) as f:
        for r in csv.DictReader(f):
            key = (r["workload"], int(r["n"]), r["param"])
            row = (r["library"], int(r["threads"]))
            cases.setdefault(key, OrderedDict()).setdefault(row, []).append(r)
    return cases


def medians(reps):
    m = {k: statistics.median(float(r[k]) for r in reps)
         for k in ("build_s", "query_s", "total_s", "peak_rss_mb")}
    m["count"] = reps[0]["count"]
    m["reps"] = len(reps)
    return m


def case_label(w, n, param):
    return f"{w} N = {n:,}" + (f", {param.replace('=', ' = ')}" if param else "")


def table(w, n, param, rows):
    ref = medians(rows[("prox", 1)]) if ("prox", 1) in rows else None
    out = [f"### {case_label(w, n, param)}", "",
           "| library | threads | build_s | query_s | total_s | x prox | peak_rss_MB | B/element | count |",
           "|---------|--------:|--------:|--------:|--------:|-------:|------------:|----------:|------:|"]
    for (lib, thr), reps in rows.items():
        m = medians(reps)
        ratio = f"{m['total_s'] / ref['total_s']:.2f}" if ref and ref["total_s"] > 0 else "-"
        per = m["peak_rss_mb"] * MIB / n if n else 0
        out.append(f"| {lib} | {thr} | {m['build_s']:.4f} | {m['query_s']:.4f} | "
                   f"{m['total_s']:.4f} | {ratio} | {m['peak_rss_mb']:.1f} | {per:.0f} | "
                   f"{int(m['count']):,} |")
    return out


def series(cases, w, field):
    """(lib, threads) -> [(n, value)] over the sizes of workload w (first param)."""
    s = OrderedDict()
    params = [p for (ww, _, p) in cases if ww == w]
    for (ww, n, p), rows in cases.items():
        if ww != w or p != params[0]:
            continue
        for (lib, thr), reps in rows.items():
            m = medians(reps)
            v = m["total_s"] if field == "time" else m["peak_rss_mb"] * MIB / n
            s.setdefault((lib, thr), []).append((n, v))
    return s


def plot(path, title, ylabel, s, logy=True):
    if not s or not shutil.which("gnuplot") or max(len(v) for v in s.values()) < 2:
        return False
    data = path + ".dat"
    with open(data, "w") as f:
        for (lib, thr), pts in s.items():
            f.write(f'"{lib} ({thr} thr)"\n')
            for n, v in sorted(pts):
                f.write(f"{n} {v:.6g}\n")
            f.write("\n\n")
    # One line per (library, threads): two-thread rows dashed, prox's rows thick.
    lines = []
    for i, (lib, thr) in enumerate(s):
        style = f"lw {3 if lib.startswith('prox') else 1.5} dt {2 if thr > 1 else 1} pt {i % 13 + 1}"
        lines.append(f"'{data}' index {i} using 1:2 with linespoints {style} title columnheader(1)")
    script = f"""set terminal pngcairo size 1100,650 noenhanced
set output '{path}'
set title '{title}'
set logscale x
{'set logscale y' if logy else ''}
set xlabel 'N'
set ylabel '{ylabel}'
set key outside right top
set rmargin 34
set grid
plot {", ".join(lines)}
"""
    try:
        subprocess.run(["gnuplot"], input=script, text=True, check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    except subprocess.CalledProcessError as e:
        print(f"report.py: gnuplot failed for {path}: {e.stderr}", file=sys.stderr)
        return False
    finally:
        os.remove(data)
    return True


def skipped_rows(path):
    """Rows a driver declined at some sizes (exit 77: quadratic peers)."""
    if not path or not os.path.exists(path):
        return []
    with open(path) as f:
        seen = {}
        for r in csv.DictReader(f):
            seen.setdefault((r["workload"], r["library"], r["threads"]), []).append(r["n"])
    if not seen:
        return []
    md = ["## Rows not run at some sizes", "",
          "Their drivers decline sizes above their `--max-n` (quadratic builds):", ""]
    for (w, lib, thr), ns in seen.items():
        sizes = ", ".join(sorted(set(ns), key=int))
        md.append(f"- {w} `{lib}` ({thr} thread{'s' if thr != '1' else ''}): not run at N = {sizes}")
    return md + [""]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("csv")
    ap.add_argument("base")
    for k in ("machine", "compiler", "command", "commit", "elapsed", "load", "skipped"):
        ap.add_argument("--" + k, default="")
    a = ap.parse_args()
    cases = load(a.csv)
    md = ["# Side by side: prox and its peers", "",
          f"- machine: {a.machine}", f"- compiler and flags: {a.compiler}",
          f"- command: `{a.command}` (run time {a.elapsed} s)", f"- commit: {a.commit}",
          f"- {a.load} (2 cores shared with other users: timings are noisy)",
          f"- data: `{os.path.basename(a.csv)}` (every repetition)",
          "- times are medians over the repetitions, in seconds, file reading and output "
          "excluded; `x prox` is the row's total over the one-thread `prox` row's; "
          "peak_rss_MB is the process's peak resident set (input included), B/element "
          "the same per point, sphere or box", ""]
    last_w = None
    for (w, n, param), rows in cases.items():
        if w != last_w:
            md += [f"## {TITLES.get(w, w)}", ""]
            last_w = w
        md += table(w, n, param, rows) + [""]
    md += skipped_rows(a.skipped)
    plots = []
    for w in ("W1", "W3"):
        p = f"{a.base}-{w}-time.png"
        if plot(p, f"{w}: total time (build + query) against N, medians", "seconds",
                series(cases, w, "time")):
            plots.append(p)
    for w in ("W1", "W3"):
        p = f"{a.base}-{w}-memory.png"
        if plot(p, f"{w}: peak memory per element against N (input included)",
                "bytes per element", series(cases, w, "memory")):
            plots.append(p)
    if plots:
        md += ["## Plots", ""] + [f"![{os.path.basename(p)}]({os.path.basename(p)})" for p in plots] + [""]
    text = "\n".join(md)
    with open(a.base + ".md", "w") as f:
        f.write(text)
    print(text)


if __name__ == "__main__":
    main()
