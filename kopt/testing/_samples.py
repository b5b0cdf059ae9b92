"""Test points for the loss checks: labels, scores and dual points in a loss's domain.

Everything here is NumPy float64 on the host; the checks cast where they test dtypes.
"""
from __future__ import annotations

import numpy as np

from ..contract.components import Component, Loss

TARGETS = ("real", "binary", "multiclass", "unlabeled", "two_sample")


def default_instance(cls: type) -> Component:
    """Instantiate a component class with the defaults of its parameter schema.

    Parameters
    ----------
    cls : type
        A component class.

    Returns
    -------
    Component
        The instance.

    Examples
    --------
    >>> import numpy as np
    >>> import kopt.testing as kt
    >>> from kopt.contract.registry import registry
    >>> kt.default_instance(registry().get("loss", "huber"))
    HuberLoss(delta=1.0, target='real')
    """
    return cls(**{k: s["default"] for k, s in cls.params.items() if isinstance(s, dict) and "default" in s})


def is_multiclass(loss):
    return loss.target == "multiclass"


def sum_zero(loss):
    """Whether the conjugate's domain carries the extra constraint Σ_c v_c = 0 (softmax)."""
    return bool(loss.conj_sum_zero)


def sample_labels(loss: Loss, n: int, rng: np.random.Generator, n_classes: int = 3) -> np.ndarray:
    """Labels encoded the way a solver sees them for ``loss.target``.

    Parameters
    ----------
    loss : Loss
        The loss instance.
    n : int
        How many.
    rng : numpy.random.Generator
        Where they come from.
    n_classes : int, optional
        Classes, for a multiclass loss.

    Returns
    -------
    ndarray of shape (n,)
        -1/+1 (binary), class ids (multiclass), 0/1 (two-sample) or reals.

    Examples
    --------
    >>> import numpy as np
    >>> import kopt.testing as kt
    >>> from kopt.contract.registry import registry
    >>> hinge = registry().get("loss", "hinge")()
    >>> kt.sample_labels(hinge, 5, np.random.default_rng(0))
    array([ 1.,  1.,  1., -1., -1.])
    """
    t = loss.target
    if t == "binary":
        return rng.choice(np.array([-1.0, 1.0]), n)
    if t == "multiclass":
        y = rng.integers(0, n_classes, n)
        y[:n_classes] = np.arange(n_classes)[: min(n, n_classes)]
        return y
    if t == "two_sample":
        return rng.integers(0, 2, n).astype(np.float64)
    return 2.0 * rng.standard_normal(n)  # real values, or the offset τ of an unlabeled loss


# offsets from the label that hit the kinks of the built-in losses at default parameters
_SPECIAL = np.array([0.0, 1.0, -1.0, 0.1, -0.1, 0.5, -0.5, 2.0, -2.0])


