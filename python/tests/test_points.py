"""Points: pairs, lists, counts, ball queries and pair geometry against
brute force with the library's bits and against scipy's cKDTree; dtypes,
strides, sizes, threads, determinism."""
import threading
import tracemalloc

import numpy as np
import pytest

import prox
from conftest import as_rows, brute_pairs, brute_query, dist2, pairs_of_lists

DTYPES = [np.float64, np.float32]


def cloud(rng, n, dim, dtype=np.float64, scale=1.0):
    return (rng.random((n, dim)) * scale).astype(dtype)


@pytest.mark.parametrize("dim", [2, 3])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("periodic", [False, True])
def test_pairs_lists_count_match_brute_force(rng, dim, dtype, periodic):
    x = cloud(rng, 700, dim, dtype)
    r = 0.09 if dim == 3 else 0.05
    box = 1.0 if periodic else None
    want = brute_pairs(x, r, [1.0] * dim if periodic else None)
    got = prox.pairs(x, r, box)
    assert got.dtype == np.intp and got.shape == want.shape
    assert np.array_equal(got, want)
    offsets, indices = prox.lists(x, r, box)
    both = np.concatenate([want, want[:, ::-1]])
    both = both[np.lexsort((both[:, 1], both[:, 0]))]
    assert np.array_equal(pairs_of_lists(offsets, indices), both)
    assert prox.count(x, r, box) == len(want)
    for algo in ("brute", "grid"):
        assert np.array_equal(prox.pairs(x, r, box, algo=algo), want)


def test_hierarchical_algo_and_key_schemes(rng):
    x = cloud(rng, 500, 3)
    want = brute_pairs(x, 0.1)
    assert np.array_equal(prox.pairs(x, 0.1, algo="hierarchical", threads=1), want)
    for keys in ("linear", "morton", "hash"):
        assert np.array_equal(prox._prox._search(x, 0.1, keys=keys), want)
        assert np.array_equal(prox.Grid(0.1, keys=keys, points=x).pairs(), want)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("boxsize", [None, 1.0, [1.0, 2.0, 1.5]])
def test_against_ckdtree(rng, dtype, boxsize):
    cKDTree = pytest.importorskip("scipy.spatial").cKDTree
    scale = np.array([1.0, 2.0, 1.5] if boxsize != 1.0 else [1.0] * 3, dtype)
    x = cloud(rng, 2000, 3, dtype) * scale
    q = cloud(rng, 300, 3, dtype) * scale
    r = 0.12
    tree = cKDTree(x.astype(np.float64), boxsize=boxsize)
    # query_pairs
    want = tree.query_pairs(r, output_type="ndarray")
    want = want[np.lexsort((want[:, 1], want[:, 0]))]
    assert np.array_equal(prox.pairs(x, r, box=boxsize), want)
    # query_ball_point: the same rows, each sorted
    want_rows = [sorted(row) for row in tree.query_ball_point(q.astype(np.float64), r)]
    offsets, indices = prox.query(x, q, r, box=boxsize)
    assert as_rows(offsets, indices) == want_rows
    qp = prox.query(x, q, r, box=boxsize, output="pairs")
    assert np.array_equal(qp, pairs_of_lists(offsets, indices))
    assert prox.query(x, q, r, box=boxsize, output="count") == len(qp)
    # sparse_distance_matrix: the same (i, j) with distances within 1 ulp
    other = cKDTree(q.astype(np.float64), boxsize=boxsize)
    sdm = other.sparse_distance_matrix(tree, r, output_type="ndarray")
    order = np.lexsort((sdm["j"], sdm["i"]))
    sdm = sdm[order]
    assert np.array_equal(np.stack([sdm["i"], sdm["j"]], axis=1), qp)
    d = prox.pair_geometry(x, qp, "d", box=boxsize, queries=q)
    np.testing.assert_array_max_ulp(d, sdm["v"], maxulp=1)


