"""prox: fixed-radius neighbour search and broad-phase collision detection.

numpy arrays in, numpy arrays out. Points are ``(n, 2)`` or ``(n, 3)``
float32 or float64 arrays of any strides (C or Fortran order, a slice, a
field of a structured array): prox reads them where they are, without a
copy. Indices come back as intp (int64 on 64-bit platforms, what scipy
and ASE return), CSR offsets as int64. ``index_dtype=numpy.uint32`` hands
back the library's own 32-bit buffers instead, without a copy: half the
memory, but ``p[:, 0] - p[:, 1]`` then wraps around as unsigned numbers.

The boundary rule is prox's: two points are neighbours when their squared
distance, computed in double as ``dx*dx + dy*dy (+ dz*dz)``, is ``<= r*r``
(a pair at distance exactly ``r`` counts); along a periodic axis ``dx`` is
the minimum image (:func:`pairs` and :func:`count` also take radii of half
the period and more, as scipy does: each pair once, at its nearest image).
:func:`neighbor_list` takes cells of any shape and any cutoff, with every
image (ASE's convention).

Every search takes ``threads`` (0: OpenMP's default, 1: no threads) and
releases the GIL while it runs. The output is the same for every thread
count. Errors raise ``ValueError`` (bad options or data, with the
library's message naming the point and axis), ``MemoryError``, or
``TypeError`` (an array of a dtype prox does not read).

>>> import numpy as np, prox
>>> x = np.array([[0.0, 0.0, 0.0], [0.5, 0.0, 0.0], [1.5, 0.0, 0.0], [0.0, 0.3, 0.4]])
>>> prox.pairs(x, 0.5).tolist()
[[0, 1], [0, 3]]
>>> prox.count(x, 1.0)
4
"""
from __future__ import annotations

import numbers

import numpy as np

from . import _prox

__all__ = [
    "pairs",
    "lists",
    "count",
    "query",
    "pair_geometry",
    "neighbor_list",
    "neighbor_lists",
    "release_memory",
    "box_pairs",
    "knn",
    "KNNIndex",
    "Grid",
    "SkinList",
    "SizedSkinList",
    "SizedGrid",
    "Broad",
    "broad_algos",
    "__version__",
]

__version__ = _prox.library_version
release_memory = _prox.release_memory

#: The broad-phase structures, by the names the C library and the CLI use;
#: "auto" (the default) picks one of the others at each build.
broad_algos = ("auto", "brute", "grid", "multilevel", "hierarchical", "kdtree", "sap")


def _sized(points, radius, radii, types, cutoffs, rule, output, box, threads, sort, algo,
           index_dtype, queries=None, query_radii=None, query_types=None):
    """The search with per-particle sizes (prox/sizes.h), or None without them."""
    if radii is None and types is None:
        if radius is None:
            raise ValueError("radius: a number, or radii= / types= with cutoffs=")
        return None
    if radius is not None:
        raise ValueError("radius with radii= or types=: give one of them")
    if radii is not None and types is not None:
        raise ValueError("radii= and types=: give one of them")
    if types is not None:
        if cutoffs is None:
            raise ValueError("types= needs cutoffs=, a symmetric (types, types) matrix")
        rule, sizes, qsizes = "types", types, query_types
    else:
        rule = rule or "contact"
        sizes, qsizes = radii, query_radii
    if queries is not None and qsizes is None:
        raise ValueError("queries with sizes need query_radii= (or query_types=)")
    return _prox._sized_search(points, sizes, rule, box, threads, output, cutoffs, queries,
                               qsizes, sort, algo, index_dtype)


def pairs(points, radius=None, box=None, threads=0, *, sort=True, algo="grid", index_dtype=None,
          radii=None, types=None, cutoffs=None, rule=None):
    """Every pair of points within ``radius``, as ``cKDTree.query_pairs``.

    Parameters
    ----------
    points : (n, 2) or (n, 3) float32 or float64 array, any strides
    radius : float, > 0
    box : None, a number, or one period per axis (0 or None: open axis),
        as scipy's ``boxsize``; periodic coordinates are wrapped into
        ``[0, L)`` (they need not lie there already).
    threads : int, 0 for OpenMP's default
    sort : bool, default True; False keeps the search's traversal order
        (the same pairs, still the same for every thread count, faster)
    algo : "grid" (default), "brute" or "hierarchical"
    index_dtype : None (intp, the default) or numpy.uint32 (the library's
        own buffer, no copy, half the memory)

    Returns
    -------
    (m, 2) intp array of ``i < j`` rows, sorted by ``(i, j)``: what
    ``cKDTree(points).query_pairs(radius, output_type="ndarray")`` holds,
    in sorted order.

    Particles of different sizes (instead of ``radius``): ``radii=`` (n,)
    with ``rule="contact"`` (default; pairs with ``d <= r_i + r_j``) or
    ``rule="gather_scatter"`` (``d <= max(h_i, h_j)``); or ``types=`` (n,)
    integers in ``[0, T)`` with ``cutoffs=``, a symmetric (T, T) matrix
    (``d <= cutoffs[t_i, t_j]``; a cutoff of 0 switches a pair off).
    ``algo`` is then "grid" or "brute".

    >>> import numpy as np, prox
    >>> prox.pairs(np.array([[0.1, 0.5], [0.9, 0.5], [0.5, 0.5]]), 0.25, box=1.0).tolist()
    [[0, 1]]
    >>> prox.pairs(np.array([[0.0, 0], [3, 0], [10, 0]]), radii=[1.0, 2.0, 0.5]).tolist()
    [[0, 1]]
    """
    sized = _sized(points, radius, radii, types, cutoffs, rule, "pairs", box, threads, sort, algo,
                   index_dtype)
    if sized is not None:
        return sized
    if _beyond_half_period(points, radius, box, algo):
        p = _minimum_image_pairs(points, radius, box, threads)
        return p.astype(np.uint32) if index_dtype is not None and np.dtype(
            index_dtype) == np.uint32 else p
    return _prox._search(points, radius, box, threads, "pairs", None, sort, algo,
                         index_dtype=index_dtype)


