"""``kopt tune``: a seeded grid search over λ, the bandwidth and any numeric spec key.

Every grid point is a spec (the given one with ``--grid`` values set) solved on the training rows
of each fold and scored on the fold's held-out rows; the spec's test split is never looked at
until ``refit``.  Along the λ axis the solves of one fold and one setting of the other keys run
from the largest λ down, each started from the previous solve's final state
(:meth:`kopt.contract.components.Solver.warm_state`; solvers without ``lambda_warm_start`` run cold).

The square loss on Nyström centers (``solver: krr_nystrom``, or ``auto``, which routes it there) solves
nothing per grid point: every λ of a fold and setting comes from one M × M system, and the folds share
the centers and the Gram's work (:mod:`kopt.selection.nystrom_folds`).  The refit is a normal :func:`kopt.solve`.

Grid syntax (``--grid`` on the command line, ``grid=[...]`` from Python)::

    model.regularizer.lambda=1e-6:1e-2:log:9     # 9 values, log-spaced from 1e-6 to 1e-2
    model.kernel.bandwidth_factor=0.25:2:lin:8   # 8 values, evenly spaced
    model.kernel.bandwidth=0.5,1,2               # a list
"""
from __future__ import annotations

import itertools
import sys
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Sequence

import numpy as np

from ..api import solve
from ..errors import SpecError
from ..numerics import threads as _threads
from ..running.validation import AUTO_PATH, LAMBDA, METRICS, best_row, fold_of, make_splits, overrides_of, solve_point
from . import nystrom_folds as tune_nystrom

if TYPE_CHECKING:
    import os

    from ..spec import Spec


@dataclass(frozen=True)
class Axis:
    """One searched key: its dotted path and its values (numbers)."""

    key: str
    values: tuple


@dataclass
class TuneResult:
    """What :func:`kopt.tune` found.

    Parameters
    ----------
    metric, higher_is_better, axes, rows, best_params, best_score, best_spec, splits, warm_start, wall_s, refit, info
        The attributes below, set by :func:`kopt.tune`.

    Attributes
    ----------
    metric : str
        The validation metric (``accuracy``, ``auc``, ``rmse``, ``mae`` or ``r2``).
    higher_is_better : bool
        Whether a larger ``metric`` is better.
    axes : list
        The searched keys and their values.
    rows : list of dict
        One per grid point: ``params``, ``score`` (the mean over folds), ``scores``, ``fit_s``, ``iterations``,
        ``converged``.
    best_params : dict
        The best grid point, by dotted key.
    best_score : float
        Its mean validation score.
    best_spec : Spec
        The spec at the best point.
    splits : str
        The validation splits, in words.
    warm_start : bool
        Whether the λ path was warm-started.
    wall_s : float
        Seconds the search took.
    refit : Result or None
        The best spec solved on all training rows and scored on the test split (``refit=True``).
    info : dict
        The solver, and ``shared`` where the grid ran on one Nyström system per fold and setting.

    Examples
    --------
    >>> import numpy as np
    >>> import kopt
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(80, 2))
    >>> y = np.sign(X[:, 0] + 0.3 * rng.normal(size=80))
    >>> spec = {"model": {"loss": {"name": "square", "target": "binary"},
    ...                   "kernel": {"name": "gaussian", "bandwidth": 1.0},
    ...                   "regularizer": {"name": "l2", "lambda": 1e-3}},
    ...         "solver": {"name": "krr_exact"}}
    >>> found = kopt.tune(spec, ["model.regularizer.lambda=1e-2,1"], folds=2, data=(X, y), refit=True)
    >>> found.best_spec["model"]["regularizer"]["lambda"] == found.best_params["model.regularizer.lambda"]
    True
    >>> found.refit.success
    True
    """

    metric: str
    higher_is_better: bool
    axes: list
    rows: list
    best_params: dict
    best_score: float
    best_spec: object
    splits: str
    warm_start: bool
    wall_s: float
    refit: object = None
    info: dict = field(default_factory=dict)


