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


# ---- k nearest images in a cell of any shape ------------------------------

def brute_cell_knn(x, q, k, cell, pbc, self_query=False, include_self=False, max_radius=None):
    """The k nearest images (j, S) of each query by the rule of cell.h:
    D = (x_j - x_q) + ((S0*a + S1*b) + S2*c) in double, every S in a box
    wide enough for the k-th distance (grown until k images lie within
    it), sorted by (D.D, j, S)."""
    x = np.asarray(x, dtype=np.float64)
    q = np.asarray(q, dtype=np.float64)
    n, dim = x.shape
    c = np.zeros((3, 3))
    c[:dim, :dim] = cell
    periodic = [bool(pbc[a]) if a < dim else False for a in range(3)]
    m = c.copy()  # zero rows (open axes, the 2D plane's normal) made unit vectors
    for a in range(3):
        if not m[a].any():
            m[a] = np.eye(3)[max(range(3), key=lambda e: abs(np.linalg.det(
                np.vstack([m[:a], np.eye(3)[e], m[a + 1:]]))))]
    heights = [abs(np.linalg.det(m)) / np.linalg.norm(np.cross(m[(a + 1) % 3], m[(a + 2) % 3]))
               for a in range(3)]
    frac = np.linalg.solve(m.T, np.pad(np.vstack([x, q]), ((0, 0), (0, 3 - dim))).T).T
    span = frac.max(axis=0) - frac.min(axis=0) if len(frac) else np.zeros(3)
    out_d = np.full((len(q), k), np.inf)
    out_i = np.full((len(q), k), n, dtype=np.intp)
    out_s = np.zeros((len(q), k, dim), dtype=np.int64)
    radius = min(h for h, p in zip(heights, periodic) if p) if any(periodic) else np.inf
    for r in range(len(q)):
        rad = radius
        while True:
            limit = rad if max_radius is None else min(rad, max_radius)
            ranges = [np.arange(-int(np.ceil(limit / heights[a] + span[a])) - 1,
                                int(np.ceil(limit / heights[a] + span[a])) + 2)
                      if periodic[a] else np.zeros(1, dtype=np.int64) for a in range(3)]
            S = np.array(np.meshgrid(*ranges, indexing="ij")).reshape(3, -1).T
            shift = (S[:, 0:1] * c[0] + S[:, 1:2] * c[1]) + S[:, 2:3] * c[2]
            D = (np.pad(x, ((0, 0), (0, 3 - dim)))[:, None, :] - np.pad(q[r], (0, 3 - dim))) \
                + shift[None, :, :]
            d2 = (D[..., 0] * D[..., 0] + D[..., 1] * D[..., 1]) + D[..., 2] * D[..., 2]
            j = np.repeat(np.arange(n), len(S))
            s = np.tile(S, (n, 1))
            d2 = d2.ravel()
            keep = d2 <= limit * limit
            if self_query and not include_self:
                keep &= ~((j == r) & ~s.any(axis=1))
            if keep.sum() >= k or not any(periodic) or limit == max_radius:
                break
            rad *= 2
        j, s, d2 = j[keep], s[keep], d2[keep]
        order = np.lexsort((s[:, 2], s[:, 1], s[:, 0], j, d2))[:k]
        out_d[r, :len(order)] = np.sqrt(d2[order])
        out_i[r, :len(order)] = j[order]
        out_s[r, :len(order)] = s[order][:, :dim]
    return out_d, out_i, out_s


def random_cell(rng, dim):
    """Rows of lengths 0.7-1.3 at angles 40-140 degrees, rotated (3D)."""
    if dim == 2:
        t = np.radians(rng.uniform(40, 140))
        return np.array([[1.0, 0.0], [np.cos(t), np.sin(t)]]) * rng.uniform(0.7, 1.3, (2, 1))
    a = np.radians(rng.uniform(60, 120, 3))
    m = np.zeros((3, 3))
    m[0] = [1, 0, 0]
    m[1] = [np.cos(a[2]), np.sin(a[2]), 0]
    cx = np.cos(a[1])
    cy = (np.cos(a[0]) - np.cos(a[1]) * np.cos(a[2])) / np.sin(a[2])
    m[2] = [cx, cy, np.sqrt(max(1 - cx * cx - cy * cy, 0.05))]
    q, _ = np.linalg.qr(rng.normal(size=(3, 3)))
    return (m * rng.uniform(0.7, 1.3, (3, 1))) @ q