def _box_periods(box, dim):
    if box is None:
        return None
    if isinstance(box, numbers.Real) or (isinstance(box, np.ndarray) and box.ndim == 0):
        return [float(box)] * dim
    try:
        return [0.0 if b is None else float(b) for b in box]
    except TypeError:
        return None


def _beyond_half_period(points, radius, box, algo):
    """Whether a periodic search needs scipy's answer for r >= L/2."""
    if box is None or algo != "grid" or not isinstance(radius, numbers.Real):
        return False
    points = points if isinstance(points, np.ndarray) else np.asarray(points)
    if points.ndim != 2 or points.shape[1] not in (2, 3):
        return False
    periods = _box_periods(box, points.shape[1])
    return periods is not None and len(periods) == points.shape[1] and any(
        np.isfinite(L) and L > 0 and radius >= 0.5 * L for L in periods)


def _minimum_image_pairs(points, radius, box, threads):
    """Pairs i < j within ``radius`` at their nearest image (each pair once)
    for radii of half a period or more: the image search of the
    orthogonal cell, self-images and repeated images dropped."""
    points = points if isinstance(points, np.ndarray) else np.asarray(points)
    dim = points.shape[1]
    periods = _box_periods(box, dim)
    cell = np.diag([L if L > 0 else 0.0 for L in periods])
    flags = [L > 0 for L in periods]
    if any(L < 0 or not np.isfinite(L) for L in periods):
        raise ValueError(f"box = {box!r}: a period must be finite and > 0 (0 or None: open axis)")
    (i, j), = _prox._cell([(points, cell, flags)], float(radius), "ij", False, False, threads)
    keep = i != j
    if len(i) > 1:
        keep[1:] &= (i[1:] != i[:-1]) | (j[1:] != j[:-1])
    return np.stack([i[keep], j[keep]], axis=1).reshape(-1, 2)


def lists(points, radius=None, box=None, threads=0, *, sort=True, algo="grid", index_dtype=None,
          radii=None, types=None, cutoffs=None, rule=None):
    """Every point's full neighbour list (both directions) as CSR.

    Returns ``(offsets, indices)``: the neighbours of point ``i`` are
    ``indices[offsets[i]:offsets[i + 1]]``, ascending (``sort=True``);
    ``offsets`` is int64 of length ``n + 1``, ``indices`` intp (uint32 with
    ``index_dtype=numpy.uint32``). Other parameters as :func:`pairs`
    (``radii=``, ``types=`` too).

    >>> import numpy as np, prox
    >>> offsets, indices = prox.lists(np.array([[0.0, 0], [1, 0], [3, 0]]), 1.0)
    >>> offsets.tolist(), indices.tolist()
    ([0, 1, 2, 2], [1, 0])
    """
    sized = _sized(points, radius, radii, types, cutoffs, rule, "lists", box, threads, sort, algo,
                   index_dtype)
    if sized is not None:
        return sized
    return _prox._search(points, radius, box, threads, "lists", None, sort, algo,
                         index_dtype=index_dtype)


def count(points, radius=None, box=None, threads=0, *, algo="grid", radii=None, types=None,
          cutoffs=None, rule=None):
    """The number of pairs within ``radius`` (each unordered pair once), nothing stored.

    >>> import numpy as np, prox
    >>> prox.count(np.zeros((4, 3), np.float32), 1e-3)
    6
    """
    sized = _sized(points, radius, radii, types, cutoffs, rule, "count", box, threads, True, algo,
                   None)
    if sized is not None:
        return sized
    if _beyond_half_period(points, radius, box, algo):
        return len(_minimum_image_pairs(points, radius, box, threads))
    return _prox._search(points, radius, box, threads, "count", None, True, algo)