def parse_axis(item: str) -> Axis:
    """``KEY=lo:hi:log|lin:n`` or ``KEY=v1,v2,...`` -> :class:`Axis`; a :class:`SpecError` (exit 2) naming the key."""
    src = dict(parameter="grid", value=item)
    key, sep, raw = item.partition("=")
    key = key.strip()
    if not sep or not key or any(not p for p in key.split(".")):
        raise SpecError(f"expected KEY.PATH=lo:hi:log:n or KEY.PATH=v1,v2,..., got {item!r}", **src)
    raw = raw.strip()
    if ":" in raw:
        parts = raw.split(":")
        if len(parts) != 4 or parts[2] not in ("log", "lin"):
            raise SpecError(f"{key}: a range is lo:hi:log:n or lo:hi:lin:n, got {raw!r}", **src)
        lo, hi = _number(key, parts[0], src), _number(key, parts[1], src)
        try:
            n = int(parts[3])
        except ValueError:
            n = 0
        if n < 1:
            raise SpecError(f"{key}: the number of values must be an integer >= 1, got {parts[3]!r}", **src)
        if not lo <= hi:
            raise SpecError(f"{key}: the range {raw!r} ends below its start", **src)
        if parts[2] == "log":
            if not lo > 0:
                raise SpecError(f"{key}: a log range needs lo > 0, got {parts[0]!r}", **src)
            values = np.geomspace(lo, hi, n) if n > 1 else np.array([lo])
        else:
            values = np.linspace(lo, hi, n) if n > 1 else np.array([lo])
        values = [float(f"{v:.6g}") for v in values]
    else:
        values = [_number(key, v, src) for v in raw.split(",")]
    if len(set(values)) != len(values):
        raise SpecError(f"{key}: the grid repeats a value ({raw!r})", **src)
    return Axis(key, tuple(values))


def _number(key, text, src):
    try:
        v = float(text)
    except ValueError:
        raise SpecError(f"{key}: grid values must be numbers, got {text.strip()!r}", **src) from None
    if not np.isfinite(v):
        raise SpecError(f"{key}: grid values must be finite, got {text.strip()!r}", **src)
    return int(v) if v == int(v) and "." not in text and "e" not in text.lower() else v


def default_axes(spec) -> list:
    """λ from 1/100 to 100 times the spec's (5 values; the GP form: ``solver.noise_variance``, which
    plays λ's part, from 1/4 to 4 times), and the bandwidth: ``bandwidth_factor`` at {0.25, 0.5, 1, 2}
    times the spec's factor (1 when it gives none) for a rule ('median', 'scale'), else the bandwidth
    times {0.5, 1, 2}: every default grid holds the spec's own setting."""
    axes = []
    lam = spec["model"]["regularizer"].get("lambda")
    noise = spec["solver"].get("noise_variance")
    if spec["model"]["form"] == "gp" and isinstance(noise, (int, float)):
        axes.append(Axis("solver.noise_variance", tuple(float(f"{noise * f:.6g}") for f in (0.25, 0.5, 1, 2, 4))))
    elif isinstance(lam, (int, float)) and lam > 0:
        axes.append(Axis(LAMBDA, tuple(float(f"{lam * 10.0 ** k:.6g}") for k in (-2, -1, 0, 1, 2))))
    elif lam == "auto":  # the decades lambda: auto walks
        axes.append(Axis(LAMBDA, AUTO_PATH))
    kernel = spec["model"]["kernel"]
    bw = kernel.get("bandwidth")
    if isinstance(bw, str):
        factor = float(kernel.get("bandwidth_factor", 1.0))
        axes.append(Axis("model.kernel.bandwidth_factor", tuple(float(f"{factor * f:.6g}") for f in (0.25, 0.5, 1, 2))))
    elif isinstance(bw, (int, float)):
        axes.append(Axis("model.kernel.bandwidth", tuple(float(f"{bw * f:.6g}") for f in (0.5, 1.0, 2.0))))
    return axes


