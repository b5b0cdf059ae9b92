"""``kopt tune``'s shared path for the square loss on Nyström centers: one system per fold and setting.

For ``solver: krr_nystrom`` (and ``solver: auto``, which routes the square loss there) a grid point
is the minimiser of λ/2 wᵀRw + (1/n) Σ ½‖k(x_i, C) w − y_i‖², i.e. one M × M system
(:class:`kopt.nystrom.system.NystromSystem`): its Gram A = Σ k_i k_iᵀ costs n M² flops,
each λ one M³/3 Cholesky.  So instead of one solve per grid point this path does, for every setting
of the keys other than λ (bandwidth, center count, ...):

1. assemble the problem once on **all** training rows -- the standardisation, the bandwidth rule and
   the centers (:func:`kopt.nystrom.choose_centers`) are fitted on the rows' features only, never their
   labels, so no fold's held-out labels leak; they are the refit's, exactly: the refit (a normal
   :func:`kopt.solve` of the best spec on the same rows) draws the same centers;
2. split the rows into the folds' held-out parts and build one system per part (A_p, B_p: together
   n M² flops, once, whatever the number of folds);
3. each fold's system is the sum of the parts it trains on (M² additions), and its validation rows'
   k(X_val, C) scores every λ through :meth:`NystromSystem.path` -- a λ the system does not resolve
   (rounding, not λ, decides its scores) scores NaN and is never the best.

A fold's scores are those of the full solve at that grid point on the fold's training rows with
those centers, standardisation and bandwidth (``tests/engine/selection/test_tune_shared.py`` checks them against a
dense float64 solve), taken on the fold's held-out rows that are not centers: a held-out center's
coefficient is fitted without its label, and at small λ its own kernel column decides its score (on
mnist-10k at 4,096 centers and λ = 1e-6, 90.1% against 97.2% on the other held-out rows, docs/design/center-ladder.md),
which would bias every fold towards large λ.  The centers are the head of
:func:`kopt.nystrom.center_order`, which holds a validation split's rows back but not every fold's: a fold
whose held-out rows are all centers is scored on all of them.  krr_nystrom's intercept (the targets' mean
on the rows it trains on) is handled exactly by a column of ones beside the targets (the solution is linear
in the targets).
"""
from __future__ import annotations

import itertools
import sys
import time

import numpy as np

from ..errors import SpecError
from ..numerics import rows as _rows
from ..numerics.backend import to_numpy
from ..running.validation import LAMBDA, overrides_of

#: solvers whose grid points are the square loss's Nyström system
SHARED_SOLVERS = ("krr_nystrom", "auto")


def applies(spec, axes) -> bool:
    """Whether the grid of ``spec`` over ``axes`` runs on the shared path: the square loss, solver
    krr_nystrom or auto, one machine, no ``solver.*`` key searched (auto's options are not the route's),
    and a numeric λ (on the grid, or the spec's own)."""
    if spec.loss.name != "square" or spec["solver"]["name"] not in SHARED_SOLVERS:
        return False
    if any(a.key.startswith("solver.") for a in axes):
        return False
    if spec["execution"]["engine"] == "dask" or spec["model"]["form"] == "gp":
        return False
    if any(a.key == LAMBDA for a in axes):
        return True
    return isinstance(spec["model"]["regularizer"].get("lambda"), (int, float))


def concrete(spec, ds, log=None):
    """``(spec, note)``: the spec each grid point solves.  ``krr_nystrom`` is itself; ``auto`` is its route
    for the square loss -- krr_nystrom on the spec's ``model.features.count`` when given, else on the
    center count auto's own search chooses on these rows (one search, before the grid)."""
    from ..api import spec_with
    from ..running.assemble import assemble

    if spec["solver"]["name"] == "krr_nystrom":
        return spec, None
    planner = spec.component(("solver",))
    count = ((spec.given.get("model") or {}).get("features") or {}).get("count")
    if count:
        overrides, _ = planner.route(spec.loss, int(count))
        note = f"solver auto: its route for the square loss, krr_nystrom on the {int(count)} centers given"
    else:
        t0 = time.perf_counter()
        chosen = planner.plan(assemble(spec, (ds.X, ds.y)), spec.given, log)
        overrides, record = chosen.overrides, chosen.record
        note = (f"solver auto: its route for the square loss, krr_nystrom on the {record['centers']} centers its "
                f"search chose on the training rows ({time.perf_counter() - t0:.1f} s)")
        overrides = {k: v for k, v in overrides.items() if not k.startswith(("model.regularizer", "model.kernel"))}
    return spec_with(spec, overrides), note