def query(points, queries, radius=None, box=None, threads=0, *, output="lists", sort=True,
          algo="grid", index_dtype=None, radii=None, types=None, cutoffs=None, rule=None,
          query_radii=None, query_types=None):
    """Ball queries of a second point set, as ``cKDTree.query_ball_point``.

    For each row ``q`` of ``queries`` (same dimension as ``points``), the
    points within ``radius`` of it. ``queries`` may also be one point of
    shape ``(dim,)``, as ``query_ball_point`` takes it.

    output : "lists" (default): ``(offsets, indices)`` with one row per query,
        each ascending (one point: its ``indices`` alone, ascending, as
        ``query_ball_point`` returns one list); "pairs": an ``(m, 2)`` intp
        array of ``(q, j)`` rows sorted by ``(q, j)``; "count": the number of
        ``(q, j)`` pairs.
    index_dtype : None (intp) or numpy.uint32, as :func:`pairs`.
    radii, types, cutoffs, rule : the points' sizes, as :func:`pairs`; the
        queries' own then in ``query_radii=`` (or ``query_types=``): query q
        meets point j when ``d <= qr_q + r_j`` (contact), and so on.

    >>> import numpy as np, prox
    >>> x = np.array([[0.0, 0.0], [1.0, 0.0], [2.0, 0.0]])
    >>> offsets, indices = prox.query(x, np.array([[0.9, 0.0], [5.0, 5.0]]), 1.1)
    >>> [indices[offsets[q]:offsets[q + 1]].tolist() for q in range(2)]
    [[0, 1, 2], []]
    >>> prox.query(x, np.array([0.9, 0.0]), 1.1).tolist()
    [0, 1, 2]
    """
    if queries is None:
        raise TypeError("query: queries must be an (n, 2) or (n, 3) array, not None")
    sized = _sized(points, radius, radii, types, cutoffs, rule, output, box, threads, sort, algo,
                   index_dtype, queries, query_radii, query_types)
    if sized is not None:
        return sized
    return _prox._search(points, radius, box, threads, output, queries, sort, algo,
                         index_dtype=index_dtype)


def pair_geometry(points, pairs, quantities="d", box=None, *, queries=None, threads=0):
    """Distances, vectors and cell shifts of given pairs (ASE's d, D, S).

    ``pairs`` is an ``(m, 2)`` integer array (from :func:`pairs`, or
    :func:`query` with ``queries`` given) or a tuple ``(i, j)`` of integer
    arrays. For each pair, with ``L`` the period of a periodic axis:

    - ``D`` = ``x[j] - x[i] + S * L``, the vector from i to j's nearest image;
    - ``S``: the integer shifts (int64) of that image, as ASE's ``S``;
    - ``d`` = ``|D|`` computed in double.

    On open axes ``D`` is ``x[j] - x[i]``. Returns one array for one letter,
    else a tuple in the order of ``quantities``.

    >>> import numpy as np, prox
    >>> x = np.array([[0.1, 0.5, 0.5], [0.9, 0.5, 0.5]])
    >>> p = prox.pairs(x, 0.3, box=1.0)
    >>> d, D, S = prox.pair_geometry(x, p, "dDS", box=1.0)
    >>> np.round(d, 12).tolist(), np.round(D, 12).tolist(), S.tolist()
    ([0.2], [[-0.2, 0.0, 0.0]], [[-1, 0, 0]])
    """
    if isinstance(pairs, tuple):
        i, j = pairs
    else:
        pairs = np.asarray(pairs)
        if pairs.ndim != 2 or pairs.shape[1] != 2:
            raise ValueError(f"pairs: expected shape (m, 2), got {pairs.shape}")
        i, j = pairs[:, 0], pairs[:, 1]
    out = _prox._geometry(points, i, j, quantities, box, queries, threads)
    return out[0] if len(out) == 1 else out


def _cell_matrix(cell, dim):
    """cell as a (dim, dim) matrix of rows: None (zeros), lengths, or a matrix."""
    if cell is None:
        return np.zeros((dim, dim))
    if hasattr(cell, "array"):  # ase.cell.Cell
        cell = cell.array
    c = np.asarray(cell, dtype=np.float64)
    if c.shape == (dim,):
        return np.diag(c)
    if c.shape == (dim, dim):
        return c
    raise ValueError(f"cell: expected {dim} lengths or a {dim}x{dim} matrix, got shape {c.shape}")


def _grid_serves(m, flags, cutoff):
    """Whether the grid's minimum-image path gives the cell's answer: an
    orthogonal cell with the cutoff below half of every periodic length."""
    if np.any(m - np.diag(np.diag(m)) != 0):
        return False
    lengths = np.diag(m)
    return all(not flags[k] or (lengths[k] > 0 and cutoff < 0.5 * lengths[k])
               for k in range(len(flags)))


def _unpack(result):
    return result[0] if len(result) == 1 else result


def _cell_lengths(cell, dim):
    if cell is None:
        return np.zeros(dim)
    if hasattr(cell, "array"):  # ase.cell.Cell
        cell = cell.array
    c = np.asarray(cell, dtype=np.float64)
    if c.shape == (dim,):
        return c.copy()
    if c.shape == (dim, dim):
        if np.any(c - np.diag(np.diag(c)) != 0):
            raise ValueError(
                "cell: a triclinic cell (off-diagonal entries) is not supported yet; "
                "prox handles orthogonal cells: three lengths or a diagonal matrix")
        return np.diag(c).copy()
    raise ValueError(f"cell: expected {dim} lengths or a {dim}x{dim} matrix, got shape {c.shape}")


def _pbc_flags(pbc, dim):
    if pbc is None:
        return np.zeros(dim, dtype=bool)
    p = np.asarray(pbc)
    if p.ndim == 0:
        return np.full(dim, bool(p))
    if p.shape != (dim,):
        raise ValueError(f"pbc: expected {dim} booleans, got shape {p.shape}")
    return p.astype(bool)


