"""Kernel bandwidths: the rules (the median heuristic, scikit-learn's ``gamma="scale"``) and their
resolution for a kernel class.

``median_distance`` is the median of the pairwise distances between the rows
of a seeded subsample (``bandwidth_subsample`` rows, default 2000: about two
million pairs).  Identical rows (distance 0) are left out, so data with
many duplicates (binary features) still gets a usable scale.

``scale_distance`` is the length of scikit-learn's ``gamma="scale"``,
γ = 1/(d Var X) with Var X the variance of every entry of X, over the same
subsample: exp(−γ‖δ‖²) is kopt's Gaussian exp(−‖δ‖²/(2σ²)) at σ = √(d Var X / 2).
For an ``l1`` kernel (Laplacian, exp(−‖δ‖₁/σ)) the same rule -- σ is half the
expected distance between two rows whose entries are independent with variance
Var X -- gives σ = d √(Var X / π) (E|a − b| = 2s/√π for normal a, b of spread s).
The kernel's ``bandwidth: median`` / ``scale`` multiplies either by ``bandwidth_factor``.

A kernel with the standard parameters :data:`kopt.contract.components.BANDWIDTH_PARAMS` accepts
``bandwidth: median`` (the median heuristic) or ``bandwidth: scale`` (scikit-learn's
``gamma="scale"``); before it can be evaluated the bandwidth must be a number.
:func:`resolve_bandwidth` computes it from the training data the way ``kopt solve`` does,
so code that builds kernels itself (notebooks, benchmarks, plugins) gets the same value::

    from kopt.contract.bandwidth import resolve_bandwidth

    cls = registry().get("kernel", "gaussian")
    params = resolve_bandwidth(cls, {"bandwidth": "median", "bandwidth_factor": 0.5}, X, seed=0)
    kernel = cls(**params)            # params["bandwidth"] is now a float
"""
from __future__ import annotations

import numpy as np

from .components import BANDWIDTH_PARAMS
from .options import build_options

METRICS = ("l2", "l1")
_PAIRS_PER_BLOCK = 1 << 16


def subsample_rows(n, subsample, seed):
    """Sorted row indices of the seeded subsample (all rows when ``n <= subsample``)."""
    if n <= subsample:
        return np.arange(n)
    rng = np.random.default_rng([int(seed), 0x6D6564])
    return np.sort(rng.choice(n, size=int(subsample), replace=False))


def median_distance(X, metric="l2", subsample=2000, seed=0):
    """Median pairwise distance (``l2`` or ``l1``) over a seeded subsample of rows.

    Parameters
    ----------
    X : array (n, d), dense (NumPy, CuPy, memory map) or scipy sparse
    metric : {"l2", "l1"}
    subsample : int
        Rows drawn without replacement (seeded); all rows when ``n`` is smaller.
    seed : int

    Returns
    -------
    float
        The median over the non-zero pairwise distances (1.0 when all are zero).
    """
    if metric not in METRICS:
        raise ValueError(f"metric must be one of {', '.join(METRICS)}, got {metric!r}")
    if min(X.shape[0], subsample) < 2:
        return 1.0
    S = _subsample(X, subsample, seed)
    if hasattr(S, "tocsr"):
        d = _sparse_l2(S) if metric == "l2" else _sparse_l1(S)
    else:
        d = _dense_l2(S) if metric == "l2" else _dense_l1(S)
    d = d[d > 0]
    if d.size == 0:
        return 1.0
    return float(np.median(d))


def scale_distance(X, metric="l2", subsample=2000, seed=0):
    """The bandwidth of scikit-learn's ``gamma="scale"`` in kopt's convention (module docstring).

    Parameters are those of :func:`median_distance`; 1.0 when the subsample has no variance.
    """
    if metric not in METRICS:
        raise ValueError(f"metric must be one of {', '.join(METRICS)}, got {metric!r}")
    S = _subsample(X, subsample, seed)
    d = X.shape[1]
    if hasattr(S, "tocsr"):
        var = float(S.multiply(S).mean() - S.mean() ** 2)
    else:
        var = float(S.var())
    if not var > 0:
        return 1.0
    return float(np.sqrt(d * var / 2.0)) if metric == "l2" else float(d * np.sqrt(var / np.pi))