def check_axes(spec, axes):
    """Each key names a number the spec holds (or a key its schema accepts a number for) and every
    grid point is a valid spec; raises a :class:`SpecError` naming the key."""
    from ..spec import load_spec

    seen = set()
    for ax in axes:
        if ax.key in seen:
            raise SpecError(f"{ax.key} is given twice", parameter="grid", value=ax.key)
        seen.add(ax.key)
        node = spec.data
        for part in ax.key.split(".")[:-1]:
            node = node.get(part) if isinstance(node, dict) else None
        if not isinstance(node, dict):
            raise SpecError(f"{ax.key}: the spec has no section {ax.key.rsplit('.', 1)[0]!r}", parameter="grid", value=ax.key)
        current = node.get(ax.key.rsplit(".", 1)[-1])
        if isinstance(current, (bool, list, dict)) or (current is not None and not isinstance(current, (int, float, str))):
            raise SpecError(f"{ax.key} is not a numeric key (the spec has {current!r} there)", parameter="grid", value=ax.key)
        for v in ax.values:
            try:
                load_spec(spec, overrides_of({ax.key: v}), check_files=False)
            except SpecError as exc:
                raise SpecError(f"{ax.key}={v!r} makes the spec invalid: {exc}", parameter="grid", value=ax.key) from None


def tune(spec: str | os.PathLike | dict | Spec, grid: Sequence[str | Axis] | None = None, *, folds: int | None = None,
         validation: float | None = None, metric: str | None = None, warm_start: bool = True, refit: bool = False,
         overrides: Sequence[str] = (), progress: bool = False, data: tuple | None = None) -> TuneResult:
    """Grid search of a spec on validation folds: what ``kopt tune`` runs.

    Each grid point is the spec with the searched keys set; every fold's solve is scored on its held-out rows.  Along
    λ each solve starts from the previous one where the solver allows (``warm_start``).

    Parameters
    ----------
    spec : str, path, dict or Spec
        A spec file, a packaged spec's name, a dict, or a loaded :class:`kopt.Spec`.
    grid : list of str, optional
        ``KEY=lo:hi:log:n`` or ``KEY=v1,v2,...`` items (dotted spec keys); by default λ and, for a kernel with a
        bandwidth, the bandwidth on a logarithmic grid around the spec's values.
    folds, validation : int, float
        k seeded folds of the training rows, or the held-out fraction of one seeded split (default 0.2).
    metric : str, optional
        One of the holdout metrics (``accuracy``, ``auc``, ``rmse``, ``mae``, ``r2``); default
        accuracy for classification, rmse for regression.
    warm_start : bool
        Start each solve along λ from the previous one (solvers with ``lambda_warm_start``).
    refit : bool
        Solve the best spec on all training rows and score it on the test split (``result.refit``).
    progress : bool
        A line on stderr per solve.
    overrides : sequence of str, optional
        ``KEY=VALUE`` items applied to the spec first, as ``--set`` does.
    data : tuple, optional
        ``(X, y)`` or ``(X, y, X_test, y_test)`` arrays instead of the spec's data.

    Returns
    -------
    TuneResult
        Every grid point's scores, the best point and its spec, and the refit result when ``refit``.

    Raises
    ------
    SpecError
        The spec, a grid item or the metric is malformed, or there is nothing to search.
    DataError
        The data cannot be read or does not fit the problem.

    Examples
    --------
    Three values of λ, scored by accuracy on three folds of 80 rows:

    >>> import numpy as np
    >>> import kopt
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(80, 2))
    >>> y = np.sign(X[:, 0] + 0.3 * rng.normal(size=80))
    >>> spec = {"model": {"loss": {"name": "square", "target": "binary"},
    ...                   "kernel": {"name": "gaussian", "bandwidth": 1.0},
    ...                   "regularizer": {"name": "l2", "lambda": 1e-3}},
    ...         "solver": {"name": "krr_exact"}}
    >>> found = kopt.tune(spec, ["model.regularizer.lambda=1e-4,1e-2,1"], folds=3, data=(X, y))
    >>> found.metric, len(found.rows)
    ('accuracy', 3)
    >>> found.best_params
    {'model.regularizer.lambda': 0.01}
    """
    from ..contract.registry import registry
    from ..data import as_dataset, load_data
    from ..spec import load_spec

    t0 = time.perf_counter()
    base = load_spec(spec, overrides, check_files=data is None)
    axes = [a if isinstance(a, Axis) else parse_axis(a) for a in grid] if grid else default_axes(base)
    if not axes:
        raise SpecError("nothing to search: the spec has no lambda or bandwidth; give --grid KEY=...",
                        source=base.source)
    check_axes(base, axes)
    target = base.loss.target
    metric = metric or ("rmse" if target == "real" else "accuracy")
    if metric not in METRICS:
        raise SpecError(f"unknown metric {metric!r}; choose one of {', '.join(METRICS)}", parameter="metric", value=metric)
    solver_cls = registry().get("solver", base["solver"]["name"])
    warm = bool(warm_start and solver_cls.lambda_warm_start)
    ds = as_dataset(data) if data is not None else load_data(base["data"])
    if ds.y is None:
        raise SpecError("kopt tune needs labelled training data", source=base.source)
    splits = make_splits(ds.X.shape[0], base["seed"], folds, validation)
    info = {"solver": solver_cls.name, "lambda_warm_start": solver_cls.lambda_warm_start}
    if tune_nystrom.applies(base, axes):  # every λ of a fold from one Nyström system
        log = (lambda line: print(f"kopt tune: {line}", file=sys.stderr, flush=True)) if progress else None
        base, note = tune_nystrom.concrete(base, ds, log)
        # the systems' heavy BLAS is SciPy's, between the kernel's NumPy products: NumPy's own OpenBLAS held to one
        # thread (kopt.numerics.threads.scipy_blas), as in solver auto's search
        with _threads.scipy_blas():
            rows, shared = tune_nystrom.run(base, ds, splits, axes, metric, progress)
        warm = False
        info.update(solver=base["solver"]["name"], shared={**shared, **({"note": note} if note else {})})
    else:
        path = next((a for a in axes if a.key == LAMBDA), None)
        others = [a for a in axes if a is not path]
        rows = []
        for setting in itertools.product(*(a.values for a in others)):
            fixed = dict(zip((a.key for a in others), setting))
            rows.extend(_lambda_path(base, ds, splits, fixed, path, metric, warm, progress))
    best = best_row(rows, METRICS[metric])
    best_spec = load_spec(base, overrides_of(best["params"])
                          + [f"name={base['name']}_tuned"], check_files=data is None)
    out = TuneResult(metric=metric, higher_is_better=METRICS[metric], axes=axes, rows=rows,
                     best_params=best["params"], best_score=best["score"], best_spec=best_spec,
                     splits=(f"{len(splits)} folds" if folds else f"validation {len(splits[0][1])} of "
                             f"{ds.X.shape[0]} rows") + f", seed {base['seed']}",
                     warm_start=warm, wall_s=0.0, info=info)
    if refit:
        out.refit = solve(best_spec, data=data)
    out.wall_s = time.perf_counter() - t0
    return out