@pytest.mark.parametrize("dim", [2, 3])
@pytest.mark.parametrize("case", range(6))
def test_cell_knn_matches_image_brute_force(rng, dim, case):
    cell = random_cell(rng, dim)
    pbc = [True] * dim if case % 3 == 0 else list(rng.random(dim) < 0.6)
    n = [1, 3, 12, 40, 7, 25][case]
    k = [5, 12, 3, 20, 30, 1][case]
    x = (rng.random((n, dim)) * 3 - 1) @ cell  # unwrapped: fractions in [-1, 2)
    d, i, S = prox.knn(x, k, cell=cell, pbc=pbc)
    want = brute_cell_knn(x, x, k, cell, pbc, self_query=True)
    if k == 1:
        want = tuple(w[:, 0] for w in want)
    np.testing.assert_array_equal(i, want[1])
    np.testing.assert_array_equal(d, want[0])
    np.testing.assert_array_equal(S, want[2])
    q = (rng.random((9, dim)) * 2 - 0.5) @ cell
    d, i, S = prox.knn(x, k, queries=q, cell=cell, pbc=pbc, max_radius=0.8)
    want = brute_cell_knn(x, q, k, cell, pbc, max_radius=0.8)
    if k == 1:
        want = tuple(w[:, 0] for w in want)
    np.testing.assert_array_equal(i, want[1])
    np.testing.assert_array_equal(d, want[0])
    np.testing.assert_array_equal(S, want[2])


def test_cell_knn_takes_atoms_and_agrees_with_ase():
    """The k nearest images of ase.Atoms (primitive fcc, a rattled
    triclinic supercell, mixed pbc) against ASE's neighbor_list cut at
    each atom's k-th distance: the same sorted distances and (j, S)."""
    ase_build = pytest.importorskip("ase.build")
    from ase.neighborlist import neighbor_list
    cu = ase_build.bulk("Cu", "fcc", a=3.6)
    tri = ase_build.bulk("Cu", "fcc", a=3.6) * (2, 1, 3)
    tri.rattle(0.05, seed=3)
    tri.set_cell(tri.cell.array + [[0, 0.4, 0], [0.3, 0, 0], [0, 0, 0]], scale_atoms=True)
    slab = tri.copy()
    slab.pbc = [True, False, True]
    for atoms in (cu, tri, slab):
        for k in (1, 12, 19):
            d, i, S = prox.knn(atoms, k)
            d, i, S = d.reshape(len(atoms), -1), i.reshape(len(atoms), -1), \
                S.reshape(len(atoms), -1, 3)
            cutoff = d[:, -1].max() * (1 + 1e-9)
            ai, aj, ad, aS = neighbor_list("ijdS", atoms, cutoff)
            for a in range(len(atoms)):
                rows = np.nonzero(ai == a)[0]
                order = np.lexsort((aS[rows, 2], aS[rows, 1], aS[rows, 0], aj[rows], ad[rows]))
                np.testing.assert_allclose(d[a], ad[rows][order][:k], rtol=1e-14)
                # the (j, S) sets agree away from near-ties at the k-th distance
                inside = d[a] < d[a, -1] * (1 - 1e-9)
                got = {(int(j), tuple(s)) for j, s in zip(i[a][inside], S[a][inside])}
                near = rows[ad[rows] < d[a, -1] * (1 - 1e-9)]
                assert got == {(int(j), tuple(s)) for j, s in zip(aj[near], aS[near])}


def test_cell_knn_orthogonal_agrees_with_ckdtree(rng):
    """A cell larger than twice the k-th distance: each point's nearest
    image once, as cKDTree(boxsize=L) answers it."""
    spatial = pytest.importorskip("scipy.spatial")
    x = rng.random((2000, 3)) * [1.0, 2.0, 1.5]
    d, i, S = prox.knn(x, 8, cell=[1.0, 2.0, 1.5])
    sd, si = spatial.cKDTree(x, boxsize=[1.0, 2.0, 1.5]).query(x, 9)
    np.testing.assert_allclose(d, sd[:, 1:], rtol=1e-12)
    assert (i == si[:, 1:]).mean() > 0.999
    assert np.abs(S).max() <= 1


def test_cell_knn_bad_input():
    x = np.zeros((2, 3))
    with pytest.raises(ValueError, match="one of them"):
        prox.knn(x, 1, box=1.0, cell=[1, 1, 1])
    with pytest.raises(ValueError):
        prox.knn(x, 0, cell=[1, 1, 1])
    with pytest.raises(ValueError):
        prox.knn(x, 1, cell=[[1, 0, 0], [2, 0, 0], [0, 0, 1]])
    with pytest.raises(ValueError):
        prox.knn(x, 1, cell=[1, 1])
    with pytest.raises(ValueError):
        prox.knn(np.array([[0.0, np.nan, 0.0]]), 1, cell=[1, 1, 1])
