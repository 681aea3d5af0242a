"""Particles of different sizes: prox.pairs/lists/count/query with radii=
and types=, and ASE's cutoff forms in prox.neighbor_list, against brute
force written here and against ase.neighborlist.neighbor_list."""
import numpy as np
import pytest

import prox


def brute(points, radii=None, types=None, cutoffs=None, rule="contact", queries=None,
          query_radii=None, query_types=None, box=None):
    """(i, j) pairs, i < j (or (q, j)), by the rules of prox/sizes.h."""
    rows = points if queries is None else queries
    d = rows[:, None, :] - points[None, :, :]
    if box is not None:
        L = np.asarray(box, dtype=float)
        d = np.where(L > 0, d - L * np.round(d / np.where(L > 0, L, 1)), d)
    d2 = (d * d).sum(axis=2)
    if types is not None:
        ta = types if queries is None else query_types
        t = np.asarray(cutoffs)[np.asarray(ta)[:, None], np.asarray(types)[None, :]]
    else:
        ra = np.asarray(radii if queries is None else query_radii, dtype=float)[:, None]
        rb = np.asarray(radii, dtype=float)[None, :]
        t = ra + rb if rule == "contact" else np.maximum(ra, rb)
    hit = (d2 <= t * t) & (t > 0)
    if queries is None:
        hit = np.triu(hit, 1)
    return np.argwhere(hit)


def scene(n=400, seed=1, spread=100.0):
    rng = np.random.default_rng(seed)
    x = rng.uniform(0, 40, size=(n, 3))
    r = 0.05 * spread ** rng.uniform(0, 1, size=n)
    return x, r


@pytest.mark.parametrize("rule", ["contact", "gather_scatter"])
@pytest.mark.parametrize("threads", [1, 3])
def test_radii_match_brute_force(rule, threads):
    x, r = scene()
    want = brute(x, radii=r, rule=rule)
    got = prox.pairs(x, radii=r, rule=rule, threads=threads)
    assert np.array_equal(got, want)
    assert prox.count(x, radii=r, rule=rule) == len(want)
    offsets, indices = prox.lists(x, radii=r, rule=rule)
    assert offsets[-1] == 2 * len(want)
    unsorted = prox.pairs(x, radii=r, rule=rule, sort=False)
    assert sorted(map(tuple, unsorted.tolist())) == sorted(map(tuple, want.tolist()))


def test_radii_float32_and_strided():
    x, r = scene(seed=2)
    x32 = np.asfortranarray(x.astype(np.float32))
    r32 = np.repeat(r.astype(np.float32), 2)[::2]
    want = brute(x32.astype(np.float64), radii=r32.astype(np.float64))
    assert np.array_equal(prox.pairs(x32, radii=r32), want)


def test_equal_radii_are_the_single_radius_pairs():
    x, _ = scene(seed=3)
    r = np.full(len(x), 1.25)
    assert np.array_equal(prox.pairs(x, radii=r), prox.pairs(x, 2.5))


def test_types_with_a_matrix_and_periodic():
    x, _ = scene(seed=4)
    types = np.random.default_rng(5).integers(0, 3, size=len(x))
    cut = np.array([[1.0, 2.0, 0.0], [2.0, 4.0, 1.5], [0.0, 1.5, 0.5]])
    assert np.array_equal(prox.pairs(x, types=types, cutoffs=cut),
                          brute(x, types=types, cutoffs=cut))
    box = [40.0, 40.0, 40.0]
    assert np.array_equal(prox.pairs(x, types=types, cutoffs=cut, box=box),
                          brute(x, types=types, cutoffs=cut, box=box))


def test_queries_with_sizes():
    x, r = scene(seed=6)
    q, qr = scene(n=150, seed=7)
    want = brute(x, radii=r, queries=q, query_radii=qr)
    got = prox.query(x, q, radii=r, query_radii=qr, output="pairs")
    assert np.array_equal(got, want)


def test_bad_sizes_are_clear_errors():
    x, r = scene(n=20, seed=8)
    r[3] = -1.0
    with pytest.raises(ValueError, match="radius 3 is -1"):
        prox.pairs(x, radii=r)
    r[3] = np.nan
    with pytest.raises(ValueError):
        prox.pairs(x, radii=r)
    with pytest.raises(ValueError, match="not symmetric"):
        prox.pairs(x, types=np.zeros(20, int), cutoffs=[[1.0, 2.0], [1.0, 1.0]])
    with pytest.raises(ValueError, match="outside"):
        prox.pairs(x, types=np.full(20, 2), cutoffs=[[1.0]])
    with pytest.raises(ValueError, match="sizes for"):
        prox.pairs(x, radii=r[:5])
    with pytest.raises(ValueError):
        prox.pairs(x, 1.0, radii=np.ones(20))


