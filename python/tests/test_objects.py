"""Objects kept between calls: Grid (build, update), SkinList, Broad (every
structure by name), checked against the one-shot calls and brute force."""
import threading

import numpy as np
import pytest

import prox
from conftest import brute_pairs, pairs_of_lists


def test_grid_follows_moving_points():
    rng = np.random.default_rng(11)
    x = rng.random((3000, 3))
    r = 0.06
    g = prox.Grid(r, box=1.0, threads=2)
    g.build(x)
    assert g.size == 3000 and g.dim == 3 and g.radius == r
    rebuilt_seen = {True: 0, False: 0}
    for step in range(6):
        x = x + rng.normal(scale=0.003 if step != 3 else 0.3, size=x.shape)
        rebuilt_seen[g.update(x)] += 1
        assert g.rebuilt == g.stats["rebuilt"]
        want = prox.pairs(x, r, box=1.0)
        assert np.array_equal(g.pairs(), want)
        assert g.count() == len(want)
        o, i = g.lists()
        wo, wi = prox.lists(x, r, box=1.0)
        assert np.array_equal(o, wo) and np.array_equal(i, wi)
        q = rng.random((100, 3))
        qo, qi = g.query(q)
        wqo, wqi = prox.query(x, q, r, box=1.0)
        assert np.array_equal(qo, wqo) and np.array_equal(qi, wqi)
        assert np.array_equal(g.query(q, "pairs"), prox.query(x, q, r, box=1.0, output="pairs"))
        assert g.query(q, "count") == len(wqi)
    assert rebuilt_seen[True] >= 1 and rebuilt_seen[False] >= 1
    # a different count or dimension rebuilds
    assert g.update(x[:100]) is True
    assert np.array_equal(g.pairs(), prox.pairs(x[:100], r, box=1.0))
    assert g.update(x[:, :2]) is True and g.dim == 2
    assert np.array_equal(g.pairs(), prox.pairs(x[:, :2], r, box=1.0))
    g.trim()


def test_grid_keeps_no_reference_to_the_callers_array():
    x = np.random.default_rng(12).random((500, 3))
    g = prox.Grid(0.1, points=x)
    want = g.pairs()
    x[:] = 0  # the grid has its own copy
    assert np.array_equal(g.pairs(), want)
    del x
    assert np.array_equal(g.pairs(), want)


def test_skin_list_tells_rebuilds_and_stays_exact():
    rng = np.random.default_rng(13)
    x = rng.random((2000, 3))
    r, skin = 0.05, 0.02
    s = prox.SkinList(r, skin, box=1.0)
    flags = []
    for step in range(8):
        got = s.pairs(x)
        flags.append(s.rebuilt)
        assert np.array_equal(got, prox.pairs(x, r, box=1.0))
        assert s.count(x) == len(got)
        o, i = s.lists(x)
        assert np.array_equal(pairs_of_lists(o, i), pairs_of_lists(*prox.lists(x, r, box=1.0)))
        x = x + rng.normal(scale=0.0015, size=x.shape)
    assert flags[0] is True and not all(flags)


BOX_ALGOS = list(prox.broad_algos)


def brute_overlaps(a, b):
    dim = a.shape[1] // 2
    ok = np.ones((len(a), len(b)), bool)
    for k in range(dim):
        ok &= (a[:, None, k] <= b[None, :, dim + k]) & (b[None, :, k] <= a[:, None, dim + k])
    return ok


def random_boxes(rng, n, dim, dtype=np.float64):
    lo = rng.random((n, dim)) * 10
    size = rng.random((n, dim)) ** 3 * 2
    return np.concatenate([lo, lo + size], axis=1).astype(dtype)


@pytest.mark.parametrize("algo", BOX_ALGOS)
@pytest.mark.parametrize("dim", [2, 3])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_broad_phase_every_structure(algo, dim, dtype):
    rng = np.random.default_rng(14)
    boxes = random_boxes(rng, 400, dim, dtype)
    b = prox.Broad(boxes, algo=algo, threads=2)
    assert b.algo == algo and b.size == 400 and b.dim == dim
    ok = brute_overlaps(boxes.astype(np.float64), boxes.astype(np.float64))
    want = np.argwhere(np.triu(ok, 1))
    assert np.array_equal(b.pairs(), want)
    assert b.pairs("count") == len(want)
    o, i = b.pairs("lists")
    assert len(i) == 2 * len(want)
    q = random_boxes(rng, 100, dim, dtype)
    assert np.array_equal(b.query_boxes(q), np.argwhere(brute_overlaps(q, boxes)))
    # segments: exact hits are a subset of the bounding-box hits, which are
    # exactly the boxes overlapping each segment's bounding box
    s = rng.random((200, dim)) * 10
    e = s + rng.normal(scale=1.0, size=s.shape)
    seg_boxes = np.concatenate([np.minimum(s, e), np.maximum(s, e)], axis=1)
    loose = b.query_segments(s, e, exact=False)
    assert np.array_equal(loose, np.argwhere(brute_overlaps(seg_boxes, boxes)))
    exact = b.query_segments(s, e)
    assert set(map(tuple, exact.tolist())) <= set(map(tuple, loose.tolist()))
    assert np.array_equal(exact, prox.Broad(boxes, algo="brute").query_segments(s, e))
    # swept boxes
    moved = q + 0.5
    swept = np.concatenate([np.minimum(q[:, :dim], moved[:, :dim]),
                            np.maximum(q[:, dim:], moved[:, dim:])], axis=1)
    assert np.array_equal(b.query_swept(q, moved), np.argwhere(brute_overlaps(swept, boxes)))
    # update: move, grow, shrink
    boxes2 = np.concatenate([boxes + 0.01, random_boxes(rng, 20, dim, dtype)])
    b.update(boxes2)
    want2 = np.argwhere(np.triu(brute_overlaps(boxes2, boxes2), 1))
    assert np.array_equal(b.pairs(), want2)
    b.update(boxes2[:150])
    assert np.array_equal(b.pairs(), want2[(want2 < 150).all(axis=1)])
    assert np.array_equal(prox.box_pairs(boxes, algo=algo), want)
    b.trim()


def test_broad_strided_boxes():
    rng = np.random.default_rng(15)
    boxes = random_boxes(rng, 300, 3)
    want = prox.box_pairs(boxes)
    rec = np.zeros(300, dtype=[("id", "i4"), ("pad", "i4"), ("box", "f8", (6,))])
    rec["box"] = boxes
    for view in (np.asfortranarray(boxes), rec["box"], np.repeat(boxes, 2, axis=0)[::2]):
        assert np.array_equal(prox.box_pairs(view, algo="grid"), want)
    assert np.array_equal(prox.box_pairs(boxes.astype(np.float32)),
                          prox.box_pairs(boxes.astype(np.float32).astype(np.float64)))


def test_one_object_one_call_at_a_time():
    """A second thread calling an object that is searching gets RuntimeError
    (the GIL is released during the search, so the call can arrive)."""
    x = np.random.default_rng(16).random((1_500_000, 3))
    g = prox.Grid(0.012, points=x, threads=1)
    errors, started = [], threading.Event()

    def long_search():
        started.set()
        g.count()

    t = threading.Thread(target=long_search)
    t.start()
    started.wait()
    for _ in range(2000):
        try:
            g.count()
        except RuntimeError as e:
            errors.append(str(e))
            break
        if not t.is_alive():
            break
    t.join()
    assert g.count() == prox.count(x, 0.012)
    if not errors:
        pytest.skip("the other thread finished before a second call arrived")
    assert "in use" in errors[0]
