"""neighbor_list in cells of any shape and size against ASE's neighbor_list
(random triclinic cells, angles 30-150 degrees; primitive fcc/bcc/hcp; cells
smaller than the cutoff in one, two or three directions; mixed pbc;
unwrapped positions; points on faces), 2D against a numpy image oracle,
the batch call, and pairs(box=...) with r >= L/2 against scipy."""
import numpy as np
import pytest

import prox


def cell_from(lengths, angles):
    """ASE's lower-triangular form of lengths and angles (degrees)."""
    a, b, c = lengths
    al, be, ga = np.radians(angles)
    cx = np.cos(be)
    cy = (np.cos(al) - np.cos(be) * np.cos(ga)) / np.sin(ga)
    cz2 = 1 - cx * cx - cy * cy
    if cz2 <= 0.02:
        return None
    return np.array([[a, 0, 0], [b * np.cos(ga), b * np.sin(ga), 0], [c * cx, c * cy, c * np.sqrt(cz2)]])


def heights(cell):
    vol = abs(np.linalg.det(cell))
    return np.array([vol / np.linalg.norm(np.cross(cell[(k + 1) % 3], cell[(k + 2) % 3]))
                     for k in range(3)])


def rule_D(x, cell, i, j, S):
    """D as include/prox/cell.h defines it, term by term in double."""
    S = S.astype(np.float64)
    t = (S[:, 0:1] * cell[0] + S[:, 1:2] * cell[1]) + S[:, 2:3] * cell[2]
    return (x[j] - x[i]) + t


def sorted_ijS(i, j, S, *rest):
    order = np.lexsort((S[:, 2], S[:, 1], S[:, 0], j, i))
    return (i[order], j[order], S[order]) + tuple(r[order] for r in rest)


def check_against_ase(x, cell, pbc, cutoff, self_interaction=False):
    ase = pytest.importorskip("ase")
    from ase.neighborlist import neighbor_list as ase_nl
    atoms = ase.Atoms(f"H{len(x)}", positions=x, cell=cell, pbc=pbc)
    ai, aj, aS, ad, aD = sorted_ijS(*ase_nl("ijSdD", atoms, cutoff,
                                            self_interaction=self_interaction))
    i, j, d, D, S = prox.neighbor_list("ijdDS", x, cutoff, cell=cell, pbc=pbc,
                                       self_interaction=self_interaction)
    # prox's own order is (i, j, S)
    assert np.array_equal(np.lexsort((S[:, 2], S[:, 1], S[:, 0], j, i)), np.arange(len(i)))
    assert len(i) == len(ai), (len(i), len(ai))
    assert np.array_equal(i, ai) and np.array_equal(j, aj) and np.array_equal(S, aS)
    expect = rule_D(x, cell, i, j, S)
    assert np.array_equal(D, expect)
    e = expect
    assert np.array_equal(d, np.sqrt((e[:, 0] * e[:, 0] + e[:, 1] * e[:, 1]) + e[:, 2] * e[:, 2]))
    # ASE computes D its own way: agreement to rounding
    np.testing.assert_allclose(D, aD, rtol=0, atol=1e-9 * max(1.0, np.abs(x).max()))
    return len(i)