def _cutoff_sizes(cutoff, atoms, n):
    """ASE's cutoff forms: None for one number; else (sizes, rule, matrix):
    a list per atom (radii, d <= r_i + r_j, as ASE's natural_cutoffs), or a
    dict per species pair (types and a cutoff matrix; pairs not named have
    none)."""
    if isinstance(cutoff, numbers.Real) or (isinstance(cutoff, np.ndarray) and cutoff.ndim == 0):
        return None
    if isinstance(cutoff, dict):
        if atoms is None:
            raise ValueError("cutoff: a dict of species pairs needs an ase.Atoms")
        numbers_ = np.asarray(atoms.numbers)
        species = sorted(set(numbers_.tolist()))
        type_of = {z: t for t, z in enumerate(species)}
        symbols = dict(zip(numbers_.tolist(), atoms.get_chemical_symbols()))
        by_symbol = {symbols[z]: z for z in species}
        matrix = np.zeros((len(species), len(species)))
        for key, value in cutoff.items():
            if not (isinstance(key, tuple) and len(key) == 2):
                raise ValueError(f"cutoff: key {key!r} is not a pair of species")
            pair = []
            for s in key:
                z = by_symbol.get(s, s if isinstance(s, numbers.Integral) else None)
                if z is None and isinstance(s, str):
                    pair = None
                    break
                pair.append(z)
            if pair is None or any(z not in type_of for z in pair):
                continue  # a species these atoms do not hold
            a, b = type_of[pair[0]], type_of[pair[1]]
            matrix[a, b] = matrix[b, a] = float(value)
        types = np.array([type_of[z] for z in numbers_.tolist()], dtype=np.int32)
        return types, "types", matrix
    radii = np.asarray(cutoff, dtype=np.float64)
    if radii.ndim != 1 or radii.shape[0] != n:
        raise ValueError(f"cutoff: one number, a dict of species pairs, or {n} per-atom "
                         f"cutoffs (got shape {radii.shape})")
    return radii, "contact", None


def _largest_threshold(sizes):
    """The largest threshold a pair can have: twice the largest radius, or
    the largest cutoff between the types present."""
    values, rule, matrix = sizes
    if matrix is None:
        bad = ~np.isfinite(values) | (values < 0)
        if np.any(bad):
            k = int(np.argmax(bad))
            raise ValueError(f"cutoff: per-atom cutoffs must be finite and >= 0; atom {k} has "
                             f"{values[k]}")
        return 2 * float(np.max(values, initial=0))
    present = np.unique(values)
    return float(np.max(matrix[np.ix_(present, present)], initial=0))


def _sized_cell(quantities, positions, m, flags, sizes, largest, full, self_interaction,
                threads):
    """Per-atom or per-species cutoffs in any cell (prox_sized_cell_pairs'
    rule): the cell search at the largest threshold, each pair then kept
    when the squared distance of its D, summed as the C rule sums it, is
    within its own threshold squared (and that threshold > 0)."""
    values, rule, matrix = sizes
    (i, j, D, S), = _prox._cell([(positions, m, flags)], largest if largest > 0 else 1e-150,
                                "ijDS", bool(full), bool(self_interaction), threads)
    d2 = D[:, 0] * D[:, 0] + D[:, 1] * D[:, 1]
    if D.shape[1] == 3:
        d2 = d2 + D[:, 2] * D[:, 2]
    t = values[i] + values[j] if matrix is None else matrix[values[i], values[j]]
    keep = (d2 <= t * t) & (t > 0)
    if self_interaction:
        keep |= (i == j) & ~np.any(S, axis=1)
    out = {"i": i[keep], "j": j[keep], "D": D[keep], "S": S[keep], "d": None}
    if "d" in quantities:
        out["d"] = np.sqrt(d2[keep])
    return _unpack(tuple(out[q] for q in quantities))


