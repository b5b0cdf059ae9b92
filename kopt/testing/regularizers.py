"""Property checks for :class:`kopt.contract.components.Regularizer` plugins.

``check_regularizer(reg)`` runs them all on seeded points; each check raises
AssertionError naming the regularizer, the property and the first failing point.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from ..contract.components import Regularizer

F64 = np.float64


def _golden(phi, lo, hi, iters=200):
    """Vectorised golden-section minimisation of a convex elementwise function on [lo, hi]."""
    r = (np.sqrt(5.0) - 1) / 2
    for _ in range(iters):
        c, d = hi - r * (hi - lo), lo + r * (hi - lo)
        left = phi(c) <= phi(d)
        hi, lo = np.where(left, d, hi), np.where(left, lo, c)
    return 0.5 * (lo + hi)


def check_prox_argmin(reg: Regularizer, w: np.ndarray, step: float) -> None:
    """Each coordinate of ``prox(w, step)`` minimizes P(z) + (z − w)²/(2 step) (a scalar minimization).

    Parameters
    ----------
    reg : Regularizer
        The regularizer instance.
    w : array
        The points.
    step : float
        The prox's step.
    Raises
    ------
    AssertionError
        The property fails; the message names the component, the property and the first offending point.

    Examples
    --------
    >>> import numpy as np
    >>> import kopt.testing as kt
    >>> from kopt.contract.registry import registry
    >>> l2 = registry().get("regularizer", "l2")(**{"lambda": 0.5})
    >>> w = np.array([0.3, -1.2, 2.0])
    >>> kt.check_prox_argmin(l2, w, 0.5)
    """
    w = np.asarray(w, F64).ravel()
    z = np.asarray(reg.prox(w, step), F64)

    def phi(t):
        return np.array([reg.value(np.array([ti])) for ti in t]) + (t - w) ** 2 / (2 * step)

    R = 2.0 * (1.0 + np.abs(w)) + 2.0 * step * (1 + reg.lam)
    ref = _golden(phi, w - R, w + R, iters=120)
    bad = ~(np.abs(z - ref) <= 1e-7 * (1 + np.abs(ref)))
    if np.any(bad):
        i = int(np.argmax(bad))
        raise AssertionError(f"regularizer {reg.name!r}: prox(step={step}) is not the argmin at w={w[i]!r}: "
                             f"prox {z[i]!r}, scalar minimisation {ref[i]!r}")


def check_moreau_envelope(reg: Regularizer, w: np.ndarray, step: float) -> None:
    """The Moreau envelope M(w) = min_z P(z) + ‖z − w‖²/(2s) has gradient (w − prox(w))/s.

    Parameters
    ----------
    reg : Regularizer
        The regularizer instance.
    w : array
        The points.
    step : float
        The step s.
    Raises
    ------
    AssertionError
        The property fails; the message names the component, the property and the first offending point.

    Examples
    --------
    >>> import numpy as np
    >>> import kopt.testing as kt
    >>> from kopt.contract.registry import registry
    >>> l2 = registry().get("regularizer", "l2")(**{"lambda": 0.5})
    >>> w = np.array([0.3, -1.2, 2.0])
    >>> kt.check_moreau_envelope(l2, w, 0.5)
    """
    w = np.asarray(w, F64)
    z = np.asarray(reg.prox(w, step), F64)

    def env(x):
        p = np.asarray(reg.prox(x, step), F64)
        return reg.value(p) + float(np.sum((p - x) ** 2)) / (2 * step)

    grad = (w - z) / step
    h = 1e-6
    for j in range(w.size):
        e = np.zeros_like(w)
        e.flat[j] = h
        fd = (env(w + e) - env(w - e)) / (2 * h)
        if not abs(fd - grad.flat[j]) <= 1e-5 * (1 + abs(fd)):
            raise AssertionError(f"regularizer {reg.name!r}: Moreau envelope gradient {fd!r} != (w − prox)/s "
                                 f"= {grad.flat[j]!r} at coordinate {j} (step={step})")


def check_moreau_decomposition(reg: Regularizer, w: np.ndarray, step: float,
                               conj_prox: Callable[[np.ndarray, float], np.ndarray]) -> None:
    """Moreau's decomposition: w = prox_{sP}(w) + s · prox_{P*/s}(w/s).

    Parameters
    ----------
    reg : Regularizer
        The regularizer instance.
    w : array
        The points.
    step : float
        The step s.
    conj_prox : callable
        ``conj_prox(x, t)``: the prox of t P* at x.
    Raises
    ------
    AssertionError
        The property fails; the message names the component, the property and the first offending point.

    Examples
    --------
    >>> import numpy as np
    >>> import kopt.testing as kt
    >>> from kopt.contract.registry import registry
    >>> l2 = registry().get("regularizer", "l2")(**{"lambda": 0.5})
    >>> w = np.array([0.3, -1.2, 2.0])
    >>> kt.check_moreau_decomposition(l2, w, 0.5, lambda x, t: 0.5 * x / (0.5 + t))  # P* = ‖·‖²/(2λ)
    """
    w = np.asarray(w, F64)
    total = np.asarray(reg.prox(w, step), F64) + step * np.asarray(conj_prox(w / step, 1.0 / step), F64)
    bad = ~(np.abs(total - w) <= 1e-9 * (1 + np.abs(w)))
    if np.any(bad):
        i = int(np.argmax(bad))
        raise AssertionError(f"regularizer {reg.name!r}: Moreau decomposition fails at w={w.flat[i]!r}: "
                             f"prox + s·prox* = {total.flat[i]!r}")


def check_strong_convexity(reg: Regularizer, a: np.ndarray, b: np.ndarray) -> None:
    """P − μ/2‖·‖² is convex (midpoint test) for μ = ``strong_convexity()``.

    Parameters
    ----------
    reg : Regularizer
        The regularizer instance.
    a, b : array
        Two points.
    Raises
    ------
    AssertionError
        The property fails; the message names the component, the property and the first offending point.

    Examples
    --------
    >>> import numpy as np
    >>> import kopt.testing as kt
    >>> from kopt.contract.registry import registry
    >>> l2 = registry().get("regularizer", "l2")(**{"lambda": 0.5})
    >>> w = np.array([0.3, -1.2, 2.0])
    >>> kt.check_strong_convexity(l2, w, w + 1.0)
    """
    mu = reg.strong_convexity()
    if mu < 0:
        raise AssertionError(f"regularizer {reg.name!r}: strong_convexity() = {mu} < 0")
    a, b = np.asarray(a, F64), np.asarray(b, F64)

    def q(x):
        return reg.value(x) - 0.5 * mu * float(np.sum(x * x))

    mid, chord = q(0.5 * (a + b)), 0.5 * (q(a) + q(b))
    if mid > chord + 1e-9 * (1 + abs(chord)):
        raise AssertionError(f"regularizer {reg.name!r}: P − μ/2‖w‖² is not convex with μ = {mu} "
                             f"(midpoint {mid!r} > chord {chord!r})")


def check_regularizer_dtypes(reg, w):
    """``prox`` keeps float32 blocks float32 and matches float64; ``value`` returns a float."""
    w32 = np.asarray(w, np.float32)
    z = reg.prox(w32, 0.5)
    if z.dtype != np.float32 or z.shape != w32.shape:
        raise AssertionError(f"regularizer {reg.name!r}: prox turned a float32 {w32.shape} block into {z.dtype} {z.shape}")
    ref = np.asarray(reg.prox(w32.astype(F64), 0.5))
    if not np.allclose(z, ref, rtol=1e-5, atol=1e-6):
        raise AssertionError(f"regularizer {reg.name!r}: float32 prox differs from float64")
    if not isinstance(reg.value(w32), float):
        raise AssertionError(f"regularizer {reg.name!r}: value() must return a Python float")


def check_regularizer(reg: Regularizer, *, n: int = 30, seed: int = 0, separable: bool = True) -> list[str]:
    """Run every regularizer check on seeded points; returns the names of the checks run.

    Parameters
    ----------
    reg : Regularizer
        The regularizer instance.
    n : int, optional
        Points drawn.
    seed : int, optional
        Their seed.
    separable : bool, optional
        Whether the prox acts coordinate by coordinate (the scalar argmin check needs it).

    Returns
    -------
    list of str
        The checks run, in order.

    Raises
    ------
    AssertionError
        The property fails; the message names the component, the property and the first offending point.

    Examples
    --------
    >>> import numpy as np
    >>> import kopt.testing as kt
    >>> from kopt.contract.registry import registry
    >>> l2 = registry().get("regularizer", "l2")(**{"lambda": 0.5})
    >>> w = np.array([0.3, -1.2, 2.0])
    >>> kt.check_regularizer(l2)
    ['prox_argmin', 'moreau_envelope', 'strong_convexity', 'dtypes']
    """
    rng = np.random.default_rng(seed)
    w = 2.0 * rng.standard_normal(n)
    w[:3] = [0.0, reg.lam * 0.25, -reg.lam * 0.25]  # inside the soft-threshold dead zone
    ran = []
    for step in (0.1, 1.0, 7.0):
        if separable:
            check_prox_argmin(reg, w, step)
        check_moreau_envelope(reg, w[:8], step)
    ran += (["prox_argmin"] if separable else []) + ["moreau_envelope"]
    for _ in range(5):
        check_strong_convexity(reg, rng.standard_normal(n), rng.standard_normal(n))
    check_regularizer_dtypes(reg, w.reshape(5, 6))
    return ran + ["strong_convexity", "dtypes"]
