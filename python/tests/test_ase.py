"""neighbor_list against ASE's on orthogonal cells, periodic or not."""
import numpy as np
import pytest

import prox

ase = pytest.importorskip("ase")
Atoms = ase.Atoms
ase_neighbor_list = pytest.importorskip("ase.neighborlist").neighbor_list


def by_pair(i, j, *rest):
    order = np.lexsort((j, i))
    return (i[order], j[order]) + tuple(a[order] for a in rest)


@pytest.mark.parametrize("pbc", [True, False, (True, False, True)])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_matches_ase(pbc, dtype):
    rng = np.random.default_rng(7)
    lengths = np.array([9.0, 11.0, 10.0])
    n = 600
    # some atoms outside the cell: ASE and prox both wrap periodic axes
    pos = (rng.random((n, 3)) * 1.2 - 0.1) * lengths
    pos = pos.astype(dtype).astype(np.float64) if dtype == np.float32 else pos
    atoms = Atoms("Ar" * n if False else f"Ar{n}", positions=pos, cell=lengths, pbc=pbc)
    cutoff = 2.7
    ai, aj, ad, aD, aS = by_pair(*ase_neighbor_list("ijdDS", atoms, cutoff))
    x = pos.astype(dtype)
    i, j, d, D, S = prox.neighbor_list("ijdDS", x, cutoff, cell=np.diag(lengths), pbc=pbc)
    assert i.dtype == np.intp and j.dtype == np.intp and S.dtype == np.int64
    # prox's output is already sorted by i then j
    assert np.array_equal(np.lexsort((j, i)), np.arange(len(i)))
    assert np.array_equal(i, ai) and np.array_equal(j, aj)
    assert np.array_equal(S, aS)
    # D = x[j] - x[i] + S * L as ASE defines it; ASE computes it through
    # scaled positions, so agreement is to rounding
    assert np.array_equal(D, pos[j] - pos[i] + S * lengths)
    np.testing.assert_allclose(D, aD, rtol=0, atol=1e-12)
    np.testing.assert_array_max_ulp(d, ad, maxulp=1)
    # from an Atoms object directly, and every subset/order of letters
    j2, i2 = prox.neighbor_list("ji", atoms, cutoff)
    assert np.array_equal(i2, ai) and np.array_equal(j2, aj)
    assert np.array_equal(prox.neighbor_list("d", atoms, cutoff), d)


def test_lengths_or_diagonal_matrix_and_vesin_style_calls():
    rng = np.random.default_rng(8)
    x = rng.random((300, 3)) * 6
    a = prox.neighbor_list("ijS", x, 1.2, cell=[6, 6, 6], pbc=True)
    b = prox.neighbor_list("ijS", x, 1.2, cell=np.eye(3) * 6, pbc=[True, True, True])
    assert all(np.array_equal(u, v) for u, v in zip(a, b))
    # open: no shifts, the same as pairs in both directions
    i, j, S = prox.neighbor_list("ijS", x, 1.2)
    assert not S.any()
    p = prox.pairs(x, 1.2)
    assert len(i) == 2 * len(p)
    assert set(zip(i.tolist(), j.tolist())) == set(map(tuple, p.tolist())) | set(
        map(tuple, p[:, ::-1].tolist()))


def test_empty_and_single_atom():
    for n in (0, 1):
        i, j, d, D, S = prox.neighbor_list("ijdDS", np.zeros((n, 3)), 1.0, cell=[5, 5, 5],
                                           pbc=True)
        assert i.shape == (0,) and j.shape == (0,) and d.shape == (0,)
        assert D.shape == (0, 3) and S.shape == (0, 3)