def scored_rows(held_out, centers):
    """The held-out rows a fold is scored on: those that are not centers (all of them if every one is)."""
    rest = held_out[~np.isin(held_out, centers)]
    return rest if rest.size else held_out


def parts_of(splits, n):
    """The rows cut by the folds' held-out sets: ``(parts, held)`` where ``held[f]`` is the index of fold
    f's held-out part (the held-out sets are disjoint; rows held out by no fold form one more part)."""
    parts, held = [], []
    covered = np.zeros(n, dtype=bool)
    for _, va in splits:
        va = np.sort(np.asarray(va))
        if covered[va].any():
            raise ValueError("the folds' held-out rows overlap; the shared path needs disjoint held-out sets")
        covered[va] = True
        held.append(len(parts))
        parts.append(va)
    rest = np.flatnonzero(~covered)
    if rest.size:
        parts.append(rest)
    for f, (tr, _) in enumerate(splits):  # each fold trains on exactly the parts it does not hold out
        expect = np.sort(np.concatenate([p for j, p in enumerate(parts) if j != held[f]]))
        if not np.array_equal(np.sort(np.asarray(tr)), expect):
            raise ValueError(f"fold {f + 1} does not train on every row it does not hold out")
    return parts, held


def targets(problem, ds):
    """The system's target columns: the label columns, then a column of ones.

    krr_nystrom fits the targets less their mean on the rows it trains on (a fixed intercept,
    :func:`kopt.nystrom.system.target_offset`); the solution is linear in the targets, so a fold's
    model with its own means μ scores S_Y − S_1 μᵀ + μ (S_Y, S_1: the scores of the label columns and of the
    ones).  Classification: the ±1 label columns (one per class beyond two); a real target: y in its own
    units (a standardisation's scale cancels)."""
    xp = problem.xp
    if problem.preprocessor.target != "real":
        Y = problem.label_matrix()
    else:
        Y = xp.asarray(np.asarray(ds.y, dtype=np.float64))[:, None]
    return xp.concatenate([Y, xp.ones((Y.shape[0], 1), dtype=Y.dtype)], axis=1)


def fold_metric(problem, metric, S, y_val, means):
    """``metric`` of a fold's scores against the held-out labels (the user's values): S holds the label
    columns' and the ones' scores (:func:`targets`), ``means`` the label columns' means on the fold's training
    rows."""
    from ..data import Preprocessor
    from ..numerics.metrics import evaluate

    S = to_numpy(S)
    scores = S[:, :-1] - np.outer(S[:, -1], means) + means
    if problem.preprocessor.target == "real":
        values = evaluate("real", y_val, scores[:, 0], Preprocessor("real"))
    else:
        values = evaluate(problem.preprocessor.target, y_val, scores[:, 0] if scores.shape[1] == 1 else scores,
                          problem.preprocessor)
    if metric not in values:
        raise SpecError(f"metric {metric!r} is not reported for this spec's target; it reports "
                        f"{', '.join(values) or 'none'}", parameter="metric", value=metric)
    return float(values[metric])


