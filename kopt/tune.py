"""``kopt tune``: a seeded grid search over λ, the bandwidth and any numeric spec key.

Every grid point is a spec (the given one with ``--grid`` values set) solved on the training rows
of each fold and scored on the fold's held-out rows; the spec's test split is never looked at
until ``refit``.  Along the λ axis the solves of one fold and one setting of the other keys run
from the largest λ down, each started from the previous solve's final state
(:meth:`kopt.components.Solver.warm_state`; solvers without ``lambda_warm_start`` run cold).

Grid syntax (``--grid`` on the command line, ``grid=[...]`` from Python)::

    model.regularizer.lambda=1e-6:1e-2:log:9     # 9 values, log-spaced from 1e-6 to 1e-2
    model.kernel.bandwidth_factor=0.25:2:lin:8   # 8 values, evenly spaced
    model.kernel.bandwidth=0.5,1,2               # a list
"""
from __future__ import annotations

import itertools
import time
import warnings
from dataclasses import dataclass, field

import numpy as np

from .errors import ConvergenceWarning, SpecError
from .rows import take

LAMBDA = "model.regularizer.lambda"
#: metric -> True when larger is better
METRICS = {"accuracy": True, "auc": True, "r2": True, "rmse": False, "mae": False}
_SPLIT_STREAM = 0x74756E65  # "tune": the stream of the fold permutation, beside the spec's seed


@dataclass(frozen=True)
class Axis:
    """One searched key: its dotted path and its values (numbers)."""

    key: str
    values: tuple


