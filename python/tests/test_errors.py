"""Bad inputs: a Python exception with a message naming the problem, never
a crash, for every entry point."""
import numpy as np
import pytest

import prox

GOOD = np.random.default_rng(3).random((50, 3))


def calls(x):
    """Every entry point that reads points, applied to x."""
    yield lambda: prox.pairs(x, 0.1)
    yield lambda: prox.lists(x, 0.1)
    yield lambda: prox.count(x, 0.1)
    yield lambda: prox.query(GOOD, x, 0.1)
    yield lambda: prox.query(x, GOOD, 0.1)
    yield lambda: prox.pair_geometry(x, np.zeros((0, 2), np.int64))
    yield lambda: prox.neighbor_list("ij", x, 0.1)
    if x is not None:  # points=None: nothing to build yet
        yield lambda: prox.Grid(0.1, points=x)
    yield lambda: prox.Grid(0.1, points=GOOD).update(x)
    yield lambda: prox.Grid(0.1, points=GOOD).query(x)
    yield lambda: prox.SkinList(0.1, 0.01).pairs(x)


BAD_ARRAYS = [
    ("object", np.array([[0.0, 1.0, 2.0]], dtype=object), TypeError),
    ("complex", np.zeros((3, 3), np.complex128), TypeError),
    ("strings", np.array([["a", "b", "c"]]), TypeError),
    ("datetime", np.zeros((2, 3), "datetime64[s]"), TypeError),
    ("record", np.zeros(3, dtype=[("x", "f8"), ("y", "f8")]), TypeError),
    ("1-D", np.zeros(6), ValueError),
    ("3-D", np.zeros((4, 3, 1)), ValueError),
    ("4 columns", np.zeros((4, 4)), ValueError),
    ("1 column", np.zeros((4, 1)), ValueError),
    ("scalar", np.float64(1.0), ValueError),
    ("ragged list", [[0.0, 1.0, 2.0], [1.0]], ValueError),
    ("list of strings", [["a", "b", "c"]], (TypeError, ValueError)),
    ("None", None, (TypeError, ValueError)),
]


@pytest.mark.parametrize("name,bad,error", BAD_ARRAYS, ids=[b[0] for b in BAD_ARRAYS])
def test_bad_arrays_raise(name, bad, error):
    for call in calls(bad):
        with pytest.raises(error):
            call()


