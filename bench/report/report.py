#!/usr/bin/python3
"""report.py: docs/benchmarks.md from a bench-report run (report.sh calls it).

    report.py --csv PEERS.csv --own DIR --intro intro.md --out FILE --img DIR
              [--python SECTION.md] [--skipped S.csv] [--cpu C] [--isa I] [--simd S] ...
    report.py --python-only --python SECTION.md --out FILE ...

Reads the peers' CSV (bench/peers/run.sh, every repetition), prox's own
benchmark outputs (DIR/*.txt: first line "WORKLOAD COMMAND", then the
command's stdout) and the Python section (bench/python_bench.py --section),
and writes one Markdown file: the hand-written introduction, the machine, a
summary, then per workload the side-by-side tables (medians, ratio to prox,
memory), prox's own tables and the plots, then the Python section. With
--python-only it rewrites only the Python section of FILE (between its
markers, or before the rows not run where FILE has none), naming the
machine, SIMD level, commit and load of that run, since the header above
it describes another.
"""
import argparse
import glob
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "peers"))
import report as peers  # noqa: E402  (bench/peers/report.py: load, medians, table, plot)

WORKLOADS = [
    ("W1", "W1 `sph3d`: 3D fixed-radius neighbours, about 30 per point"),
    ("W2", "W2 `nns2d`: 2D neighbour lists over a wide domain"),
    ("W3", "W3 `spheres3d`: broad phase over equal spheres, built from scratch"),
    ("W4", "W4 `mixed2d`: boxes of very different sizes against moving segments"),
    ("W5", "W5 `fluid3d`: the fluid scene (`make run`)"),
    ("W6", "W6 `dem3d`: spheres falling into a pile"),
    ("W7", "W7 `poly3d`: polydisperse spheres (radii over 1:100)"),
]
# Rows that do a different task from the peers (a count instead of the pairs or
# lists the peers return): shown in the tables, left out of the summary.
NOT_COMPARABLE = {"prox-count"}


def is_prox(lib):
    return lib == "prox" or lib.startswith("prox-")


def fmt_s(x):
    return f"{x:.3f} s" if x >= 0.01 else f"{x * 1000:.2f} ms"


def summary(cases, largest_only=False):
    out = ["| workload | size | prox, defaults | fastest prox row | fastest peer | peer / prox |",
           "|---|---|---:|---:|---:|---:|"]
    largest = {}
    for (w, n, param) in cases:
        largest[w] = max(largest.get(w, 0), n)
    for (w, n, param), rows in cases.items():
        if largest_only and n != largest[w]:
            continue
        med = {key: peers.medians(reps) for key, reps in rows.items()}
        ref = med.get(("prox", 1))
        mine = [(m["total_s"], lib) for (lib, thr), m in med.items()
                if thr == 1 and is_prox(lib) and lib not in NOT_COMPARABLE]
        theirs = [(m["total_s"], lib) for (lib, thr), m in med.items()
                  if thr == 1 and not is_prox(lib)]
        if not ref or not mine or not theirs:
            continue
        best_mine, best_theirs = min(mine), min(theirs)
        size = f"N = {n:,}" + (f", {param.replace('=', ' = ')}" if param else "")
        ratio = best_theirs[0] / best_mine[0] if best_mine[0] > 0 else float("inf")
        out.append(f"| {w} | {size} | {fmt_s(ref['total_s'])} | {fmt_s(best_mine[0])} "
                   f"(`{best_mine[1]}`) | {fmt_s(best_theirs[0])} (`{best_theirs[1]}`) | "
                   f"{ratio:.1f}x |")
    return out


PY_BEGIN = "<!-- python section: written by make bench-report (bench/python_bench.py) -->"
PY_END = "<!-- end of the python section -->"
PY_TITLE = "## Python: the module against the same call in C, scipy and ASE"
SKIPPED_TITLE = "## Rows not run at some sizes"


def python_section(a, separate):
    """The Python section, between its markers; `separate`: measured apart from the header."""
    with open(a.python) as f:
        body = f.read().rstrip("\n").splitlines()
    if separate:
        cpu = a.cpu.split(";")[0]
        where = (f"Measured by `make bench-report ARGS=\"--{a.mode} --python-only\"`, apart "
                 f"from the tables above: commit {a.commit}, {cpu}, {a.cores} cores, "
                 f"{a.simd}; load average {a.load}{loaded_note(a)}.")
    else:
        where = ("Measured in the run the header above describes (its machine, SIMD level "
                 "and load).")
    return [PY_BEGIN, "", PY_TITLE, "", where, ""] + body + ["", PY_END]


