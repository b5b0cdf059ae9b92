"""Hypothesis strategies for the component property tests (losses, duality, regularizers).

Draws are NumPy float64 arrays; scores mix free values with offsets that land exactly
on the kinks of the built-in losses (u = y, yu = 1, |u − y| = δ, ε, ...).
"""
from __future__ import annotations

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from kopt.testing import sample_duals

KINKS = [0.0, 1.0, -1.0, 0.1, -0.1, 0.5, -0.5, 0.3, -0.3, 2.0, -2.0]
N_CLASSES = 3

finite = st.floats(-8.0, 8.0, allow_nan=False, allow_infinity=False, width=32)
offsets = st.one_of(finite, st.sampled_from(KINKS))


def float_arrays(n, elements=finite):
    return hnp.arrays(np.float64, n, elements=elements)


@st.composite
def labels(draw, loss, n):
    """Labels encoded for ``loss.target`` (the offset τ for an unlabeled loss)."""
    t = loss.target
    if t == "binary":
        return draw(hnp.arrays(np.float64, n, elements=st.sampled_from([-1.0, 1.0])))
    if t == "multiclass":
        return draw(hnp.arrays(np.int64, n, elements=st.integers(0, N_CLASSES - 1)))
    if t == "two_sample":
        return draw(hnp.arrays(np.float64, n, elements=st.sampled_from([0.0, 1.0])))
    return draw(float_arrays(n, st.floats(-4.0, 4.0, width=32)))


@st.composite
def scores(draw, loss, y):
    """Predictions for labels y: residual/margin offsets that include the kinks."""
    n = y.shape[0]
    if loss.target == "multiclass":
        return draw(hnp.arrays(np.float64, (n, N_CLASSES), elements=st.floats(-6.0, 6.0, width=32)))
    r = draw(float_arrays(n, offsets))
    if loss.target == "binary":
        return y * (1.0 + r)
    if loss.target == "two_sample":
        return np.clip(r, -4.0, 4.0)
    return y + r


@st.composite
def problems(draw, loss, min_n=3, max_n=24):
    """(u, y) pairs for ``loss``."""
    n = draw(st.integers(min_n, max_n))
    y = draw(labels(loss, n))
    return draw(scores(loss, y)), y


@st.composite
def duals(draw, loss, y, interior=0.0):
    """Points of the conjugate's domain for labels y (seeded from the draw)."""
    seed = draw(st.integers(0, 2**32 - 1))
    return sample_duals(loss, y, np.random.default_rng(seed), N_CLASSES, interior=interior)


steps = st.sampled_from([1e-3, 0.05, 0.5, 1.0, 4.0, 50.0])
lambdas = st.floats(1e-3, 5.0)
