"""``solver: auto`` past :data:`SEARCH_ROWS` training rows: choose on a sample, then grow the centers on every row.

The direct search (:mod:`.planner`) costs n M² flops a system: at 10⁶ rows and 4,096 centers one system is
1.7·10¹³ flops, so a budget that affords 4,096 centers on 10⁵ rows affords about 1,024 on 10⁶, and more rows
bought a model no better (or worse).  Past :data:`SEARCH_ROWS` rows the search is split in two, and neither part
costs more than the budget allows whatever n is:

1. **held-out rows, capped.**  The validation rows are 20% of the training rows, at most :data:`VALIDATION_ROWS`
   (:func:`split`): 20,000 rows tell a gain of 0.1 points from noise on the paired differences, and scoring them
   costs nothing that grows with n.  They are the seeded split's held-out rows, the last rows the center order
   reaches (:func:`kopt.nystrom.center_order`), so no center is a validation row.
2. **the direct search on a sample.**  :func:`.planner.search` runs on :data:`SEARCH_ROWS` seeded rows of the
   others: the bandwidth, λ and a first center count M₁, at a cost that does not grow with n.
3. **the centers grown on every row** (:func:`grow`).  The center count M₂ is the largest doubling of M₁ whose λ
   path on every fit row fits the work budget left, its work counted by formula (:func:`path_work`:
   :data:`PLANNED_STEPS` CG passes of n M kernel values and the M × M factors' 2 M³ flops; :mod:`.work`), never
   by a rate measured on the machine, within memory (``krr_pcg``'s plan: one M × M float64 buffer for U and the
   preconditioner, in half the available memory, :data:`MEMORY_SHARE`).  At M₂,
   ``krr_pcg``'s conjugate gradients (:mod:`kopt.nystrom.cg`) solve a λ path on every fit row, from
   λ₁ down by half decades while the validation score improves (more rows resolve a smaller λ), each λ warm from
   the last, the first from the smaller model measured before it (the sample's, or the rung's: :func:`grow`).  The
   validation rows are in the passes with weight 0: their scores come with every pass.
4. **the choice.**  M₂'s best λ is kept where it beats the sample's model, scored on the same validation rows,
   by the ladder's :data:`.planner.MIN_GAIN`; else M₁ at λ₁.  ``krr_pcg`` then solves the chosen spec on every
   training row, warm from the search's solution (the same centers: the validation rows come last in the order).

The budget (:func:`.work.default_work`) is 1.2·10¹³ flops per 500,000 training rows, at least 1.2·10¹³ (the old
120 s per 500,000 rows at the reference 10¹¹ flop/s): a user with 10⁶ rows waits about twice what one with 10⁵
waits for the search, and the solve on every row comes after it.  Each λ's CG steps are cut where the work left
runs out (counted, so the cut is the same on every machine); a wall-clock limit the user sets (``solver.budget``)
cuts them where it passes, and the report then says the model depends on the machine.
"""
from __future__ import annotations

import dataclasses
import math
import time

import numpy as np

from kopt.contract.iterative import Check
from kopt.numerics import rows as _rows
from kopt.nystrom.cg import REFRESH_EVERY

from . import work