@pytest.mark.parametrize("seed", range(12))
def test_random_triclinic_matches_ase(seed):
    rng = np.random.default_rng(4300 + seed)
    cell = None
    while cell is None:
        cell = cell_from(rng.uniform(2, 6, 3), rng.uniform(30, 150, 3))
    pbc = [True, True, True] if seed % 3 == 0 else list(rng.random(3) < 0.6)
    n = int(rng.integers(1, 40))
    frac = rng.uniform(-1.5, 2.5, (n, 3))  # unwrapped positions
    frac[: n // 4] = np.round(frac[: n // 4] * 2) / 2  # some on faces
    x = frac @ cell
    cutoff = float(heights(cell).min() * (0.3, 0.8, 1.7, 2.6)[seed % 4])
    check_against_ase(x, cell, pbc, cutoff, self_interaction=seed % 5 == 0)


@pytest.mark.parametrize("name,kw", [
    ("Cu", dict(crystalstructure="fcc", a=3.6)),
    ("Fe", dict(crystalstructure="bcc", a=2.87)),
    ("Mg", dict(crystalstructure="hcp", a=3.21, c=5.21)),
    ("Si", dict(crystalstructure="diamond", a=5.43)),
])
def test_primitive_cells_match_ase(name, kw):
    build = pytest.importorskip("ase.build")
    atoms = build.bulk(name, **kw)  # primitive: every image of few atoms
    for cutoff in (2.0, 5.0, 7.5):
        check_against_ase(atoms.positions, atoms.cell.array, atoms.pbc, cutoff)
    rattled = atoms.repeat((2, 2, 2))
    rattled.rattle(0.1, seed=1)
    i, j = prox.neighbor_list("ij", rattled, 5.0)  # an ase.Atoms, duck-typed
    assert len(i) == check_against_ase(rattled.positions, rattled.cell.array, rattled.pbc, 5.0)


@pytest.mark.parametrize("small", [1, 2, 3])
def test_cell_smaller_than_cutoff(small):
    rng = np.random.default_rng(small)
    lengths = np.array([9.0, 10.0, 11.0])
    lengths[:small] = 2.1
    cell = np.diag(lengths)
    cell[1, 0] = 0.7
    x = rng.random((15, 3)) @ cell
    check_against_ase(x, cell, [True, True, True], 3.3)
    check_against_ase(x, cell, [True, False, True], 3.3)


def oracle_2d(x, cell, pbc, cutoff):
    """Every image in a box of shifts, D by the rule, in numpy."""
    h = [abs(np.linalg.det(cell)) / np.linalg.norm(cell[1 - k]) for k in range(2)]
    reach = [int(np.ceil(cutoff / h[k])) + 3 if pbc[k] else 0 for k in range(2)]
    f = np.linalg.solve(cell.T, x.T).T
    out = []
    for i in range(len(x)):
        for j in range(len(x)):
            base = np.floor(f[i]) - np.floor(f[j])
            for s0 in range(-reach[0], reach[0] + 1):
                for s1 in range(-reach[1], reach[1] + 1):
                    S = np.array([s0 + (base[0] if pbc[0] else 0),
                                  s1 + (base[1] if pbc[1] else 0)])
                    D = (x[j] - x[i]) + ((S[0] * cell[0] + S[1] * cell[1]) + 0.0 * cell[0])
                    if D @ D <= cutoff * cutoff and not (i == j and not S.any()):
                        out.append((i, j, int(S[0]), int(S[1])))
    return sorted(set(out))


@pytest.mark.parametrize("pbc", [(True, True), (True, False), (False, True)])
def test_2d_matches_oracle(pbc):
    rng = np.random.default_rng(2)
    cell = np.array([[2.0, 0.0], [1.3, 1.7]])
    x = rng.uniform(-1, 3, (12, 2)) @ cell
    i, j, S, D = prox.neighbor_list("ijSD", x, 2.9, cell=cell, pbc=pbc)
    got = [(a, b, s[0], s[1]) for a, b, s in zip(i.tolist(), j.tolist(), S.tolist())]
    assert got == oracle_2d(x, cell, pbc, 2.9)
    assert D.shape == (len(i), 2)
    with pytest.raises(ValueError, match="cell"):
        prox.neighbor_list("ij", x, 2.9, cell=np.eye(3), pbc=pbc)


def test_batch_matches_single_calls():
    build = pytest.importorskip("ase.build")
    systems = []
    for k in range(20):
        a = build.bulk("Cu", "fcc", a=3.6).repeat((2, 1, 2)) if k % 2 else build.bulk(
            "Si", "diamond", a=5.43)
        a.rattle(0.05, seed=k)
        systems.append(a)
    triples = [(a.positions, a.cell.array, a.pbc) for a in systems]
    for threads in (1, 3):
        many = prox.neighbor_lists("ijdDS", systems, 5.0, threads=threads)
        assert len(many) == len(systems)
        for a, got in zip(systems, many):
            want = prox.neighbor_list("ijdDS", a, 5.0)
            for g, w in zip(got, want):
                assert np.array_equal(g, w)
    assert [len(i) for i in prox.neighbor_lists("i", triples, 5.0)] == [
        len(prox.neighbor_list("i", a, 5.0)) for a in systems]
    for threads in (0, 1):  # one thread: each system's arrays made as it is searched
        with pytest.raises(ValueError, match="system 1"):
            prox.neighbor_lists("ij", [triples[0], (triples[0][0], np.zeros((3, 3)), [True] * 3)],
                                5.0, threads=threads)


def test_large_results_carved_from_kept_blocks():
    """Results past 2 MiB are carved from blocks (_cell_binding.c's arena): a
    batch over several blocks gives each system its own call's arrays, which
    outlive the list and each other; the blocks are kept for the next batch
    and freed by release_memory; a single large system matches ASE."""
    import gc
    rng = np.random.default_rng(46)
    fcc = np.array([[0.0, 1.8, 1.8], [1.8, 0.0, 1.8], [1.8, 1.8, 0.0]]) * 4
    base = np.array([[u, v, w] for u in range(4) for v in range(4) for w in range(4)],
                    dtype=float) @ (fcc / 4)
    systems = [(base + rng.uniform(-0.05, 0.05, base.shape), fcc, [True] * 3)
               for _ in range(260)]  # about 50 MB of arrays: two blocks
    many = prox.neighbor_lists("ijdDS", systems, 5.0, threads=1)
    for (x, cell, pbc), got in zip(systems, many):
        want = prox.neighbor_list("ijdDS", x, 5.0, cell=cell, pbc=pbc)
        for g, w in zip(got, want):
            assert g.dtype == w.dtype and g.shape == w.shape and np.array_equal(g, w)
            assert g.flags.c_contiguous and g.flags.writeable
    x, cell, pbc = systems[-1]
    kept, want = many[-1][3], prox.neighbor_list("D", x, 5.0, cell=cell, pbc=pbc)
    first = many[0][0].copy()
    many[0][0][:] = -1  # arrays of one block are apart
    x, cell, pbc = systems[0]
    assert np.array_equal(many[0][1], prox.neighbor_list("j", x, 5.0, cell=cell, pbc=pbc))
    assert not np.array_equal(many[0][0], first)
    del many
    gc.collect()
    assert np.array_equal(kept, want)  # the block lives while an array does
    del kept
    gc.collect()
    # kept blocks reused, the arrays written by streaming stores (past 8 MiB)
    again = prox.neighbor_lists("ijdDS", systems, 5.0, threads=1)
    for (x, cell, pbc), got in zip(systems, again):
        want = prox.neighbor_list("ijdDS", x, 5.0, cell=cell, pbc=pbc)
        assert all(np.array_equal(g, w) for g, w in zip(got, want))
    del again
    gc.collect()
    assert prox.release_memory() >= 32 << 20 and prox.release_memory() == 0
    cell = cell_from([14.0, 15.0, 16.0], [70, 110, 80])
    x = rng.uniform(-0.1, 1.1, (3000, 3)) @ cell
    assert check_against_ase(x, cell, [True, True, False], 3.0) * 72 > 2 << 20


def test_batch_of_mixed_systems():
    """A batch mixing cell shapes (orthogonal, triclinic, primitive fcc, a cell
    smaller than the cutoff), pbc mixes, empty and 1-atom systems, half and
    full lists: each system's arrays those of its own call, and for the 3D
    full lists ASE's (i, j, S)."""
    rng = np.random.default_rng(43)
    fcc = np.array([[0.0, 1.8, 1.8], [1.8, 0.0, 1.8], [1.8, 1.8, 0.0]])
    tri = cell_from([4.0, 4.5, 5.0], [65, 115, 80])
    shapes = [np.diag([5.0, 6.0, 7.0]), tri, fcc * 4, fcc, np.diag([2.0, 9.0, 9.0])]
    flags = [[True] * 3, [True, False, True], [False] * 3, [True, True, False]]
    systems = []
    for k in range(40):
        cell = shapes[k % len(shapes)]
        n = [0, 1, 2, 17, 64][(k // 2) % 5]
        x = rng.uniform(-0.2, 1.2, (n, 3)) @ cell
        systems.append((x, cell, flags[(k // 5) % len(flags)]))
    for self_interaction in (False, True):
        for threads in (1, 2):
            many = prox.neighbor_lists("ijdDS", systems, 4.2, threads=threads,
                                       self_interaction=self_interaction)
            assert len(many) == len(systems)
            for (x, cell, pbc), got in zip(systems, many):
                want = prox.neighbor_list("ijdDS", x, 4.2, cell=cell, pbc=pbc,
                                          self_interaction=self_interaction)
                for g, w in zip(got, want):
                    assert g.dtype == w.dtype and np.array_equal(g, w)
                i, j, d, D, S = got
                assert D.shape == (len(i), 3) and S.shape == (len(i), 3)
                assert np.array_equal(D, rule_D(x, cell, i, j, S))
    for x, cell, pbc in systems[:12]:  # every shape, size and pbc mix once
        if len(x):
            check_against_ase(x, cell, pbc, 4.2)
    # 2D systems in a batch, and an empty batch
    cell2 = np.array([[2.0, 0.0], [1.3, 1.7]])
    flat = [(rng.uniform(-1, 3, (n, 2)) @ cell2, cell2, (True, k % 2 == 0))
            for k, n in enumerate([0, 1, 12, 5])]
    for (x, cell, pbc), (i, j, S) in zip(flat, prox.neighbor_lists("ijS", flat, 2.9)):
        got = [(a, b, s[0], s[1]) for a, b, s in zip(i.tolist(), j.tolist(), S.tolist())]
        assert got == oracle_2d(x, cell, pbc, 2.9)
    assert prox.neighbor_lists("ijdDS", [], 5.0) == []


@pytest.mark.parametrize("radius", [0.3, 0.5, 0.7, 1.9])
def test_pairs_beyond_half_the_box_match_scipy(radius):
    spatial = pytest.importorskip("scipy.spatial")
    rng = np.random.default_rng(5)
    x = rng.random((80, 3)) * [1.0, 2.0, 1.5]
    box = [1.0, 2.0, 1.5]
    want = np.array(sorted(spatial.cKDTree(x, boxsize=box).query_pairs(radius)))
    got = prox.pairs(x, radius, box=box)
    assert np.array_equal(got, want.reshape(-1, 2))
    assert prox.count(x, radius, box=box) == len(want)


def test_half_list_is_the_full_list_once():
    rng = np.random.default_rng(9)
    cell = cell_from([3.0, 3.5, 4.0], [70, 110, 95])
    x = rng.uniform(-1, 2, (30, 3)) @ cell
    i, j, S, D = prox.neighbor_list("ijSD", x, 5.0, cell=cell, pbc=True)
    hi, hj, hS, hD = prox.neighbor_list("ijSD", x, 5.0, cell=cell, pbc=True, full=False)
    keep = (i < j) | ((i == j) & [tuple(s) > (0, 0, 0) for s in S.tolist()])
    assert np.array_equal(hi, i[keep]) and np.array_equal(hj, j[keep])
    assert np.array_equal(hS, S[keep]) and np.array_equal(hD, D[keep])
    assert 2 * len(hi) == len(i)


def test_bad_cells_are_refused():
    x = np.random.default_rng(1).random((10, 3))
    with pytest.raises(ValueError, match="singular"):
        prox.neighbor_list("ij", x, 0.5, cell=[[1, 0, 0], [2, 0, 0], [0, 0, 1]], pbc=True)
    with pytest.raises(ValueError, match="finite"):
        prox.neighbor_list("ij", x, 0.5, cell=[[1, 0, 0], [0, np.nan, 0], [0, 0, 1]], pbc=True)
    with pytest.raises(ValueError, match="too many images"):
        prox.neighbor_list("ij", x, 1e4, cell=np.eye(3), pbc=True)
    with pytest.raises(ValueError, match="pbc"):
        prox.neighbor_list("ij", x, 0.5, cell=np.eye(3) + 0.1, pbc=[True, True])
    bad = x.copy()
    bad[3, 1] = np.nan
    with pytest.raises(ValueError, match="point 3"):
        prox.neighbor_list("ij", bad, 0.5, cell=np.eye(3) + 0.1, pbc=True)


def lammps_half_count(x, cell, cutoff):
    """LAMMPS' half list count, by bench/cell_bench.py's driver (None
    without lmp or without the bench beside the tests)."""
    import pathlib
    import sys
    bench = pathlib.Path(__file__).resolve().parents[2] / "bench"
    if not (bench / "cell_bench.py").exists():
        return None
    sys.path.insert(0, str(bench))
    try:
        from cell_bench import lammps_half_count as count
    finally:
        sys.path.remove(str(bench))
    return count(x, cell, cutoff)


@pytest.mark.parametrize("tilts", [(0.3, 0.2, 0.25), (-0.45, 0.4, -0.35), (0.0, 0.0, 0.0)])
def test_half_list_count_is_lammps(tilts):
    """The half list's pair count in a LAMMPS triclinic box (tilts xy, xz,
    yz in units of the box's lengths) equals LAMMPS' own neighbour count."""
    xy, xz, yz = tilts
    cell = np.array([[6.0, 0, 0], [xy * 6.0, 5.5, 0], [xz * 6.0, yz * 5.5, 5.0]])
    f = np.random.default_rng(int(100 * (xy + 2 * xz + 4 * yz)) & 0xffff).random((1500, 3))
    x = f @ cell
    cutoff = 0.3 * float(heights(cell).min())
    want = lammps_half_count(x, cell, cutoff)
    if want is None:
        pytest.skip("lmp (Debian package lammps) or bench/cell_bench.py not found")
    i = prox.neighbor_list("i", x, cutoff, cell=cell, pbc=True, full=False)
    assert len(i) == want > 0