def splice_python(path, section):
    """FILE with its Python section replaced, or inserted before the rows not run."""
    with open(path) as f:
        text = f.read()
    block = "\n".join(section)
    if PY_BEGIN in text and PY_END in text:
        head, rest = text.split(PY_BEGIN, 1)
        _, tail = rest.split(PY_END, 1)
        return head + block + tail
    if "\n" + SKIPPED_TITLE in text:
        head, tail = text.split("\n" + SKIPPED_TITLE, 1)
        return head.rstrip("\n") + "\n\n" + block + "\n\n" + SKIPPED_TITLE + tail
    return text.rstrip("\n") + "\n\n" + block + "\n"


README_BEGIN = "<!-- bench-report summary: written by make bench-report -->"
README_END = "<!-- end of the bench-report summary -->"


def simd_words(a):
    """The SIMD level the run used, as a phrase: `simd=avx2`, or for a build
    without run-time dispatch the widest ISA it was built for."""
    if a.simd.startswith("simd=native"):
        return f"a `-march=native` build for its {a.isa}"
    return f"`{a.simd}`"


def update_readme(path, cases, a):
    """The README's comparison: the summary's largest size per workload."""
    if not os.path.exists(path):
        return
    with open(path) as f:
        text = f.read()
    if README_BEGIN not in text or README_END not in text:
        print(f"report.py: {path} has no summary markers; left alone", file=sys.stderr)
        return
    head, rest = text.split(README_BEGIN, 1)
    _, tail = rest.split(README_END, 1)
    cpu = a.cpu.split(";")[0].replace(" (", ", ").replace(")", "")
    block = [README_BEGIN, "",
             f"Measured by `make bench-report ARGS=--{a.mode}` at commit {a.commit} on "
             f"{cpu}, {simd_words(a)} ({a.cores} cores"
             f"{', shared and loaded' if loaded_note(a) else ''}; "
             f"full tables in [docs/benchmarks.md](docs/benchmarks.md)):",
             ""] + summary(cases, largest_only=True) + ["", README_END]
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(head + "\n".join(block) + tail)
    os.replace(tmp, path)


def loaded_note(a):
    """Says so when other work held the cores: the load average above their count."""
    try:
        busy = float(a.load.split()[0]) > float(a.cores)
    except (ValueError, IndexError):
        return ""
    return (": the machine was shared with other work and loaded beyond its cores, so "
            "every figure is noisy; ratios within one case are more reliable than "
            "absolute times") if busy else ""


def own_section(path):
    """A prox benchmark's output: its command, text lines in a block, tables as they are."""
    with open(path) as f:
        lines = f.read().splitlines()
    command = lines[0].split(" ", 1)[1]
    out = [f"`{command}`", ""]
    text = []

    def flush():
        if text:
            out.extend(["```text"] + text + ["```", ""])
            text.clear()

    in_table = False
    for line in lines[1:]:
        if line.startswith("machine:") or line.startswith("build:") or line.startswith("command:"):
            continue  # in the machine header already
        if line.startswith("|"):
            flush()
            out.append(line)
            in_table = True
            continue
        if in_table:
            out.append("")
            in_table = False
        if line.strip():
            text.append(line)
    flush()
    if in_table:
        out.append("")
    return out


SIZE_OPTIONS = {"--n": "N", "--k": "k", "--particles": "particles"}


def own_sizes(path):
    """The sizes a benchmark's command names (its first line), in order:
    [(label, value)] for --n, --k and --particles."""
    with open(path) as f:
        words = f.readline().split()
    return [(SIZE_OPTIONS[w], int(float(v))) for w, v in zip(words, words[1:])
            if w in SIZE_OPTIONS]


def own_files(directory):
    """Each workload's benchmark outputs, by the sizes their commands name
    (W1 at 1M before 4M; W2 at k = 1, 5, 20), whatever the file names."""
    by_w = {}
    for path in glob.glob(os.path.join(directory, "*.txt")):
        with open(path) as f:
            w = f.readline().split(" ", 1)[0]
        by_w.setdefault(w, []).append(path)
    for paths in by_w.values():
        paths.sort(key=lambda p: ([v for _, v in own_sizes(p)], p))
    return by_w


def own_heading(path, several):
    """The section's heading; where a workload has several, the sizes that
    tell them apart."""
    if not several:
        return "### prox's own benchmark"
    parts = [f"{label} = {value:,}" for label, value in own_sizes(path)]
    return "### prox's own benchmark" + (", " + ", ".join(parts) if parts else "")