#: past this many training rows the direct search runs on a seeded sample of this many, and the centers grow on
#: every row by conjugate gradients
SEARCH_ROWS = 50_000
#: the held-out rows of the search, at most (20% of the training rows below 100,000)
VALIDATION_ROWS = 20_000
#: the share of the budget the sample's direct search may take (the rest grows the centers).  The column scales
#: (:mod:`.columns`) come first and are not cut by a share: their trials are bounded by the columns, not by n, and a
#: share cut on a loaded machine chose other scales, and scored far lower than the same spec on a quiet machine
#: (docs/benchmarks.md, "Measurements behind the code's choices")
SAMPLE_SHARE = 0.25
#: each λ of the grown path is solved to this confirmed relative duality gap (:func:`solve_lambda`), at most
#: :data:`MAX_STEPS` CG steps.  The dual weighs the residual by 1/λ, so the gap closes last: the test accuracy no
#: longer moves long before the gap is small (docs/benchmarks.md, "Measurements behind the code's choices")
SEARCH_TOL = 1e-2
MAX_STEPS = 40
#: the relative duality gap the solve on every row is held to (its certificate; validation accuracy had settled long
#: before it, :data:`SEARCH_TOL`)
FINAL_TOL = 1e-2
#: the solve on every row runs until its gap meets FINAL_TOL, at most this many CG steps: its work bound,
#: FINAL_STEPS x :func:`.work.cg_step` on every row, is in the plan's record (``final_work_flops``).  It starts from the
#: search's solution, which met SEARCH_TOL (confirmed) on the fit rows; where 40 steps were
#: the cap, 10⁶ rows of a regression stopped at a relative gap of 0.119 and the no-argument estimator warned
FINAL_STEPS = 160
#: CG steps a λ path at M₂ is planned at (the cost model's count: three λs, the first from zero)
PLANNED_STEPS = 25
#: krr_pcg's memory plan (U and the preconditioner's factor in one M × M float64 buffer, and its blocks)
#: within this share of the memory available
MEMORY_SHARE = 0.5
#: the largest center count the grown stage tries
MAX_GROWN_CENTERS = 32_768


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
    """:data:`SEARCH_ROWS` seeded rows of ``fit`` (sorted), or every fit row where there are fewer (between
    :data:`SEARCH_ROWS` and 1.25 times as many training rows the fit rows are fewer: 60,000 rows, 48,000 fit rows)."""
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


#: bandwidth factors (of the sample's choice) the grown size is probed at: more centers resolve a shorter length
#: scale than the sample's few hundred chose.  Not probed where the sample's ladder itself reached half the grown
#: size with its bandwidth (docs/benchmarks.md, "Measurements behind the code's choices").  The ladder compares
#: bandwidths at its first sizes only and keeps the choice above; a probe at half the grown size on those rows
#: (4,096 centers on 50,000 rows of higgs-shaped, 2026-12-04, 4464759) kept the ladder's x1 at 10⁵ rows (46 s) and
#: at 10⁶ (27 s), and the test accuracy with it
PROBE_FACTORS = (1.0, 0.5 ** 0.5, 0.5)
#: the probe's λ steps (a decade: the sample's λ was chosen with a few hundred centers; thousands resolve far
#: smaller ones), down to :data:`PROBE_MIN_LAMBDA`
PROBE_STEP = 10.0
PROBE_MIN_LAMBDA = 1e-10


def solve_lambda(cg, lam, v, loss, Y, max_steps=MAX_STEPS, out_of_time=None):
    """``(state, relative gap, steps, solved)``: CG at λ from ``v`` (warm; None: zero) until the λ is solved,
    ``max_steps`` steps (:data:`MAX_STEPS`, fewer where the work budget left affords fewer), or ``out_of_time()`` (the
    user's wall-clock limit; None: none) says so.  Solved: a confirmed relative gap (:meth:`kopt.nystrom.NystromCG.
    confirm`, the certificate krr_pcg stops on: one pass with float64 products, which CG continues from) of
    :data:`SEARCH_TOL`, the gap the solve on every row is held to, so that no λ is chosen which that solve cannot
    certify.  The gap returned is to the best confirmed dual value (the carried one before the first confirmation).
    The confirmations' passes are ``state["replacements"]`` (the budget counts them)."""
    s = cg.start(lam, v)
    gap, steps, solved = math.inf, 0, False
    while steps < max_steps:
        cg.step(s)
        steps += 1
        P, D, _, carried, confirmed = cg.confirm(s, steps, SEARCH_TOL, loss, Y)
        gap = carried if D is None else Check(objective=P, dual=D).rel_gap
        solved = confirmed and gap <= SEARCH_TOL
        if solved or (out_of_time is not None and out_of_time()):
            break
    return s, gap, steps, solved