def _subsample(X, subsample, seed):
    """The seeded subsample's rows as float64 (SciPy CSR for sparse input, NumPy otherwise)."""
    idx = subsample_rows(X.shape[0], subsample, seed)
    if hasattr(X, "tocsr"):
        return X.tocsr()[idx].astype(np.float64)
    S = X[idx]
    if type(S).__module__.split(".")[0] == "cupy":
        S = S.get()
    return np.asarray(S, dtype=np.float64)


def _from_gram(sq, G):
    iu = np.triu_indices(G.shape[0], k=1)
    return np.sqrt(np.maximum(sq[iu[0]] + sq[iu[1]] - 2.0 * G[iu], 0.0))


def _dense_l2(S):
    return _from_gram(np.einsum("ij,ij->i", S, S), S @ S.T)


def _dense_l1(S):
    from scipy.spatial.distance import pdist

    return pdist(S, "cityblock")


def _sparse_l2(S):
    sq = np.asarray(S.multiply(S).sum(axis=1)).ravel()
    return _from_gram(sq, (S @ S.T).toarray())


def _sparse_l1(S):
    """All pairs i < j, in blocks of row differences (never densifies the features)."""
    m = S.shape[0]
    I, J = np.triu_indices(m, k=1)
    out = np.empty(I.size)
    for a in range(0, I.size, _PAIRS_PER_BLOCK):
        b = a + _PAIRS_PER_BLOCK
        D = S[I[a:b]] - S[J[a:b]]
        out[a:b] = np.asarray(abs(D).sum(axis=1)).ravel()
    return out

#: the bandwidth rules: name -> function(X, metric, subsample, seed) giving the length before the factor
RULES = {"median": median_distance, "scale": scale_distance, "auto": scale_distance}  # auto: solver auto searches around it


def resolve_bandwidth(kernel_cls, params: dict, X, seed: int) -> dict:
    """``params`` with a numeric ``bandwidth``: the rule applied where it says ``"median"`` or ``"scale"``.

    The bandwidth is ``bandwidth_factor`` times the rule's length on a seeded subsample of
    ``bandwidth_subsample`` rows of ``X``, in the kernel's ``bandwidth_metric`` (``"l2"`` when it
    has none): the median pairwise distance (:func:`median_distance`) or
    scikit-learn's ``gamma="scale"`` length (:func:`scale_distance`).
    Missing ``bandwidth_factor`` / ``bandwidth_subsample`` take the kernel's schema defaults.

    Parameters
    ----------
    kernel_cls : type
        A :class:`kopt.contract.components.Kernel` subclass.
    params : dict
        The kernel's parameters (spec keys, without ``name``); not modified.
    X : array (n, d)
        Training inputs (NumPy, CuPy, memory map or SciPy sparse), after preprocessing.
    seed : int
        Seed of the row subsample (a spec's top-level ``seed``).

    Returns
    -------
    dict
        A copy of ``params``; ``bandwidth`` is a float when it was a rule (or omitted, taking the
        schema's default rule).  Parameters without a bandwidth come back unchanged.
    """
    out = dict(params)
    if "bandwidth" not in kernel_cls.params:
        return out
    given = build_options(kernel_cls, params).as_dict()  # validated, schema defaults filled in
    if given["bandwidth"] not in RULES:
        return out
    # a kernel declaring only ``bandwidth`` gets the standard factor and subsample
    rule = {k: given.get(k, BANDWIDTH_PARAMS[k]["default"]) for k in ("bandwidth_factor", "bandwidth_subsample")}
    length = RULES[given["bandwidth"]](X, kernel_cls.bandwidth_metric or "l2", rule["bandwidth_subsample"], seed)
    out["bandwidth"] = length * rule["bandwidth_factor"]
    return out
