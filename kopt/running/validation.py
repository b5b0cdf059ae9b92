"""Choosing on held-out rows: the seeded splits, the λ path of ``lambda: auto``, the best row.

A service below both :mod:`kopt.api` (``lambda: auto`` runs :func:`select_lambda` before a solve)
and :mod:`kopt.selection.tune` (the grid search): neither imports the other.  The solves themselves are the
caller's (``solve``, :func:`kopt.api.solve`), so this module never imports the API.
"""
from __future__ import annotations

import time
import warnings
from dataclasses import dataclass, field

import numpy as np

from ..errors import ConvergenceWarning, SpecError
from ..numerics.rows import take
from ..numerics.splits import split_permutation

LAMBDA = "model.regularizer.lambda"
#: metric -> True when larger is better
METRICS = {"accuracy": True, "auc": True, "r2": True, "rmse": False, "mae": False}


def make_splits(n, seed, folds=None, validation=None):
    """``[(train_rows, held_out_rows), ...]``: ``folds`` seeded folds, or one seeded validation split."""
    if folds is not None and validation is not None:
        raise SpecError("give folds or validation, not both", parameter="folds", value=folds)
    perm = split_permutation(n, seed)
    if folds is not None:
        if not (isinstance(folds, int) and 2 <= folds <= n):
            raise SpecError(f"folds must be an integer from 2 to the {n} training rows, got {folds!r}",
                            parameter="folds", value=folds)
        parts = np.array_split(perm, folds)
        return [(np.sort(np.concatenate(parts[:i] + parts[i + 1:])), np.sort(parts[i])) for i in range(folds)]
    validation = 0.2 if validation is None else validation
    if not 0 < validation < 1:
        raise SpecError(f"validation is the held-out fraction, in (0, 1); got {validation!r}",
                        parameter="validation", value=validation)
    m = int(round(validation * n))
    if not 1 <= m < n:
        raise SpecError(f"a held-out share of {validation:g} of {n} training row{'s' if n != 1 else ''} holds out "
                        f"{m}; a split needs a row on each side: at least {rows_for_split(validation)} training rows",
                        parameter="validation", value=validation)
    return [(np.sort(perm[m:]), np.sort(perm[:m]))]


def rows_for_split(validation) -> int:
    """The fewest training rows a held-out share ``validation`` splits with a row on each side."""
    n = 2
    while not 1 <= int(round(validation * n)) < n:
        n += 1
    return n


def fold_of(ds, tr, va):
    """``(X, y, X_held_out, y_held_out)`` of one split of the training rows."""
    return take(ds.X, tr), np.asarray(ds.y)[tr], take(ds.X, va), np.asarray(ds.y)[va]


def solve_point(solve, base, fold, params, metric, start_from, *, keep_state, sample_weight=None):
    """One solve of the search (``solve``: :func:`kopt.api.solve`): ``base`` with ``params`` set, on a fold,
    scored on its held-out rows."""
    from ..spec import load_spec

    spec = load_spec(base, overrides_of(params), check_files=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        r = solve(spec, data=fold, keep_state=keep_state, start_from=start_from, sample_weight=sample_weight,
                  calibrate=False)
    if metric not in r.metrics:
        raise SpecError(f"metric {metric!r} is not reported for this spec's target; it reports "
                        f"{', '.join(r.metrics) or 'none'}", parameter="metric", value=metric)
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


def select_lambda(spec, ds, *, solve, sample_weight=None, progress=False) -> LambdaChoice:
    """``lambda: auto``: the λ of :data:`AUTO_PATH` (refined once) with the best validation score; ``solve`` is
    :func:`kopt.api.solve` (the caller's).

    The spec's training rows ``ds`` are split by :func:`make_splits` (a held-out fraction
    :data:`AUTO_VALIDATION`, seeded by the spec's seed); λ walks the path from the largest down, each
    solve warm-started from the previous one (:func:`tune`'s λ path), until the score has not
    improved for :data:`AUTO_PATIENCE` points; then the two half-decade neighbours of the best are
    solved, and the best of all wins (ties: the larger λ).  The metric is :func:`tune`'s default:
    accuracy, or rmse for a real target.
    """
    import sys

    from ..contract.registry import registry
    from ..spec import load_spec

    t0 = time.perf_counter()
    base = load_spec(spec, ["output.checkpoint_every=0"], check_files=False)
    metric = "rmse" if base.loss.target == "real" else "accuracy"
    higher = METRICS[metric]
    warm = bool(registry().get("solver", base["solver"]["name"]).lambda_warm_start)
    if ds.y is None:
        raise SpecError("lambda: auto needs labelled training data", source=base.source)
    n = ds.X.shape[0]
    try:
        (tr, va), = make_splits(n, base["seed"], validation=AUTO_VALIDATION)
    except SpecError:
        raise base.error(("model", "regularizer", "lambda"),
                         f"auto scores each λ on {AUTO_VALIDATION:g} of the training rows held out, and {n} training "
                         f"row{'s' if n != 1 else ''} cannot be split so (at least {rows_for_split(AUTO_VALIDATION)}); "
                         "give λ a number") from None
    fold = fold_of(ds, tr, va)
    weights = None if sample_weight is None else np.asarray(sample_weight)[tr]
    path, snaps = [], {}

    def run(lam, start, refine):
        origin = snaps.get(start) if warm else None
        r = solve_point(solve, base, fold, {LAMBDA: lam}, metric, origin, keep_state=warm, sample_weight=weights)
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
        from ..errors import NonFiniteModelError

        raise NonFiniteModelError(
            f"lambda: auto: every λ of the path gave a non-finite validation score ({len(path)} solves diverged); "
            "give model.regularizer.lambda a number, or change the solver's step size or iterations")
    def best_lambda():
        return best_row([{"params": {LAMBDA: p["lambda"]}, "score": p["score"]} for p in path], higher)["params"][LAMBDA]

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


def best_row(rows, higher):
    """The best row; ties go to the larger λ (the simpler model), then to the earlier row.  A row whose
    score is NaN or infinite (a diverged solve on some fold) is never the best; if every row is, the
    search failed and says so."""
    ok = [i for i, r in enumerate(rows) if np.isfinite(r["score"])]
    if not ok:
        from ..errors import NonFiniteModelError

        raise NonFiniteModelError(
            f"every point searched ({len(rows)}: a kopt tune grid or lambda: auto's path) gave a non-finite "
            "validation score: the solves diverged; change the grid, or the solver's step size (solver.step_size) "
            "or iterations")

    def key(i):
        r = rows[i]
        return (r["score"] if higher else -r["score"], r["params"].get(LAMBDA, 0.0), -i)

    return rows[max(ok, key=key)]
