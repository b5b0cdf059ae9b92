"""``solver: auto`` past :data:`SEARCH_ROWS` training rows: choose on a sample, then grow the centers on every row.

The direct search (:mod:`.planner`) costs n M² flops a system, so past :data:`SEARCH_ROWS` rows the search is split in
two, and neither part costs more than the budget allows whatever n is:

1. **held-out rows, capped** (:func:`split`): 20% of the training rows, at most :data:`VALIDATION_ROWS` (enough to
   tell a gain of 0.1 points from noise on the paired differences); they are the last rows the center order
   reaches, so no center is a validation row.
2. **the direct search on a sample**: :func:`.planner.search` on :data:`SEARCH_ROWS` seeded rows of the others
   chooses the bandwidth, λ and a first center count M₁ (:class:`SampleModel`); where column scales were chosen
   (:mod:`.columns`), it runs on the columns as given too, and the scales are kept only where their search's best
   model wins (:func:`.columns.ladder_confirms`).
3. **the centers grown on every row** (:func:`grow`): the center count M₂ is the largest doubling of M₁ whose λ path
   on every fit row fits the work budget left, counted by formula (:func:`path_work`), within memory
   (:func:`memory_centers`).  ``krr_pcg``'s conjugate gradients solve a λ path there (:func:`grown_path`), each λ
   warm from the last and the first from the smaller model measured before it; the validation rows ride in every
   pass with weight 0, so their scores come with each pass.  Where the sample's ladder saturated, a rung of 2 M₁
   centers must gain first; where the sample's rows gained nothing either (:func:`rows_gain`), nothing is grown.
4. **the choice**: M₂'s best λ is kept where it beats the sample's model on the same validation rows by the ladder's
   :data:`.scoring.MIN_GAIN`; else M₁ at λ₁.  ``krr_pcg`` then solves the chosen spec on every training row, warm
   from the search's solution.

Each λ's CG steps are cut where the work left runs out (counted, so the cut is the same on every machine); a
wall-clock limit the user sets (``solver.budget``) cuts them where it passes, and the report then says the model
depends on the machine (docs/design/large-route.md).
"""
from __future__ import annotations

import dataclasses
import math
import time
from typing import NamedTuple

import numpy as np

from kopt.contract.iterative import Check
from kopt.numerics import rows as _rows
from kopt.nystrom.cg import REFRESH_EVERY

from . import scoring, work

#: past this many training rows the direct search runs on a seeded sample of this many, and the centers grow on
#: every row by conjugate gradients
SEARCH_ROWS = 50_000
#: the held-out rows of the search, at most (20% of the training rows below 100,000)
VALIDATION_ROWS = 20_000
#: the share of the budget the sample's direct search may take (the rest grows the centers).  The column scales
#: (:mod:`.columns`) come first and are not cut by a share: their trials are bounded by the columns, not by n
#: (docs/design/large-route.md)
SAMPLE_SHARE = 0.25
#: each λ of the grown path is solved to this confirmed relative duality gap (:func:`solve_lambda`), at most
#: :data:`MAX_STEPS` CG steps: the dual weighs the residual by 1/λ, so the gap closes last, long after the
#: validation accuracy has settled
SEARCH_TOL = 1e-2
MAX_STEPS = 40
#: the relative duality gap the solve on every row is held to (its certificate)
FINAL_TOL = 1e-2
#: the solve on every row runs until its gap meets FINAL_TOL, at most this many CG steps: its work bound,
#: FINAL_STEPS x :func:`.work.cg_step` on every row, is in the plan's record (``final_work_flops``)
#: (docs/design/large-route.md)
FINAL_STEPS = 160
#: CG steps a λ path at M₂ is planned at (the cost model's count: three λs, the first from zero)
PLANNED_STEPS = 25
#: krr_pcg's memory plan (U and the preconditioner's factor in one M × M float64 buffer, and its blocks)
#: within this share of the memory available
MEMORY_SHARE = 0.5
#: the largest center count the grown stage tries
MAX_GROWN_CENTERS = 32_768
#: bandwidth factors (of the sample's choice) the grown size is probed at, where the sample's ladder did not reach
#: half the grown size itself: more centers resolve a shorter length scale than a few hundred chose
#: (docs/design/auto-bandwidth-probe.md)
PROBE_FACTORS = (1.0, 0.5 ** 0.5, 0.5)
#: the probe's λ steps (a decade: thousands of centers resolve far smaller λ than a few hundred), down to
#: :data:`PROBE_MIN_LAMBDA`
PROBE_STEP = 10.0
PROBE_MIN_LAMBDA = 1e-10
#: the rung's center count, a multiple of the sample's (:func:`grow`)
RUNG = 2
#: the rung's CG ends once its test is decided: its model gained over the sample's what the validation rows can tell,
#: and its held-out score moved by less than this share of :data:`.scoring.MIN_GAIN` in its last step (the score
#: settles long before the gap closes; the grown size starts from it, and the solve on every row certifies whatever
#: model is chosen: docs/design/large-route.md)
SETTLED_SHARE = 0.1


class RowsGain(NamedTuple):
    """What the sample's model gained from its rows (:func:`rows_gain`): the gain, and the noise it is held to
    (:data:`.scoring.GAIN_ERRORS` standard errors of the paired difference)."""

    gain: float
    noise: float


@dataclasses.dataclass
class SampleModel:
    """The sample's chosen model, as the grown stage (:func:`grow`) reads it.

    ``centers`` and ``lam`` are M₁ and λ₁; ``full_score`` its score on the held-out rows of every row and
    ``full_rows`` its outcomes there (what a gain's standard error is paired with); ``model`` its kept centers and
    coefficients ``(C, w)``, which the first CG on every row starts from; ``tried_centers`` the largest size the
    sample's ladder tried; ``rows_gain`` what its rows gained over half of them (None: not measured);
    ``bandwidth_rule`` whether the bandwidth is the search's to choose.
    """

    centers: int
    lam: float
    full_score: float | None = None
    full_rows: np.ndarray | None = None
    model: tuple | None = None
    tried_centers: int = 0
    rows_gain: RowsGain | None = None
    bandwidth_rule: bool = True


