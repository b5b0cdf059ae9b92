"""One length scale per column, chosen on validation rows: ``data.column_scales`` (``solver: auto`` past
:data:`.large.SEARCH_ROWS` rows).

A kernel of one shared bandwidth weighs every standardized column alike; where a few columns decide the target and
the rest are noise, the noise columns dominate every distance.  A scale s_j per column (column j enters the kernel as
s_j x_j / σ, an ARD kernel; s_j = 0 drops it) is chosen by coordinate search on a seeded subsample, every model a
direct Nyström solve at :data:`CENTERS` centers with its λ path (:class:`_Trials`):

1. :func:`_shared`: the shared bandwidth at ½, 1 and 2 times the rule;
2. :func:`_screen`: each column dropped alone; those whose drop lost nothing the validation rows can tell are dropped
   together, the bandwidth shortened by √(kept/d) (a distance's share of the columns), where that gained;
3. :func:`_sweeps`: each kept column in turn tries s_j × {0, ½, 2} and keeps a change that gains :data:`STEP_GAIN` of
   the ladder's :data:`.scoring.MIN_GAIN`, two sweeps, the shared bandwidth factor re-tried after each.  A dropped
   column stays dropped, and a column whose drop alone lost clearly in the screen (:data:`NEEDED_ERRORS`) is not
   tried at 0 again (:data:`SCREENED_NEEDED`); the second sweep runs only where the first gained what the validation
   rows can tell (:data:`.scoring.MIN_GAIN` and one standard error of the paired difference), else it would fit
   their noise.

The scales are taken only where they beat one shared bandwidth by :data:`.scoring.MIN_GAIN` and one standard error of
the paired difference; past :data:`.large.SEARCH_ROWS` rows they are kept only where the sample's ladder on the scaled
columns then beats the same ladder on the columns as given by the same bar (:func:`ladder_confirms`): chosen at
:data:`CENTERS` centers, they can cost more than they gain at the ladder's larger sizes.  The number of trials (d + 2
for the screen, at most 3 a kept column a sweep) does not depend on the machine: the search stops early only where the
next trial's work, counted by formula (:mod:`.work`), would pass the whole search's work budget, or at the user's
wall-clock limit (``solver.budget``), and says so (docs/design/large-route.md).
"""
from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from kopt.numerics import rows as _rows

from . import scoring, work

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
#: the screen runs before the sweeps: one noise column dropped alone gains too little for a sweep's step to tell, so
#: without it the sweeps began from the full set by chance (docs/design/large-route.md)
SCREEN = True
#: the sweeps try no drop (multiplier 0) of a column whose drop alone lost, in the screen, at least
#: :data:`.scoring.MIN_GAIN` and more than :data:`NEEDED_ERRORS` standard errors of the paired difference: such a
#: drop would have to turn that loss into a gain after the other columns' steps (docs/design/large-route.md)
SCREENED_NEEDED = True
#: a noise column's drop loses more than 3 standard errors by chance about once in 740 (one-sided normal tail), so
#: among :data:`MAX_COLUMNS` columns fewer than 0.1 noise columns are expected to be spared their drop; one error
#: (the screen's own bar) spared three noise columns of 53 on a task whose relevant ones lost 12 to 30 errors
NEEDED_ERRORS = 3.0
#: a column's step is kept when it gains this share of :data:`.scoring.MIN_GAIN` (each noise column dropped gains a
#: little; their sum is what pays); the whole choice must still beat the shared bandwidth by MIN_GAIN and one
#: standard error of the paired difference on the validation rows
STEP_GAIN = 0.5


#: past :data:`.large.SEARCH_ROWS` rows the scales, chosen at :data:`CENTERS` centers, are kept only where the sample's
#: direct search on the scaled columns beats the same search on the columns as given (:func:`ladder_confirms`): at the
#: ladder's larger sizes a noise column costs less, and a column the scales dropped can carry what the 512 centers
#: could not resolve (docs/design/large-route.md)
LADDER_CONFIRMS = True