def run(base, ds, splits, axes, metric, progress=False):
    """Every grid point's row (as :func:`kopt.selection.tune.tune`'s) and a description of the shared work."""
    from ..nystrom.centers import choose_centers
    from ..nystrom.system import NystromSystem
    from ..running.assemble import assemble
    from ..spec import load_spec

    path = next((a for a in axes if a.key == LAMBDA), None)
    others = [a for a in axes if a is not path]
    lams = sorted(path.values, reverse=True) if path is not None else [float(base["model"]["regularizer"]["lambda"])]
    n = ds.X.shape[0]
    parts, held = parts_of(splits, n)
    y_raw = np.asarray(ds.y)
    rows, stats = [], {"systems": 0, "system_s": 0.0, "path_s": 0.0, "assemble_s": 0.0, "centers": set()}
    for setting in itertools.product(*(a.values for a in others)):
        fixed = dict(zip((a.key for a in others), setting))
        t0 = time.perf_counter()
        spec = load_spec(base, overrides_of({**fixed, LAMBDA: lams[0]}), check_files=False)
        problem = assemble(spec, (ds.X, ds.y))  # all training rows: standardisation, bandwidth, labels
        xp = problem.xp
        centers = choose_centers(problem, problem.features.count)
        C = _rows.dense(problem.X, xp.asarray(centers), xp, problem.dtype)
        Y = targets(problem, ds)
        t1 = time.perf_counter()
        stats["assemble_s"] += t1 - t0
        stats["centers"].add(int(C.shape[0]))
        first = NystromSystem(problem.kernel, _rows.take(problem.X, xp.asarray(parts[0])), Y[xp.asarray(parts[0])], C,
                              dtype=problem.dtype)
        kept_centers = np.asarray(centers)[np.asarray(first.kept)]  # rows whose own kernel column is in the model
        # one basis of the centers (the pivoted factor of K_CC) for every part
        systems = [first] + [NystromSystem(problem.kernel, _rows.take(problem.X, xp.asarray(p)), Y[xp.asarray(p)], C,
                                           dtype=problem.dtype, basis=(first.kept, first.U)) for p in parts[1:]]
        system_s = time.perf_counter() - t1
        stats["systems"] += len(systems)
        stats["system_s"] += system_s
        per = {lam: {"scores": [], "fit_s": system_s / len(lams), "iterations": 0, "converged": True, "warm": 0,
                     "unresolved": 0} for lam in lams}
        for f, (tr, va) in enumerate(splits):
            t2 = time.perf_counter()
            system = NystromSystem.total([s for j, s in enumerate(systems) if j != held[f]])
            scored = scored_rows(parts[held[f]], kept_centers)
            scores = system.path(lams, _rows.take(problem.X, xp.asarray(scored)))
            means = to_numpy(Y[xp.asarray(np.sort(np.asarray(tr)))][:, :-1]).mean(axis=0)  # the fold's intercept
            y_val = y_raw[scored]
            for lam, S in zip(lams, scores):
                p = per[lam]
                p["iterations"] += 1
                if S is None:  # the system does not resolve this λ: not a choice
                    p["scores"].append(float("nan"))
                    p["converged"] = False
                    p["unresolved"] += 1
                else:
                    p["scores"].append(fold_metric(problem, metric, S, y_val, means))
            path_s = time.perf_counter() - t2
            stats["path_s"] += path_s
            for lam in lams:
                per[lam]["fit_s"] += path_s / len(lams)
            if progress:
                words = "  ".join(f"{k.rsplit('.', 1)[1]}={v:g}" for k, v in fixed.items())
                print(f"kopt tune: fold {f + 1}/{len(splits)}  {words}  {C.shape[0]} centers  lambda path "
                      + " ".join(f"{lam:g}:{s:.4g}" for lam, s in zip(lams, (per[lam]['scores'][-1] for lam in lams)))
                      + f"  (systems {system_s:.2f}s, path {path_s:.2f}s)", file=sys.stderr, flush=True)
        for lam, p in per.items():
            rows.append({"params": {**fixed, LAMBDA: lam} if path is not None else dict(fixed),
                         "score": float(np.mean(p["scores"])), "std": float(np.std(p["scores"])), **p})
    if not any(np.isfinite(r["score"]) for r in rows):
        from ..errors import NonFiniteModelError

        raise NonFiniteModelError(
            f"no lambda of the grid is resolved by the Nystrom system on every fold (float64 rounding, not lambda, "
            f"decides the scores at {', '.join(f'{lam:g}' for lam in lams)}): search larger values of {LAMBDA}")
    shared = {"route": "krr_nystrom", "centers": sorted(stats["centers"]), "systems": stats["systems"],
              "parts": len(parts), "system_s": round(stats["system_s"], 4), "path_s": round(stats["path_s"], 4),
              "assemble_s": round(stats["assemble_s"], 4),
              "what": "one Nystrom system per held-out part and setting, centers drawn once from all training rows "
                      "(the refit's); each fold's system the sum of its parts, every lambda from it, scored on the "
                      "held-out rows that are not centers"}
    return rows, shared