@dataclasses.dataclass
class GrownPath:
    """The λ path at a grown center count on every fit row (:func:`grown_path`): its best λ's model.

    ``kept_centers``: the centers the factors kept; ``v``: the best λ's CG coefficients; ``rows``: its validation
    outcomes; ``validation_scores``: the held-out rows' scores by the model of the fit rows; ``path``: each λ's
    validation score (None: not solved); ``steps``: the CG steps taken (the rung's included); ``cg``: the
    :class:`kopt.nystrom.NystromCG` with its factors, which the solve on every row reuses; ``intercept``: the fit
    rows' target mean; ``state``: the best λ's CG state as its confirmation refreshed it (None on a cluster), which
    a solve on the same rows, targets and weights starts from with no pass.
    """

    centers: int
    kept_centers: int
    bandwidth_factor: float
    kernel: object
    lam: float
    lam_index: int
    score: float
    v: object
    rows: np.ndarray
    validation_scores: np.ndarray
    path: dict
    seconds: float
    steps: int
    cg: object
    intercept: np.ndarray
    state: dict | None = None

    def record(self, rows: int) -> dict:
        """The report's trial entry of the grown size, on ``rows`` fit rows."""
        out = {"centers": self.centers, "bandwidth": self.kernel.options.as_dict().get("bandwidth"),
               "lam": self.lam, "score": self.score, "path": self.path, "seconds": self.seconds,
               "cg_steps": self.steps, "rows": int(rows)}
        if hasattr(self.cg, "rounds"):  # on a Dask cluster: the rounds its CG took (one a step, the confirmations')
            out.update(rounds=int(self.cg.rounds), passes=int(self.cg.passes))
        return out


def split(n, seed):
    """``(fit, validation)`` row indices: the seeded split's held-out rows, 20% and at most :data:`VALIDATION_ROWS`."""
    from kopt.running.validation import make_splits

    m = min(int(round(0.2 * n)), VALIDATION_ROWS)
    (tr, va), = make_splits(n, seed, validation=m / n)
    return tr, va


def sample_problem(problem, rows):
    """The problem restricted to training rows ``rows`` (sorted indices), without test rows: the direct search's."""
    xp = problem.xp
    idx = xp.asarray(rows)
    w = problem.sample_weight
    if w is not None:
        w = w[idx]
        w = w / xp.mean(w)
    return dataclasses.replace(problem, X=_rows.take(problem.X, idx), y=problem.y[idx], sample_weight=w,
                               X_test=None, y_test_raw=None)


def sample_rows(problem, fit):
    """:data:`SEARCH_ROWS` seeded rows of ``fit`` (sorted), or every fit row where there are fewer."""
    rng = problem.rng("auto_sample")
    return np.sort(rng.choice(fit, size=min(SEARCH_ROWS, len(fit)), replace=False))


def memory_centers(problem, available_bytes):
    """The most centers the registered ``krr_pcg``'s memory plan fits in :data:`MEMORY_SHARE` of ``available_bytes``
    (the rest: the rows, the search's copies)."""
    from kopt.contract.registry import registry
    from kopt.numerics import memory

    sizes = memory.Sizes.of(problem).replace(count=MAX_GROWN_CENTERS)
    return memory.largest_fitting(registry().get("solver", "krr_pcg")(), sizes, int(MEMORY_SHARE * available_bytes))


def path_work(M, n, d, outputs=1):
    """The work of a λ path at M centers on n rows, by formula: :data:`PLANNED_STEPS` CG steps (each a pass of n M
    kernel values, :func:`.work.cg_step`) plus the factors (the centers' pivoted Cholesky, M³/3, and one
    preconditioner, 2M³/3: :mod:`.work`)."""
    return PLANNED_STEPS * work.cg_step(n, M, d, outputs) + work.cg_factors(M) + work.cg_lambda(M)


def solve_lambda(cg, lam, start, loss, Y, max_steps=MAX_STEPS, out_of_time=None, until=None):
    """``(state, relative gap, steps, solved)``: CG at λ from ``start`` until the λ is solved, ``max_steps`` steps, or
    ``out_of_time()`` (the user's wall-clock limit; None: none) says so.  ``start``: None (zero), coefficients v
    (warm: one pass), or the state this function returned solved at another λ of ``cg`` (warm, no pass: its
    confirmation refreshed it, and the start takes its products: :meth:`kopt.nystrom.NystromCG.start`'s
    ``refreshed``; :func:`start_pass`).

    Solved: a confirmed relative gap (:meth:`kopt.nystrom.NystromCG.confirm`, the certificate krr_pcg stops on) of
    :data:`SEARCH_TOL`, the gap the solve on every row is held to, so that no λ is chosen which that solve cannot
    certify.  The gap returned is to the best confirmed dual value (the carried one before the first confirmation).
    The confirmations' passes are ``state["replacements"]`` (the budget counts them).  ``until``: a callable of
    (state, steps) that ends the steps early where it returns True (the rung's test decided: :class:`_RungTest`)."""
    s = cg.start(lam, refreshed=start) if _refreshed(cg, start) else cg.start(lam, _coefficients(start))
    gap, steps, solved = math.inf, 0, False
    while steps < max_steps:
        cg.step(s)
        steps += 1
        P, D, _, carried, confirmed = cg.confirm(s, steps, SEARCH_TOL, loss, Y)
        gap = carried if D is None else Check(objective=P, dual=D).rel_gap
        solved = confirmed and gap <= SEARCH_TOL
        if solved or (until is not None and until(s, steps)) or (out_of_time is not None and out_of_time()):
            break
    return s, gap, steps, solved


def _refreshed(cg, start):
    """Whether a λ's ``start`` is a state refreshed by ``cg`` and not stepped since (a solved λ's)."""
    return isinstance(start, dict) and cg.refreshed_here(start)


def _coefficients(start):
    """A λ's start as coefficients: None, ``start`` itself, or a state's ``v``."""
    return start["v"] if isinstance(start, dict) else start


