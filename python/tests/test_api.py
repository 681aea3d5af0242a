"""The Python API's conventions against scipy's and ASE's: intp indices by
default (uint32 on request), one query point of shape (dim,), the broad
phase's "auto" default, introspectable signatures that match the type
hints, and a clear error for a buffer that cannot be read."""
import ast
import inspect
import mmap
from pathlib import Path

import numpy as np
import pytest

import prox
from conftest import brute_pairs, brute_query, dist2, pairs_of_lists

from test_objects import brute_overlaps, random_boxes


def cloud(rng, n, dim):
    return rng.random((n, dim))


def index_results(x, boxes, index_dtype):
    """Every call returning indices, by name, with this index_dtype."""
    kw = {"index_dtype": index_dtype}
    q = x[:7] + 0.01
    g = prox.Grid(0.2, points=x)
    s = prox.SkinList(0.2, 0.05)
    b = prox.Broad(boxes)
    starts, ends = boxes[:5, :2], boxes[5:10, :2] + 1
    return {
        "pairs": prox.pairs(x, 0.2, **kw),
        "lists": prox.lists(x, 0.2, **kw)[1],
        "query lists": prox.query(x, q, 0.2, **kw)[1],
        "query pairs": prox.query(x, q, 0.2, output="pairs", **kw),
        "query one point": prox.query(x, q[0], 0.2, **kw),
        "Grid.pairs": g.pairs(**kw),
        "Grid.lists": g.lists(**kw)[1],
        "Grid.query": g.query(q, **kw)[1],
        "Grid.query one point": g.query(q[0], **kw),
        "SkinList.pairs": s.pairs(x, **kw),
        "SkinList.lists": s.lists(x, **kw)[1],
        "Broad.pairs": b.pairs(**kw),
        "Broad.pairs lists": b.pairs("lists", **kw)[1],
        "Broad.query_boxes": b.query_boxes(boxes[:9], **kw),
        "Broad.query_segments": b.query_segments(starts, ends, **kw),
        "Broad.query_swept": b.query_swept(boxes[:5], boxes[5:10], **kw),
        "box_pairs": prox.box_pairs(boxes, **kw),
    }


def test_indices_are_intp_by_default_and_uint32_on_request(rng):
    x = cloud(rng, 300, 2)
    boxes = random_boxes(rng, 200, 2)
    wide = index_results(x, boxes, None)
    assert prox.pairs(x, 0.2, index_dtype=np.intp).dtype == np.intp
    narrow = index_results(x, boxes, np.uint32)
    for name, got in wide.items():
        assert got.dtype == np.intp, name
        assert narrow[name].dtype == np.uint32, name
        assert np.array_equal(got, narrow[name].astype(np.intp)), name
        assert len(got) > 0, name
    # the values themselves, against the brute-force oracle
    assert np.array_equal(wide["pairs"], brute_pairs(x, 0.2))
    assert np.array_equal(wide["box_pairs"], np.argwhere(np.triu(brute_overlaps(boxes, boxes), 1)))


def test_index_differences_do_not_wrap(rng):
    """scipy's and ASE's int64 arithmetic: j - i of a pair i < j is negative."""
    p = prox.pairs(cloud(rng, 200, 3), 0.3)
    assert (p[:, 0] - p[:, 1] < 0).all()


@pytest.mark.parametrize("bad", [np.int16, np.float64, "uint64", "no such dtype"])
def test_index_dtype_other_than_intp_or_uint32_is_refused(rng, bad):
    x = cloud(rng, 20, 2)
    with pytest.raises((ValueError, TypeError), match="index_dtype|data type"):
        prox.pairs(x, 0.2, index_dtype=bad)
    with pytest.raises((ValueError, TypeError), match="index_dtype|data type"):
        prox.Grid(0.2, points=x).pairs(index_dtype=bad)


@pytest.mark.parametrize("dim", [2, 3])
def test_one_query_point_as_query_ball_point(rng, dim):
    x = cloud(rng, 500, dim)
    x0 = rng.random(dim)
    r = 0.15
    want = np.nonzero(dist2(x0[None, :], x)[0] <= r * r)[0]
    assert len(want) > 0
    got = prox.query(x, x0, r)
    assert got.dtype == np.intp and got.ndim == 1
    assert np.array_equal(got, want)
    assert np.array_equal(prox.Grid(r, points=x).query(x0), want)
    assert prox.query(x, x0, r, output="count") == len(want)
    pairs = prox.query(x, x0, r, output="pairs")
    assert np.array_equal(pairs, brute_query(x, x0[None, :], r))
    assert np.array_equal(prox.query(x, list(x0), r), want)  # a list is one point too