@pytest.mark.parametrize("rule", ["contact", "gather-scatter"])
def test_cli_radii_match_the_module(cli, tmp_path, rule):
    import subprocess
    x, r = scene(seed=11)
    np.savetxt(tmp_path / "p.txt", x, fmt="%.17g")
    np.save(tmp_path / "r.npy", r.reshape(-1, 1))
    out = subprocess.run([cli, "pairs", "--radii", str(tmp_path / "r.npy"), "--rule", rule,
                          str(tmp_path / "p.txt")], check=True, capture_output=True,
                         text=True).stdout
    got = np.array([list(map(int, line.split())) for line in out.splitlines()
                    if line and not line.startswith("#")]).reshape(-1, 2)
    want = prox.pairs(x, radii=r, rule=rule.replace("-", "_"))
    assert np.array_equal(got, want)
    r[5] = -1
    np.savetxt(tmp_path / "bad.txt", r)
    bad = subprocess.run([cli, "pairs", "--radii", str(tmp_path / "bad.txt"),
                          str(tmp_path / "p.txt")], capture_output=True, text=True)
    assert bad.returncode == 3 and "radius 5 is -1" in bad.stderr


ase = pytest.importorskip("ase")
from ase.neighborlist import natural_cutoffs  # noqa: E402
from ase.neighborlist import neighbor_list as ase_neighbor_list  # noqa: E402


def molecule_box(seed=9, n=300, pbc=True):
    rng = np.random.default_rng(seed)
    symbols = rng.choice(["H", "C", "O", "Fe"], size=n)
    atoms = ase.Atoms(symbols=list(symbols), positions=rng.uniform(0, 18, size=(n, 3)),
                      cell=[18.0, 18.0, 18.0], pbc=pbc)
    return atoms


def pairs_of(i, j):
    return sorted(zip(i.tolist(), j.tolist()))


@pytest.mark.parametrize("pbc", [True, False])
def test_natural_cutoffs_match_ase(pbc):
    atoms = molecule_box(pbc=pbc)
    cutoffs = natural_cutoffs(atoms, mult=1.3)
    i, j = prox.neighbor_list("ij", atoms, cutoffs)
    ai, aj = ase_neighbor_list("ij", atoms, cutoffs)
    assert pairs_of(i, j) == pairs_of(ai, aj)
    d = prox.neighbor_list("d", atoms, cutoffs)
    assert len(d) == len(i)


@pytest.mark.parametrize("pbc", [True, False])
def test_species_dict_matches_ase(pbc):
    atoms = molecule_box(seed=10, pbc=pbc)
    cutoff = {("H", "H"): 1.0, ("H", "O"): 1.6, ("C", "O"): 2.2, ("Fe", "Fe"): 3.1,
              ("C", "C"): 1.9, (1, 6): 1.3}
    i, j, d = prox.neighbor_list("ijd", atoms, cutoff)
    ai, aj = ase_neighbor_list("ij", atoms, cutoff)
    assert pairs_of(i, j) == pairs_of(ai, aj)
    assert np.all(d > 0)


def triclinic_crystal(seed):
    """A rattled primitive fcc crystal with mixed species: a triclinic cell
    small enough for images of a pair and self-images."""
    from ase.build import bulk
    rng = np.random.default_rng(seed)
    atoms = bulk("Cu", "fcc", a=3.6).repeat((3, 2, 2))
    atoms.set_chemical_symbols(rng.choice(["Cu", "Ni", "O"], size=len(atoms)).tolist())
    atoms.rattle(0.1, seed=seed)
    return atoms


def geometry_of(q):
    i, j, D, S = q
    order = np.lexsort((S[:, 2], S[:, 1], S[:, 0], j, i))
    return i[order], j[order], D[order], S[order]


@pytest.mark.parametrize("seed", [1, 2])
def test_sizes_in_a_triclinic_cell_match_ase(seed):
    atoms = triclinic_crystal(seed)
    for cutoff in (natural_cutoffs(atoms, mult=1.6),
                   {("Cu", "Cu"): 2.7, ("Cu", "O"): 3.3, ("Ni", "O"): 4.4, ("O", "O"): 6.0}):
        ours = prox.neighbor_list("ijDS", atoms, cutoff)
        theirs = geometry_of(ase_neighbor_list("ijDS", atoms, cutoff))
        assert len(ours[0]) == len(theirs[0]) > 0
        for a, b in zip(ours[:2] + ours[3:], theirs[:2] + theirs[3:]):
            assert np.array_equal(a, b)
        assert np.allclose(ours[2], theirs[2], rtol=0, atol=1e-12)