def start_pass(cg, start) -> int:
    """The passes a λ's ``start`` makes on ``cg`` (:func:`solve_lambda`): one from coefficients, none from zero or
    from a state ``cg`` refreshed."""
    return int(start is not None and not _refreshed(cg, start))


@dataclasses.dataclass
class _ProbeRows:
    """The probe's rows: the sample's (centered targets, weights), the validation rows', the centers, and the work
    of one CG step and of one more λ at the probe's size."""

    X: object
    Y: object
    weights: object
    mu: np.ndarray
    X_val: object
    Y_val: np.ndarray
    C: object
    y_scale: float
    step: float
    lam_work: float
    M: int


def _probe_rows(problem, sample, validation, centers) -> _ProbeRows:
    from kopt.numerics.backend import to_numpy
    from kopt.nystrom.system import target_offset

    xp = problem.xp
    Y = problem.label_matrix()
    sx, vx = xp.asarray(sample), xp.asarray(validation)
    Ys = Y[sx]
    w = problem.sample_weight
    ws = None if w is None else w[sx] / xp.mean(w[sx])
    mu = target_offset(Ys, ws)
    C = _rows.dense(problem.X, xp.asarray(np.sort(centers)), xp, problem.dtype)
    d, outputs, M = int(problem.d), int(Y.shape[1]), len(centers)
    step = work.cg_step(len(sample), M, d, outputs) * (1 + 1 / REFRESH_EVERY)  # a step, its confirmations' share
    lam_work = work.cg_lambda(M) + work.kernel_values(len(validation), M, d)
    return _ProbeRows(_rows.take(problem.X, sx), Ys - mu, ws, to_numpy(mu), _rows.take(problem.X, vx),
                      to_numpy(Y[vx]), C, float(getattr(problem.preprocessor, "y_scale", 1.0) or 1.0), step, lam_work,
                      M)


def probe_bandwidth(problem, kernel, lam, sample, validation, centers, metric, log, threads=None, budget=None):
    """``(factor, λ)``: the bandwidth factor (of :data:`PROBE_FACTORS`) and λ of the CG solves on the sample's rows
    and ``centers`` (half the grown size), scored on the validation rows.

    At each factor λ walks from the sample's ``lam`` down by :data:`PROBE_STEP` (warm) while the score gains, one step
    up where the first step down lost; a λ CG does not solve is not a choice (:func:`_probe_factor`).  The choice is
    the shortest length scale as good as the best (:func:`_shortest_tied`): the grown model has twice the probe's
    centers and all the rows, and both resolve a shorter length scale.

    Its work is counted in ``budget``, the share the grown stage planned for it, a third to each factor: a λ a
    factor's share cannot afford is not started, so the probe never spends the grown size's work.
    """
    t0 = time.perf_counter()
    p = _probe_rows(problem, sample, validation, centers)
    said, found = [], {}  # factor -> (score, λ, outcomes row by row)
    for i, f in enumerate(PROBE_FACTORS):
        share = None if budget is None else budget.share(budget.left() / (len(PROBE_FACTORS) - i))
        if share is not None and share.left() < work.cg_factors(p.M) + p.lam_work + p.step:
            said.append(f"x{f:.3g}: not probed (the probe's planned work is spent)")
            continue
        best = _probe_factor(problem, kernel, f, lam, p, metric, share, threads, len(sample))
        if best is None:
            said.append(f"x{f:.3g}: not solved")
            continue
        said.append(f"x{f:.3g}: {abs(best[0]):.5g} at lambda {best[1]:g}")
        found[f] = best
    if not found:
        return 1.0, lam
    best, top = _shortest_tied(found, metric)
    why = "" if best == top else f" (the shortest length scale within what the validation rows tell of x{top:.3g})"
    log(f"auto: bandwidth and lambda at {len(centers)} centers on {len(sample):,} sample rows (validation {metric}): "
        + "; ".join(said) + f" -> x{best:.3g}, lambda {found[best][1]:g}{why} ({time.perf_counter() - t0:.0f} s)")
    return best, found[best][1]