def neighbor_list(quantities, positions, cutoff, cell=None, pbc=None, *, self_interaction=False,
                  full=True, threads=0):
    """Neighbour list in ASE's and vesin's convention, in a cell of any shape.

    Parameters
    ----------
    quantities : str of "i", "j", "d", "D", "S" in any order (first atom,
        second atom, distance, vector from i to j, integer cell shift)
    positions : (n, 3) or (n, 2) array (float32/float64, any strides), or an
        ``ase.Atoms`` (duck-typed: its positions, cell and pbc are used);
        positions need not lie inside the cell
    cutoff : as ASE's: a number, one cutoff for every pair, of any size
        (beyond the cell's heights every image comes back, self-images
        (i, i, S != 0) included); a list of one cutoff per atom (pairs with
        ``d <= c_i + c_j``, as ``natural_cutoffs`` gives them); or a dict of
        species pairs ``{("H", "O"): 1.2}`` (symbols or atomic numbers; pairs
        it does not name have no cutoff; needs an ``ase.Atoms``); the last
        two in any cell, each pair decided by its own cutoff (the search runs
        at the largest)
    cell : None, ``dim`` lengths, or a (dim, dim) matrix whose rows are the
        cell vectors (any shape: triclinic, LAMMPS' lower-triangular form)
    pbc : None (open), one bool, or ``dim`` bools (mixed pbc allowed)
    self_interaction : also the pairs (i, i) with S == 0, as ASE
    full : both directions of every pair (ASE's list, the default); False:
        each pair once, i < j, or i == j with S lexicographically positive
    threads : int

    Returns
    -------
    A tuple in the order of ``quantities`` (one array for a single letter):
    every pair (both directions unless ``full=False``), sorted by i, then
    j, then S; ``i``, ``j``
    intp, ``d`` float64 (m,), ``D`` float64 (m, dim), ``S`` int64 (m, dim),
    with ``D == positions[j] - positions[i] + S @ cell`` computed as
    ``(x_j - x_i) + ((S0*a + S1*b) + S2*c)`` in double.

    The rule is prox's closed ball (``d <= cutoff``); ASE keeps
    ``d < cutoff``, which differs only for pairs at exactly the cutoff.

    >>> import numpy as np, prox
    >>> x = np.array([[0.5, 0.5, 0.5], [9.5, 0.5, 0.5], [5.0, 5.0, 5.0]])
    >>> i, j, S = prox.neighbor_list("ijS", x, 2.0, cell=[10, 10, 10], pbc=True)
    >>> i.tolist(), j.tolist(), S.tolist()
    ([0, 1], [1, 0], [[-1, 0, 0], [1, 0, 0]])
    """
    _check_quantities(quantities)
    atoms = positions if hasattr(positions, "get_positions") else None
    positions, cell, pbc = _system_of(positions, cell, pbc)
    positions = positions if isinstance(positions, np.ndarray) else np.asarray(positions)
    sizes = _cutoff_sizes(cutoff, atoms, positions.shape[0] if positions.ndim == 2 else 0)
    dim = positions.shape[1] if positions.ndim == 2 else 3
    m = _cell_matrix(cell, dim)
    flags = _pbc_flags(pbc, dim)
    if sizes is not None:
        largest = _largest_threshold(sizes)
        if self_interaction or not full or not _grid_serves(m, flags, largest):
            return _sized_cell(quantities, positions, m, flags, sizes, largest, full,
                               self_interaction, threads)
    elif self_interaction or not full or not _grid_serves(m, flags, float(cutoff)):
        result, = _prox._cell([(positions, m, flags)], float(cutoff), quantities, bool(full),
                              bool(self_interaction), threads)
        return _unpack(result)
    lengths = np.diag(m)
    box = []
    for k in range(dim):
        if flags[k] and not lengths[k] > 0:
            raise ValueError(f"pbc along axis {k} needs a cell length > 0, got {lengths[k]}")
        box.append(float(lengths[k]) if flags[k] else 0.0)
    if sizes is None:
        offsets, indices = _prox._search(positions, float(cutoff), box, threads, "lists",
                                         index_dtype=np.intp)
    else:
        offsets, indices = _prox._sized_search(positions, sizes[0], sizes[1], box, threads,
                                               "lists", sizes[2], index_dtype=np.intp)
    out = {}
    if "i" in quantities or "d" in quantities or "D" in quantities or "S" in quantities:
        i = _prox._rows_of(offsets)
        out["i"] = i
    if "j" in quantities:
        out["j"] = indices
    geo = "".join(q for q in "dDS" if q in quantities)
    if geo:
        values = _prox._geometry(positions, out["i"], indices, geo, box, None, threads)
        out.update(zip(geo, values))
    result = tuple(out[q] for q in quantities)
    return result[0] if len(result) == 1 else result


def _check_quantities(quantities):
    if not isinstance(quantities, str) or not quantities or any(
            q not in "ijdDS" for q in quantities):
        raise ValueError(f"quantities = {quantities!r}: letters among i, j, d, D, S")


def _system_of(positions, cell=None, pbc=None):
    """(positions, cell, pbc) of an ase.Atoms (duck-typed) or of the arrays."""
    if hasattr(positions, "get_positions"):  # an ase.Atoms
        atoms = positions
        positions = atoms.positions
        cell = atoms.cell if cell is None else cell
        pbc = atoms.pbc if pbc is None else pbc
    return positions, cell, pbc


def neighbor_lists(quantities, systems, cutoff, *, self_interaction=False, threads=0):
    """:func:`neighbor_list` over many systems at once (a dataset of structures).

    ``systems`` is a sequence of ``ase.Atoms`` (duck-typed) or of
    ``(positions, cell, pbc)`` triples (cell: lengths or a matrix of rows;
    pbc: one truth value per axis). Returns a list with, for each system,
    what :func:`neighbor_list` returns for it. The systems are searched
    without the GIL, spread over ``threads`` threads (each system on one).

    >>> import numpy as np, prox
    >>> cu = (np.zeros((1, 3)), [[0, 1.8, 1.8], [1.8, 0, 1.8], [1.8, 1.8, 0]], [True] * 3)
    >>> [len(i) for i in prox.neighbor_lists("i", [cu, cu], 3.0)]
    [12, 12]
    """
    _check_quantities(quantities)
    if not isinstance(cutoff, numbers.Real):
        raise ValueError("cutoff: one number (per-atom cutoffs are not supported)")
    triples = []
    for system in systems:
        if hasattr(system, "get_positions"):
            cell = system.cell
            triples.append((system.positions, cell.array if hasattr(cell, "array") else cell,
                            system.pbc))
        else:
            triples.append(system)
    return [_unpack(r) for r in _prox._cell(triples, float(cutoff), quantities, True,
                                            bool(self_interaction), threads)]