def test_sizes_in_a_cell_half_lists_and_self():
    atoms = triclinic_crystal(3)
    radii = np.asarray(natural_cutoffs(atoms, mult=1.5))
    i, j, S = prox.neighbor_list("ijS", atoms, radii)
    hi, hj, hS = prox.neighbor_list("ijS", atoms, radii, full=False)
    assert len(hi) * 2 == len(i)
    assert np.all((hi < hj) | ((hi == hj) & (hS[:, 0] >= 0)))
    si, sj, sS = prox.neighbor_list("ijS", atoms, radii, self_interaction=True)
    assert len(si) == len(i) + len(atoms)
    one, = [prox.neighbor_list("i", atoms, radii * 0)]
    assert len(one) == 0
    with pytest.raises(ValueError, match="atom 2"):
        bad = radii.copy()
        bad[2] = -1
        prox.neighbor_list("ij", atoms, bad)


def test_species_dict_needs_atoms():
    with pytest.raises(ValueError, match="ase.Atoms"):
        prox.neighbor_list("ij", np.zeros((2, 3)), {("H", "H"): 1.0})


@pytest.mark.parametrize("rule", ["contact", "gather_scatter", "types"])
def test_sized_skin_list_follows_moving_particles(rule):
    """Exact at every step of random motion, periodic, with rebuilds at
    some steps only; a changed size rebuilds and is honoured."""
    x, r = scene(n=300, seed=5)
    box = [40.0, 40.0, 40.0]
    rng = np.random.default_rng(9)
    t = rng.integers(0, 3, size=len(x))
    m = np.array([[0.5, 2.0, 0.0], [2.0, 4.0, 1.0], [0.0, 1.0, 3.0]])
    s = prox.SizedSkinList(1.0, box=box)
    kw = dict(types=t, cutoffs=m) if rule == "types" else dict(radii=r, rule=rule)
    rebuilds = 0
    for step in range(10):
        want = brute(x, box=box, rule=rule, **({"types": t, "cutoffs": m} if rule == "types"
                                                 else {"radii": r}))
        got = s.pairs(x, **kw)
        assert got.tolist() == want.tolist()
        assert s.rebuilt or step > 0
        rebuilds += s.rebuilt
        assert s.count(x, **kw) == len(want) and not s.rebuilt
        x = np.mod(x + rng.uniform(-0.15, 0.15, size=x.shape), 40.0)
    assert 1 < rebuilds < 10
    if rule != "types":
        r = r.copy()
        r[0] = 8.0
        kw["radii"] = r
        assert s.pairs(x, **kw).tolist() == brute(x, radii=r, rule=rule, box=box).tolist()
        assert s.rebuilt


def test_sized_skin_list_bad_input():
    x, r = scene(n=20)
    with pytest.raises(ValueError):
        prox.SizedSkinList(-1.0)
    s = prox.SizedSkinList(0.5)
    with pytest.raises(ValueError):
        s.pairs(x)
    bad = r.copy()
    bad[3] = -1.0
    with pytest.raises(ValueError):
        s.pairs(x, radii=bad)


@pytest.mark.parametrize("rule", ["contact", "gather_scatter", "types"])
@pytest.mark.parametrize("box", [None, [40.0, 40.0, 40.0]])
def test_sized_grid_follows_moving_particles(rule, box):
    """A kept SizedGrid over a 1:100 spread (several size classes) against
    brute force at every step of random motion, open and periodic, with a
    jump; lists and count agree; the caller's array may change between
    calls (the grid answers from its copy)."""
    x, r = scene(n=500, seed=6)
    rng = np.random.default_rng(11)
    t = rng.integers(0, 3, size=len(x))
    m = np.array([[0.5, 2.0, 0.0], [2.0, 4.0, 1.0], [0.0, 1.0, 3.0]])
    sizes = dict(types=t, cutoffs=m) if rule == "types" else dict(radii=r, rule=rule)
    g = prox.SizedGrid(box=box, points=x, **sizes)
    assert g.size == len(x) and g.dim == 3
    mine = x.copy()
    x[:] = 0.0  # the grid keeps its own copy
    assert g.count() > 0
    x = mine
    for step in range(8):
        want = brute(x, box=box, rule=rule, **({"types": t, "cutoffs": m} if rule == "types"
                                                 else {"radii": r}))
        assert g.pairs().tolist() == want.tolist()
        assert g.count() == len(want)
        offsets, indices = g.lists()
        assert offsets[-1] == 2 * len(want)
        jump = 5.0 if step == 5 else 0.15
        x = x + rng.uniform(-jump, jump, size=x.shape)
        if box is not None:
            x = np.mod(x, 40.0)
        assert g.update(x)  # the classes are planned again at each pairs


def test_sized_grid_bad_input():
    x, r = scene(n=20)
    g = prox.SizedGrid()
    with pytest.raises(RuntimeError):
        g.pairs()
    with pytest.raises(ValueError):
        g.build(x)
    bad = r.copy()
    bad[3] = np.nan
    with pytest.raises(ValueError):
        g.build(x, radii=bad)
    g.build(x, radii=r)
    with pytest.raises(ValueError):
        g.update(x[:10])
    with pytest.raises(RuntimeError):  # a failed update asks for a build
        g.pairs()
    with pytest.raises(ValueError):
        prox.SizedGrid(radii=r)