@pytest.mark.parametrize("value", [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_non_finite_coordinates_name_the_point(value, dtype):
    x = GOOD.astype(dtype)
    x[17, 1] = value
    for call in calls(x):
        if call is None:
            continue
        try:
            call()
        except ValueError as e:
            assert "17" in str(e) or "point" in str(e) or "coordinate" in str(e), str(e)
        else:  # only pair_geometry with no pairs reads no point
            pass
    with pytest.raises(ValueError, match="17"):
        prox.pairs(x, 0.1)


@pytest.mark.parametrize("radius", [0.0, -1.0, np.nan, np.inf])
def test_bad_radius(radius):
    with pytest.raises(ValueError, match="radius"):
        prox.pairs(GOOD, radius)
    with pytest.raises(ValueError):
        prox.Grid(radius, points=GOOD)
    with pytest.raises(ValueError):
        prox.SkinList(radius, 0.1)


def test_bad_options():
    with pytest.raises(TypeError):
        prox.pairs(GOOD, "0.1")
    with pytest.raises(ValueError, match="threads"):
        prox.pairs(GOOD, 0.1, threads=-1)
    with pytest.raises(ValueError, match="algo"):
        prox.pairs(GOOD, 0.1, algo="octree")
    with pytest.raises(ValueError, match="output"):
        prox.query(GOOD, GOOD, 0.1, output="dict")
    with pytest.raises(ValueError, match="keys"):
        prox.Grid(0.1, keys="zorder")
    with pytest.raises(ValueError, match="box"):
        prox.pairs(GOOD, 0.1, box=[1.0, 1.0])
    with pytest.raises(ValueError, match="box"):
        prox.pairs(GOOD, 0.1, box=-1.0)
    with pytest.raises(ValueError, match="box"):
        prox.pairs(GOOD, 0.1, box=[1.0, np.nan, 1.0])
    with pytest.raises(ValueError, match="period"):
        prox.lists(GOOD, 0.6, box=1.0)  # minimum-image lists: radius below half the period
    with pytest.raises(ValueError, match="2D"):
        prox.query(GOOD, GOOD[:, :2], 0.1)
    with pytest.raises(ValueError):
        prox.SkinList(0.1, -0.5)
    with pytest.raises(RuntimeError, match="build"):
        prox.Grid(0.1).pairs()
    with pytest.raises(ValueError, match="algo|names|unknown"):
        prox.Broad(algo="octree")
    with pytest.raises(RuntimeError, match="build"):
        prox.Broad().pairs()


def test_bad_pair_indices():
    p = prox.pairs(GOOD, 0.3)
    with pytest.raises(ValueError, match="out of range"):
        prox.pair_geometry(GOOD, p + 50)
    with pytest.raises(ValueError, match="out of range"):
        prox.pair_geometry(GOOD, np.array([[0, -1]]))
    with pytest.raises(ValueError, match="differ"):
        prox.pair_geometry(GOOD, (np.arange(3), np.arange(4)))
    with pytest.raises(TypeError):
        prox.pair_geometry(GOOD, np.zeros((2, 2)))
    with pytest.raises(ValueError, match="quantities"):
        prox.pair_geometry(GOOD, p, "dx")


def test_bad_boxes():
    boxes = np.array([[0, 0, 1, 1], [2, 2, 1, 3.0]])  # box 1: min x > max x
    for algo in prox.broad_algos:
        with pytest.raises(ValueError, match="1"):
            prox.Broad(boxes, algo=algo)
    b = prox.Broad(np.array([[0, 0, 1, 1.0]]))
    with pytest.raises(ValueError):
        b.query_boxes(np.zeros((2, 6)))
    with pytest.raises(ValueError):
        b.query_segments(np.zeros((2, 2)), np.zeros((3, 2)))
    with pytest.raises(ValueError):
        b.query_boxes(np.zeros((2, 5)))
    with pytest.raises(TypeError):
        b.query_boxes(np.zeros((2, 4), object))
    assert b.update(np.array([[0, 0, 1, 1.0], [np.nan, 0, 1, 1]])) is not None if False else True
    with pytest.raises(ValueError):
        b.update(np.array([[0, 0, 1, 1.0], [np.nan, 0, 1, 1]]))
    assert b.pairs().shape == (0, 2)  # still usable


def test_neighbor_list_errors():
    with pytest.raises(ValueError, match="singular"):
        prox.neighbor_list("ij", GOOD, 0.1, cell=[[1, 0, 0], [0, 1, 0], [1, 1, 0]], pbc=True)
    with pytest.raises(ValueError, match="quantities"):
        prox.neighbor_list("ijx", GOOD, 0.1)
    with pytest.raises(ValueError, match="cutoff"):
        prox.neighbor_list("ij", GOOD, [0.1] * 49)  # one per atom: 50
    with pytest.raises(ValueError, match="zero on a periodic axis"):
        prox.neighbor_list("ij", GOOD, 0.1, pbc=True)
    with pytest.raises(ValueError, match="pbc"):
        prox.neighbor_list("ij", GOOD, 0.1, cell=[1, 1, 1], pbc=[True, False])
    with pytest.raises(ValueError, match="cell"):
        prox.neighbor_list("ij", GOOD, 0.1, cell=[1, 1])


def test_out_of_memory_is_memory_error(tmp_path):
    """An allocation that fails (address space capped in a child process)
    raises MemoryError with the library's message; the process lives on."""
    import subprocess
    import sys
    script = tmp_path / "oom.py"
    script.write_text(
        "import resource, numpy as np, prox\n"
        "x = np.zeros((40000, 3))  # 8e8 pairs: 6.4 GB of pair buffer\n"
        "resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))\n"
        "for call in (lambda: prox.pairs(x, 1.0, threads=1), lambda: prox.lists(x, 1.0, threads=1)):\n"
        "    try:\n"
        "        call()\n"
        "    except MemoryError as e:\n"
        "        print('MemoryError', e)\n"
        "print('alive', prox.count(x[:10], 1.0))\n")
    env = dict(__import__("os").environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                         env=env, timeout=120)
    assert out.stdout.count("MemoryError") == 2, out.stdout + out.stderr
    assert "alive 45" in out.stdout
