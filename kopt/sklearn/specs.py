"""Specs -> estimators: :func:`from_spec`."""
from __future__ import annotations

import copy
import os
from typing import Sequence

from ..contract.components import BANDWIDTH_PARAMS
from ..data.schema import DATA_SCHEMA
from ..errors import SpecError
from ..spec import Spec, load_spec
from .classifier import KernelClassifier
from .gp import GPRegressor
from .regressor import KernelRegressor


def from_spec(spec: str | os.PathLike | dict | Spec,
              overrides: Sequence[str] = ()) -> KernelClassifier | KernelRegressor | GPRegressor:
    """The scikit-learn estimator of a spec: the inverse of ``estimator.to_spec()``.

    The spec is validated as ``kopt solve`` validates it; its ``model``, ``solver``, ``seed``, ``backend`` and
    ``data.standardize``/``standardize_target`` become the estimator's parameters (the ``data`` files and ``output``
    are the command line's business).

    Parameters
    ----------
    spec : str, path, dict or Spec
        A spec file, a dict, or a :class:`kopt.Spec`.
    overrides : sequence of str, optional
        ``KEY=VALUE`` items applied first, as ``--set`` does.

    Returns
    -------
    KernelClassifier, KernelRegressor or GPRegressor
        ``form: gp`` gives a :class:`GPRegressor`, a classification loss a :class:`KernelClassifier`, a
        regression loss a :class:`KernelRegressor`.

    Raises
    ------
    kopt.SpecError
        The spec is invalid, or its loss has no estimator (novelty detection, density ratios).

    Examples
    --------
    >>> from kopt.sklearn import from_spec
    >>> spec = {"model": {"loss": {"name": "logistic"}, "kernel": {"name": "laplacian", "bandwidth": 2.0},
    ...                   "regularizer": {"name": "l2", "lambda": 1e-4}},
    ...         "solver": {"name": "joker", "tol": 0.01}}
    >>> clf = from_spec(spec)
    >>> type(clf).__name__, clf.kernel, clf.lam, clf.solver_options
    ('KernelClassifier', 'laplacian', 0.0001, {'tol': 0.01})
    >>> from_spec(spec).get_params() == clf.get_params()
    True
    """
    from ..spec.loader import apply_overrides, read_spec_file

    resolved = load_spec(spec, overrides, check_files=False)
    if isinstance(spec, Spec):
        raw = copy.deepcopy(spec.data)
    elif isinstance(spec, dict):
        raw = copy.deepcopy(spec)
    else:
        raw, _ = read_spec_file(str(spec))
    apply_overrides(raw, overrides)
    model, solver = raw["model"], dict(raw.get("solver") or {"name": "auto"})
    standardize = DATA_SCHEMA["properties"]["standardize"]["default"]  # the spec's default, not the estimator's
    common = {"random_state": raw.get("seed", 0), "backend": raw.get("backend", "auto"),
              "standardize": (raw.get("data") or {}).get("standardize", standardize)}
    kernel = dict(model["kernel"])
    kernel_name = kernel.pop("name")
    bandwidth = kernel.pop("bandwidth", BANDWIDTH_PARAMS["bandwidth"]["default"])
    features = model.get("features")
    if model.get("form") == "gp":
        solver.pop("name")
        gp = {k: solver.pop(k) for k in ("noise_variance", "variance", "iterations", "batch_size") if k in solver}
        return GPRegressor(kernel=kernel_name, bandwidth=bandwidth, kernel_options=kernel or None, features=features,
                           solver_options=solver or None,
                           standardize_target=(raw.get("data") or {}).get("standardize_target", True),
                           **gp, **common)
    loss = dict(model["loss"])
    loss_name = loss.pop("name")
    reg = dict(model.get("regularizer") or {"name": "l2", "lambda": 1e-4})
    params = dict(loss=loss_name, loss_options=loss or None, kernel=kernel_name, bandwidth=bandwidth,
                  kernel_options=kernel or None, lam=reg.pop("lambda", 1e-4), regularizer=reg.pop("name"),
                  regularizer_options=reg or None, form=model.get("form"), features=features,
                  solver=solver.pop("name"), solver_options=solver or None, **common)
    target = resolved.loss.target
    if target in ("binary", "multiclass"):
        if (loss or {}).get("target") == "binary":
            params["loss_options"] = {k: v for k, v in loss.items() if k != "target"} or None
        cw = (raw.get("data") or {}).get("class_weight")
        return KernelClassifier(**params, **({"class_weight": cw} if cw is not None else {}))
    if target == "real":
        return KernelRegressor(standardize_target=(raw.get("data") or {}).get("standardize_target", False), **params)
    raise SpecError(f"no scikit-learn estimator for a {target} loss ({loss_name!r}); kopt.sklearn has "
                    "KernelClassifier, KernelRegressor and GPRegressor", source=resolved.source,
                    path="$.model.loss.name")
