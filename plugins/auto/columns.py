"""One length scale per column, chosen on validation rows: ``data.column_scales`` (``solver: auto`` past
:data:`.large.SEARCH_ROWS` rows).

A kernel of one shared bandwidth weighs every standardized column alike; where a few columns decide the target
and the rest are noise (higgs-shaped: 6 of 28), the noise columns dominate every distance.  A scale s_j per
column (column j enters the kernel as s_j x_j / σ, an ARD kernel; s_j = 0 drops it) is chosen by coordinate
search on a seeded subsample.  First a screen: each column dropped alone from the shared bandwidth's model; the
columns whose drop lost nothing the validation rows can tell (less than MIN_GAIN or one standard error of the
paired difference) are dropped together, the bandwidth shortened by √(kept/d) (a distance's share of the columns),
where the validation rows can tell that it gained (MIN_GAIN and one standard error).  Then each column in turn tries
s_j x {0, ½, 2} and keeps a change that gains half the ladder's :data:`.planner.MIN_GAIN`, two sweeps (the second
only where the first changed something), the shared bandwidth factor re-tried after each; the scales are taken only
where they beat one shared bandwidth by MIN_GAIN and one standard error of the paired difference.  A dropped column
stays dropped.  The number of trials (d + 2 for the screen, at most 3 a kept column a sweep) does not depend on the
machine's speed or load: the search stops early only where the next trial's work, counted by formula
(:mod:`.work`), would pass the whole search's work budget, or at the user's wall-clock limit (``solver.budget``),
and says so.  Every model
scored is a direct Nyström solve at :data:`CENTERS` centers with its λ path, so one column's trial costs a fraction
of a second.

Why the screen: one noise column of 22 dropped alone gains little, often less than a step's 0.05 points, so the
sweeps alone began from the full set by chance (docs/benchmarks/column_screen.py: higgs-shaped, 10⁵ rows, seeds
0-9 of the split and the draws).

Measured (docs/benchmarks/per_feature_bandwidth.py): on higgs-shaped the validation accuracy at 512 centers went
from 71.8% to 83.9% with 7 of 28 columns kept.
"""
from __future__ import annotations

import time

import numpy as np

from kopt.numerics import rows as _rows

#: the search's model: a direct Nyström solve at this many centers, on at most :data:`FIT_ROWS` rows, scored on at
#: most :data:`VALIDATION_ROWS` validation rows
CENTERS = 512
FIT_ROWS = 20_000
VALIDATION_ROWS = 10_000
#: wider rows than this are left to the shared bandwidth (a sweep costs 3 solves a column)
MAX_COLUMNS = 64
#: the multipliers a column tries, and the sweeps
MULTIPLIERS = (0.0, 0.5, 2.0)
SWEEPS = 2
#: the screen runs before the sweeps (module docstring: without it 2 of 6 seeds kept the noise columns)
SCREEN = True
#: a column's step is kept when it gains this share of :data:`.planner.MIN_GAIN` (each noise column dropped gains a
#: little; their sum is what pays); the whole choice must still beat the shared bandwidth by MIN_GAIN and one
#: standard error of the paired difference on the validation rows
STEP_GAIN = 0.5