def test_sparse_distance_matrix_self(rng):
    cKDTree = pytest.importorskip("scipy.spatial").cKDTree
    x = cloud(rng, 1500, 3)
    r = 0.1
    tree = cKDTree(x, boxsize=1.0)
    sdm = tree.sparse_distance_matrix(tree, r, output_type="ndarray")
    sdm = sdm[sdm["i"] < sdm["j"]]
    sdm = sdm[np.lexsort((sdm["j"], sdm["i"]))]
    p = prox.pairs(x, r, box=1.0)
    assert np.array_equal(np.stack([sdm["i"], sdm["j"]], axis=1), p)
    np.testing.assert_array_max_ulp(prox.pair_geometry(x, p, box=1.0), sdm["v"], maxulp=1)


def test_geometry_is_the_same_computation(rng):
    """d, D, S as documented: D = x[j] - x[i] + S*L, d = |D| in double, and
    |D| agrees with the minimum-image distance of the library's test."""
    L = np.array([1.0, 2.0, 3.0])
    x = rng.random((800, 3)) * L * 3 - L  # coordinates outside the box, wrapped
    p = prox.pairs(x, 0.2, box=L)
    d, D, S = prox.pair_geometry(x, p, "dDS", box=L)
    i, j = p[:, 0].astype(np.int64), p[:, 1].astype(np.int64)
    assert np.array_equal(D, x[j] - x[i] + S * L)
    assert np.array_equal(d, np.sqrt(D[:, 0] * D[:, 0] + D[:, 1] * D[:, 1] + D[:, 2] * D[:, 2]))
    # the library decides on wrapped coordinates, which lose the low bits
    # of points outside [0, L): the same distance up to that rounding
    exact = np.sqrt(dist2(x, x, L)[i, j])
    assert np.all(np.abs(d - exact) <= 8 * np.finfo(float).eps * np.abs(x).max())
    assert np.all(np.abs(D) <= L / 2 + 1e-12)
    # open axes: D is x[j] - x[i] exactly, S zero
    p = prox.pairs(x, 0.2)
    D, S = prox.pair_geometry(x, (p[:, 0], p[:, 1]), "DS")
    assert np.array_equal(D, x[p[:, 1]] - x[p[:, 0]]) and not S.any()


def strided_variants(x):
    """The same points through every layout numpy offers, none copied by prox."""
    n, dim = x.shape
    yield "fortran", np.asfortranarray(x)
    wide = np.zeros((n, dim + 3), x.dtype)
    wide[:, 2:2 + dim] = x
    yield "columns of a wider array", wide[:, 2:2 + dim]
    every_other = np.zeros((2 * n, dim), x.dtype)
    every_other[::2] = x
    yield "every other row", every_other[::2]
    yield "reversed columns", np.ascontiguousarray(x[:, ::-1])[:, ::-1]
    rec = np.zeros(n, dtype=[("id", "i8"), ("pos", x.dtype, (dim,)), ("v", "f4")])
    rec["pos"] = x
    yield "field of a structured array", rec["pos"]
    packed = np.zeros(n, dtype=np.dtype([("tag", "i1"), ("pos", x.dtype, (dim,))], align=False))
    packed["pos"] = x
    yield "misaligned packed field (copied)", packed["pos"]
    yield "big-endian (copied)", x.astype(x.dtype.newbyteorder(">"))


@pytest.mark.parametrize("dtype", DTYPES)
def test_strided_inputs(rng, dtype):
    x = cloud(rng, 600, 3, dtype)
    want = prox.pairs(x, 0.1)
    q = cloud(rng, 100, 3, dtype)
    want_q = prox.query(x, q, 0.1, output="pairs")
    for name, view in strided_variants(x):
        assert np.array_equal(prox.pairs(view, 0.1), want), name
        assert np.array_equal(prox.query(view, q, 0.1, output="pairs"), want_q), name
        for qname, qview in strided_variants(q):
            assert np.array_equal(prox.query(view, qview, 0.1, output="pairs"), want_q), qname
    # reversed rows (a negative stride): point k is x[n-1-k]
    rev = x[::-1]
    n = len(x)
    got = prox.pairs(rev, 0.1)
    back = np.sort(n - 1 - got.astype(np.int64), axis=1)
    assert np.array_equal(back[np.lexsort((back[:, 1], back[:, 0]))], want)


