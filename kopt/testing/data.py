"""The seeded rows the solver checks run on (:func:`kopt.testing.check_solver` and its answer check)."""
from __future__ import annotations

import numpy as np


def solver_check_data(target: str, *, n: int = 400, n_test: int = 100, d: int = 3,
                      seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(X, y, X_test, y_test)``: seeded rows labelled for a loss target, the data :func:`~kopt.testing.check_solver` uses.

    Parameters
    ----------
    target : str
        ``"real"``, ``"binary"``, ``"multiclass"``, ``"unlabeled"`` or ``"two_sample"``.
    n, n_test : int, optional
        Training and test rows.
    d : int, optional
        Columns.
    seed : int, optional
        The rows' seed.

    Returns
    -------
    tuple of ndarray
        ``X`` (n, d), ``y`` (n,), ``X_test`` (n_test, d), ``y_test`` (n_test,).

    Examples
    --------
    >>> import numpy as np
    >>> import kopt.testing as kt
    >>> from kopt.contract.registry import registry
    >>> X, y, X_test, y_test = kt.solver_check_data("binary", n=20, n_test=5)
    >>> X.shape, sorted(set(y.tolist()))
    ((20, 3), [-1.0, 1.0])
    """
    rng = np.random.default_rng([seed, 0x6B6F7074])
    X = rng.standard_normal((n + n_test, d))
    signal = np.sin(X[:, 0]) + 0.5 * X[:, 1] ** 2
    if target == "real":
        y = signal + 0.1 * rng.standard_normal(n + n_test)
    elif target == "binary":
        y = np.where(signal + 0.3 * rng.standard_normal(n + n_test) > np.median(signal), 1.0, -1.0)
    elif target == "multiclass":
        y = np.digitize(signal, np.quantile(signal, [1 / 3, 2 / 3])).astype(np.float64)
    elif target == "two_sample":
        y = (rng.random(n + n_test) < 0.5).astype(np.float64)
        X[:, 0] += 0.75 * y
    else:  # unlabeled
        y = None
    if y is None:
        return X[:n], None, X[n:], None
    return X[:n], y[:n], X[n:], y[n:]