class Grid(_prox.Grid):
    """A uniform grid kept across calls: build once, query many times, update as points move.

    ``Grid(radius, box=None, threads=0, keys="linear", points=None)``; with
    ``points`` it builds at once. The grid keeps its own copy of the
    coordinates, so the caller's array may change freely between calls.
    ``update(points)`` relocates the points whose cell changed (or rebuilds
    when that is cheaper) and returns whether it rebuilt. ``pairs()``,
    ``lists()``, ``count()`` and ``query(queries)`` answer as the functions
    of the same names (``index_dtype`` too; ``query`` takes one point of
    shape ``(dim,)`` as :func:`query` does). ``keys``: "linear" (default), "morton" or "hash".
    One call at a time per object: a second thread gets RuntimeError.

    >>> import numpy as np, prox
    >>> x = np.array([[0.0, 0.0, 0.0], [0.5, 0.0, 0.0], [3.0, 0.0, 0.0]])
    >>> g = prox.Grid(1.0, points=x)
    >>> g.pairs().tolist()
    [[0, 1]]
    >>> x[2, 0] = 1.4
    >>> rebuilt = g.update(x)  # True: a third of the points changed cell
    >>> g.pairs().tolist(), g.count()
    ([[0, 1], [1, 2]], 2)
    """


class SkinList(_prox.SkinList):
    """Skin (Verlet) lists: pairs within ``radius + skin`` kept across steps.

    ``SkinList(radius, skin, box=None, threads=0)``. Each call of
    ``pairs(points)`` (or ``lists``, ``count``) returns the pairs within
    ``radius`` for the current positions, rebuilding the kept list only
    after some point moved more than ``skin / 2`` since the last rebuild (or
    the count changed); ``rebuilt`` tells which.

    >>> import numpy as np, prox
    >>> x = np.array([[0.0, 0.0], [1.05, 0.0]])
    >>> s = prox.SkinList(1.0, 0.2)
    >>> s.pairs(x).tolist(), s.rebuilt
    ([], True)
    >>> x[1, 0] = 0.98
    >>> s.pairs(x).tolist(), s.rebuilt
    ([[0, 1]], False)
    """


class SizedSkinList(_prox.SizedSkinList):
    """Skin (Verlet) lists of moving particles with sizes.

    ``SizedSkinList(skin, box=None, threads=0)``. Each call of
    ``pairs(points, radii=r)`` (``rule="contact"`` by default, or
    ``rule="gather_scatter"``), or ``pairs(points, types=t, cutoffs=m)``
    (and ``lists``, ``count``) returns what :func:`pairs` returns with those
    sizes at the current positions, from candidates within each pair's
    threshold + ``skin``. The candidates are gathered again only after some
    point moved more than ``skin / 2`` since the last rebuild, or when the
    count, the rule or any size, type or cutoff changed; ``rebuilt`` tells
    which.

    >>> import numpy as np, prox
    >>> x = np.array([[0.0, 0.0], [2.05, 0.0]])
    >>> s = prox.SizedSkinList(0.2)
    >>> s.pairs(x, radii=[1.0, 1.0]).tolist(), s.rebuilt
    ([], True)
    >>> x[1, 0] = 1.98
    >>> s.pairs(x, radii=[1.0, 1.0]).tolist(), s.rebuilt
    ([[0, 1]], False)
    >>> s.pairs(x, radii=[1.0, 0.9]).tolist(), s.rebuilt
    ([], True)
    """

    def _step(self, points, radii, types, cutoffs, rule, output, sort, index_dtype):
        if (radii is None) == (types is None):
            raise ValueError("give radii= or types= (with cutoffs=)")
        if types is not None:
            if cutoffs is None:
                raise ValueError("types= needs cutoffs=, a symmetric (types, types) matrix")
            return self._search(points, types, "types", cutoffs, output, sort, index_dtype)
        return self._search(points, radii, rule or "contact", None, output, sort, index_dtype)

    def pairs(self, points, radii=None, *, types=None, cutoffs=None, rule=None, sort=True,
              index_dtype=None):
        """The pairs within their threshold, ``(m, 2)``, ``i < j``, sorted."""
        return self._step(points, radii, types, cutoffs, rule, "pairs", sort, index_dtype)

    def lists(self, points, radii=None, *, types=None, cutoffs=None, rule=None, sort=True,
              index_dtype=None):
        """Full neighbour lists (offsets, indices) within each pair's threshold."""
        return self._step(points, radii, types, cutoffs, rule, "lists", sort, index_dtype)

    def count(self, points, radii=None, *, types=None, cutoffs=None, rule=None):
        """The number of pairs within their threshold."""
        return self._step(points, radii, types, cutoffs, rule, "count", True, None)


