"""k nearest neighbours: prox.knn and prox.KNNIndex against a brute-force
oracle with the library's bits (full sort by (squared distance, index))
and against scipy's cKDTree.query: the same distances always, the same
indices where no two candidates tie; shapes, padding, errors, the CLI."""
import subprocess

import numpy as np
import pytest

import prox
from conftest import dist2


def brute_knn(x, q, k, period=None, self_query=False, max_radius=None):
    """(distances, indices) of the k nearest, sorted by (d2, index), padded."""
    s = dist2(q, x, period)
    if self_query:
        s[np.diag_indices_from(s)] = np.nan  # left out below
    n = len(x)
    d_out = np.full((len(q), k), np.inf)
    i_out = np.full((len(q), k), n, dtype=np.intp)
    for r in range(len(q)):
        keep = ~np.isnan(s[r])
        if max_radius is not None:
            keep &= s[r] <= max_radius * max_radius
        j = np.nonzero(keep)[0]
        order = np.lexsort((j, s[r, j]))[:k]
        d_out[r, :len(order)] = np.sqrt(s[r, j[order]])
        i_out[r, :len(order)] = j[order]
    return d_out, i_out


@pytest.mark.parametrize("dim", [2, 3])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("periodic", [False, True])
def test_knn_matches_brute_force(rng, dim, dtype, periodic):
    x = rng.random((600, dim)).astype(dtype)
    q = (rng.random((200, dim)) * 1.2 - 0.1).astype(dtype)
    box = 1.0 if periodic else None
    period = [1.0] * dim if periodic else None
    for k in (1, 6, 40):
        d, i = prox.knn(x, k, box=box)
        wd, wi = brute_knn(x, x, k, period, self_query=True)
        if k == 1:
            wd, wi = wd[:, 0], wi[:, 0]
        assert d.dtype == np.float64 and i.dtype == np.intp
        assert np.array_equal(d, wd) and np.array_equal(i, wi)
        d, i = prox.knn(x, k, queries=q, box=box, threads=2)
        wd, wi = brute_knn(x, q, k, period)
        assert np.array_equal(d.reshape(wd.shape), wd) and np.array_equal(i.reshape(wi.shape), wi)


def test_knn_ties_and_duplicates_go_by_index():
    g = np.arange(6, dtype=np.float64)
    x = np.stack(np.meshgrid(g, g, indexing="ij"), axis=-1).reshape(-1, 2)
    x = np.concatenate([x, x[:5]])  # duplicates at other indices
    for k in (1, 4, 9, 13):
        d, i = prox.knn(x, k)
        wd, wi = brute_knn(x, x, k, self_query=True)
        assert np.array_equal(d.reshape(wd.shape), wd) and np.array_equal(i.reshape(wi.shape), wi)


def test_knn_max_radius_pads_as_scipy_does(rng):
    x = rng.random((300, 3))
    d, i = prox.knn(x, 20, max_radius=0.1)
    wd, wi = brute_knn(x, x, 20, self_query=True, max_radius=0.1)
    assert np.array_equal(d, wd) and np.array_equal(i, wi)
    assert np.isinf(d).any() and (i[np.isinf(d)] == len(x)).all()


def test_knn_k_above_n_and_empty_sets():
    x = np.array([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0]])
    d, i = prox.knn(x, 4)
    assert d.tolist() == [[1.0] + [np.inf] * 3] * 2
    assert i.tolist() == [[1, 2, 2, 2], [0, 2, 2, 2]]
    d, i = prox.knn(np.zeros((0, 3)), 3, queries=x)
    assert i.tolist() == [[0, 0, 0]] * 2 and np.isinf(d).all()
    d, i = prox.knn(x, 2, queries=np.zeros((0, 3)))
    assert d.shape == (0, 2) and i.shape == (0, 2)


def test_knn_shapes_follow_ckdtree():
    x = np.array([[0.0, 0.0], [1.0, 0.0], [3.0, 0.0]])
    d, i = prox.knn(x, 1, queries=[2.9, 0.0])
    assert np.ndim(d) == 0 and int(i) == 2
    d, i = prox.knn(x, 2, queries=[2.9, 0.0])
    assert d.shape == (2,) and i.tolist() == [2, 1]
    d, i = prox.knn(x, 1)
    assert d.shape == (3,)


def test_knn_bad_input_raises():
    x = np.random.default_rng(1).random((10, 3))
    with pytest.raises(ValueError, match="k is 0"):
        prox.knn(x, 0)
    y = x.copy()
    y[3, 1] = np.nan
    with pytest.raises(ValueError, match="point 3"):
        prox.knn(y, 2)
    with pytest.raises(ValueError):
        prox.knn(x, 2, queries=np.zeros((4, 2)))
    with pytest.raises(ValueError):
        prox.knn(x, 2, max_radius=-1.0)
    with pytest.raises(ValueError):
        prox.knn(x, 2, threads=-1)


def test_index_builds_once_and_matches_knn(rng):
    x = rng.random((800, 3))
    q = rng.random((100, 3))
    t = prox.KNNIndex(x, box=1.0, k=8)
    assert t.size == 800 and t.dim == 3
    for k in (1, 8, 30):
        a = t.query(q, k)
        b = prox.knn(x, k, queries=q, box=1.0)
        assert np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1])
        a = t.query(k=k)
        b = prox.knn(x, k, box=1.0)
        assert np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1])
    assert t.stats["method"].startswith("knn.")
    d, i = t.query(k=1, include_self=True)
    assert (d == 0).all() and (i == np.arange(800)).all()


scipy_spatial = pytest.importorskip("scipy.spatial")


@pytest.mark.parametrize("dim", [2, 3])
@pytest.mark.parametrize("periodic", [False, True])
def test_knn_against_ckdtree(rng, dim, periodic):
    """The same distances always (cKDTree sums the squares in axis order and
    takes sqrt), the same indices for every row without a tie at its k-th
    neighbour (random doubles: none)."""
    x = rng.random((3000, dim)) * 10.0
    q = rng.random((500, dim)) * 10.0
    box = 10.0 if periodic else None
    tree = scipy_spatial.cKDTree(x, boxsize=box)
    for k in (1, 5, 16):
        want_d, want_i = tree.query(q, k)
        d, i = prox.knn(x, k, queries=q, box=box)
        assert np.array_equal(d, want_d)
        assert np.array_equal(i, want_i)
        want_d, want_i = tree.query(x, k + 1)  # itself first, at distance 0
        d, i = prox.knn(x, k, box=box)
        assert np.array_equal(d, want_d[:, 1:].reshape(d.shape))
        assert np.array_equal(i, want_i[:, 1:].reshape(i.shape))


def test_knn_cli(cli, tmp_path):
    x = np.array([[0.0, 0.0], [1.0, 0.0], [3.0, 0.0]])
    src = tmp_path / "x.txt"
    np.savetxt(src, x)
    out = subprocess.run([cli, "knn", "--k", "2", "--dim", "2", str(src)], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    rows = [line.split() for line in out.stdout.splitlines()]
    assert rows == [["0", "1", "1"], ["0", "2", "3"], ["1", "0", "1"], ["1", "2", "2"],
                    ["2", "1", "2"], ["2", "0", "3"]]
    bad = subprocess.run([cli, "knn", "--k", "0", "--dim", "2", str(src)], capture_output=True, text=True)
    assert bad.returncode == 2 and "k" in bad.stderr
