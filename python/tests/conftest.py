"""Shared helpers of the prox Python tests: oracles computing the library's
boundary rule with the same bits (double, dx*dx + dy*dy + dz*dz, minimum
image after wrapping), and random inputs."""
import os
from pathlib import Path

import numpy as np
import pytest


def wrap(x, L):
    w = x - L * np.floor(x / L)
    return np.where((w >= L) | (w < 0), 0.0, w)


def deltas(a, b, period):
    """b[j] - a[i] per axis for every (i, j): (dim, len(a), len(b)) in double."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    out = []
    for k in range(a.shape[1]):
        L = period[k] if period is not None else 0
        xa, xb = (wrap(a[:, k], L), wrap(b[:, k], L)) if L > 0 else (a[:, k], b[:, k])
        d = xb[None, :] - xa[:, None]
        if L > 0:
            d = np.where(d > 0.5 * L, d - L, np.where(d < -0.5 * L, d + L, d))
        out.append(d)
    return out


def dist2(a, b, period=None):
    d = deltas(a, b, period)
    s = d[0] * d[0] + d[1] * d[1]
    if len(d) == 3:
        s = s + d[2] * d[2]
    return s


def brute_pairs(x, r, period=None):
    """Sorted (m, 2) i < j by the library's rule."""
    s = dist2(x, x, period)
    i, j = np.nonzero(np.triu(s <= r * r, k=1))
    return np.stack([i, j], axis=1)


def brute_query(x, q, r, period=None):
    """Sorted (q, j) pairs."""
    s = dist2(q, x, period)
    i, j = np.nonzero(s <= r * r)
    return np.stack([i, j], axis=1)


def as_rows(offsets, indices):
    return [indices[offsets[k]:offsets[k + 1]].tolist() for k in range(len(offsets) - 1)]


def pairs_of_lists(offsets, indices):
    rows = np.repeat(np.arange(len(offsets) - 1), np.diff(offsets))
    return np.stack([rows, indices.astype(np.int64)], axis=1)


@pytest.fixture
def rng():
    return np.random.default_rng(20261127)


@pytest.fixture(scope="session")
def cli():
    path = os.environ.get("PROX_CLI")
    if not path:
        guess = Path(__file__).resolve().parents[2] / "build" / "prox"
        path = str(guess) if guess.exists() else None
    if not path or not Path(path).exists():
        pytest.skip("the prox CLI is not built (PROX_CLI unset)")
    return path