@dataclass
class _Trials:
    """The column search's subsample (fit rows, validation rows and centers, float32) and its one model: a direct
    Nyström solve with its λ path, every trial's work counted in ``budget``."""

    X_fit: np.ndarray
    X_val: np.ndarray
    X_centers: np.ndarray
    Y_fit: np.ndarray
    Y_val: np.ndarray
    mu: np.ndarray
    y_scale: float
    metric: str
    kernel: object
    budget: work.Budget

    def evaluate(self, scales, factor):
        """The per-row validation outcomes of the best λ at these scales and bandwidth factor (None: no λ solved)."""
        from kopt.nystrom.system import NystromSystem

        from .planner import LAMBDAS

        keep = scales > 0
        self.budget.count(self.work(int(keep.sum())))
        s = scales[keep].astype(np.float32)
        options = self.kernel.options.as_dict()
        kernel = type(self.kernel)(**{**options, "bandwidth": float(options["bandwidth"]) * factor})
        system = NystromSystem(kernel, self.X_fit[:, keep] * s, self.Y_fit, self.X_centers[:, keep] * s)
        best = None
        for S in system.path(list(LAMBDAS), self.X_val[:, keep] * s):
            if S is None:
                continue
            rows = scoring.outcomes(self.metric, S + self.mu, self.Y_val, self.y_scale)
            if best is None or self.score(rows) > self.score(best):
                best = rows
        return best

    def work(self, kept) -> float:
        """One trial by formula: its system, the validation rows' kernel values, its λ path."""
        from .planner import LAMBDAS

        n_fit, n_val, M = len(self.X_fit), len(self.X_val), len(self.X_centers)
        return (work.system(n_fit, M, kept) + work.kernel_values(n_val, M, kept)
                + len(LAMBDAS) * work.direct_lambda(M, n_val, self.Y_fit.shape[1]))

    def over_budget(self) -> bool:
        """Whether the next trial would pass the work budget (counted), or the user's wall-clock limit."""
        d = self.X_fit.shape[1]
        return not self.budget.affords(self.work(d)) or self.budget.out_of_time("the column sweeps", self.work(d))

    def score(self, rows) -> float:
        return scoring.score(self.metric, rows)

    def gain(self, old, new) -> float:
        return scoring.gain(self.metric, self.score(old), self.score(new))

    def better(self, old, new) -> bool:
        """Whether ``new`` beat ``old`` by :data:`.scoring.MIN_GAIN` and one standard error of the paired difference."""
        return _beats(self.metric, old, new)[0]

    def step_gains(self, old, new) -> bool:
        """One column's step: :data:`STEP_GAIN` of the ladder's gain (a noise column's is small, the sum is not)."""
        return self.gain(old, new) >= STEP_GAIN * scoring.MIN_GAIN[self.metric]


#: below :data:`.large.SEARCH_ROWS` rows the columns are screened only where the screen's trials (d + 5 of them)
#: count at most this share of the budget left: the ladder's sizes need the rest (:func:`screened`)
DIRECT_SHARE = 0.25