def choose(problem, *, fit, validation, metric, log, seed, budget=None, budget_s=None):
    """``(scales, bandwidth factor)``, or None where the columns are not searched (sparse or wide rows, no
    bandwidth) or no change gained.  ``fit``/``validation``: row indices of ``problem`` (the search's split);
    ``budget``: the :class:`.work.Budget` its trials are counted in (None: the rows' default, with ``budget_s``
    seconds as its wall-clock limit)."""
    from kopt.numerics.backend import to_numpy

    from . import work
    from .planner import LAMBDAS, MIN_GAIN, _gain, _gain_error, _outcomes, _score

    X = problem.X
    options = problem.kernel.options.as_dict()
    if _rows.is_sparse(X) or problem.d > MAX_COLUMNS or "bandwidth" not in options or problem.xp is not np:
        return None
    t0 = time.perf_counter()
    if budget is None:
        budget = work.Budget(work.default_work(problem.n), budget_s, rule=work.rule_words())
    rng = np.random.default_rng([seed, 0x636F6C73])
    fit = np.sort(rng.choice(fit, size=min(FIT_ROWS, len(fit)), replace=False))
    val = np.sort(rng.choice(validation, size=min(VALIDATION_ROWS, len(validation)), replace=False))
    centers = np.sort(rng.choice(fit, size=min(CENTERS, len(fit)), replace=False))
    Xf, Xv, Xc = np.asarray(X[fit], np.float32), np.asarray(X[val], np.float32), np.asarray(X[centers], np.float32)
    Y = to_numpy(problem.label_matrix())
    mu = Y[fit].mean(axis=0)
    Yf, Yv = Y[fit] - mu, Y[val]
    y_scale = float(getattr(problem.preprocessor, "y_scale", 1.0) or 1.0)
    base = float(options["bandwidth"])
    cls = type(problem.kernel)

    def evaluate(scales, factor):
        """The per-row validation outcomes of the best λ at these scales and bandwidth factor."""
        from kopt.nystrom.system import NystromSystem

        keep = scales > 0
        budget.count(trial_work(int(keep.sum())))
        s = scales[keep].astype(np.float32)
        kernel = cls(**{**options, "bandwidth": base * factor})
        system = NystromSystem(kernel, Xf[:, keep] * s, Yf, Xc[:, keep] * s)
        best = None
        for S in system.path(list(LAMBDAS), Xv[:, keep] * s):
            if S is None:
                continue
            rows = _outcomes(metric, S + mu, Yv, y_scale)
            if best is None or _score(metric, rows) > _score(metric, best):
                best = rows
        return best

    def better(old, new):
        gain = _gain(metric, _score(metric, old), _score(metric, new))
        return gain >= max(MIN_GAIN[metric], _gain_error(metric, old, new))

    def step_gains(old, new):  # one column's step: half the ladder's gain (a noise column's is small, the sum is not)
        return _gain(metric, _score(metric, old), _score(metric, new)) >= STEP_GAIN * MIN_GAIN[metric]

    def trial_work(kept):  # one trial by formula: its system, the validation rows' kernel values, its λ path
        return (work.system(len(fit), len(centers), kept) + work.kernel_values(len(val), len(centers), kept)
                + len(LAMBDAS) * work.direct_lambda(len(centers), len(val), Y.shape[1]))

    def over_budget():  # the next trial would pass the work budget (counted), or the user's wall-clock limit
        return (not budget.affords(trial_work(problem.d))
                or budget.out_of_time("the column sweeps", trial_work(problem.d)))

    d = problem.d
    scales, factor = np.ones(d), 1.0
    best = None
    for f in (1.0, 0.5, 2.0):
        rows = evaluate(scales, f)
        if rows is not None and (best is None or _score(metric, rows) > _score(metric, best)):
            best, factor = rows, f
    shared = best
    if SCREEN:
        # each column dropped alone from the shared bandwidth's model; those whose drop lost nothing the validation
        # rows can tell (less than MIN_GAIN or one standard error of the paired difference) are dropped together,
        # the bandwidth shortened as the columns' share of a distance (√(kept/d)); kept where the validation rows can
        # tell that it gained
        drop, losses = [], []
        for j in range(d):
            trial = np.ones(d)
            trial[j] = 0.0
            rows = evaluate(trial, factor)
            if rows is None:
                continue
            loss = -_gain(metric, _score(metric, shared), _score(metric, rows))
            losses.append((loss, j))
            if loss < max(MIN_GAIN[metric], _gain_error(metric, shared, rows)):
                drop.append(j)
        if 0 < len(drop) < d:
            trial = np.ones(d)
            trial[drop] = 0.0
            for f in (factor * ((d - len(drop)) / d) ** 0.5, factor):
                rows = evaluate(trial, f)
                if rows is not None and better(best, rows):
                    scales, best, factor = trial, rows, f
        worst = max(losses)[0] if losses else 0.0
        log(f"auto: column scales, screen: {len(drop)} of {d} columns lost nothing alone (the largest loss of one: "
            f"{worst:.3g}); {int((scales > 0).sum())} kept, validation {metric} {abs(_score(metric, best)):.5g}")
    for sweep in range(SWEEPS):
        changed = False
        for j in np.flatnonzero(scales > 0):  # a dropped column stays dropped
            for m in MULTIPLIERS:
                if over_budget():
                    break
                trial = scales.copy()
                trial[j] *= m
                if not (trial > 0).any():
                    continue
                rows = evaluate(trial, factor)
                if rows is not None and step_gains(best, rows):
                    scales, best, changed = trial, rows, True
                    break
        for f in (factor / 2 ** 0.5, factor * 2 ** 0.5):
            rows = evaluate(scales, f)
            if rows is not None and step_gains(best, rows):
                factor, best, changed = f, rows, True
        log(f"auto: column scales, sweep {sweep + 1}: validation {metric} {abs(_score(metric, best)):.5g} (one shared "
            f"bandwidth: {abs(_score(metric, shared)):.5g}), {int((scales > 0).sum())} of {d} columns kept "
            f"({time.perf_counter() - t0:.0f} s)")
        if over_budget():
            log(f"auto: column scales stopped at their budget ({budget.words()}) before every column was tried")
            break
        if not changed:
            break
    if not better(shared, best):
        log("auto: column scales gained nothing the validation rows can tell: one shared bandwidth")
        return None
    return scales, factor