def probe_bandwidth(problem, kernel, first, sample, validation, centers, metric, log, threads=None, budget=None):
    """``(factor, λ)``: the bandwidth factor (of :data:`PROBE_FACTORS`) and λ of the CG solves on the sample's rows
    and ``centers`` (half the grown size), scored on the validation rows.  At each factor λ walks from the sample's
    λ down by :data:`PROBE_STEP` (warm) while the score gains, one step up where the first step down lost; a λ CG
    does not solve is not a choice.

    The choice is the **shortest length scale as good as the best**: the smallest factor whose best score the best
    factor's beats by less than the validation rows can tell (:data:`.planner.MIN_GAIN`, or
    :data:`.planner.GAIN_ERRORS` standard errors of the paired difference, the larger: the ladder's rule).  The grown
    model has twice the probe's centers and all the rows, and both resolve a shorter length scale; a tie on the
    sample breaks that way.  At 3·10⁵ rows of higgs-shaped x0.71 tied x1 on the sample (0.85965 against 0.8594) and
    scored 0.5 points more on the test rows at 8,192 centers on every row (docs/benchmarks.md).

    Its work is counted in ``budget``, the share the grown stage planned for it, a third to each factor: a λ a
    factor's share cannot afford is not started (its CG steps cut where the share runs out, as the grown path's
    are), so the probe never spends the grown size's work (at 10⁵ rows of higgs-shaped the probe at 8,192 centers
    counted 8.5e12 flops of the 4.1e12 planned and left none for the 16,384 it chose a bandwidth for)."""
    from kopt.numerics.backend import to_numpy
    from kopt.nystrom.cg import NystromCG
    from kopt.nystrom.system import target_offset

    from .planner import GAIN_ERRORS, MIN_GAIN, _gain, _gain_error, _outcomes, _score

    xp = problem.xp
    t0 = time.perf_counter()
    Y = problem.label_matrix()
    sx, vx = xp.asarray(sample), xp.asarray(validation)
    Xs, Ys = _rows.take(problem.X, sx), Y[sx]
    w = problem.sample_weight
    ws = None if w is None else w[sx] / xp.mean(w[sx])
    mu = target_offset(Ys, ws)
    Ysc = Ys - mu  # the centered targets, once
    Xv, Yv = _rows.take(problem.X, vx), to_numpy(Y[vx])
    C = _rows.dense(problem.X, xp.asarray(np.sort(centers)), xp, problem.dtype)
    y_scale = float(getattr(problem.preprocessor, "y_scale", 1.0) or 1.0)
    options = kernel.options.as_dict()
    said = []
    d, outputs, Mh = int(problem.d), int(Y.shape[1]), len(centers)
    step = work.cg_step(len(sample), Mh, d, outputs) * (1 + 1 / REFRESH_EVERY)  # a step, its confirmations' share
    lam_work = work.cg_lambda(Mh) + work.kernel_values(len(validation), Mh, d)

    def affordable(share):  # the CG steps a factor's share affords at one more λ (MAX_STEPS without a budget)
        if share is None:
            return MAX_STEPS
        return min(MAX_STEPS, int(max(0.0, share.left() - lam_work) // step))

    found = {}  # factor -> (score, λ, outcomes row by row)
    for i, f in enumerate(PROBE_FACTORS):
        share = None if budget is None else budget.share(budget.left() / (len(PROBE_FACTORS) - i))
        if share is not None and share.left() < work.cg_factors(Mh) + lam_work + step:
            said.append(f"x{f:.3g}: not probed (the probe's planned work is spent)")
            continue
        count = share.count if share is not None else (lambda flops: None)
        kern = type(kernel)(**{**options, "bandwidth": float(f"{options['bandwidth'] * f:.6g}")})
        cg = None  # the last factor's buffer (M x M) goes before the next is made
        cg = NystromCG(kern, Xs, Ysc, C, dtype=problem.dtype, weights=ws, threads=threads)
        count(work.cg_factors(Mh))
        floor = max(PROBE_MIN_LAMBDA, cg.lambda_floor())  # what the float32 kernel values resolve
        # λ = the sample's λ / PROBE_STEP^k from k0: 0, or the first probe λ above the floor where the sample's is below
        k0 = 0 if first["lam"] >= floor else -math.ceil(math.log(floor / first["lam"], PROBE_STEP))
        scores, rows, v, k, direction = {}, {}, None, k0, 1
        while floor <= first["lam"] / PROBE_STEP ** k <= 1.0:
            allowed = affordable(share)
            if allowed < 1:
                break
            s, gap, taken, solved = solve_lambda(cg, first["lam"] / PROBE_STEP ** k, v, problem.loss, Ysc,
                                                 max_steps=allowed)
            count(lam_work + (taken + s.get("replacements", 0)) * work.cg_step(len(sample), Mh, d, outputs))
            if not solved:
                break  # smaller λ are harder still: not a choice
            v = s["v"]
            S = to_numpy(cg.scores_of(Xv, v, kern)) + to_numpy(mu)
            rows[k] = _outcomes(metric, S, Yv, y_scale)
            scores[k] = _score(metric, rows[k])
            if k - direction in scores and _gain(metric, scores[k - direction], scores[k]) < MIN_GAIN[metric]:
                if direction > 0 and k == k0 + 1:  # the first step down lost: one step up instead
                    direction, k, v = -1, k0 - 1, None
                    continue
                break
            k += direction
        if not scores:
            said.append(f"x{f:.3g}: not solved")
            continue
        kb = max(scores, key=lambda j: (scores[j], -j))  # ties: the larger λ
        lam_f = first["lam"] / PROBE_STEP ** kb
        said.append(f"x{f:.3g}: {abs(scores[kb]):.5g} at lambda {lam_f:g}")
        found[f] = (scores[kb], lam_f, rows[kb])
    if not found:
        return 1.0, first["lam"]
    top = max(found, key=lambda g: found[g][0])
    best = top
    for g in sorted(found):  # from the shortest length scale up: the first the best does not beat
        gain = _gain(metric, found[g][0], found[top][0])
        if gain < max(MIN_GAIN[metric], GAIN_ERRORS * _gain_error(metric, found[g][2], found[top][2])):
            best = g
            break
    why = "" if best == top else f" (the shortest length scale within what the validation rows tell of x{top:.3g})"
    log(f"auto: bandwidth and lambda at {len(centers)} centers on {len(sample):,} sample rows (validation {metric}): "
        + "; ".join(said) + f" -> x{best:.3g}, lambda {found[best][1]:g}{why} ({time.perf_counter() - t0:.0f} s)")
    return best, found[best][1]


def grow(problem, first, *, kernel, fit, validation, max_centers, metric, log, sample=None, threads=None, budget=None,
         budget_s=None):
    """Step 3 of the module docstring: the λ path at the grown center count on every fit row.

    ``budget``: the :class:`.work.Budget` the stage's work is counted in, its size chosen by what is left of it
    (None: the rows' default budget, with ``budget_s`` seconds as its wall-clock limit).

    ``first``: the sample's best trial (its ``centers`` and ``lam`` are M₁ and λ₁), its score on ``validation``
    (``first["full_score"]``) and, where known, its outcomes row by row there (``first["full_rows"]``: what a gain's
    standard error is paired with) and its model (``first["model"]``: its kept centers and coefficients, which the
    first CG on every row starts from); ``kernel``: the chosen bandwidth's kernel.

    **Only where it pays.**  Where the sample's ladder itself tried a larger size and it did not gain
    (``first["tried_centers"]`` above M₁: on the sample the centers were saturated), and the sample's rows gained
    nothing over half of them either (``first["rows_gain"]``, :func:`rows_gain`), nothing is grown.  Where they did
    (more rows may resolve more centers), the grown size is tried only once 2 M₁ centers on every fit
    row (:data:`RUNG`: its first λ solved at the bandwidth found, no walk down -- a test, not a path) beat the sample's
    model by what the validation rows can tell,
    the ladder's rule (:data:`.planner.MIN_GAIN`, or :data:`.planner.GAIN_ERRORS` standard errors of the paired
    difference, the larger).  Else more centers do not pay and the sample's choice stands, at the rung's cost only
    (on 10⁵ rows of 3 integer columns that cut the fit from 199 s to ~30 s: docs/defaults.md).  Where the rung
    gained and the grown size does not solve, the rung's model is the one grown.

    **Started from what was measured.**  The rung's CG starts from the sample's model, the grown size's from the rung's
    (else the sample's), projected on their centers (:meth:`kopt.nystrom.NystromCG.projected`): the same function on
    more centers, near their solution, where a start from zero spent 33 CG steps on λ 3.2e-7 at 10⁷ rows.

    Returns a dict of the grown trial (``centers``, ``lam``, ``score``, ``v``, ``path``, ``seconds``, ``steps``) or None
    where no larger size fits or pays.
    """
    from kopt.numerics.memory import available_bytes
    from kopt.nystrom.centers import center_order

    from .planner import GAIN_ERRORS, MIN_GAIN, _gain, _gain_error, _gain_words

    t0 = time.perf_counter()
    n = problem.n
    if budget is None:
        budget = work.Budget(work.default_work(n), budget_s, rule=work.rule_words())
    d, outputs = int(problem.d), int(problem.label_matrix().shape[1])
    top = min(max_centers, MAX_GROWN_CENTERS, memory_centers(problem, available_bytes()), len(fit))
    M1 = int(first["centers"])
    sizes = []
    M = 2 * M1
    while M <= top:
        sizes.append(M)
        M *= 2
    if not sizes:
        log(f"auto: no center count above {M1} fits memory and max_centers ({top}): the sample's choice stands")
        return None
    order = center_order(problem, sizes[-1])
    left = budget.left()
    has_bw = "bandwidth" in kernel.options.as_dict() and sample is not None and first.get("bandwidth_rule", True)
    ns = 0 if not has_bw else len(sample)
    saturated = int(first.get("tried_centers", 0)) > M1  # the sample's ladder tried more centers, and they lost
    if saturated and first.get("rows_gain") is not None:
        gain, noise = first["rows_gain"]
        if gain < max(MIN_GAIN[metric], noise):
            log(f"auto: the sample's ladder found no gain past {M1} centers, and its rows gained "
                f"{_gain_words(metric, gain)} over half of them (< {_gain_words(metric, MIN_GAIN[metric])}, or within "
                f"the validation rows' {_gain_words(metric, noise)} standard error): more rows and centers do not pay, "
                f"the sample's choice stands")
            return None

    def probes(M):  # the sample's ladder reached M/2 centers with its bandwidth: a probe there rarely changes it
        return has_bw and M // 2 > int(first.get("tried_centers", 0))

    def cost(M):  # by formula: the rung, the λ path on every row, and the bandwidth probe at M/2 centers on the sample
        probe = 2 * len(PROBE_FACTORS) * path_work(M // 2, ns, d, outputs) if probes(M) else 0.0
        rung = path_work(RUNG * M1, n, d, outputs) if saturated and M > RUNG * M1 else 0.0
        return path_work(M, n, d, outputs) + probe + rung

    affordable = [M for M in sizes if cost(M) <= left]
    log(f"auto: the grown size's work on {n:,} rows at " + ", ".join(f"{M}: {cost(M):.2g} flops" for M in sizes)
        + f" ({left:.2g} of the work budget left)")
    while affordable and budget.out_of_time("the grown center count", cost(affordable[-1])):
        log(f"auto: {affordable[-1]} centers would pass the time limit ({budget.seconds:g} s, {budget.elapsed():.0f} s "
            f"spent) -- this choice depends on the machine's speed")
        affordable.pop()
    if not affordable:
        log(f"auto: no center count above {M1} fits the budget left: the sample's choice stands")
        return None
    M2 = affordable[-1]
    rung = None
    if saturated and M2 > RUNG * M1:
        # the rung is a test (do more centers pay?): its first λ solved, no walk down -- a smaller λ would only improve
        # the fallback model, and at 10⁷ rows (1b9286d) the walk began after 33 CG steps on the first, each a pass
        rung = _grown_path(problem, kernel, order, RUNG * M1, first["lam"], fit=fit, validation=validation,
                           metric=metric, log=log, threads=threads, budget=budget, walk=False,
                           start=first.get("model"))
        gain = -math.inf if rung is None else _gain(metric, first["full_score"], rung["score"])
        rows = first.get("full_rows")
        noise = 0.0 if rung is None or rows is None else GAIN_ERRORS * _gain_error(metric, rows, rung["rows"])
        if gain < max(MIN_GAIN[metric], noise):
            said = "did not solve" if rung is None else (
                f"gained {_gain_words(metric, gain)} (< {_gain_words(metric, MIN_GAIN[metric])}, or within the "
                f"validation rows' {_gain_words(metric, noise)} standard error)")
            log(f"auto: the sample's ladder found no gain past {M1} centers, and {RUNG * M1} centers on every row "
                f"{said} over the sample's model: more centers do not pay, the sample's choice stands")
            return None
        log(f"auto: {RUNG * M1} centers on every row gained {_gain_words(metric, gain)} over the sample's model: "
            f"grown to {M2}")
        rung.update(seconds=time.perf_counter() - t0)
        rung["cg"].release_preconditioner()
    factor, lam_start = 1.0, first["lam"]
    if probes(M2):  # within the work cost(M2) planned for it
        share = budget.share(2 * len(PROBE_FACTORS) * path_work(M2 // 2, ns, d, outputs))
        factor, lam_start = probe_bandwidth(problem, kernel, first, sample, validation, order[:M2 // 2], metric, log,
                                            threads, budget=share)
        bw = float(f"{kernel.options.as_dict()['bandwidth'] * factor:.6g}")
        kernel = type(kernel)(**{**kernel.options.as_dict(), "bandwidth": bw})
    # the grown size starts from the largest model measured so far (the rung's, else the sample's) where the bandwidth
    # stands: the same function on more centers, near the grown one's solution
    start = first.get("model")
    if rung is not None:
        start = (rung["cg"].C, rung["cg"].coef(rung["v"]))
    if factor != 1.0:  # the probe chose another bandwidth: a model of the old kernel is no start
        start = None
    # the rung's buffer ((2 M₁)², at most a quarter of the grown size's) is kept: its model stands where the grown does not
    grown = _grown_path(problem, kernel, order, M2, lam_start, fit=fit, validation=validation, metric=metric, log=log,
                        threads=threads, budget=budget, steps_before=0 if rung is None else rung["steps"], start=start)
    if grown is None:
        if rung is not None:
            log(f"auto: {M2} centers did not solve: the rung's {RUNG * M1} centers are the grown model")
        return rung
    grown.update(bandwidth_factor=factor, seconds=time.perf_counter() - t0)
    return grown


def rows_could_gain(gain, n, n_fit, n_sample):
    """What the solve on all ``n`` training rows could gain over the grown path's model of its ``n_fit`` fit rows, from
    the learning curve the search measured: the grown model gained ``gain`` over the sample's (``n_sample`` rows, fewer
    centers); spread over its doublings of the rows it bounds one doubling's gain (validation gains shrink as the rows
    double, and the centers' share of it is not the rows'), times the doublings from n_fit to n.  At 10⁶ rows of
    higgs-shaped: 0.67 points over 4.3 doublings, 0.029 more: 0.005 points, where the solve on every row cost a
    quarter of the fit (17 CG steps, 50 s).  Infinite where the fit rows are not more than the sample's."""
    if n_fit <= n_sample:
        return math.inf
    return max(float(gain), 0.0) * math.log2(n / n_fit) / math.log2(n_fit / n_sample)


#: the rung's center count, a multiple of the sample's (:func:`grow`)
RUNG = 2


def rows_gain(sample, found, kernel, lam, X_va, Y_va, full_rows, metric, y_scale, budget):
    """``(gain, noise)``: what the sample's model gained on the held-out rows ``X_va`` from its rows -- the chosen system
    (``found``'s centers, ``kernel`` and λ) on a seeded half of the sample's rows against ``full_rows`` (the whole
    sample's outcomes there), and the standard error of that paired difference (:data:`.planner.GAIN_ERRORS` of them).
    The learning curve's last step: where the rows gained nothing the validation rows can tell and the sample's ladder
    found no gain from more centers either, the model is at what this kernel reaches on these rows, and more rows and
    centers do not pay (:func:`grow`).  One system of half the sample's rows, its work counted in ``budget``."""
    from kopt.numerics.backend import to_numpy
    from kopt.nystrom.system import NystromSystem

    from .planner import GAIN_ERRORS, _gain, _gain_error, _outcomes, _score

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
    rows = _outcomes(metric, S, Y_va, y_scale)
    return (_gain(metric, _score(metric, rows), _score(metric, full_rows)),
            GAIN_ERRORS * _gain_error(metric, rows, full_rows))


def _grown_path(problem, kernel, order, M2, lam_start, *, fit, validation, metric, log, threads, budget,
                steps_before=0, walk=True, start=None):
    """The λ path at M2 centers (the first M2 of the center ``order``) on every fit row by conjugate gradients, the
    validation rows riding in each pass with weight 0: a dict of the best λ's trial (``centers``, ``kept_centers``,
    ``kernel``, ``lam``, ``lam_index``, ``score``, ``v``, ``rows``, ``validation_scores`` (the held-out rows' scores by
    the model of the fit rows), ``path``, ``steps``, ``cg``, ``intercept``), or None
    where no λ is solved within the budget.

    ``walk``: whether the path walks down from its first λ solved (False: that λ is the path, the rung's test).
    ``start``: ``(C, w)``, a smaller model of the same kernel measured before at ``lam_start`` (the rung's, or the
    sample's), which the first λ's CG starts from, projected on these centers (:meth:`kopt.nystrom.NystromCG.
    projected`); None: from zero."""
    from kopt.numerics.backend import to_numpy
    from kopt.nystrom.cg import NystromCG
    from kopt.nystrom.system import target_offset

    from .planner import LAMBDAS, MIN_GAIN, _budget_words, _gain, _outcomes, _score

    t0 = time.perf_counter()
    xp, n = problem.xp, problem.n
    d, outputs = int(problem.d), int(problem.label_matrix().shape[1])
    C = _rows.dense(problem.X, xp.asarray(np.sort(order[:M2])), xp, problem.dtype)
    Y = problem.label_matrix()
    w = problem.sample_weight
    fit_x = xp.asarray(fit)
    mu = target_offset(Y[fit_x], None if w is None else w[fit_x])
    # the validation rows ride in every pass with weight 0 (their scores come free); the fit rows' weights are
    # scaled to mean 1 over the n rows, so the passes' (1/n) sums are the fit rows' (weighted) means -- the weights
    # data.held_out gives the same rows (kopt.running.assemble.LocalRows.fit_weights)
    weights = xp.zeros(n, dtype=np.float64)
    weights[fit_x] = xp.ones(len(fit)) if w is None else w[fit_x]
    weights *= n / float(xp.sum(weights))
    Yc = Y - mu  # the centered targets, once (the gap reads them every step)
    cg = NystromCG(kernel, problem.X, Yc, C, dtype=problem.dtype, weights=weights, threads=threads)
    budget.count(work.cg_factors(M2))
    step_work = work.cg_step(n, M2, d, outputs)
    cg.centers = np.sort(order[:M2])  # krr_pcg's centers for features.count = M2: it reuses the factors
    del C
    Y_val = to_numpy(Y[xp.asarray(validation)])
    y_scale = float(getattr(problem.preprocessor, "y_scale", 1.0) or 1.0)
    # λ below what the float32 kernel values resolve is not tried (:meth:`kopt.nystrom.NystromCG.lambda_floor`): on 10⁵
    # rows of 3 integer columns the sample's 1e-9 and then 3.2e-9 ran 40 CG steps each and did not solve
    floor = cg.lambda_floor()
    usable = [i for i in range(len(LAMBDAS)) if LAMBDAS[i] >= floor] or [0]
    start_index = min(usable, key=lambda i: abs(math.log(LAMBDAS[i] / lam_start)))
    if LAMBDAS[start_index] > lam_start * 1.0001:
        log(f"auto: {M2} centers on {n} rows: lambda {lam_start:g} is below what the float32 kernel values resolve "
            f"({floor:.2g}): the path starts at {LAMBDAS[start_index]:g}")
    scores, outcomes, points, raw, steps, path = {}, {}, {}, {}, steps_before, {}
    v = None
    if start is not None:  # the smaller model's function on these centers: the first λ starts near its solution
        v = cg.projected(*start)
        budget.count(work.kernel_values(int(cg.M), int(start[0].shape[0]), d))
    va_x = xp.asarray(validation)
    mu_host = to_numpy(mu)
    i, unresolved = start_index, set()
    warm_steps = None  # the steps the last λ solved took from a warm start (the next, smaller λ needs as many)

    def out_of_time():
        return budget.out_of_time("the grown lambda path")

    while 0 <= i < len(LAMBDAS):
        lam = LAMBDAS[i]
        if lam < floor and i != start_index:
            log(f"auto: {M2} centers on {n} rows: lambda {lam:g} is below what the float32 kernel values resolve "
                f"({floor:.2g}): not tried")
            break
        # the steps the work left affords (counted: the cut is the same on every machine)
        # (a confirmation's pass, at most one in REFRESH_EVERY steps, counts as a step)
        allowed = min(MAX_STEPS, int(max(0.0, budget.left() - work.cg_lambda(M2))
                                     // (step_work * (1 + 1 / REFRESH_EVERY))))
        if allowed < 1:
            log(f"auto: {M2} centers on {n} rows: no work left for lambda {lam:g} [{_budget_words(budget)}]")
            break
        if warm_steps is not None and allowed < warm_steps:
            # a smaller λ, warm from a larger one, takes at least the steps the last one took from its own warm start
            # (CG's steps grow as λ falls): a λ the work left cannot solve is not started (its steps chose nothing)
            log(f"auto: {M2} centers on {n} rows, lambda {lam:g}: the work left affords {allowed} CG steps, fewer than "
                f"the {warm_steps} lambda {LAMBDAS[i - 1]:g} took from its warm start: not started "
                f"[{_budget_words(budget)}]")
            break
        s, gap, taken, solved = solve_lambda(cg, lam, v, problem.loss, Yc, max_steps=allowed,
                                             out_of_time=out_of_time if budget.seconds is not None else None)
        # the steps, the confirmations, and a start from v's pass (float64 products: NystromCG.start)
        budget.count(work.cg_lambda(M2) + (taken + s.get("replacements", 0) + (v is not None)) * step_work)
        steps += taken
        warm = bool(path)  # warm from the path's last λ (a start from a smaller model is not)
        v = s["v"]
        elapsed = time.perf_counter() - t0
        cut = taken < MAX_STEPS and not solved  # the work budget (or the time limit) cut this λ's steps
        if not solved:
            # a λ CG does not solve within the steps is not a choice: its iterate is another (early-stopped) model
            unresolved.add(i)
            path[f"{lam:g}"] = None
            log(f"auto: {M2} centers on {n} rows, lambda {lam:g}: not solved in {taken} CG steps (gap {gap:.2g}"
                + (", the budget's last" if cut else "") + f"): not a choice ({elapsed:.0f} s)")
            if scores or cut:
                break  # walking down from a solved λ: the smaller ones are harder still
            i -= 1  # half a decade up, warm
            continue
        raw[i] = to_numpy(s["scores"][va_x]) + mu_host  # the held-out rows' scores (the calibration's, if chosen)
        outcomes[i] = _outcomes(metric, raw[i], Y_val, y_scale)
        scores[i] = _score(metric, outcomes[i])
        points[i] = v.copy()
        warm_steps = taken if warm else None
        path[f"{lam:g}"] = round(scores[i], 6)
        log(f"auto: {M2} centers on {n} rows, lambda {lam:g}: validation {metric} {abs(scores[i]):.5g} "
            f"({steps} CG steps so far, gap {gap:.2g}) [{_budget_words(budget)}]")
        previous = scores.get(i - 1)
        if not walk or unresolved or (previous is not None and _gain(metric, previous, scores[i]) < MIN_GAIN[metric]):
            break  # the smaller λ did not gain (validation error is unimodal in λ), or cannot be solved
        if budget.over() or (budget.seconds is not None and out_of_time()):
            break
        i += 1  # more rows resolve a smaller λ: half a decade down, warm
    if not scores:
        log(f"auto: no lambda solved at {M2} centers within the budget: the sample's choice stands")
        return None
    # the largest λ solved, replaced by a smaller one only where it gains MIN_GAIN over it (the ladder's rule for
    # more centers): a smaller gain is within what the rule calls none, and the larger λ is better conditioned (at
    # 10⁵ rows and 8,192 centers, λ = 1e-7 left the solve on every row at a relative gap of 1.7 after 40 steps)
    best = None
    for k in sorted(scores):  # from the largest λ down
        if best is None or _gain(metric, scores[best], scores[k]) >= MIN_GAIN[metric]:
            best = k
    cg.release_preconditioner()  # the solve on every row factors its own at its λ
    return {"centers": int(M2), "kept_centers": int(cg.M), "bandwidth_factor": 1.0, "kernel": kernel,
            "lam": LAMBDAS[best], "lam_index": best, "score": scores[best], "v": points[best],
            "rows": outcomes[best], "validation_scores": raw[best], "path": path, "seconds": time.perf_counter() - t0, "steps": steps, "cg": cg,
            "intercept": to_numpy(mu)}