def test_one_query_point_of_wrong_length_names_the_shapes(rng):
    with pytest.raises(ValueError, match=r"queries: expected shape .*one point \(2,\) or \(3,\)"):
        prox.query(cloud(rng, 10, 3), np.zeros(4), 0.1)
    with pytest.raises(ValueError, match="queries: 2D, points: 3D"):
        prox.query(cloud(rng, 10, 3), np.zeros(2), 0.1)


def test_broad_phase_defaults_to_auto(rng):
    assert "auto" in prox.broad_algos
    boxes = random_boxes(rng, 300, 3)
    b = prox.Broad(boxes)
    assert b.algo == "auto"
    assert inspect.signature(prox.Broad).parameters["algo"].default == "auto"
    assert inspect.signature(prox.box_pairs).parameters["algo"].default == "auto"
    want = np.argwhere(np.triu(brute_overlaps(boxes, boxes), 1))
    assert np.array_equal(b.pairs(), want)
    assert np.array_equal(prox.box_pairs(boxes), want)


def public_callables():
    for name in prox.__all__:
        obj = getattr(prox, name)
        if inspect.isclass(obj):
            yield name, obj
            for attr, member in vars(obj.__mro__[1]).items():
                if not attr.startswith("_") and callable(member):
                    yield f"{name}.{attr}", getattr(obj, attr)
        elif callable(obj):
            yield name, obj


def hinted_parameters():
    """Parameter names of every function and method in __init__.pyi, by name."""
    tree = ast.parse(Path(prox.__file__).with_suffix(".pyi").read_text())
    out = {}

    def names(fn):
        a = fn.args
        return [p.arg for p in a.posonlyargs + a.args + a.kwonlyargs if p.arg != "self"]

    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            out[node.name] = names(node)
        elif isinstance(node, ast.ClassDef):
            for fn in node.body:
                if isinstance(fn, ast.FunctionDef) and not fn.decorator_list:
                    key = node.name if fn.name == "__init__" else f"{node.name}.{fn.name}"
                    out[key] = names(fn)
    return out


def test_every_public_callable_has_a_signature_matching_its_type_hints():
    hints = hinted_parameters()
    seen = []
    for name, obj in public_callables():
        sig = inspect.signature(obj)  # raises ValueError where none is found
        params = [p for p in sig.parameters if p != "self"]
        assert name in hints, f"{name} has no type hints in __init__.pyi"
        assert params == hints[name], name
        seen.append(name)
    assert {"Grid", "Grid.query", "SkinList", "Broad", "Broad.query_swept", "pairs"} <= set(seen)


def test_signature_defaults_are_the_ones_applied(rng):
    """A call with the signature's defaults spelled out gives the plain call's result."""
    x = cloud(rng, 200, 3)
    g = prox.Grid(0.2, points=x)
    for fn, args in [(prox.pairs, (x, 0.2)), (g.pairs, ()), (g.lists, ()),
                     (prox.query, (x, x[:5], 0.2))]:
        sig = inspect.signature(fn)
        bound = sig.bind(*args)
        bound.apply_defaults()
        got, want = fn(*bound.args, **bound.kwargs), fn(*args)
        if isinstance(want, tuple):
            assert all(np.array_equal(a, b) for a, b in zip(got, want))
        else:
            assert np.array_equal(got, want)


def released_memoryview():
    m = memoryview(np.zeros((4, 3)))
    m.release()
    return m


def closed_mmap():
    m = mmap.mmap(-1, 4096)
    m.close()
    return m


@pytest.mark.parametrize("make, word", [(released_memoryview, "memoryview"),
                                        (closed_mmap, "mmap")])
def test_unreadable_buffer_names_the_argument(rng, make, word):
    x = cloud(rng, 10, 3)
    with pytest.raises(ValueError, match=rf"^points: the .*{word}.* cannot be read \(.*\)"):
        prox.pairs(make(), 0.1)
    with pytest.raises(ValueError, match=rf"^queries: the .*{word}.* cannot be read"):
        prox.query(x, make(), 0.1)
    with pytest.raises(ValueError, match=rf"^boxes: the .*{word}.* cannot be read"):
        prox.box_pairs(make())


def test_an_open_buffer_is_read(rng):
    x = cloud(rng, 50, 3)
    assert np.array_equal(prox.pairs(memoryview(x), 0.3), prox.pairs(x, 0.3))
    assert np.array_equal(pairs_of_lists(*prox.lists(memoryview(x)[::2], 0.3)),
                          pairs_of_lists(*prox.lists(x[::2], 0.3)))