def _probe_factor(problem, kernel, factor, lam, p, metric, share, threads, n_sample):
    """``(score, λ, outcomes)`` of the best λ at bandwidth ``factor`` (ties: the larger λ), or None where none was
    solved: λ walks from ``lam`` by :data:`PROBE_STEP` within the factor's ``share`` of the work, from the first λ
    above what the float32 kernel values resolve."""
    from kopt.numerics.backend import to_numpy
    from kopt.nystrom.cg import NystromCG

    count = share.count if share is not None else (lambda flops: None)
    options = kernel.options.as_dict()
    kern = type(kernel)(**{**options, "bandwidth": float(f"{options['bandwidth'] * factor:.6g}")})
    cg = NystromCG(kern, p.X, p.Y, p.C, dtype=problem.dtype, weights=p.weights, threads=threads)
    count(work.cg_factors(p.M))
    floor = max(PROBE_MIN_LAMBDA, cg.lambda_floor())  # what the float32 kernel values resolve
    # λ = lam / PROBE_STEP^k from k0: 0, or the first probe λ above the floor where lam is below it
    k0 = 0 if lam >= floor else -math.ceil(math.log(floor / lam, PROBE_STEP))
    scores, rows, v, k, direction = {}, {}, None, k0, 1
    step = work.cg_step(n_sample, p.M, int(problem.d), int(p.Y.shape[1]))
    while floor <= lam / PROBE_STEP ** k <= 1.0:
        allowed = MAX_STEPS if share is None else min(MAX_STEPS, int(max(0.0, share.left() - p.lam_work) // p.step))
        if allowed < 1:
            break
        s, gap, taken, solved = solve_lambda(cg, lam / PROBE_STEP ** k, v, problem.loss, p.Y, max_steps=allowed)
        count(p.lam_work + (taken + s.get("replacements", 0)) * step)
        if not solved:
            break  # smaller λ are harder still: not a choice
        v = s  # the next λ starts from this one's refreshed state
        S = to_numpy(cg.scores_of(p.X_val, s["v"], kern)) + p.mu
        rows[k] = scoring.outcomes(metric, S, p.Y_val, p.y_scale)
        scores[k] = scoring.score(metric, rows[k])
        if k - direction in scores and scoring.gain(metric, scores[k - direction], scores[k]) < scoring.MIN_GAIN[
                metric]:
            if direction > 0 and k == k0 + 1:  # the first step down lost: one step up instead
                direction, k, v = -1, k0 - 1, None
                continue
            break
        k += direction
    if not scores:
        return None
    kb = max(scores, key=lambda j: (scores[j], -j))  # ties: the larger λ
    return scores[kb], lam / PROBE_STEP ** kb, rows[kb]


def _shortest_tied(found, metric):
    """``(chosen factor, best factor)``: the smallest factor whose best score the best factor's beats by less than the
    validation rows can tell (:data:`.scoring.MIN_GAIN`, or :data:`.scoring.GAIN_ERRORS` standard errors of the
    paired difference, the larger): a tie on the sample breaks towards the shorter length scale
    (docs/design/auto-bandwidth-probe.md)."""
    top = max(found, key=lambda g: found[g][0])
    for g in sorted(found):  # from the shortest length scale up: the first the best does not beat
        gained = scoring.gain(metric, found[g][0], found[top][0])
        if gained < max(scoring.MIN_GAIN[metric],
                        scoring.GAIN_ERRORS * scoring.gain_error(metric, found[g][2], found[top][2])):
            return g, top
    return top, top


@dataclasses.dataclass
class _GrowPlan:
    """The grown stage's sizes and their work: the sample's M₁, the doublings above it that fit memory and
    ``max_centers`` (``sizes``), the center order, whether the sample's ladder saturated, and whether (and on how many
    sample rows) the bandwidth is probed."""

    n: int
    d: int
    outputs: int
    M1: int
    sizes: list
    order: np.ndarray
    saturated: bool
    has_bw: bool
    sample_n: int
    tried: int

    def probes(self, M) -> bool:
        """The sample's ladder reached M/2 centers with its bandwidth: a probe there rarely changes it."""
        return self.has_bw and M // 2 > self.tried

    def cost(self, M) -> float:
        """By formula: the rung, the λ path on every row, and the bandwidth probe at M/2 centers on the sample."""
        probe = 2 * len(PROBE_FACTORS) * path_work(M // 2, self.sample_n, self.d, self.outputs) if self.probes(M) else 0.
        rung = path_work(RUNG * self.M1, self.n, self.d, self.outputs) if self.saturated and M > RUNG * self.M1 else 0.
        return path_work(M, self.n, self.d, self.outputs) + probe + rung


def grow(problem, first, *, kernel, fit, validation, max_centers, metric, log, sample=None, threads=None, budget=None,
         budget_s=None):
    """Step 3 of the module docstring: the λ path at the grown center count on every fit row.

    Parameters
    ----------
    problem : kopt.running.assemble.Problem
        Every training row.
    first : SampleModel
        The sample's chosen model.
    kernel : kopt.contract.components.Kernel
        The chosen bandwidth's kernel.
    fit, validation : numpy.ndarray
        The fit and held-out rows (:func:`split`).
    max_centers : int
        The largest grown size.
    metric : str
        The search's metric (:func:`.scoring.metric_of`).
    log : callable
        Takes one progress line.
    sample : numpy.ndarray or None
        The sample's rows, where the bandwidth may be probed (None: it is not).
    threads : int or None
        kopt's worker threads.
    budget : kopt_plugins.auto.work.Budget or None
        The work the stage may count (None: the rows' default, with ``budget_s`` seconds as its wall-clock limit).

    Returns
    -------
    GrownPath or None
        None where no larger size fits or pays.

    Notes
    -----
    Only where it pays: where the sample's ladder tried a larger size and it did not gain, and the sample's rows
    gained nothing over half of them either, nothing is grown.  Where they did, 2 M₁ centers on every fit row
    (:data:`RUNG`, its first λ, no walk down: a test) must beat the sample's model by what the validation rows can
    tell before the grown size is tried; where the grown size does not solve, the rung's model is the one grown.
    Each size starts from the last model measured, projected on its centers (:meth:`kopt.nystrom.NystromCG.projected`).
    """
    t0 = time.perf_counter()
    if budget is None:
        budget = work.Budget(work.default_work(problem.n), budget_s, rule=work.rule_words())
    plan = _grow_plan(problem, first, kernel, fit, max_centers, sample, metric, log)
    M2 = None if plan is None else _grown_size(plan, budget, log)
    if M2 is None:
        return None
    common = dict(fit=fit, validation=validation, metric=metric, log=log, threads=threads, budget=budget)
    rung = None
    if plan.saturated and M2 > RUNG * plan.M1:
        rung = _rung(problem, kernel, plan, first, M2, metric, log, common)
        if rung is None:
            return None
        rung.seconds = time.perf_counter() - t0
        rung.cg.release_preconditioner()
        rung.state = None  # its scores on every row are not held through the grown path (a start from it makes a pass)
    factor, lam_start = 1.0, first.lam
    if plan.probes(M2):  # within the work cost(M2) planned for it
        share = budget.share(2 * len(PROBE_FACTORS) * path_work(M2 // 2, plan.sample_n, plan.d, plan.outputs))
        factor, lam_start = probe_bandwidth(problem, kernel, first.lam, sample, validation, plan.order[:M2 // 2],
                                            metric, log, threads, budget=share)
        bw = float(f"{kernel.options.as_dict()['bandwidth'] * factor:.6g}")
        kernel = type(kernel)(**{**kernel.options.as_dict(), "bandwidth": bw})
    # the grown size starts from the largest model measured so far (the rung's, else the sample's) where the bandwidth
    # stands: the same function on more centers, near the grown one's solution
    start = first.model if rung is None else (rung.cg.C, rung.cg.coef(rung.v))
    if factor != 1.0:  # the probe chose another bandwidth: a model of the old kernel is no start
        start = None
    # the rung's model at lam_start on every fit row (solved, or its held-out score settled: _RungTest) is a start a
    # few steps from the grown size's solution: the path starts there whatever the work left (_first_affordable)
    solved = start is not None and rung is not None and math.isclose(rung.lam, lam_start, rel_tol=1e-4)
    # the rung's buffer ((2 M₁)², at most a quarter of the grown size's) is kept: its model stands where the grown does not
    grown = grown_path(problem, kernel, plan.order, M2, lam_start, steps_before=0 if rung is None else rung.steps,
                       start=start, start_solved=solved, **common)
    if grown is None:
        if rung is not None:
            log(f"auto: {M2} centers did not solve: the rung's {RUNG * plan.M1} centers are the grown model")
        return rung
    grown.bandwidth_factor, grown.seconds = factor, time.perf_counter() - t0
    return grown


def _grow_plan(problem, first, kernel, fit, max_centers, sample, metric, log):
    """The grown stage's :class:`_GrowPlan`, or None where no size above M₁ fits, or where the sample's ladder
    saturated and its rows gained nothing over half of them (more rows and centers do not pay)."""
    from kopt.numerics.memory import available_bytes
    from kopt.nystrom.centers import center_order

    top = min(max_centers, MAX_GROWN_CENTERS, memory_centers(problem, available_bytes()), len(fit))
    M1 = int(first.centers)
    sizes = []
    M = 2 * M1
    while M <= top:
        sizes.append(M)
        M *= 2
    if not sizes:
        log(f"auto: no center count above {M1} fits memory and max_centers ({top}): the sample's choice stands")
        return None
    order = center_order(problem, sizes[-1])
    has_bw = "bandwidth" in kernel.options.as_dict() and sample is not None and first.bandwidth_rule
    tried = int(first.tried_centers)
    saturated = tried > M1  # the sample's ladder tried more centers, and they lost
    if saturated and first.rows_gain is not None:
        gained, noise = first.rows_gain
        if gained < max(scoring.MIN_GAIN[metric], noise):
            log(f"auto: the sample's ladder found no gain past {M1} centers, and its rows gained "
                f"{scoring.gain_words(metric, gained)} over half of them (< "
                f"{scoring.gain_words(metric, scoring.MIN_GAIN[metric])}, or within the validation rows' "
                f"{scoring.gain_words(metric, noise)} standard error): more rows and centers do not pay, the sample's "
                f"choice stands")
            return None
    return _GrowPlan(problem.n, int(problem.d), int(problem.label_matrix().shape[1]), M1, sizes, order, saturated,
                     has_bw, 0 if not has_bw else len(sample), tried)


def _grown_size(plan, budget, log):
    """M₂: the largest size whose work (:meth:`_GrowPlan.cost`) fits what is left of the budget, and the user's
    wall-clock limit; None where none does."""
    left = budget.left()
    affordable = [M for M in plan.sizes if plan.cost(M) <= left]
    log(f"auto: the grown size's work on {plan.n:,} rows at "
        + ", ".join(f"{M}: {plan.cost(M):.2g} flops" for M in plan.sizes) + f" ({left:.2g} of the work budget left)")
    while affordable and budget.out_of_time("the grown center count", plan.cost(affordable[-1])):
        log(f"auto: {affordable[-1]} centers would pass the time limit ({budget.seconds:g} s, {budget.elapsed():.0f} s "
            f"spent) -- this choice depends on the machine's speed")
        affordable.pop()
    if not affordable:
        log(f"auto: no center count above {plan.M1} fits the budget left: the sample's choice stands")
        return None
    return affordable[-1]


def _rung(problem, kernel, plan, first, M2, metric, log, common):
    """The rung, where the sample's ladder saturated: 2 M₁ centers on every fit row, its first λ and no walk down (a
    test: do more centers pay?), solved, or stopped once it gained and its held-out score settled (:class:`_RungTest`:
    the test is then decided, and the grown size or the solve on every row certifies what is chosen).  Its model
    where it beat the sample's by what the validation rows can tell, else None (the sample's choice stands)."""
    M = RUNG * plan.M1
    reference = None if first.full_score is None else (first.full_score, first.full_rows)
    rung = grown_path(problem, kernel, plan.order, M, first.lam, walk=False, start=first.model, reference=reference,
                      **common)
    gained, noise = (-math.inf, 0.0) if rung is None else _rung_gain(metric, (first.full_score, first.full_rows),
                                                                      rung.score, rung.rows)
    if gained < max(scoring.MIN_GAIN[metric], noise):
        said = "did not solve" if rung is None else (
            f"gained {scoring.gain_words(metric, gained)} (< {scoring.gain_words(metric, scoring.MIN_GAIN[metric])}, "
            f"or within the validation rows' {scoring.gain_words(metric, noise)} standard error)")
        log(f"auto: the sample's ladder found no gain past {plan.M1} centers, and {M} centers on every row {said} over "
            f"the sample's model: more centers do not pay, the sample's choice stands")
        return None
    log(f"auto: {M} centers on every row gained {scoring.gain_words(metric, gained)} over the sample's model: grown "
        f"to {M2}")
    return rung


def _rung_gain(metric, reference, score, rows):
    """``(gain, noise)`` of a model scoring ``score`` (per-row outcomes ``rows``) on the held-out rows over the sample's
    model (``reference``: its score and per-row outcomes, None where not held): the rung gains where gain >=
    max(:data:`.scoring.MIN_GAIN`, noise), noise :data:`.scoring.GAIN_ERRORS` standard errors of the paired
    difference (:func:`_rung` and :class:`_RungTest` read the same rule)."""
    reference_score, reference_rows = reference
    noise = 0.0 if reference_rows is None else scoring.GAIN_ERRORS * scoring.gain_error(metric, reference_rows, rows)
    return scoring.gain(metric, reference_score, score), noise


def rows_could_gain(gain, n, n_fit, n_sample):
    """What the solve on all ``n`` training rows could gain over the grown path's model of its ``n_fit`` fit rows, from
    the learning curve the search measured: the grown model gained ``gain`` over the sample's (``n_sample`` rows, fewer
    centers); spread over its doublings of the rows it bounds one doubling's gain (validation gains shrink as the rows
    double), times the doublings from n_fit to n.  Infinite where the fit rows are not more than the sample's."""
    if n_fit <= n_sample:
        return math.inf
    return max(float(gain), 0.0) * math.log2(n / n_fit) / math.log2(n_fit / n_sample)


def rows_gain(sample, found, kernel, lam, X_va, Y_va, full_rows, metric, y_scale, budget) -> RowsGain:
    """What the sample's model gained on the held-out rows ``X_va`` from its rows: the chosen system (``found``'s
    centers, ``kernel`` and λ) on a seeded half of the sample's rows against ``full_rows`` (the whole sample's
    outcomes there), and :data:`.scoring.GAIN_ERRORS` standard errors of that paired difference.

    The learning curve's last step: where the rows gained nothing the validation rows can tell and the sample's ladder
    found no gain from more centers either, the model is at what this kernel reaches on these rows, and more rows and
    centers do not pay (:func:`grow`).  One system of half the sample's rows, its work counted in ``budget``."""
    from kopt.numerics.backend import to_numpy
    from kopt.nystrom.system import NystromSystem

    xp = sample.xp
    half = np.sort(sample.rng("auto_rows_half").choice(sample.n, size=sample.n // 2, replace=False))
    hx = xp.asarray(half)
    Y = sample.label_matrix()[hx] - xp.asarray(found.intercept)
    w = sample.sample_weight
    w = None if w is None else w[hx] / xp.mean(w[hx])
    C = _rows.dense(sample.X, xp.asarray(found.centers), xp, sample.dtype)
    system = NystromSystem(kernel, _rows.take(sample.X, hx), Y, C, dtype=sample.dtype, weights=w,
                           basis=(found.system.kept, found.system.U))
    M = int(system.M)
    budget.count(work.system(len(half), M, int(sample.d)) + work.direct_lambda(M, len(Y_va)))
    S = to_numpy(system.scores(X_va, system.coef(system.solve(lam)))) + to_numpy(found.intercept)
    rows = scoring.outcomes(metric, S, Y_va, y_scale)
    return RowsGain(scoring.gain(metric, scoring.score(metric, rows), scoring.score(metric, full_rows)),
                    scoring.GAIN_ERRORS * scoring.gain_error(metric, rows, full_rows))


@dataclasses.dataclass
class _GrownCG:
    """The CG system at ``M`` centers on every row (the validation rows with weight 0), and what its walk reads."""

    cg: object
    Y: object
    mu: np.ndarray
    Y_val: np.ndarray
    y_scale: float
    validation: object
    step_work: float
    floor: float
    M: int
    n: int


def _grown_cg(problem, kernel, order, M, fit, validation, budget, threads) -> _GrownCG:
    from kopt.numerics.backend import to_numpy
    from kopt.nystrom.cg import NystromCG
    from kopt.nystrom.system import target_offset

    xp, n = problem.xp, problem.n
    C = _rows.dense(problem.X, xp.asarray(np.sort(order[:M])), xp, problem.dtype)
    Y = problem.label_matrix()
    w = problem.sample_weight
    fit_x = xp.asarray(fit)
    # the validation rows ride in every pass with weight 0 (their scores come free); the fit rows' weights are scaled
    # to mean 1 over the n rows, so the passes' (1/n) sums are the fit rows' (weighted) means -- the weights
    # data.held_out gives the same rows (kopt.running.assemble.LocalRows.fit_weights)
    weights = xp.zeros(n, dtype=np.float64)
    weights[fit_x] = xp.ones(len(fit)) if w is None else w[fit_x]
    weights *= n / float(xp.sum(weights))
    # the intercept as krr_pcg's solve on these weights makes it (NystromSolver.init), bit for bit: that solve's
    # targets are then this CG's, and the factors it takes over need no pass for b (NystromCG.reweighted)
    mu = target_offset(Y, weights)
    if problem.partitions is not None:  # a Dask cluster: the same CG on every row there, one round a step
        return _grown_on_cluster(problem, kernel, order, M, C, Y, mu, validation, budget)
    Yc = Y - mu  # the centered targets, once (the gap reads them every step)
    cg = NystromCG(kernel, problem.X, Yc, C, dtype=problem.dtype, weights=weights, threads=threads)
    budget.count(work.cg_factors(M))
    cg.centers = np.sort(order[:M])  # krr_pcg's centers for features.count = M: it reuses the factors
    del C
    return _GrownCG(cg, Yc, to_numpy(mu), to_numpy(Y[xp.asarray(validation)]),
                    float(getattr(problem.preprocessor, "y_scale", 1.0) or 1.0), xp.asarray(validation),
                    work.cg_step(n, M, int(problem.d), int(Y.shape[1])), cg.lambda_floor(), M, n)


def _grown_on_cluster(problem, kernel, order, M, C, Y, mu, validation, budget) -> _GrownCG:
    """:func:`_grown_cg` on a Dask cluster (``problem.X`` the client's :class:`kopt.distributed.rows.FetchedRows`):
    :class:`kopt.distributed.cg.PartitionCG` on the rows as the search reads them (its column scales made on the
    workers), the validation rows of weight 0 there and the fit rows of weight n/n_fit, as here; the intercept the fit
    rows' mean, computed here from the labels, as here."""
    from kopt.distributed.cg import PartitionCG
    from kopt.numerics.backend import to_numpy

    on_rows = dataclasses.replace(problem, X=None, y=None, kernel=kernel, partitions=problem.X.partitions())
    cg = PartitionCG(on_rows, C, held_out=np.sort(np.asarray(validation)), offset=to_numpy(mu))
    budget.count(work.cg_factors(M))
    cg.centers = np.sort(order[:M])
    return _GrownCG(cg, None, to_numpy(mu), to_numpy(Y[np.asarray(validation)]),
                    float(getattr(problem.preprocessor, "y_scale", 1.0) or 1.0), np.asarray(validation),
                    work.cg_step(problem.n, M, int(problem.d), int(Y.shape[1])), cg.lambda_floor(), M, problem.n)


def grown_path(problem, kernel, order, M2, lam_start, *, fit, validation, metric, log, threads, budget,
               steps_before=0, walk=True, start=None, start_solved=False, reference=None):
    """The λ path at ``M2`` centers (the first M2 of the center ``order``) on every fit row by conjugate gradients, the
    validation rows riding in each pass with weight 0.

    ``walk``: whether the path walks down from its first λ solved (False: that λ is the path, the rung's test).
    ``start``: ``(C, w)``, a smaller model of the same kernel measured before at ``lam_start``, which the first λ's CG
    starts from, projected on these centers (:meth:`kopt.nystrom.NystromCG.projected`); None: from zero.  A λ below
    what the float32 kernel values resolve (:meth:`kopt.nystrom.NystromCG.lambda_floor`) is not tried.
    ``start_solved``: whether ``start`` is a model CG ran at ``lam_start`` on every fit row to its certificate or its
    settled score (the rung's: :class:`_RungTest`); where it is not and the work left affords fewer CG steps than a λ
    may take, the path starts half a decade above ``lam_start`` (:func:`_first_affordable`).  ``reference``: ``(score, outcomes)`` of the sample's model on the validation rows,
    where ``walk`` is False: the λ's CG ends once its model gained over it and the score settled (:class:`_RungTest`),
    solved or not.

    Returns
    -------
    GrownPath or None
        The best λ's model, or None where no λ is solved within the budget.
    """
    from .planner import LAMBDAS

    t0 = time.perf_counter()
    g = _grown_cg(problem, kernel, order, M2, fit, validation, budget, threads)
    usable = [i for i in range(len(LAMBDAS)) if LAMBDAS[i] >= g.floor] or [0]
    first = min(usable, key=lambda i: abs(math.log(LAMBDAS[i] / lam_start)))
    if LAMBDAS[first] > lam_start * 1.0001:
        log(f"auto: {M2} centers on {g.n} rows: lambda {lam_start:g} is below what the float32 kernel values resolve "
            f"({g.floor:.2g}): the path starts at {LAMBDAS[first]:g}")
    v = None
    if start is not None:  # the smaller model's function on these centers: the first λ starts near its solution
        v = g.cg.projected(*start)
        budget.count(work.kernel_values(int(g.cg.M), int(start[0].shape[0]), int(problem.d)))
    if not start_solved:
        first = _first_affordable(g, budget, first, log)
    walked = _walk(problem, g, first, v, steps_before, walk, metric, log, budget, t0, reference)
    if not walked.scores:
        log(f"auto: no lambda solved at {M2} centers within the budget: the sample's choice stands")
        return None
    best = _best_lambda(walked.scores, metric)
    g.cg.release_preconditioner()  # the solve on every row factors its own at its λ
    return GrownPath(centers=int(M2), kept_centers=int(g.cg.M), bandwidth_factor=1.0, kernel=kernel, lam=LAMBDAS[best],
                     lam_index=best, score=walked.scores[best], v=walked.points[best], rows=walked.outcomes[best],
                     validation_scores=walked.raw[best], path=walked.path, seconds=time.perf_counter() - t0,
                     steps=walked.steps, cg=g.cg, intercept=g.mu, state=walked.states.get(best))


def _best_lambda(scores, metric):
    """The index of the largest λ solved, replaced by a smaller one only where it gains MIN_GAIN over it (the ladder's
    rule for more centers): a smaller gain is within what the rule calls none, and the larger λ is better
    conditioned."""
    best = None
    for k in sorted(scores):  # from the largest λ down
        if best is None or scoring.gain(metric, scores[best], scores[k]) >= scoring.MIN_GAIN[metric]:
            best = k
    return best


def _held_out(g, s, metric):
    """``(scores, outcomes, score)`` of the held-out rows at CG state ``s`` of ``g``: their carried scores (no pass)
    with the intercept, each row's outcome and the metric's score."""
    from kopt.numerics.backend import to_numpy

    raw = to_numpy(g.cg.scores_at(s, g.validation)) + g.mu
    rows = scoring.outcomes(metric, raw, g.Y_val, g.y_scale)
    return raw, rows, scoring.score(metric, rows)


class _RungTest:
    """The rung's test, read after each of its CG steps (:func:`solve_lambda`'s ``until``): decided where the model
    gained over the sample's (``reference``: its held-out score and per-row outcomes) what :func:`_rung` calls a gain
    (:func:`_rung_gain`), and its held-out score moved by less than :data:`SETTLED_SHARE` of
    :data:`.scoring.MIN_GAIN` in the last step.  The held-out rows' scores ride in every pass
    (:meth:`kopt.nystrom.NystromCG.scores_at`): no pass of its own."""

    def __init__(self, g, reference, metric):
        self.g, self.metric, self.reference = g, metric, reference
        self.last = None
        self.decided = False

    def __call__(self, s, steps) -> bool:
        metric = self.metric
        _, rows, score = _held_out(self.g, s, metric)
        last, self.last = self.last, score
        least = scoring.MIN_GAIN[metric]
        gain, noise = _rung_gain(metric, self.reference, score, rows)
        gained = gain >= max(least, noise)
        settled = last is not None and abs(scoring.gain(metric, last, score)) < SETTLED_SHARE * least
        self.decided = gained and settled
        return self.decided


@dataclasses.dataclass
class _Walked:
    """A grown λ path's solved λs (by index: score, outcomes, coefficients, held-out scores), every λ's words, and the
    CG steps taken."""

    scores: dict = dataclasses.field(default_factory=dict)
    outcomes: dict = dataclasses.field(default_factory=dict)
    points: dict = dataclasses.field(default_factory=dict)
    raw: dict = dataclasses.field(default_factory=dict)
    path: dict = dataclasses.field(default_factory=dict)
    steps: int = 0
    #: the refreshed CG state of the λ that would be chosen now (:func:`_best_lambda`), the one a solve after the
    #: search starts from with no pass, and of the last λ solved (the next λ's start)
    states: dict = dataclasses.field(default_factory=dict)


def _walk(problem, g, first, v, steps_before, walk, metric, log, budget, t0, reference=None) -> _Walked:
    """The λ walk of :func:`grown_path`: from λ index ``first`` (warm from ``v``) half a decade down while the smaller
    λ gains :data:`.scoring.MIN_GAIN` and is solved; half a decade up while the first is not solved.  With
    ``reference`` (the rung, ``walk`` False) the λ's steps end where its test is decided (:class:`_RungTest`)."""
    from .planner import LAMBDAS

    out, i, unresolved, warm_steps = _Walked(steps=steps_before), first, set(), None

    def out_of_time():
        return budget.out_of_time("the grown lambda path")

    while 0 <= i < len(LAMBDAS):
        lam = LAMBDAS[i]
        allowed = _steps_allowed(g, budget, i, first, warm_steps, log)
        if allowed is None:
            break
        started = v is not None  # from a model (the last λ's, or a smaller one's projected), not from zero
        test = None if reference is None or walk else _RungTest(g, reference, metric)
        s, gap, taken, solved = solve_lambda(g.cg, lam, v, problem.loss, g.Y, max_steps=allowed,
                                             out_of_time=out_of_time if budget.seconds is not None else None,
                                             until=test)
        decided = not solved and test is not None and test.decided
        # the steps, the confirmations, and a warm start's pass (float64 products: NystromCG.start), where it made one
        budget.count(work.cg_lambda(g.M) + (taken + s.get("replacements", 0) + start_pass(g.cg, v)) * g.step_work)
        out.steps += taken
        # the next λ starts from this state where it was solved (refreshed at its confirmation: no pass), else from
        # its coefficients (the unsolved state's arrays are not held through the next λ)
        v = s if solved else s["v"]
        if not solved and not decided:
            # a λ CG does not solve within the steps is not a choice: its iterate is another (early-stopped) model
            cut = taken < MAX_STEPS  # the work budget (or the time limit) cut this λ's steps
            unresolved.add(i)
            out.path[f"{lam:g}"] = None
            log(f"auto: {g.M} centers on {g.n} rows, lambda {lam:g}: not solved in {taken} CG steps (gap {gap:.2g}"
                + (", the budget's last" if cut else "") + f"): not a choice ({time.perf_counter() - t0:.0f} s)")
            if out.scores or cut:
                break  # walking down from a solved λ: the smaller ones are harder still
            i -= 1  # half a decade up, warm
            continue
        out.raw[i], out.outcomes[i], out.scores[i] = _held_out(g, s, metric)  # the raw scores: the calibration's
        out.points[i] = s["v"].copy()
        if solved:  # a decided test's state was not refreshed by a confirmation: no start without a pass
            out.states[i] = s
        keep = {i, _best_lambda(out.scores, metric)}
        out.states = {k: state for k, state in out.states.items() if k in keep}
        warm_steps = taken if started else None
        out.path[f"{lam:g}"] = round(out.scores[i], 6)
        log(f"auto: {g.M} centers on {g.n} rows, lambda {lam:g}: validation {metric} {abs(out.scores[i]):.5g} "
            f"({out.steps} CG steps so far, gap {gap:.2g}"
            + ("; the test decided: a gain over the sample's model, the score settled" if decided else "")
            + f") [{budget.words()}]")
        previous = out.scores.get(i - 1)
        if not walk or unresolved or (previous is not None
                                      and scoring.gain(metric, previous, out.scores[i]) < scoring.MIN_GAIN[metric]):
            break  # the smaller λ did not gain (validation error is unimodal in λ), or cannot be solved
        if budget.over() or (budget.seconds is not None and out_of_time()):
            break
        i += 1  # more rows resolve a smaller λ: half a decade down, warm
    return out


def _first_affordable(g, budget, first, log):
    """The first λ's index where no CG has solved it on every fit row: half a decade above ``first`` where the work
    left affords fewer than :data:`MAX_STEPS` CG steps (the steps a λ may take) and a larger λ is on the grid.  CG's
    steps grow as λ falls, and the sample's λ was chosen by a direct solve on its rows, so a λ the work cannot see to
    its cap may end unsolved with nothing chosen; the larger λ is solved in fewer steps, and the walk comes down to
    ``first`` where the work left affords it (docs/design/large-route.md).  Counted, so the same on every machine."""
    from .planner import LAMBDAS

    affordable = _affordable_steps(g, budget)
    if first == 0 or affordable >= MAX_STEPS:
        return first
    log(f"auto: {g.M} centers on {g.n} rows: the work left affords {affordable} CG steps, fewer than the {MAX_STEPS} a "
        f"lambda may take: the path starts half a decade above lambda {LAMBDAS[first]:g}, at {LAMBDAS[first - 1]:g} "
        f"[{budget.words()}]")
    return first - 1


def _affordable_steps(g, budget):
    """The CG steps the work left affords at one more λ of ``g`` (its preconditioner's factor first); a confirmation's
    pass, at most one in REFRESH_EVERY steps, counts as a step."""
    return int(max(0.0, budget.left() - work.cg_lambda(g.M)) // (g.step_work * (1 + 1 / REFRESH_EVERY)))


def _steps_allowed(g, budget, i, first, warm_steps, log):
    """The CG steps λ index ``i`` may take, or None where it is not started: below the λ floor (but the first), no
    work left for a step, or fewer steps left than the last λ solved took from its start (a model: the λ above's, or a
    smaller model's projected; CG's steps grow as λ falls, so a λ the work left cannot solve would choose nothing).
    Counted, so the cut is the same on every machine."""
    from .planner import LAMBDAS

    lam = LAMBDAS[i]
    if lam < g.floor and i != first:
        log(f"auto: {g.M} centers on {g.n} rows: lambda {lam:g} is below what the float32 kernel values resolve "
            f"({g.floor:.2g}): not tried")
        return None
    allowed = min(MAX_STEPS, _affordable_steps(g, budget))
    if allowed < 1:
        log(f"auto: {g.M} centers on {g.n} rows: no work left for lambda {lam:g} [{budget.words()}]")
        return None
    if warm_steps is not None and allowed < warm_steps:
        log(f"auto: {g.M} centers on {g.n} rows, lambda {lam:g}: the work left affords {allowed} CG steps, fewer than "
            f"the {warm_steps} lambda {LAMBDAS[i - 1]:g} took from its start: not started [{budget.words()}]")
        return None
    return allowed
