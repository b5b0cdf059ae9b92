"""Resolving ``bandwidth: median`` and ``bandwidth: scale`` for kernels with a length scale.

A kernel with the standard parameters :data:`kopt.components.BANDWIDTH_PARAMS` accepts
``bandwidth: median`` (the median heuristic) or ``bandwidth: scale`` (scikit-learn's
``gamma="scale"``); before it can be evaluated the bandwidth must be a number.
:func:`resolve_bandwidth` computes it from the training data the way ``kopt solve`` does,
so code that builds kernels itself (notebooks, benchmarks, plugins) gets the same value::

    from kopt.bandwidth import resolve_bandwidth

    cls = registry().get("kernel", "gaussian")
    params = resolve_bandwidth(cls, {"bandwidth": "median", "bandwidth_factor": 0.5}, X, seed=0)
    kernel = cls(**params)            # params["bandwidth"] is now a float
"""
from __future__ import annotations

from .components import BANDWIDTH_PARAMS
from .data.bandwidth import median_distance, scale_distance
from .options import build_options

__all__ = ["resolve_bandwidth", "RULES"]

#: the bandwidth rules: name -> function(X, metric, subsample, seed) giving the length before the factor
RULES = {"median": median_distance, "scale": scale_distance, "auto": scale_distance}  # auto: solver auto searches around it


def resolve_bandwidth(kernel_cls, params: dict, X, seed: int) -> dict:
    """``params`` with a numeric ``bandwidth``: the rule applied where it says ``"median"`` or ``"scale"``.

    The bandwidth is ``bandwidth_factor`` times the rule's length on a seeded subsample of
    ``bandwidth_subsample`` rows of ``X``, in the kernel's ``bandwidth_metric`` (``"l2"`` when it
    has none): the median pairwise distance (:func:`kopt.data.bandwidth.median_distance`) or
    scikit-learn's ``gamma="scale"`` length (:func:`kopt.data.bandwidth.scale_distance`).
    Missing ``bandwidth_factor`` / ``bandwidth_subsample`` take the kernel's schema defaults.

    Parameters
    ----------
    kernel_cls : type
        A :class:`kopt.components.Kernel` subclass.
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