@dataclass
class TuneResult:
    """What :func:`tune` found.

    Attributes: ``metric`` and ``higher_is_better``; ``rows`` (one dict per grid point: ``params``,
    ``score`` -- the mean over folds --, ``scores``, ``fit_s``, ``iterations``, ``converged``);
    ``best_params``, ``best_score``; ``best_spec`` (a :class:`kopt.Spec`); ``refit`` (the
    :class:`kopt.result.Result` of the best spec on all training rows, or None); ``splits`` (a
    description), ``warm_start`` (whether the λ path was warm-started) and ``wall_s``.
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
    src = f"--grid {item}"
    key, sep, raw = item.partition("=")
    key = key.strip()
    if not sep or not key or any(not p for p in key.split(".")):
        raise SpecError(f"expected KEY.PATH=lo:hi:log:n or KEY.PATH=v1,v2,..., got {item!r}", source=src)
    raw = raw.strip()
    if ":" in raw:
        parts = raw.split(":")
        if len(parts) != 4 or parts[2] not in ("log", "lin"):
            raise SpecError(f"{key}: a range is lo:hi:log:n or lo:hi:lin:n, got {raw!r}", source=src)
        lo, hi = _number(key, parts[0], src), _number(key, parts[1], src)
        try:
            n = int(parts[3])
        except ValueError:
            n = 0
        if n < 1:
            raise SpecError(f"{key}: the number of values must be an integer >= 1, got {parts[3]!r}", source=src)
        if not lo <= hi:
            raise SpecError(f"{key}: the range {raw!r} ends below its start", source=src)
        if parts[2] == "log":
            if not lo > 0:
                raise SpecError(f"{key}: a log range needs lo > 0, got {parts[0]!r}", source=src)
            values = np.geomspace(lo, hi, n) if n > 1 else np.array([lo])
        else:
            values = np.linspace(lo, hi, n) if n > 1 else np.array([lo])
        values = [float(f"{v:.6g}") for v in values]
    else:
        values = [_number(key, v, src) for v in raw.split(",")]
    if len(set(values)) != len(values):
        raise SpecError(f"{key}: the grid repeats a value ({raw!r})", source=src)
    return Axis(key, tuple(values))


def _number(key, text, src):
    try:
        v = float(text)
    except ValueError:
        raise SpecError(f"{key}: grid values must be numbers, got {text.strip()!r}", source=src) from None
    if not np.isfinite(v):
        raise SpecError(f"{key}: grid values must be finite, got {text.strip()!r}", source=src)
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
    from .spec import load_spec

    seen = set()
    for ax in axes:
        if ax.key in seen:
            raise SpecError(f"{ax.key} is given twice", source=f"--grid {ax.key}")
        seen.add(ax.key)
        node = spec.data
        for part in ax.key.split(".")[:-1]:
            node = node.get(part) if isinstance(node, dict) else None
        if not isinstance(node, dict):
            raise SpecError(f"{ax.key}: the spec has no section {ax.key.rsplit('.', 1)[0]!r}", source=f"--grid {ax.key}")
        current = node.get(ax.key.rsplit(".", 1)[1])
        if isinstance(current, (bool, list, dict)) or (current is not None and not isinstance(current, (int, float, str))):
            raise SpecError(f"{ax.key} is not a numeric key (the spec has {current!r} there)", source=f"--grid {ax.key}")
        for v in ax.values:
            try:
                load_spec(spec, overrides_of({ax.key: v}), check_files=False)
            except SpecError as exc:
                raise SpecError(f"{ax.key}={v!r} makes the spec invalid: {exc}", source=f"--grid {ax.key}") from None


def make_splits(n, seed, folds=None, validation=None):
    """``[(train_rows, held_out_rows), ...]``: ``folds`` seeded folds, or one seeded validation split."""
    if folds is not None and validation is not None:
        raise SpecError("give folds or validation, not both", source="kopt tune")
    perm = np.random.default_rng([int(seed), _SPLIT_STREAM]).permutation(n)
    if folds is not None:
        if not (isinstance(folds, int) and 2 <= folds <= n):
            raise SpecError(f"folds must be an integer from 2 to the {n} training rows, got {folds!r}",
                            source="--folds")
        parts = np.array_split(perm, folds)
        return [(np.sort(np.concatenate(parts[:i] + parts[i + 1:])), np.sort(parts[i])) for i in range(folds)]
    validation = 0.2 if validation is None else validation
    if not 0 < validation < 1:
        raise SpecError(f"validation is the held-out fraction, in (0, 1); got {validation!r}", source="--validation")
    m = int(round(validation * n))
    if not 1 <= m < n:
        raise SpecError(f"validation {validation} holds out {m} of {n} rows; it needs at least one on each side",
                        source="--validation")
    return [(np.sort(perm[m:]), np.sort(perm[:m]))]


def tune(spec, grid=None, *, folds=None, validation=None, metric=None, warm_start=True, refit=False,
         overrides=(), progress=False, data=None):
    """Grid search of a spec on validation folds; returns a :class:`TuneResult`.

    Parameters
    ----------
    spec : path, packaged spec name, dict or Spec
    grid : list of str or Axis, optional
        ``KEY=lo:hi:log:n`` / ``KEY=v1,v2,...`` items; default :func:`default_axes`.
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
    data : tuple, optional
        ``(X, y)`` or ``(X, y, X_test, y_test)`` arrays instead of the spec's data.
    """
    from .data import as_dataset, load_data
    from .plugins import registry
    from .spec import load_spec

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
        raise SpecError(f"unknown metric {metric!r}; choose one of {', '.join(METRICS)}", source="--metric")
    solver_cls = registry().get("solver", base["solver"]["name"])
    warm = bool(warm_start and solver_cls.lambda_warm_start)
    ds = as_dataset(data) if data is not None else load_data(base["data"])
    if ds.y is None:
        raise SpecError("kopt tune needs labelled training data", source=base.source)
    splits = make_splits(ds.X.shape[0], base["seed"], folds, validation)
    path = next((a for a in axes if a.key == LAMBDA), None)
    others = [a for a in axes if a is not path]
    rows = []
    for setting in itertools.product(*(a.values for a in others)):
        fixed = dict(zip((a.key for a in others), setting))
        rows.extend(_lambda_path(base, ds, splits, fixed, path, metric, warm, progress))
    best = _best(rows, METRICS[metric])
    best_spec = load_spec(base, overrides_of(best["params"])
                          + [f"name={base['name']}_tuned"], check_files=data is None)
    out = TuneResult(metric=metric, higher_is_better=METRICS[metric], axes=axes, rows=rows,
                     best_params=best["params"], best_score=best["score"], best_spec=best_spec,
                     splits=(f"{len(splits)} folds" if folds else f"validation {len(splits[0][1])} of "
                             f"{ds.X.shape[0]} rows") + f", seed {base['seed']}",
                     warm_start=warm, wall_s=0.0,
                     info={"solver": solver_cls.name, "lambda_warm_start": solver_cls.lambda_warm_start})
    if refit:
        from .api import solve

        out.refit = solve(best_spec, data=data)
    out.wall_s = time.perf_counter() - t0
    return out


def _lambda_path(base, ds, splits, fixed, path, metric, warm, progress):
    """The rows of one setting of the non-λ keys: every λ (largest first) on every fold."""
    import sys

    lams = sorted(path.values, reverse=True) if path is not None else [None]
    per = {lam: {"scores": [], "fit_s": 0.0, "iterations": 0, "converged": True, "warm": 0} for lam in lams}
    for f, (tr, va) in enumerate(splits):
        fold = _fold(ds, tr, va)
        previous = None
        for lam in lams:
            params = {**fixed, **({LAMBDA: lam} if lam is not None else {})}
            r = _solve_point(base, fold, params, metric, previous if warm else None, keep_state=warm)
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


def _fold(ds, tr, va):
    """``(X, y, X_held_out, y_held_out)`` of one split of the training rows."""
    return take(ds.X, tr), np.asarray(ds.y)[tr], take(ds.X, va), np.asarray(ds.y)[va]


def _solve_point(base, fold, params, metric, start_from, *, keep_state, sample_weight=None):
    """One solve of the search: ``base`` with ``params`` set, on a fold, scored on its held-out rows."""
    from .api import solve
    from .spec import load_spec

    spec = load_spec(base, overrides_of(params), check_files=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        r = solve(spec, data=fold, keep_state=keep_state, start_from=start_from, sample_weight=sample_weight)
    if metric not in r.metrics:
        raise SpecError(f"metric {metric!r} is not reported for this spec's target; it reports "
                        f"{', '.join(r.metrics) or 'none'}", source="--metric")
    return r


# -- lambda: auto ---------------------------------------------------------------------------------
#: the decreasing λ path of ``lambda: auto`` (one point per decade; the best is refined once at ±½ decade)
AUTO_PATH = (1.0e-2, 1.0e-3, 1.0e-4, 1.0e-5, 1.0e-6, 1.0e-7)
#: the held-out fraction of the training rows it scores λ on
AUTO_VALIDATION = 0.2
#: it stops after this many path points in a row without a better validation score
AUTO_PATIENCE = 1


@dataclass
class LambdaChoice:
    """What ``lambda: auto`` chose (``result.lambda_auto``; ``report["lambda_auto"]``).

    ``lam``: the chosen λ; ``metric`` (and ``higher_is_better``); ``path``: one dict per solve in the
    order run (``lambda``, ``score`` on the validation rows, ``fit_s``, ``iterations``, ``converged``,
    ``warm``: started from the previous solve, ``refine``: a half-decade point around the best);
    ``stopped_early``: the path ended before 1e-7 because the score stopped improving; ``split``;
    ``select_s``: the wall time of the selection; ``refit_warm``: the solve on all training rows
    started from the validation solve at the chosen λ (solvers with ``refit_state``).
    """

    lam: float
    metric: str
    higher_is_better: bool
    path: list
    stopped_early: bool
    split: str
    select_s: float
    warm_path: bool
    refit_warm: bool = False
    snapshot: object = field(default=None, repr=False)
    rows: object = field(default=None, repr=False)

    def as_dict(self):
        return {"chosen": True, "lambda": self.lam, "metric": self.metric, "higher_is_better": self.higher_is_better,
                "split": self.split, "path": self.path, "stopped_early": self.stopped_early,
                "warm_path": self.warm_path, "refit_warm": self.refit_warm, "select_s": self.select_s}


def select_lambda(spec, ds, *, sample_weight=None, progress=False) -> LambdaChoice:
    """``lambda: auto``: the λ of :data:`AUTO_PATH` (refined once) with the best validation score.

    The spec's training rows ``ds`` are split by :func:`make_splits` (a held-out fraction
    :data:`AUTO_VALIDATION`, seeded by the spec's seed); λ walks the path from the largest down, each
    solve warm-started from the previous one (:func:`tune`'s λ path), until the score has not
    improved for :data:`AUTO_PATIENCE` points; then the two half-decade neighbours of the best are
    solved, and the best of all wins (ties: the larger λ).  The metric is :func:`tune`'s default:
    accuracy, or rmse for a real target.
    """
    import sys

    from .plugins import registry
    from .spec import load_spec

    t0 = time.perf_counter()
    base = load_spec(spec, ["output.checkpoint_every=0"], check_files=False)
    metric = "rmse" if base.loss.target == "real" else "accuracy"
    higher = METRICS[metric]
    warm = bool(registry().get("solver", base["solver"]["name"]).lambda_warm_start)
    if ds.y is None:
        raise SpecError("lambda: auto needs labelled training data", source=base.source)
    n = ds.X.shape[0]
    (tr, va), = make_splits(n, base["seed"], validation=AUTO_VALIDATION)
    fold = _fold(ds, tr, va)
    weights = None if sample_weight is None else np.asarray(sample_weight)[tr]
    path, snaps = [], {}

    def run(lam, start, refine):
        origin = snaps.get(start) if warm else None
        r = _solve_point(base, fold, {LAMBDA: lam}, metric, origin, keep_state=warm, sample_weight=weights)
        snaps[lam] = r.snapshot
        path.append({"lambda": lam, "score": float(r.metrics[metric]), "fit_s": r.timings["fit_s"],
                     "iterations": int(r.n_iter or 0), "converged": bool(r.success),
                     "warm": origin is not None, "refine": refine})
        if progress:
            print(f"kopt: lambda auto  lambda={lam:g}  validation {metric} {r.metrics[metric]:.5g}  "
                  f"{r.timings['fit_s']:.2f}s  {r.n_iter} it", file=sys.stderr, flush=True)

    def better(a, b):  # a NaN or infinite score (a diverged solve) never improves
        return bool(np.isfinite(a)) and (b is None or (a > b if higher else a < b))

    best, since, previous = None, 0, None
    for lam in AUTO_PATH:
        run(lam, previous, False)
        previous = lam
        if better(path[-1]["score"], best):
            best, since = path[-1]["score"], 0
        elif best is not None:  # before a first finite score the path goes on
            since += 1
            if since >= AUTO_PATIENCE:
                break
    stopped = len(path) < len(AUTO_PATH)
    if best is None:
        from .errors import NonFiniteModelError

        raise NonFiniteModelError(
            f"lambda: auto: every λ of the path gave a non-finite validation score ({len(path)} solves diverged); "
            "give model.regularizer.lambda a number, or change the solver's step size or iterations")
    def best_lambda():
        return _best([{"params": {LAMBDA: p["lambda"]}, "score": p["score"]} for p in path], higher)["params"][LAMBDA]

    top = best_lambda()
    up, down = float(f"{top * 10 ** 0.5:.6g}"), float(f"{top / 10 ** 0.5:.6g}")
    above = [p["lambda"] for p in path if p["lambda"] > up]
    run(up, min(above) if above else top, True)  # from the nearest larger λ solved: down the path
    run(down, top, True)
    lam = best_lambda()
    split = f"validation {len(va)} of {n} rows, seed {base['seed']}"
    return LambdaChoice(lam=lam, metric=metric, higher_is_better=higher, path=path, stopped_early=stopped,
                        split=split, select_s=time.perf_counter() - t0, warm_path=warm,
                        snapshot=snaps.get(lam), rows=tr)


def overrides_of(params: dict) -> list:
    """``--set`` items for ``params``; floats always carry a dot (YAML 1.1 reads ``1e-06`` as a string)."""
    out = []
    for k, v in params.items():
        text = repr(v)
        if isinstance(v, float) and "e" in text and "." not in text:
            text = text.replace("e", ".0e")
        out.append(f"{k}={text}")
    return out


def _best(rows, higher):
    """The best row; ties go to the larger λ (the simpler model), then to the earlier row.  A row whose
    score is NaN or infinite (a diverged solve on some fold) is never the best; if every row is, the
    search failed and says so."""
    ok = [i for i, r in enumerate(rows) if np.isfinite(r["score"])]
    if not ok:
        from .errors import NonFiniteModelError

        raise NonFiniteModelError(
            f"every point searched ({len(rows)}: a kopt tune grid or lambda: auto's path) gave a non-finite "
            "validation score: the solves diverged; change the grid, or the solver's step size (solver.step_size) "
            "or iterations")

    def key(i):
        r = rows[i]
        return (r["score"] if higher else -r["score"], r["params"].get(LAMBDA, 0.0), -i)

    return rows[max(ok, key=key)]