def test_strided_read_makes_no_copy():
    n = 400_000
    x = np.asfortranarray(np.random.default_rng(1).random((n, 3)))
    view = np.zeros((n, 6))[:, 1:4]
    view[:] = x
    tracemalloc.start()
    try:
        prox.count(x, 0.005)
        prox.count(view, 0.005)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < x.nbytes / 4  # a copy of the points would show as 9.6 MB


def test_python_lists_and_integers_are_converted():
    assert prox.pairs([[0, 0], [1, 0], [5, 5]], 1.0).tolist() == [[0, 1]]
    assert prox.count(np.array([[0, 0, 0], [0, 0, 1]], dtype=np.int32), 1.0) == 1
    assert prox.count(np.array([[0, 0], [0, 1]], dtype=np.float16), 1.0) == 1


@pytest.mark.parametrize("dim", [2, 3])
def test_sizes_zero_and_one(dim):
    for n in (0, 1):
        x = np.zeros((n, dim))
        assert prox.pairs(x, 1.0).shape == (0, 2)
        offsets, indices = prox.lists(x, 1.0)
        assert offsets.tolist() == [0] * (n + 1) and indices.shape == (0,)
        assert prox.count(x, 1.0, box=10.0) == 0
        off, ind = prox.query(x, np.zeros((3, dim)), 1.0)
        assert off.tolist() == ([0, 0, 0, 0] if n == 0 else [0, 1, 2, 3])
        assert prox.query(np.zeros((5, dim)), x, 1.0, output="pairs").shape == (5 * n, 2)
        assert prox.pair_geometry(x, np.zeros((0, 2), np.uint32), "d").shape == (0,)
        g = prox.Grid(1.0, points=x)
        assert g.count() == 0 and g.size == n
    with pytest.raises(ValueError):
        prox.pairs(np.zeros((0,)), 1.0)


def test_threads_give_identical_output(rng):
    x = cloud(rng, 20000, 3)
    r = 0.03
    one = prox.pairs(x, r, threads=1)
    for t in (0, 2, 3):
        assert np.array_equal(prox.pairs(x, r, threads=t), one)
        assert np.array_equal(prox.pairs(x, r, threads=t, sort=False),
                              prox.pairs(x, r, threads=1, sort=False))
        o1, i1 = prox.lists(x, r, threads=1)
        o2, i2 = prox.lists(x, r, threads=t)
        assert np.array_equal(o1, o2) and np.array_equal(i1, i2)
    uns = prox.pairs(x, r, sort=False)
    assert np.array_equal(uns[np.lexsort((uns[:, 1], uns[:, 0]))], one)
    offsets, indices = prox.lists(x, r, sort=False)
    so, si = prox.lists(x, r)
    assert np.array_equal(offsets, so)
    assert all(sorted(a) == b for a, b in zip(as_rows(offsets, indices), as_rows(so, si)))


def test_search_releases_the_gil():
    x = np.random.default_rng(2).random((1_000_000, 3))
    ticks = [0]
    stop = threading.Event()

    def spin():
        while not stop.is_set():
            ticks[0] += 1

    t = threading.Thread(target=spin)
    t.start()
    try:
        before = ticks[0]
        prox.count(x, 0.02, threads=1)  # long enough for many switch intervals
        during = ticks[0] - before
    finally:
        stop.set()
        t.join()
    assert during > 0


def test_adversarial_points(rng):
    """Duplicates, points on cell faces, negative and huge coordinates."""
    r = 0.25
    grid = np.stack(np.meshgrid(*[np.arange(-2, 2, r)] * 3), -1).reshape(-1, 3)
    x = np.concatenate([grid, grid[:50], grid[:20] + 1e5, -grid[:30] * 1e3])
    assert np.array_equal(prox.pairs(x, r), brute_pairs(x, r))
    q = np.concatenate([grid[::7] + r / 2, grid[:5]])
    assert np.array_equal(prox.query(x, q, r, output="pairs"), brute_query(x, q, r))
    with pytest.raises(ValueError, match="cells"):  # 2^31 cells along an axis
        prox.pairs(np.array([[0.0, 0, 0], [1e9, 0, 0]]), 0.25)