class SizedGrid(_prox.SizedGrid):
    """Particles with sizes kept across calls, as :class:`Grid` keeps points.

    ``SizedGrid(box=None, threads=0, points=None, radii=None, *, types=None,
    cutoffs=None, rule=None)``; with ``points`` it builds at once.
    ``build(points, radii=r)`` (``rule="contact"``: ``d <= r_i + r_j``, the
    default, or ``rule="gather_scatter"``: ``d <= max(h_i, h_j)``) or
    ``build(points, types=t, cutoffs=m)`` reads and checks the sizes once
    and keeps its own copy of the coordinates, so the caller's array may
    change freely. ``update(points)`` takes new positions (the same count;
    the sizes stay the build's: build again to change them) and returns
    True (the size classes are planned again at each search).
    ``pairs()``, ``lists()`` and ``count()`` answer as :func:`pairs` does
    with those sizes at the kept positions. For particles that move a
    little each step, :class:`SizedSkinList` saves the work between steps.

    >>> import numpy as np, prox
    >>> x = np.array([[0.0, 0.0], [2.05, 0.0], [40.0, 0.0]])
    >>> g = prox.SizedGrid(points=x, radii=[1.0, 1.0, 37.0])
    >>> g.pairs().tolist()
    [[1, 2]]
    >>> x[1, 0] = 1.98
    >>> rebuilt = g.update(x)
    >>> g.pairs().tolist(), g.count()
    ([[0, 1]], 1)
    """

    def __init__(self, box=None, threads=0, points=None, radii=None, *, types=None,
                 cutoffs=None, rule=None):
        super().__init__(box, threads)
        if points is not None:
            self.build(points, radii, types=types, cutoffs=cutoffs, rule=rule)
        elif radii is not None or types is not None:
            raise ValueError("radii= or types= need points= to build")

    def build(self, points, radii=None, *, types=None, cutoffs=None, rule=None):
        """Build over ``points`` and their sizes (``radii=`` or ``types=`` with ``cutoffs=``)."""
        if (radii is None) == (types is None):
            raise ValueError("give radii= or types= (with cutoffs=)")
        if types is not None:
            if cutoffs is None:
                raise ValueError("types= needs cutoffs=, a symmetric (types, types) matrix")
            self._build(points, types, "types", cutoffs)
        else:
            self._build(points, radii, rule or "contact", None)

    def pairs(self, *, sort=True, index_dtype=None):
        """The pairs within their threshold, ``(m, 2)``, ``i < j``, sorted."""
        return self._search("pairs", sort, index_dtype)

    def lists(self, *, sort=True, index_dtype=None):
        """Full neighbour lists (offsets, indices) within each pair's threshold."""
        return self._search("lists", sort, index_dtype)

    def count(self):
        """The number of pairs within their threshold."""
        return self._search("count", True, None)


class Broad(_prox.Broad):
    """The broad phase over axis-aligned boxes, any structure by name.

    ``Broad(boxes=None, algo="auto", threads=0)``; ``algo`` is one of
    :data:`broad_algos` ("auto", the default, picks the structure at each
    build, as the C library and the CLI do). Boxes are ``(n, 4)`` (2D: min x, min y, max x,
    max y) or ``(n, 6)`` (3D: min corner then max corner) float32/float64
    arrays, any strides. Boxes are closed: touching boxes overlap.

    - ``pairs(output="pairs")``: overlapping pairs of built boxes, ``i < j``;
    - ``query_boxes(queries)``: ``(q, j)`` for each query box q and built box j it overlaps;
    - ``query_segments(starts, ends, exact=True)``: the boxes each segment crosses;
    - ``query_swept(start, end)``: the boxes each moving box sweeps over;
    - ``update(boxes)``: boxes moved, added (longer array) or removed (shorter).

    ``output`` is "pairs" (an ``(m, 2)`` intp array, sorted), "lists"
    (CSR) or "count"; ``index_dtype=numpy.uint32`` gives uint32 indices.

    >>> import numpy as np, prox
    >>> b = prox.Broad(np.array([[0, 0, 2, 2], [1, 1, 3, 3], [5, 5, 6, 6.0]]), algo="sap")
    >>> b.pairs().tolist()
    [[0, 1]]
    >>> b.query_segments(np.array([[4.0, 4.0]]), np.array([[7.0, 7.0]])).tolist()
    [[0, 2]]
    """


def box_pairs(boxes, algo="auto", threads=0, *, output="pairs", index_dtype=None):
    """Every pair of overlapping boxes, once (a :class:`Broad` built and queried once).

    ``algo`` as :class:`Broad` ("auto" by default), ``output`` and
    ``index_dtype`` as :meth:`Broad.pairs`.

    >>> import numpy as np, prox
    >>> prox.box_pairs(np.array([[0, 0, 1, 1], [1, 1, 2, 2.0]]), algo="kdtree").tolist()
    [[0, 1]]
    """
    return Broad(boxes, algo, threads).pairs(output, index_dtype=index_dtype)


def _knn_points(points):
    """points as an array the C side reads, and whether it was one point."""
    a = np.asarray(points)
    if a.ndim == 1:
        return a.reshape(1, -1), True
    return points, False


def _knn_shaped(result, k, single):
    """cKDTree.query's shapes: (m,) for k = 1, (m, k) beyond; one point drops m."""
    distances, indices, _ = result
    if k == 1:
        distances, indices = distances[:, 0], indices[:, 0]
    if single:
        distances, indices = distances[0], indices[0]
    return distances, indices