def screened(problem, fit, validation, budget, metric) -> bool:
    """Whether the direct route screens the columns: each half of the validation rows it scores holds enough rows
    that one row's outcome moves the score by at most :data:`.scoring.MIN_GAIN` (1/MIN_GAIN rows: fewer cannot
    resolve the gain the drops are held to), and the screen (d + 5 trials at :data:`CENTERS` centers) counts at most
    :data:`DIRECT_SHARE` of what is left of ``budget``."""
    from .planner import LAMBDAS

    if not scoring.resolves_gain(metric, min(VALIDATION_ROWS, len(validation)) // 2):
        return False

    n_fit, n_val, d = min(FIT_ROWS, len(fit)), min(VALIDATION_ROWS, len(validation)), int(problem.d)
    M = min(CENTERS, n_fit)
    trial = (work.system(n_fit, M, d) + work.kernel_values(n_val, M, d)
             + len(LAMBDAS) * work.direct_lambda(M, n_val, int(problem.label_matrix().shape[1])))
    return (d + 5) * trial <= DIRECT_SHARE * budget.left()


def choose(problem, *, fit, validation, metric, log, seed, budget=None, budget_s=None, drops_only=False):
    """``(scales, bandwidth factor)``, or None where the columns are not searched (sparse or wide rows, no bandwidth)
    or no change gained.

    ``fit``/``validation``: row indices of ``problem`` (the search's split); ``budget``: the :class:`.work.Budget`
    its trials are counted in (None: the rows' default, with ``budget_s`` seconds as its wall-clock limit).
    ``drops_only``: only the screen's drops (no sweeps), scored on a seeded half of the validation rows and taken
    only where the other half confirms them (:func:`_confirmed`): the direct route's rule, below
    :data:`.large.SEARCH_ROWS` rows, where fewer validation rows tell less and the sweeps' scales fitted them
    (docs/design/auto-column-drops.md).
    """
    options = problem.kernel.options.as_dict()
    if (_rows.is_sparse(problem.X) or problem.d > MAX_COLUMNS or "bandwidth" not in options
            or problem.xp is not np):
        return None
    t0 = time.perf_counter()
    if budget is None:
        budget = work.Budget(work.default_work(problem.n), budget_s, rule=work.rule_words())
    trials, held = _subsample(problem, fit, validation, metric, seed, budget, drops_only)
    scales, factor, shared = _shared(trials, problem.d)
    shared_factor, best = factor, shared
    needed = ()
    if SCREEN or drops_only:
        scales, best, factor, needed = _screen(trials, shared, factor, log)
    if not drops_only:
        scales, best, factor = _sweeps(trials, scales, best, factor, shared, log, t0,
                                       needed=needed if SCREENED_NEEDED else ())
    if not trials.better(shared, best):
        log("auto: column scales gained nothing the validation rows can tell: one shared bandwidth")
        return None
    if held is not None and not _confirmed(held, scales, factor, shared_factor, log):
        return None
    return scales, factor


def _confirmed(held, scales, factor, shared_factor, log):
    """Whether the chosen scales beat one shared bandwidth on the validation rows the screen did not score (``held``):
    by :data:`.scoring.MIN_GAIN` and one standard error of the paired difference there."""
    shared = held.evaluate(np.ones_like(scales), shared_factor)
    chosen = held.evaluate(scales, factor)
    ok = shared is not None and chosen is not None and held.better(shared, chosen)
    words = "" if shared is None or chosen is None else (
        f": validation {held.metric} {abs(held.score(chosen)):.5g} against one shared bandwidth's "
        f"{abs(held.score(shared)):.5g}")
    log(f"auto: the columns' drops on the other half of the validation rows{words}: "
        + ("confirmed" if ok else "not confirmed, every column kept"))
    return ok


def ladder_confirms(metric, plain, scaled):
    """``(kept, gain, error)``: whether the column scales' model beat the model on the columns as given, their per-row
    validation :func:`.scoring.outcomes` ``scaled`` and ``plain`` on the same rows, by the bar the scales were chosen
    with (:data:`.scoring.MIN_GAIN` and one standard error of the paired difference); the gain and its error."""
    return _beats(metric, plain, scaled)


def _beats(metric, old, new):
    """``(beat, gain, error)``: whether per-row outcomes ``new`` beat ``old`` (the same rows) by
    :data:`.scoring.MIN_GAIN` and one standard error of the paired difference; the gain and its error."""
    gained = scoring.gain(metric, scoring.score(metric, old), scoring.score(metric, new))
    error = scoring.gain_error(metric, old, new)
    return gained >= max(scoring.MIN_GAIN[metric], error), gained, error


def _subsample(problem, fit, validation, metric, seed, budget, halves=False):
    """``(trials, held)``: the seeded subsample the column search scores on (its own stream beside the spec's seed),
    and with ``halves`` the same model on the other half of the validation rows (else None)."""
    from kopt.numerics.backend import to_numpy

    X = problem.X
    rng = np.random.default_rng([seed, 0x636F6C73])
    fit = np.sort(rng.choice(fit, size=min(FIT_ROWS, len(fit)), replace=False))
    val = np.sort(rng.choice(validation, size=min(VALIDATION_ROWS, len(validation)), replace=False))
    centers = np.sort(rng.choice(fit, size=min(CENTERS, len(fit)), replace=False))
    Y = to_numpy(problem.label_matrix())
    mu = Y[fit].mean(axis=0)
    y_scale = float(getattr(problem.preprocessor, "y_scale", 1.0) or 1.0)
    parts = [val]
    if halves:
        order = np.random.default_rng([seed, 0x636F6C73, 1]).permutation(len(val))
        parts = [np.sort(val[order[:len(val) // 2]]), np.sort(val[order[len(val) // 2:]])]
    made = [_Trials(np.asarray(X[fit], np.float32), np.asarray(X[v], np.float32), np.asarray(X[centers], np.float32),
                    Y[fit] - mu, Y[v], mu, y_scale, metric, problem.kernel, budget) for v in parts]
    return made[0], (made[1] if halves else None)


def _shared(trials, d):
    """``(scales, factor, outcomes)`` of one shared bandwidth: the best of ½, 1 and 2 times the rule."""
    scales, factor, best = np.ones(d), 1.0, None
    for f in (1.0, 0.5, 2.0):
        rows = trials.evaluate(scales, f)
        if rows is not None and (best is None or trials.score(rows) > trials.score(best)):
            best, factor = rows, f
    return scales, factor, best


def _screen(trials, shared, factor, log):
    """``(scales, outcomes, factor, needed)`` after the screen: each column dropped alone from the shared bandwidth's
    model; those whose drop lost nothing the validation rows can tell (less than :data:`.scoring.MIN_GAIN` or one
    standard error of the paired difference) dropped together, at the bandwidth shortened as the columns' share of a
    distance (√(kept/d)) or kept, where that gained what the validation rows can tell.  ``needed``: the columns
    whose drop alone lost at least :data:`.scoring.MIN_GAIN` and more than :data:`NEEDED_ERRORS` standard errors."""
    metric, d = trials.metric, trials.X_fit.shape[1]
    scales, best = np.ones(d), shared
    drop, losses, needed = [], [], set()
    for j in range(d):
        trial = np.ones(d)
        trial[j] = 0.0
        rows = trials.evaluate(trial, factor)
        if rows is None:
            continue
        loss, error = -trials.gain(shared, rows), scoring.gain_error(metric, shared, rows)
        losses.append((loss, j))
        if loss < max(scoring.MIN_GAIN[metric], error):
            drop.append(j)
        elif loss > max(scoring.MIN_GAIN[metric], NEEDED_ERRORS * error):
            needed.add(j)
    if 0 < len(drop) < d:
        trial = np.ones(d)
        trial[drop] = 0.0
        for f in (factor * ((d - len(drop)) / d) ** 0.5, factor):
            rows = trials.evaluate(trial, f)
            if rows is not None and trials.better(best, rows):
                scales, best, factor = trial, rows, f
    worst = max(losses)[0] if losses else 0.0
    log(f"auto: column scales, screen: {len(drop)} of {d} columns lost nothing alone (the largest loss of one: "
        f"{worst:.3g}); {int((scales > 0).sum())} kept, validation {metric} {abs(trials.score(best)):.5g}")
    return scales, best, factor, frozenset(needed)


def _sweeps(trials, scales, best, factor, shared, log, t0, needed=()):
    """``(scales, outcomes, factor)`` after at most :data:`SWEEPS` coordinate sweeps: each kept column tries
    :data:`MULTIPLIERS` (the first step that gains is kept; no drop for the columns of ``needed``, whose drop alone
    lost clearly in the screen: :data:`NEEDED_ERRORS`), then the shared bandwidth factor √2 shorter and longer.
    A sweep that gained less than the validation rows can tell (:meth:`_Trials.better`: its steps fitted their noise)
    ends them, as does the budget."""
    metric, d = trials.metric, trials.X_fit.shape[1]
    for sweep in range(SWEEPS):
        start = best
        for j in np.flatnonzero(scales > 0):  # a dropped column stays dropped
            for m in MULTIPLIERS:
                if m == 0.0 and j in needed:
                    continue
                if trials.over_budget():
                    break
                trial = scales.copy()
                trial[j] *= m
                if not (trial > 0).any():
                    continue
                rows = trials.evaluate(trial, factor)
                if rows is not None and trials.step_gains(best, rows):
                    scales, best = trial, rows
                    break
        for f in (factor / 2 ** 0.5, factor * 2 ** 0.5):
            rows = trials.evaluate(scales, f)
            if rows is not None and trials.step_gains(best, rows):
                factor, best = f, rows
        log(f"auto: column scales, sweep {sweep + 1}: validation {metric} {abs(trials.score(best)):.5g} (one shared "
            f"bandwidth: {abs(trials.score(shared)):.5g}), {int((scales > 0).sum())} of {d} columns kept "
            f"({time.perf_counter() - t0:.0f} s)")
        if trials.over_budget():
            log(f"auto: column scales stopped at their budget ({trials.budget.words()}) before every column was tried")
            break
        if not trials.better(start, best):
            break
    return scales, best, factor
