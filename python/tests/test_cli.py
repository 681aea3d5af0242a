"""The same data through the CLI (build/prox, the C library's own front end)
and through Python: identical pairs, lists, box pairs and segment hits."""
import subprocess

import numpy as np
import pytest

import prox


def run(cli, *args):
    return subprocess.run([cli, *map(str, args)], check=True, capture_output=True,
                          text=True).stdout


def header_value(path, key):
    for line in open(path):
        if line.startswith("#") and key + "=" in line:
            return float(line.split(key + "=")[1].split()[0])
    raise KeyError(key)


def read_pairs(text):
    rows = [line.split() for line in text.splitlines() if line and not line.startswith("#")]
    return np.array(rows, dtype=np.int64).reshape(-1, 2)


def read_lists(text):
    offsets, indices = [0], []
    for line in text.splitlines():
        if line.startswith("#") or not line:
            continue
        row = line.split(":")[1].split()
        indices += [int(v) for v in row]
        offsets.append(len(indices))
    return np.array(offsets), np.array(indices, dtype=np.int64)


@pytest.mark.parametrize("periodic", [False, True])
def test_w1_pairs_and_lists_match_the_cli(cli, tmp_path, periodic):
    path = tmp_path / "w1.txt"
    run(cli, "gen", "sph3d", "--n", 20000, "-o", path)
    r = header_value(path, "radius")
    x = np.loadtxt(path)
    extra = ["--periodic", "1,1,1"] if periodic else []
    box = 1.0 if periodic else None
    cli_pairs = read_pairs(run(cli, "pairs", "--radius", repr(r), *extra, path))
    assert np.array_equal(prox.pairs(x, r, box), cli_pairs)
    assert np.array_equal(prox.pairs(x.astype(np.float32), r, box),
                          read_pairs(run(cli, "pairs", "--radius", repr(r), *extra,
                                         _as_f32(tmp_path, x))))
    o, i = read_lists(run(cli, "pairs", "--radius", repr(r), "--lists", *extra, path))
    po, pi = prox.lists(x, r, box)
    assert np.array_equal(po, o) and np.array_equal(pi, i)
    count = int(run(cli, "pairs", "--radius", repr(r), "--count", *extra, path).split()[-1])
    assert prox.count(x, r, box) == count == len(cli_pairs)


def _as_f32(tmp_path, x):
    path = tmp_path / "points.f32"
    x.astype("<f4").tofile(path)
    return path


def test_boxes_and_segments_match_the_cli(cli, tmp_path):
    path = tmp_path / "boxes.txt"
    run(cli, "gen", "mixed2d", "--n", 2000, "--queries", 3000, "-o", path)
    boxes = np.loadtxt(path)
    segments = np.loadtxt(tmp_path / "boxes.segments.txt")
    for algo in prox.broad_algos:
        want = read_pairs(run(cli, "collide", "--dim", 2, "--algo", algo, path))
        b = prox.Broad(boxes, algo=algo)
        assert np.array_equal(b.pairs(), want), algo
        hits = read_pairs(run(cli, "query", "--dim", 2, "--segments", "--algo", algo, path,
                              tmp_path / "boxes.segments.txt"))
        assert np.array_equal(b.query_segments(segments[:, :2], segments[:, 2:]), hits), algo