def knn(points, k, queries=None, max_radius=None, box=None, threads=0, *, include_self=False,
        cell=None, pbc=None):
    """The ``k`` nearest points of each query, as ``cKDTree(points).query(queries, k)``.

    Parameters
    ----------
    points : (n, 2) or (n, 3) float32 or float64 array, any strides, or an
        ``ase.Atoms`` (duck-typed: its positions, cell and pbc are used, as
        ``cell=`` and ``pbc=``)
    k : int, >= 1
    queries : None (every point queries the others, leaving itself out
        unless ``include_self``; its duplicates at other indices count), or
        an (m, dim) array, or one point (dim,)
    max_radius : None, or only neighbours within it (closed ball; scipy's
        ``distance_upper_bound`` excludes the bound itself)
    box : periodic box as in :func:`pairs` (scipy's ``boxsize``): minimum
        images, each point at most once
    threads : int, 0 for OpenMP's default
    cell : None, or a periodic cell of any shape, as :func:`neighbor_list`
        takes it (``dim`` lengths or a (dim, dim) matrix of rows); the
        neighbours are then the images ``(j, S)`` at ``x_j + S @ cell``:
        several images of one point where the cell is small, and a point's
        own images (``S != 0``); positions need not lie in the cell
    pbc : with ``cell``: None (every axis periodic), one bool, or ``dim``
        bools

    Returns
    -------
    (distances, indices): float64 and intp arrays of shape (m, k), or
    (m,) for ``k == 1``, each row nearest first, points at the same
    distance in ascending index order; a row with fewer than k
    neighbours is padded with distance ``inf`` and index ``n``, as scipy
    pads it. Distances are ``sqrt`` of the squared distance in double
    (the bits a brute-force loop computes). With ``cell`` (or an
    ``ase.Atoms``): (distances, indices, shifts), ``shifts`` int64 of shape
    (m, k, dim) (padding 0), ties in (index, shift) order, and the
    distance that of ``D = (x_j - x_q) + ((S0*a + S1*b) + S2*c)`` in double,
    as :func:`neighbor_list` computes ``D``.

    >>> import numpy as np, prox
    >>> x = np.array([[0.0, 0.0], [1.0, 0.0], [3.0, 0.0]])
    >>> d, i = prox.knn(x, 2)
    >>> d.tolist(), i.tolist()
    ([[1.0, 3.0], [1.0, 2.0], [2.0, 3.0]], [[1, 2], [0, 2], [1, 0]])
    >>> fcc = [[0, 1.8, 1.8], [1.8, 0, 1.8], [1.8, 1.8, 0]]
    >>> d, i, S = prox.knn(np.zeros((1, 3)), 12, cell=fcc)
    >>> round(float(d[0, 11]), 4), i[0].tolist() == [0] * 12, S[0, 0].tolist()
    (2.5456, True, [-1, 0, 0])
    """
    single = False
    if queries is not None:
        queries, single = _knn_points(queries)
    radius = 0.0 if max_radius is None else max_radius
    if hasattr(points, "get_positions") or cell is not None:
        if box is not None:
            raise ValueError("knn: box and cell are two ways to give the box: one of them")
        return _cell_knn(points, int(k), queries, radius, cell, pbc, threads, include_self, single)
    result = _prox._knn(points, int(k), queries, radius, box, threads, include_self)
    return _knn_shaped(result, int(k), single)


def _cell_knn(points, k, queries, radius, cell, pbc, threads, include_self, single):
    """knn's images in a cell: (distances, indices, shifts), shaped as knn's."""
    atoms = hasattr(points, "get_positions")
    positions, cell, pbc = _system_of(points, cell, pbc)
    if not atoms and pbc is None:
        pbc = True
    positions = positions if isinstance(positions, np.ndarray) else np.asarray(positions)
    dim = positions.shape[1] if positions.ndim == 2 else 3
    m = np.zeros((3, 3))
    m[:dim, :dim] = _cell_matrix(cell, dim)
    flags = [False, False, False]
    flags[:dim] = [bool(f) for f in _pbc_flags(pbc, dim)]
    distances, indices, _, shifts = _prox._cell_knn(
        positions, k, queries, radius, tuple(float(v) for v in m.ravel()), tuple(flags),
        threads, include_self)
    if k == 1:
        distances, indices, shifts = distances[:, 0], indices[:, 0], shifts[:, 0]
    if single:
        distances, indices, shifts = distances[0], indices[0], shifts[0]
    return distances, indices, shifts


class KNNIndex(_prox.KNNIndex):
    """Points kept for k-nearest-neighbour queries: build once, query many times.

    ``KNNIndex(points, box=None, k=16, threads=0)`` copies the points into
    cells sized for ``k`` neighbours (any k may be asked later).
    ``query(x=None, k=1, max_radius=None, threads=None, include_self=False)``
    returns ``(distances, indices)`` as :func:`knn` (and
    ``cKDTree.query``) does; ``x=None`` queries the built points
    themselves, each leaving itself out unless ``include_self``.

    >>> import numpy as np, prox
    >>> t = prox.KNNIndex(np.array([[0.0, 0.0], [1.0, 0.0], [3.0, 0.0]]))
    >>> int(t.query([2.9, 0.0])[1]), t.query([[0.0, 0.1]], k=2)[1].tolist()
    (2, [[0, 1]])
    """

    def query(self, x=None, k=1, max_radius=None, threads=None, *, include_self=False):
        single = False
        if x is not None:
            x, single = _knn_points(x)
        result = super().query(x, int(k), 0.0 if max_radius is None else max_radius,
                               -1 if threads is None else threads, include_self)
        return _knn_shaped(result, int(k), single)
