"""``solver: auto``'s smooth losses past :data:`.large.SEARCH_ROWS` rows: each loss's own λ, measured on the sample.

The large route's direct search (:mod:`.planner`) chooses the centers, the bandwidth and a λ on a seeded sample with
the square loss's normal equations.  A named smooth loss (the logistic loss, Huber, the squared hinge) is solved on
every row by ``newton_pcg`` (Newton steps, each by preconditioned CG: :class:`kopt.nystrom.SmoothNewton`); its λ is
its own: :func:`loss_path` walks λ from the search's choice by half decades, each λ a few Newton steps on the sample's
rows warm from the last, and scores each model on the held-out rows of every row, as the square loss's sample model
is scored there.  The walk goes down while a step gains at least :data:`.scoring.MIN_GAIN`, or up where the first
step down lost.  The best λ's model starts the solve on every row (projected on its centers, no pass).

Where the spec leaves the loss to auto, the same paths of the logistic loss and the squared hinge are scored beside
the square loss's sample model on the same rows (:func:`choose_loss`): another loss is taken only where it gains at
least :data:`.scoring.MIN_GAIN` and more than :data:`.planner.LOSS_ERRORS` standard errors of the paired difference,
the direct route's rule (docs/design/loss-auto.md).

Every pass is counted by formula (:func:`.work.cg_step`): a λ the work left cannot afford is not started.  A named
loss's path counts in the search's budget; the screen of the loss left to auto in a budget of its own
(:func:`screen_work`), so that where the square loss stands the rest of the search chooses as it did without it.
"""
from __future__ import annotations

import dataclasses
import time

import numpy as np

from kopt.numerics import rows as _rows
from kopt.numerics.backend import to_numpy

from . import planner, scoring, work

#: each λ of a loss's path is solved to this relative duality gap (validation accuracy has settled long before)
PATH_TOL = 1e-2
#: Newton steps per λ of the path, at most
PATH_STEPS = 10
#: the path's step between λs (a half decade, the ladder's)
PATH_STEP = 10.0 ** 0.5
#: the λs a path tries at most, and the smallest it tries
PATH_LAMBDAS = 8
PATH_MIN_LAMBDA = 1e-10
#: the losses scored beside the square loss where the spec leaves the loss to auto (a binary target)
AUTO_LOSSES = ("logistic", "squared_hinge")
#: the relative duality gap the solve on every row (``newton_pcg``) is held to, its certificate
FINAL_TOL = 1e-3
#: the loss left to auto: each other loss's path may count this many passes over the sample's rows, in a work budget
#: of the screen's own beside the search's (:func:`screen_work`), so that where the square loss stands its grown
#: centers are chosen on the same budget as without the screen
SCREEN_PASSES = 200


#: the passes newton_pcg's solve on every row is counted at where the centers grow with the rows
#: (``AutoSolver._centers_for_rows``): a few Newton steps of a few CG steps each, warm from the sample's model
FINAL_PASSES = 40


def final_work(n, M, d, outputs=1):
    """The solve on every row's work by formula: :data:`FINAL_PASSES` passes over ``n`` rows at ``M`` centers and
    their factors."""
    return FINAL_PASSES * work.cg_step(n, M, d, outputs) + work.cg_factors(M) + work.cg_lambda(M)


def screen_work(n, M, d, outputs=1):
    """The screen's work budget by formula: :data:`SCREEN_PASSES` passes over ``n`` sample rows at ``M`` centers for
    each loss of :data:`AUTO_LOSSES`, and their factors."""
    return len(AUTO_LOSSES) * (SCREEN_PASSES * work.cg_step(n, M, d, outputs) + work.cg_factors(M))


@dataclasses.dataclass
class LossPath:
    """A smooth loss's λ path on the sample (:func:`loss_path`): its best λ's model and scores.

    ``rows``: the best λ's outcomes on the held-out rows (what a gain's standard error is paired with);
    ``scores``: those rows' scores with the offset, ``(n_va, C)`` (a margin classifier's calibration reads them);
    ``model``: ``(C, w)``, the kept centers and coefficients the solve on every row starts from; ``path``: each λ's
    validation score; ``passes``: the passes over the sample's rows."""

    loss: str
    lam: float
    score: float
    rows: np.ndarray
    scores: np.ndarray
    model: tuple
    path: dict
    passes: int
    seconds: float

    def record(self, centers) -> dict:
        """The report's trial entry."""
        return {"centers": int(centers), "loss": self.loss, "lam": self.lam, "score": self.score, "path": self.path,
                "seconds": self.seconds, "passes": self.passes}