def sample_scores(loss: Loss, y: np.ndarray, rng: np.random.Generator, n_classes: int = 3,
                  scale: float = 2.0) -> np.ndarray:
    """Predictions u for labels y: random ones plus points at the usual kinks.

    Parameters
    ----------
    loss : Loss
        The loss instance.
    y : array
        Labels encoded for the loss's target.
    rng : numpy.random.Generator
        Where they come from.
    n_classes : int, optional
        Classes, for a multiclass loss.
    scale : float, optional
        The random scores' scale.

    Returns
    -------
    ndarray
        Scores of ``y``'s length (``(n, C)`` for a multiclass loss).

    Examples
    --------
    >>> import numpy as np
    >>> import kopt.testing as kt
    >>> from kopt.contract.registry import registry
    >>> hinge = registry().get("loss", "hinge")()
    >>> kt.sample_scores(hinge, np.array([1.0, -1.0]), np.random.default_rng(0)).shape
    (2,)
    """
    y = np.asarray(y)
    n = y.shape[0]
    if is_multiclass(loss):
        u = scale * rng.standard_normal((n, n_classes))
        u[0] = 0.0  # all scores equal
        return u
    r = scale * rng.standard_normal(n)
    k = min(n // 2, _SPECIAL.size)
    r[:k] = _SPECIAL[:k]
    if loss.target == "binary":
        return y * (1.0 + r)  # r = 0: margin yu = 1 (hinge kink)
    if loss.target == "two_sample":
        return np.clip(r, -4.0, 4.0)
    return y + r


def conj_box(loss, y, n_classes=3):
    """``loss.conj_box(y)`` as float64 NumPy arrays (passing ``n_classes`` to multiclass losses)."""
    if is_multiclass(loss):
        try:
            lo, hi = loss.conj_box(y, n_classes=n_classes)
        except TypeError:
            lo, hi = loss.conj_box(y)
    else:
        lo, hi = loss.conj_box(y)
    return np.asarray(lo, dtype=np.float64), np.asarray(hi, dtype=np.float64)


def sample_duals(loss: Loss, y: np.ndarray, rng: np.random.Generator, n_classes: int = 3, *,
                 interior: float = 0.0) -> np.ndarray:
    """Points v of the conjugate's domain: random ones, on the edges and (finite boxes) at the corners.

    Parameters
    ----------
    loss : Loss
        The loss instance, with a conjugate.
    y : array
        Labels encoded for the loss's target.
    rng : numpy.random.Generator
        Where they come from.
    n_classes : int, optional
        Classes, for a multiclass loss.
    interior : float, optional
        Keep every point at least this share of the box width (or this distance, for an unbounded side) away from
        the edges.

    Returns
    -------
    ndarray
        Points of ``y``'s length, inside ``conj_box(y)``.

    Examples
    --------
    >>> import numpy as np
    >>> import kopt.testing as kt
    >>> from kopt.contract.registry import registry
    >>> hinge = registry().get("loss", "hinge")()
    >>> y = np.array([1.0, -1.0, 1.0])
    >>> v = kt.sample_duals(hinge, y, np.random.default_rng(0))
    >>> lo, hi = hinge.conj_box(y)
    >>> bool(((lo <= v) & (v <= hi)).all())
    True
    """
    lo, hi = conj_box(loss, y, n_classes)
    if sum_zero(loss):
        return _simplex_points(lo, rng, interior)
    v = np.empty_like(lo)
    fin_lo, fin_hi = np.isfinite(lo), np.isfinite(hi)
    both = fin_lo & fin_hi
    w = np.where(both, hi - lo, 1.0)
    m = interior * w
    t = rng.uniform(size=lo.shape)
    v[both] = (lo + m + t * (w - 2 * m))[both]
    if interior == 0.0 and lo.size >= 4:  # exact edges on a few entries
        flat = v.reshape(-1)
        flat[0] = lo.reshape(-1)[0] if both.reshape(-1)[0] else flat[0]
        flat[1] = hi.reshape(-1)[1] if both.reshape(-1)[1] else flat[1]
    e = rng.exponential(2.0, size=lo.shape) + m
    only_lo = fin_lo & ~fin_hi
    only_hi = fin_hi & ~fin_lo
    v[only_lo] = (lo + e)[only_lo]
    v[only_hi] = (hi - e)[only_hi]
    neither = ~fin_lo & ~fin_hi
    v[neither] = (3.0 * rng.standard_normal(lo.shape))[neither]
    return v


def _simplex_points(lo, rng, interior):
    """v = p − e_y with p on the simplex (lo = −e_y); vertices on a few rows unless ``interior``."""
    n, C = lo.shape
    p = rng.dirichlet(np.ones(C), size=n)
    if interior:
        p = interior + (1 - C * interior) * p
    elif n >= 2:
        p[0] = 0.0
        p[0, 0] = 1.0
        p[1] = 1.0 / C
    return p + lo


def simplex_grid(C, N):
    """All points of the simplex in R^C with coordinates in {0, 1/N, ..., 1}."""
    if C == 1:
        return np.ones((1, 1))
    rows = []
    for k in range(N + 1):
        sub = simplex_grid(C - 1, N - k) * (N - k) / N if N > k else np.zeros((1, C - 1))
        rows.append(np.hstack([np.full((sub.shape[0], 1), k / N), sub]))
    return np.vstack(rows)