def _lambda_path(base, ds, splits, fixed, path, metric, warm, progress):
    """The rows of one setting of the non-λ keys: every λ (largest first) on every fold."""
    lams = sorted(path.values, reverse=True) if path is not None else [None]
    per = {lam: {"scores": [], "fit_s": 0.0, "iterations": 0, "converged": True, "warm": 0} for lam in lams}
    for f, (tr, va) in enumerate(splits):
        fold = fold_of(ds, tr, va)
        previous = None
        for lam in lams:
            params = {**fixed, **({LAMBDA: lam} if lam is not None else {})}
            r = solve_point(solve, base, fold, params, metric, previous if warm else None, keep_state=warm)
            p = per[lam]
            p["scores"].append(r.metrics[metric])
            p["fit_s"] += r.timings["fit_s"]
            p["iterations"] += int(r.n_iter or 0)
            p["converged"] &= bool(r.success)
            p["warm"] += previous is not None and warm
            previous = r.snapshot if warm else None
            if progress:
                print(f"kopt tune: fold {f + 1}/{len(splits)}  " + "  ".join(f"{k.rsplit('.', 1)[1]}={v:g}"
                      for k, v in params.items()) + f"  {metric} {r.metrics[metric]:.5g}  "
                      f"{r.timings['fit_s']:.2f}s  {r.n_iter} it", file=sys.stderr, flush=True)
    return [{"params": {**fixed, **({LAMBDA: lam} if lam is not None else {})},
             "score": float(np.mean(p["scores"])), "std": float(np.std(p["scores"])), **p} for lam, p in per.items()]