def main():
    ap = argparse.ArgumentParser()
    for k in ("intro", "out", "img"):
        ap.add_argument("--" + k, required=True)
    for k in ("csv", "own", "python", "readme", "skipped", "cpu", "isa", "simd", "cores",
              "compiler", "version", "commit", "mode", "reps", "elapsed", "load"):
        ap.add_argument("--" + k, default="")
    ap.add_argument("--python-only", action="store_true")
    a = ap.parse_args()
    if a.python_only:
        if not a.python:
            ap.error("--python-only needs --python")
        text = splice_python(a.out, python_section(a, separate=True))
        tmp = a.out + ".tmp"
        with open(tmp, "w") as f:
            f.write(text.rstrip("\n") + "\n")
        os.replace(tmp, a.out)
        return
    if not a.csv or not a.own:
        ap.error("--csv and --own are needed (or --python-only)")
    cases = peers.load(a.csv)
    own = own_files(a.own)
    with open(a.intro) as f:
        intro = f.read().rstrip("\n").splitlines()

    md = ["<!-- Generated by `make bench-report` (bench/report/report.sh). Edit "
          "bench/report/intro.md, not this file. -->", ""] + intro + [""]
    md += ["## Machine and run", "",
           "| | |", "|---|---|",
           f"| CPU | {a.cpu}; {a.cores} cores online; widest vector ISA the CPU reports: {a.isa} |",
           f"| SIMD level in use | {a.simd} |",
           f"| prox | {a.version}, commit {a.commit}, built by `make` (Release"
           f"{', `-march=native`' if a.simd.startswith('simd=native') else ', every SIMD level, one chosen at run time'}) |",
           f"| compiler | {a.compiler} |",
           f"| command | `make bench-report ARGS=--{a.mode}` (peer rows: "
           f"{'one run' if a.reps == '1' else f'median of {a.reps} runs'}; "
           f"{a.elapsed} s end to end) |",
           f"| load average | {a.load}{loaded_note(a)} |", "",
           "Times are medians, in seconds, reading the input and writing the output "
           "excluded; every row of a case counted the same pairs as the `prox` row (the "
           "run stops otherwise). `x prox` is a row's total over the one-thread `prox` "
           "row's; `peak_rss_MB` is the process's peak resident set, input included; "
           "`B/element` the same per point, sphere or box. One-thread rows are pinned to "
           "one core, two-thread rows to two.", ""]
    md += ["## Summary", "",
           "One thread each. `prox, defaults` is the CLI with no options; the fastest prox "
           "row and the fastest peer do the same task (pairs, lists, overlapping boxes or "
           "segment hits; prox's count-only rows are left out).", ""]
    md += summary(cases) + [""]

    plots = {}
    for w in ("W1", "W3"):
        for field, title, ylabel in (("time", "total time (build + query) against N, medians", "seconds"),
                                     ("memory", "peak memory per element against N (input included)",
                                      "bytes per element")):
            path = os.path.join(a.img, f"benchmarks-{w}-{field}.png")
            if peers.plot(path, f"{w}: {title}", ylabel, peers.series(cases, w, field)):
                plots.setdefault(w, []).append(path)

    rel = os.path.relpath(a.img, os.path.dirname(os.path.abspath(a.out)))
    for w, title in WORKLOADS:
        w_cases = [(k, rows) for k, rows in cases.items() if k[0] == w]
        if not w_cases and w not in own:
            continue
        md += [f"## {title}", ""]
        if w_cases:
            md += ["### prox and its peers", ""]
            for (ww, n, param), rows in w_cases:
                t = peers.table(ww, n, param, rows)
                md += ["#### " + t[0].lstrip("# ")] + t[1:] + [""]
        for path in own.get(w, []):
            md += [own_heading(path, len(own[w]) > 1), ""] + own_section(path)
        for p in plots.get(w, []):
            md += [f"![{os.path.basename(p)}]({rel}/{os.path.basename(p)})", ""]
    if a.python:
        md += python_section(a, separate=False) + [""]
    md += peers.skipped_rows(a.skipped)

    tmp = a.out + ".tmp"
    with open(tmp, "w") as f:
        f.write("\n".join(md).rstrip("\n") + "\n")
    os.replace(tmp, a.out)
    if a.readme:
        update_readme(a.readme, cases, a)


if __name__ == "__main__":
    main()