def loss_path(problem, loss, sample, validation, centers, kernel, lam, metric, budget, log, threads=None, walk=True,
              shared=None):
    """The λ path of ``loss`` on the sample's rows, scored on the held-out rows; None where no λ was afforded.

    ``sample``, ``validation``: indices into the training rows; ``centers``: indices into ``sample`` of the search's
    chosen centers (drawn); ``kernel``: at the chosen bandwidth; ``lam``: the search's λ, where the walk starts;
    ``walk``: False for a λ the spec gives (that λ alone); ``shared``: a dict the paths of one screen share (on the
    same rows, centers and kernel), in which the first path leaves its CG: the next takes its kept centers and U
    (:meth:`kopt.nystrom.NystromCG.reweighted`, no pass) instead of factoring the centers again."""
    from kopt.nystrom import NewtonRows, NystromCG, SmoothNewton, best_offset, estimate_positions

    t0 = time.perf_counter()
    xp = problem.xp
    sx, vx = xp.asarray(sample), xp.asarray(validation)
    Y_all = problem.label_matrix()
    Y, Y_va = Y_all[sx], to_numpy(Y_all[vx])
    w = problem.sample_weight
    ws = None if w is None else w[sx] / xp.mean(w[sx])
    w_va = None if w is None else to_numpy(w[vx])
    X = _rows.take(problem.X, sx)
    X_va = _rows.take(problem.X, vx)
    made = None if shared is None else shared.get("cg")
    if made is not None:  # an earlier loss's path on these rows, centers and kernel: its centers' factor, no pass
        cg = made.reweighted(X, None, ws, threads=threads)
    else:
        C = _rows.dense(X, xp.asarray(centers), xp, problem.dtype)
        cg = NystromCG(kernel, X, None, C, dtype=problem.dtype, weights=ws, threads=threads)
        budget.count(work.cg_factors(int(cg.M)))
        if shared is not None:
            shared["cg"] = cg
    M, n, d, outputs = int(cg.M), int(X.shape[0]), int(problem.d), int(Y.shape[1])
    offset = best_offset(loss, Y, ws)
    positions, more = estimate_positions(problem.rng("newton_estimate"), n, d, np.asarray(centers), M,
                                         problem.features.centers == "uniform")
    rows = NewtonRows(cg, loss, Y, offset, ws, estimate=positions)
    estimate_rows = _rows.dense(X, xp.asarray(positions), xp, problem.dtype) if more else None
    step = work.cg_step(n, M, d, outputs)
    lam_work = work.cg_lambda(M) + work.kernel_values(len(validation), M, d)
    y_scale = float(getattr(problem.preprocessor, "y_scale", 1.0) or 1.0)
    found, v, k, direction, said = {}, None, 0, 1, []
    while len(found) < PATH_LAMBDAS and PATH_MIN_LAMBDA <= lam / PATH_STEP ** k <= 1.0:
        if budget.left() < lam_work + 4 * step:
            said.append("the work left affords no more lambdas")
            break
        at = float(f"{lam / PATH_STEP ** k:.6g}")
        passes = rows.passes
        newton = SmoothNewton(rows, at, tol=PATH_TOL, estimate_rows=estimate_rows)
        state = newton.start(xp.zeros((M, outputs)) if v is None else v)
        for _ in range(PATH_STEPS):
            if newton.done(state) or budget.left() < step * (newton.cg_steps + 1):
                break
            state = newton.step(state)
        budget.count(lam_work + (rows.passes - passes) * step)
        v = state["v"]
        S = to_numpy(cg.scores_of(X_va, v, kernel)) + offset[None, :]
        outcomes = scoring.outcomes(metric, S, Y_va, y_scale, w_va)
        found[k] = (scoring.score(metric, outcomes), at, outcomes, S, (cg.C, cg.coef(v)))
        if not walk:
            break
        if k - direction in found and scoring.gain(metric, found[k - direction][0], found[k][0]) < scoring.MIN_GAIN[
                metric]:
            if direction > 0 and k == 1:  # the first step down lost: up from the start instead (warm)
                direction, k = -1, -1
                continue
            break
        k += direction
    if not found:
        return None
    kb = max(found, key=lambda j: (found[j][0], -j))  # ties: the larger λ
    score, at, outcomes, S, model = found[kb]
    result = LossPath(loss=loss.name, lam=at, score=score, rows=outcomes, scores=S, model=model,
                      path={f"{found[j][1]:g}": round(found[j][0], 6) for j in sorted(found)}, passes=rows.passes,
                      seconds=time.perf_counter() - t0)
    log(f"auto: the {loss.name} loss on {len(sample):,} sample rows at {M} centers: best lambda {at:g}, validation "
        f"{metric} {abs(score):.5g} ({rows.passes} passes, {result.seconds:.0f} s{'; ' + said[0] if said else ''}) "
        f"[{budget.words()}]")
    return result


def choose_loss(problem, square_score, square_rows, paths, metric):
    """``(chosen path or None, record)``: the loss left to auto past :data:`.large.SEARCH_ROWS` rows.

    ``square_score`` and ``square_rows``: the square loss's sample model on the held-out rows; ``paths``: the other
    losses' :class:`LossPath` (None where not afforded).  A loss is taken where it gains at least
    :data:`.scoring.MIN_GAIN` and more than :data:`.planner.LOSS_ERRORS` standard errors of the paired difference;
    of several, the best score."""
    least = scoring.MIN_GAIN[metric]
    best, words, record = None, [], {"square_score": abs(float(square_score))}
    for path in paths:
        if path is None:
            continue
        gained = scoring.gain(metric, square_score, path.score)
        error = scoring.gain_error(metric, square_rows, path.rows)
        wins = gained >= least and gained > planner.LOSS_ERRORS * error
        record[f"{path.loss}_score"], record[f"{path.loss}_lambda"] = abs(float(path.score)), path.lam
        record[f"{path.loss}_gain"], record[f"{path.loss}_standard_error"] = float(gained), float(error)
        words.append(f"the {path.loss.replace('_', ' ')} gained {scoring.gain_words(metric, gained)} (standard error "
                      f"{scoring.gain_words(metric, error)})")
        if wins and (best is None or path.score > best.score):
            best = path
    rule = (f"at least {scoring.gain_words(metric, least)} and more than {planner.LOSS_ERRORS:g} standard errors "
            f"of the paired difference")
    if best is None:
        why = "; ".join(words) + f" on the held-out rows: none by {rule}; the square loss stands"
    else:
        why = "; ".join(words) + f" on the held-out rows: the {best.loss.replace('_', ' ')} by {rule}: chosen"
    record.update(chosen=best.loss if best is not None else "square", why=why)
    return best, record
