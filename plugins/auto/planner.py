"""What ``solver: auto`` measures: Nyström centers, bandwidth and λ on a validation split (the ladder).

The search runs on the square loss's normal equations (:class:`kopt.nystrom.system.NystromSystem`), where a λ path
costs one M × M Cholesky per λ on top of the system itself.  :func:`search` is a sequence of named steps:

1. :func:`_split_rows`: the training rows split once, seeded by the spec's seed (20% held out);
2. each size M of the ladder (:data:`FIRST_CENTERS`, doubled, up to the fit rows' count; the first M rows of one
   seeded :func:`kopt.nystrom.center_order`, which reaches the held-out rows last) is one :class:`Level`:

   * :func:`_factors`: the bandwidths it tries -- ½, 1 and 2 times the spec's rule at the first size, the best
     and 1/√2 of it at the second, and from the third on 1/√2 again only while the shorter one won the last size
     by more than :data:`.scoring.GAIN_ERRORS` standard errors (:func:`_shortens`);
   * :func:`_try_bandwidth`: one system per bandwidth and its λ path (:func:`_square_path`: :data:`LAMBDA_REACH`
     half decades about the last size's λ, widened while the best lies at an end), and for the squared hinge its
     Newton λ path on the same system (:func:`hinge_path`);
   * :func:`_screen_loss` (the loss left to auto, first size only): the squared hinge beside the square loss;
   * :func:`_stops`: the ladder stops where two doublings in a row (:data:`PATIENCE` + 1; one where the validation
     rows cannot resolve :data:`.scoring.MIN_GAIN`) gained less than :data:`.scoring.MIN_GAIN` or what the
     validation rows can tell over the last size that gained (the size after the first such doubling tries 1/√2 of
     the bandwidth too), or where the next size's work, counted by formula
     (:mod:`.work`), would pass the budget -- never where a clock says so, unless the user set a wall-clock limit
     (``solver.budget``);
3. :func:`_result`: the best trial's system takes the validation rows' sums too, which makes it the system of every
   training row, so the final solve reuses it.

The best (M, bandwidth, λ) by validation score wins; ties go to the larger λ and the fewer centers, and more
centers win only by :data:`.scoring.MIN_GAIN` (docs/design/center-ladder.md).
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np

from kopt.numerics import rows as _rows

from . import scoring, work
from .records import CenterChoice, HingeSolution, LossChoice, Rows, Search, Trial

#: the λ path (kopt's convention λ/2‖f‖² + mean ℓ): half decades from 1e-1 down to 1e-9
LAMBDAS = tuple(float(f"{10.0 ** (-k / 2):.6g}") for k in range(2, 19))
#: the first center count of the ladder (doubled while it pays)
FIRST_CENTERS = 256
#: the squared hinge replaces the square loss (the loss left to auto) only where it gains at least
#: :data:`.scoring.MIN_GAIN` and more than this many standard errors: the square loss is the default it must
#: displace, and one error would take the hinge on about one seed in six where the two are alike
#: (docs/design/loss-auto.md)
LOSS_ERRORS = 2.0
#: randomly pivoted Cholesky's centers replace the uniform ones only where, at the first size and the chosen bandwidth,
#: they gain at least :data:`.scoring.MIN_GAIN` and more than this many standard errors: uniform centers are the
#: default they must displace, as the square loss is the hinge's (:data:`LOSS_ERRORS`; docs/design/auto-centers.md)
CENTER_ERRORS = 2.0
#: from the third size on, the bandwidth is shortened by 1/√2 again while the shorter one won the last size by more
#: than :data:`.scoring.GAIN_ERRORS` standard errors
SHORTEN_WHILE_RESOLVED = True
#: the squared hinge's λ path solves each λ until a Newton step lowers its objective by less than this share: the
#: last steps move single rows across the margin, which validation accuracy does not see
#: (docs/design/squared-hinge-newton.md)
HINGE_RTOL = 1e-6
#: bandwidth factors at the first size
FIRST_FACTORS = (1.0, 0.5, 2.0)
#: a doubling that gained nothing the validation rows can tell is given one more size before the ladder stops,
#: judged against the last size that gained: gains too small for one doubling to resolve can add up over two, and
#: more centers resolve a shorter length scale the first sizes could not.  Only where the validation rows resolve
#: :data:`.scoring.MIN_GAIN` (:func:`.scoring.resolves_gain`): on fewer, the extra size's models win by a row or two
#: of noise (docs/design/center-ladder.md)
PATIENCE = 1
#: λ values either side of the previous size's best at the later sizes (the window widens while the best lies at its
#: end: validation error is unimodal in λ)
LAMBDA_REACH = 1


@dataclass
class _Setting:
    """What every step of one search reads: the problem, its split, the λ path, the budget and the log, the center
    order and the ladder of sizes, and the spec's kernel."""

    problem: object
    rows: Rows
    lambdas: tuple
    budget: work.Budget
    log: object
    order: np.ndarray
    ladder: list
    counts: list | None
    bandwidth_rule: bool
    options: dict
    has_bw: bool
    screen_centers: bool = False

    def bandwidth(self, factor):
        """The bandwidth at ``factor`` as the chosen spec will write it (6 digits), None for a kernel without one."""
        return scoring.digits(self.options["bandwidth"] * factor) if self.has_bw else None

    def kernel(self, factor):
        if not self.has_bw:
            return self.problem.kernel
        return type(self.problem.kernel)(**{**self.options, "bandwidth": self.bandwidth(factor)})

    def rpcholesky_centers(self, M, factor):
        """Randomly pivoted Cholesky's ``M`` centers at bandwidth ``factor`` (sorted indices into the training rows),
        their work counted."""
        from kopt.nystrom.centers import rpcholesky_order, rpcholesky_pool

        problem = self.problem
        self.budget.count(work.rpcholesky(rpcholesky_pool(problem.n, M, int(problem.d)), M, int(problem.d)))
        return np.sort(rpcholesky_order(problem, M, self.kernel(factor)))

    def system_work(self, M, lams) -> float:
        """A trial's work by formula: its system, the validation rows' kernel values, ``lams`` λs of its path."""
        r = self.rows
        return (work.system(r.n_fit, M, r.d) + work.kernel_values(r.n_val, M, r.d)
                + lams * work.direct_lambda(M, r.n_val, r.outputs))


@dataclass
class Kept:
    """The best model's system so far (waiting as its T alone while others are built), its centers (indices into
    the training rows), and for the squared hinge its solution."""

    system: object
    centers: np.ndarray
    hinge: HingeSolution | None = None


@dataclass
class Level:
    """One size of the ladder: its best trial, that trial's per-row outcomes (and margin rows), the best square-loss
    score and outcomes of a hinge search, and each bandwidth factor's outcomes."""

    M: int
    factors: tuple
    centers: np.ndarray
    best: Trial | None = None
    rows: np.ndarray | None = None
    inside: object = None
    square: tuple | None = None
    factor_rows: dict = field(default_factory=dict)
    square_best: float = -np.inf


@dataclass
class Ladder:
    """What the ladder carries from one size to the next: every trial, the best so far and its system, the
    bandwidth factor and λ the next size starts from, and the loss measured."""

    trials: list
    hinge: bool
    best: Trial | None = None
    kept: Kept | None = None
    best_scores: np.ndarray | None = None
    factor: float = 1.0
    lam_index: int | None = None
    hinge_index: int | None = None
    hinge_inside: object = None
    shorten: bool = False
    both: bool = False
    loss_choice: LossChoice | None = None
    center_rule: str = "uniform"
    center_choice: CenterChoice | None = None
    anchor: Anchor | None = None


@dataclass
class Anchor:
    """The last size whose doubling gained what the validation rows can tell (the first size to begin with): the
    later sizes are measured against it (:func:`_measured`), and ``misses`` counts those that did not gain."""

    level: Level
    misses: int = 0


# -- the search --------------------------------------------------------------------------------------------------


def search(problem, *, bandwidth_rule, lambdas, counts, max_centers, seed, validation, log, hinge=False, budget=None,
           budget_s=None, choose_loss=False, screen_centers=False) -> Search:
    """Measure the ladder; returns a :class:`Search`.

    Parameters
    ----------
    problem : kopt.running.assemble.Problem
        The training rows, targets, weights, kernel and spec.
    bandwidth_rule : bool
        True to search factors of ``problem.kernel``'s bandwidth, False to keep it.
    lambdas : tuple of float
        The λ values (:data:`LAMBDAS`, or the spec's one λ).
    counts : list of int or None
        The center counts to try; None: the doubling ladder up to ``max_centers``.
    max_centers : int
        The largest center count the ladder tries.
    seed : int
        The spec's seed: the split and the center order.
    validation : float
        The held-out share of the training rows.
    log : callable
        Takes one progress line.
    hinge : bool
        Score the squared hinge (``svm_nystrom``) on each system, for a binary target: its λ and validation score
        are the trial's (:func:`hinge_path`).
    budget : kopt_plugins.auto.work.Budget or None
        The work the ladder may count; None: :func:`.work.default_work` of the rows, with ``budget_s`` seconds as
        its wall-clock limit.
    choose_loss : bool
        For a binary target, the squared hinge is measured beside the square loss on the first size's chosen system
        and, where it gains what the validation rows can tell, runs the rest of the ladder (:func:`_screen_loss`).
    screen_centers : bool
        Measure randomly pivoted Cholesky's centers beside the uniform ones at the first size, and take them for the
        rest of the ladder where they gain what the validation rows can tell (:func:`_screen_centers`).

    Returns
    -------
    Search
    """
    from kopt.nystrom.centers import center_order

    t0 = time.perf_counter()
    if budget is None:
        budget = work.Budget(work.default_work(problem.n), budget_s, rule=work.rule_words())
    rows, hinge, choose_loss = _split_rows(problem, seed, validation, hinge, choose_loss)
    order = center_order(problem, max(counts) if counts else max_centers)
    ladder = list(counts) if counts else _ladder(_fit_centers(order, rows), max_centers)
    options = problem.kernel.options.as_dict()
    s = _Setting(problem, rows, lambdas, budget, log, order, ladder, counts, bandwidth_rule, options,
                 "bandwidth" in options, screen_centers and _rpcholesky_applies(problem, validation))
    state = Ladder(trials=[], hinge=hinge)
    for number, M in enumerate(ladder):
        level = Level(M, _factors(s, state, number), np.sort(order[:M]))
        for f in level.factors:
            _try_bandwidth(s, state, level, f)
        if choose_loss and number == 0:
            _screen_loss(s, state, level)
        if s.screen_centers and number == 0:
            _screen_centers(s, state, level)
        if number >= 1 and len(level.factors) == 2:
            state.shorten = _shortens(s, level)
        _carry(state, level)
        if number + 1 < len(ladder) and _stops(s, state, level, number):
            break
    return _result(s, state, seed, time.perf_counter() - t0)


def _split_rows(problem, seed, validation, hinge, choose_loss):
    """``(rows, hinge, choose_loss)``: the seeded split's :class:`Rows`, and whether the squared hinge is the
    ladder's loss or screened beside the square loss (a binary target only)."""
    from kopt.numerics.backend import to_numpy
    from kopt.nystrom.system import target_offset
    from kopt.running.validation import make_splits

    xp = problem.xp
    (tr, va), = make_splits(problem.n, seed, validation=validation)
    metric = scoring.metric_of(problem)
    Y = problem.label_matrix()
    w = problem.sample_weight
    intercept = to_numpy(target_offset(Y, w))  # krr_nystrom's fixed intercept: the systems fit Y − μ
    Y = Y - xp.asarray(intercept)
    y_scale = float(getattr(problem.preprocessor, "y_scale", 1.0) or 1.0)
    trx, vax = xp.asarray(tr), xp.asarray(va)
    X_fit, X_val = _rows.take(problem.X, trx), _rows.take(problem.X, vax)
    Y_fit, Y_val = Y[trx], to_numpy(Y[vax]) + intercept
    w_fit = None if w is None else w[trx]
    w_val = None if w is None else to_numpy(w[vax])
    binary = Y.shape[1] == 1 and metric != "rmse"
    hinge = hinge and binary
    choose_loss = choose_loss and not hinge and binary
    y_fit = Y_fit[:, 0] + float(intercept[0]) if hinge or choose_loss else None  # the ±1 labels the hinge reads
    rows = Rows(tr, va, metric, intercept, y_scale, X_fit, Y_fit, w_fit, X_val, Y_val, w_val, Y[vax],
                None if w is None else w[vax], y_fit, int(problem.d), int(Y.shape[1]))
    return rows, hinge, choose_loss


def _factors(s, state, number):
    """The bandwidth factors size ``number`` of the ladder tries (module docstring, step 2)."""
    if not s.has_bw or not s.bandwidth_rule or (number >= 2 and not state.shorten):
        return (state.factor,)
    if number == 0:
        return FIRST_FACTORS
    return (state.factor, scoring.digits(state.factor / math.sqrt(2)))


@dataclass
class _Path:
    """A square-loss λ path on one system: the best λ's index ``k``, and each λ's score, per-row outcomes and
    validation scores (the intercept added)."""

    k: int
    scores: dict
    outcomes: dict
    raw: dict


def _square_path(s, system, M, start) -> _Path:
    """The square loss's λ path on ``system``: :data:`LAMBDA_REACH` either side of λ index ``start`` (all of them
    where None), widened while the best lies at an end of what was tried.  A λ whose system does not factor, or is
    conditioned beyond what float64 resolves (:meth:`NystromSystem.path`), is not a choice."""
    from kopt.numerics.backend import to_numpy

    r, lambdas = s.rows, s.lambdas
    tried = _lambda_window(len(lambdas), start)
    scores, outcomes, raw = {}, {}, {}
    while True:
        todo = [i for i in tried if i not in scores]
        s.budget.count(len(todo) * work.direct_lambda(M, r.n_val, r.outputs))
        for i, S in zip(todo, system.path([lambdas[i] for i in todo], r.X_val)):
            if S is None:
                scores[i] = -np.inf
            else:
                raw[i] = to_numpy(S) + r.intercept  # the held-out scores: kopt.api calibrates on them
                outcomes[i] = r.outcomes(raw[i])
                scores[i] = scoring.score(r.metric, outcomes[i])
        # ties: the larger λ (lambdas run from large to small, so the first best)
        k = max(scores, key=lambda i: (scoring.tied(r.metric, scores[i]), -i))
        wider = _lambda_window(len(lambdas), k)
        if k not in (min(tried), max(tried)) or set(wider) <= set(scores):
            return _Path(k, scores, outcomes, raw)
        tried = sorted(set(tried) | set(wider))  # the best lies at an end of the window: look past it


def _system(s, state, level, factor, rule=None):
    """``(system, centers)``: the Nyström system at bandwidth ``factor`` on the fit rows of ``level``'s centers by the
    ladder's center rule (``rule``: another), its work counted.  The best system so far waits as its T alone while
    this one is built (docs/design/memory.md)."""
    from kopt.nystrom import cache as nystrom_cache

    problem, r = s.problem, s.rows
    rule = state.center_rule if rule is None else rule
    centers = level.centers if rule == "uniform" else s.rpcholesky_centers(level.M, factor)
    if state.kept is not None:
        state.kept.system.shed()
    # the dense centers made for this system only, in the Fortran order it keeps them in, and handed over
    C = _rows.dense(problem.X, problem.xp.asarray(centers), problem.xp, problem.dtype, order="F")
    system = nystrom_cache.system(s.kernel(factor), r.X_fit, r.Y_fit, C, dtype=problem.dtype, weights=r.w_fit,
                                  own_centers=True)
    del C
    s.budget.count(s.system_work(level.M, 0))
    return system, centers


def _try_bandwidth(s, state, level, factor):
    """One bandwidth at ``level``'s size: its system, its square-loss λ path, and (a hinge search) the squared hinge's
    path on the same system; the trial is logged, and kept where it is the best so far."""
    t1 = time.perf_counter()
    system, centers = _system(s, state, level, factor)
    path = _square_path(s, system, level.M, state.lam_index)
    if state.hinge:
        _try_hinge(s, state, level, factor, system, centers, path, t1)
        return
    k = path.k
    trial = Trial(centers=int(level.M), bandwidth_factor=factor, bandwidth=s.bandwidth(factor), lam=s.lambdas[k],
                  score=path.scores[k], lam_index=k, path=scoring.path_words(s.lambdas, path.scores),
                  seconds=time.perf_counter() - t1, center_rule=_rule_word(state.center_rule))
    _record(s, state, level, trial)
    level.factor_rows[factor] = path.outcomes.get(k)
    if level.best is None or trial.score > level.best.score:
        level.best, level.rows, level.inside = trial, path.outcomes[k], None
    if state.best is None or _better(s.rows.metric, trial, state.best):
        state.best, state.kept, state.best_scores = trial, Kept(system, centers), path.raw.get(k)


def _rule_word(rule):
    """A trial's ``center_rule``: set where its centers are not uniform ones."""
    return None if rule == "uniform" else rule


def _try_hinge(s, state, level, factor, system, centers, path, t1):
    """The squared hinge on ``system`` after its square-loss ``path``: its Newton λ path from the last size's λ and
    margin rows, unless the square loss scored this bandwidth below one already tried at this size (the hinge's
    path costs Newton steps; the square loss's is nearly free).  With the loss left to auto, the square loss's model
    competes too, and the hinge's steps then run on a copy of the system's T."""
    r, lambdas, k = s.rows, s.lambdas, path.k
    square_path = scoring.path_words(lambdas, path.scores)
    if level.square is None or path.scores[k] > level.square[0]:
        level.square = (path.scores[k], path.outcomes[k])  # the level's best square-loss score and outcomes
    common = dict(centers=int(level.M), bandwidth_factor=factor, bandwidth=s.bandwidth(factor),
                  center_rule=_rule_word(state.center_rule))
    if path.scores[k] < level.square_best:
        trial = Trial(**common, lam=lambdas[k], score=-np.inf, lam_index=k,
                      path=scoring.path_words(lambdas, {k: -np.inf}), seconds=time.perf_counter() - t1,
                      square_lam_index=k, square_score=path.scores[k], square_path=square_path, newton_steps=0,
                      skipped="the square loss scored this bandwidth below another at this size")
        _record(s, state, level, trial)
        level.factor_rows[factor] = None
        return
    level.square_best = path.scores[k]
    target, square_kept = system, None
    if state.both:
        square = Trial(**common, lam=lambdas[k], score=path.scores[k], lam_index=k, path=square_path, loss="square",
                       seconds=time.perf_counter() - t1)
        if _better(r.metric, square, state.best):
            # the square loss's model beats the best so far: released first (its T's room holds the copy), the
            # square loss's system kept as it is, and the hinge's Newton steps run on a copy of its T
            state.kept = state.best_scores = None
            square_kept = (square, system, path.raw[k])
            target = system.own_copy()
    start = k if state.hinge_index is None else state.hinge_index
    hk, scores, outcomes, solution = hinge_path(target, r.X_fit, r.y_fit, r.w_fit, r.X_val, r.Y_val, lambdas, start,
                                                state.hinge_inside, metric=r.metric, val_weights=r.w_val)
    s.budget.count(solution.steps * work.newton_step(r.n_fit, level.M, r.d)
                   + len(scores) * work.direct_lambda(level.M, r.n_val))
    trial = Trial(**common, lam=lambdas[hk], score=scores[hk], lam_index=hk, path=scoring.path_words(lambdas, scores),
                  loss="squared_hinge" if state.both else None, seconds=time.perf_counter() - t1,
                  square_lam_index=k, square_score=path.scores[k], square_path=square_path,
                  newton_steps=solution.steps)
    _record(s, state, level, trial)
    level.factor_rows[factor] = outcomes.get(hk)
    if level.best is None or trial.score > level.best.score:
        level.best, level.rows, level.inside = trial, outcomes[hk], solution.inside
    if square_kept is not None:
        state.best, state.kept, state.best_scores = square_kept[0], Kept(square_kept[1], centers), square_kept[2]
    if state.best is None or _better(r.metric, trial, state.best):
        state.best, state.kept = trial, Kept(target, centers, solution)
        state.best_scores = solution.val_scores


def _record(s, state, level, trial):
    """``trial`` joins the report's trials, and its line the log."""
    state.trials.append(trial)
    said = (f"square loss {abs(trial.square_score):.5g}, below this size's best: not tried for the hinge"
                   if trial.skipped else
                   f"best lambda {trial.lam:g}, validation {s.rows.metric} {abs(trial.score):.5g} "
                   f"({trial.seconds:.2f} s)")
    s.log(f"auto: {level.M} centers, bandwidth {trial.bandwidth if s.has_bw else '-'} (x{trial.bandwidth_factor:g}): "
          f"{said} [{s.budget.words()}]")


def _better(metric, trial, best) -> bool:
    """Whether ``trial`` beats ``best``: a model that costs no more wins by any gain; a costlier one -- more centers,
    or, where both losses compete, the squared hinge against the square loss at as many centers (Newton steps
    against one Cholesky) -- by at least :data:`.scoring.MIN_GAIN` (a smaller gain is within what the validation
    rows can tell, and the cheaper model solves and predicts faster; docs/design/loss-auto.md)."""
    gained = scoring.gain(metric, best.score, trial.score)
    costlier = trial.centers > best.centers or (
        trial.centers == best.centers and trial.loss == "squared_hinge" and best.loss == "square")
    return gained >= scoring.MIN_GAIN[metric] if costlier else gained > 0


def _rpcholesky_applies(problem, validation):
    """Whether randomly pivoted Cholesky's centers may be screened: a kernel with a diagonal, and a validation split
    no larger than the share its candidates leave out (:data:`kopt.nystrom.centers.RPC_ROWS_SHARE`), so that no
    held-out row is a candidate."""
    from kopt.nystrom.centers import RPC_ROWS_SHARE

    try:
        problem.kernel.diag(problem.X[:1])
    except (NotImplementedError, TypeError):
        return False
    return validation <= 1.0 - RPC_ROWS_SHARE + 1e-12


def _screen_centers(s, state, level):
    """The centers' rule, at the first size and the loss chosen there: randomly pivoted Cholesky's centers
    (:func:`kopt.nystrom.centers.rpcholesky_order`) at the size's chosen bandwidth, their λ path (the squared hinge's
    from the square loss's λ, for a hinge search) scored on the same validation rows as the uniform centers' best.
    Taken for the rest of the ladder only where they gain at least :data:`.scoring.MIN_GAIN` and more than
    :data:`CENTER_ERRORS` standard errors of the paired difference; where taken, their trial competes as any other
    (docs/design/auto-centers.md)."""
    r, best = s.rows, level.best
    t1 = time.perf_counter()
    factor = best.bandwidth_factor
    system, centers = _system(s, state, level, factor, rule="rpcholesky")
    path = _square_path(s, system, level.M, None)
    k = path.k
    common = dict(centers=int(level.M), bandwidth_factor=factor, bandwidth=s.bandwidth(factor), center_rule="rpcholesky")
    square, solution = None, None
    if state.hinge:
        square = (path.scores[k], path.outcomes.get(k))
        hk, scores, outcomes, solution = hinge_path(system, r.X_fit, r.y_fit, r.w_fit, r.X_val, r.Y_val, s.lambdas, k,
                                                    None, metric=r.metric, val_weights=r.w_val)
        s.budget.count(solution.steps * work.newton_step(r.n_fit, level.M, r.d)
                       + len(scores) * work.direct_lambda(level.M, r.n_val))
        trial = Trial(**common, lam=s.lambdas[hk], score=scores[hk], lam_index=hk,
                      path=scoring.path_words(s.lambdas, scores), loss="squared_hinge" if state.both else None,
                      seconds=time.perf_counter() - t1, square_lam_index=k, square_score=path.scores[k],
                      square_path=scoring.path_words(s.lambdas, path.scores), newton_steps=solution.steps)
        rows, raw = outcomes.get(hk), solution.val_scores
    else:
        trial = Trial(**common, lam=s.lambdas[k], score=path.scores[k], lam_index=k,
                      path=scoring.path_words(s.lambdas, path.scores), seconds=time.perf_counter() - t1)
        rows, raw = path.outcomes.get(k), path.raw.get(k)
    _record(s, state, level, trial)
    error = scoring.gain_error(r.metric, level.rows, rows) if rows is not None else 0.0
    state.center_choice = choice = _center_choice(r.metric, best, trial, error)
    s.log(f"auto: randomly pivoted Cholesky's {level.M} centers: {choice.why}")
    if choice.chosen != "rpcholesky":
        return
    state.center_rule = "rpcholesky"
    level.best, level.rows, level.inside = trial, rows, None if solution is None else solution.inside
    if square is not None:
        level.square = square
    if _better(r.metric, trial, state.best):
        state.best, state.kept, state.best_scores = trial, Kept(system, centers, solution), raw


def _center_choice(metric, uniform, rpc, error) -> CenterChoice:
    """The centers screen's record: randomly pivoted Cholesky's trial ``rpc`` against the uniform ``uniform``, the
    gain's standard error ``error``, and the rule's words."""
    gained = scoring.gain(metric, uniform.score, rpc.score) if np.isfinite(rpc.score) else -np.inf
    chosen = gained >= scoring.MIN_GAIN[metric] and gained > CENTER_ERRORS * error
    least, words = scoring.gain_words(metric, scoring.MIN_GAIN[metric]), scoring.gain_words(metric, error)
    said = scoring.gain_words(metric, gained) if np.isfinite(gained) else "nothing (no lambda solved)"
    why = (f"validation {metric} {abs(rpc.score):.5g} against the uniform centers' {abs(uniform.score):.5g}: gained "
           f"{said}, at least {least} and more than {CENTER_ERRORS:g} x the validation rows' {words} standard error: "
           f"chosen" if chosen else
           f"validation {metric} {abs(rpc.score):.5g} against the uniform centers' {abs(uniform.score):.5g}: gained "
           f"{said} (< {least}, or within {CENTER_ERRORS:g} x the validation rows' {words} standard error): the "
           f"uniform centers stand")
    return CenterChoice(chosen="rpcholesky" if chosen else "uniform", centers=int(uniform.centers),
                        bandwidth_factor=uniform.bandwidth_factor, uniform_score=abs(float(uniform.score)),
                        rpcholesky_score=abs(float(rpc.score)), gain=float(gained) if np.isfinite(gained) else None,
                        standard_error=float(error), seconds=rpc.seconds, why=why)


def _screen_loss(s, state, level):
    """The loss left to auto, at the first size: the squared hinge's λ path (:func:`hinge_path`, from the square
    loss's λ) on a copy of the chosen system, scored on the same validation rows.  Chosen only where it gains at
    least :data:`.scoring.MIN_GAIN` and more than :data:`LOSS_ERRORS` standard errors of the paired difference, so
    the loss changes only for a gain the validation rows can tell, and steadily across seeds; it then runs the rest
    of the ladder as a hinge search (each size's square-loss path, then the hinge's from the last size's margin)."""
    problem, r, kept, best = s.problem, s.rows, state.kept, state.best
    if kept.system.shed_state:
        kept.system.restore(_rows.dense(problem.X, problem.xp.asarray(kept.centers), problem.xp, problem.dtype,
                                        order="F"))
    square_rows = r.outcomes(state.best_scores)
    t1 = time.perf_counter()
    hinge_system = kept.system.own_copy()  # the square loss's system stays as it is, should the square loss stand
    k, scores, outcomes, solution = hinge_path(hinge_system, r.X_fit, r.y_fit, r.w_fit, r.X_val, r.Y_val, s.lambdas,
                                               best.lam_index, None, metric=r.metric, val_weights=r.w_val)
    M = int(kept.system.M)
    s.budget.count(solution.steps * work.newton_step(r.n_fit, M, r.d) + len(scores) * work.direct_lambda(M, r.n_val))
    trial = Trial(centers=int(best.centers), bandwidth_factor=best.bandwidth_factor, bandwidth=best.bandwidth,
                  lam=s.lambdas[k], score=scores[k], lam_index=k, path=scoring.path_words(s.lambdas, scores),
                  loss="squared_hinge", newton_steps=solution.steps, seconds=time.perf_counter() - t1)
    state.loss_choice = choice = _loss_choice(r.metric, best, trial, scoring.gain_error(r.metric, square_rows,
                                                                                         outcomes[k]))
    state.trials.append(trial)
    s.log(f"auto: the squared hinge on {level.M} centers: best lambda {trial.lam:g}, validation {r.metric} "
          f"{abs(trial.score):.5g} against the square loss's {abs(best.score):.5g}: {choice.why} "
          f"[{s.budget.words()}]")
    if choice.chosen == "squared_hinge":
        state.hinge = state.both = True
        trial.square_lam_index, trial.square_score, trial.square_path = best.lam_index, best.score, best.path
        state.best_scores = solution.val_scores
        level.inside, level.rows = solution.inside, outcomes[k]
        state.best = level.best = trial
        state.kept = Kept(hinge_system, kept.centers, solution)
        level.square = (trial.square_score, square_rows)


def _loss_choice(metric, square, hinge, error) -> LossChoice:
    """The screen's record: the squared hinge's trial ``hinge`` against the square loss's ``square``, the gain's
    standard error ``error``, and the rule's words."""
    gained = scoring.gain(metric, square.score, hinge.score)
    chosen = gained >= scoring.MIN_GAIN[metric] and gained > LOSS_ERRORS * error
    least, words = scoring.gain_words(metric, scoring.MIN_GAIN[metric]), scoring.gain_words(metric, error)
    why = (f"the squared hinge gained {scoring.gain_words(metric, gained)}, at least {least} and more than "
           f"{LOSS_ERRORS:g} x the validation rows' {words} standard error: chosen" if chosen else
           f"the squared hinge gained {scoring.gain_words(metric, gained)} (< {least}, or within {LOSS_ERRORS:g} x "
           f"the validation rows' {words} standard error): the square loss stands")
    return LossChoice(chosen="squared_hinge" if chosen else "square", centers=int(square.centers),
                      bandwidth_factor=square.bandwidth_factor, square_score=abs(float(square.score)),
                      squared_hinge_score=abs(float(hinge.score)), square_lambda=square.lam,
                      squared_hinge_lambda=hinge.lam, gain=float(gained), standard_error=float(error),
                      newton_steps=hinge.newton_steps, seconds=hinge.seconds, why=why)


def _shortens(s, level) -> bool:
    """Whether the next size tries 1/√2 of the bandwidth again: the shorter of this size's two factors won, by more
    than :data:`.scoring.GAIN_ERRORS` standard errors of the paired difference (more centers resolve a shorter length
    scale); else the bandwidth is kept."""
    metric, rows = s.rows.metric, level.factor_rows
    longer, shorter = level.factors
    won = level.best.bandwidth_factor == shorter and rows.get(longer) is not None
    return SHORTEN_WHILE_RESOLVED and won and scoring.gain(
        metric, scoring.score(metric, rows[longer]), level.best.score) > scoring.GAIN_ERRORS * scoring.gain_error(
        metric, rows[longer], rows[shorter])


def _carry(state, level):
    """What the next size starts from: this size's best bandwidth factor, its square-loss λ, and (the squared
    hinge) its λ and margin rows."""
    best = level.best
    state.factor = best.bandwidth_factor
    state.lam_index = best.square_lam_index if best.square_lam_index is not None else best.lam_index
    state.hinge_index = best.lam_index if state.hinge else None
    state.hinge_inside = level.inside if state.hinge else None


def _stops(s, state, level, number) -> bool:
    """Whether the ladder stops after size ``number``: :func:`_patience` + 1 doublings in a row gained nothing the
    validation rows can tell over the last size that did (:func:`_measured`), or the next size's work, counted by
    formula, would pass the budget, or the user's wall-clock limit would pass."""
    M, budget = level.M, s.budget
    misses = _measured(s, state, level)
    if misses > _patience(s):
        s.log(f"auto: {'the ' + str(misses) + ' sizes' if misses > 1 else 'the size'} after {state.anchor.level.M} "
              f"centers gained nothing over it: stop growing")
        return True
    more = 2 if s.has_bw and s.bandwidth_rule and (number == 0 or state.shorten) else 1
    # the next size's work by formula (its systems and a λ window of 2 LAMBDA_REACH + 1), never its time
    projected = more * s.system_work(s.ladder[number + 1], 2 * LAMBDA_REACH + 1)
    if not budget.affords(projected):
        s.log(f"auto: {s.ladder[number + 1]} centers would count {projected:.2g} flops, past the work budget "
              f"({budget.spent:.2g} of {budget.work:.2g} spent): stop growing")
        return True
    if budget.out_of_time(f"the ladder after {M} centers", projected):
        s.log(f"auto: {s.ladder[number + 1]} centers would pass the time limit ({budget.seconds:g} s, "
              f"{budget.elapsed():.1f} s spent): stop growing -- this choice depends on the machine's speed")
        return True
    return False


def _measured(s, state, level) -> int:
    """``level`` measured against the anchor (the last size that gained, :class:`Anchor`); returns the doublings in a
    row that have not gained over it.  The first size, a size that gains (:func:`_gained`) and the user's own center
    counts become the anchor; after a size that did not gain the next one tries 1/√2 of the bandwidth too (more
    centers resolve a shorter length scale)."""
    anchor = state.anchor
    if anchor is None or s.counts is not None or _gained(s, state, level, anchor.level):
        if anchor is not None and anchor.misses:
            s.log(f"auto: {level.M} centers gained over {anchor.level.M}: the ladder goes on from {level.M}")
        state.anchor = Anchor(level)
        return 0
    anchor.misses += 1
    if anchor.misses <= _patience(s):
        state.shorten = bool(s.has_bw and s.bandwidth_rule)
        s.log(f"auto: {level.M} centers did not gain over {anchor.level.M}: one more size, judged against "
              f"{anchor.level.M}")
    return anchor.misses


def _patience(s) -> int:
    """The sizes the ladder tries after one that did not gain: :data:`PATIENCE`, where the validation rows resolve
    :data:`.scoring.MIN_GAIN`, else none."""
    return PATIENCE if scoring.resolves_gain(s.rows.metric, s.rows.n_val) else 0


def _gained(s, state, level, previous) -> bool:
    """Whether ``level`` gained over the smaller size ``previous`` at least :data:`.scoring.MIN_GAIN` and more than
    what the validation rows can tell (:data:`.scoring.GAIN_ERRORS` standard errors of the paired difference).  A
    hinge search also asks the square loss's path: the hinge's score can stall at the λ float32 resolves while more
    centers still resolve the function (docs/design/loss-auto.md)."""
    metric, least = s.rows.metric, scoring.MIN_GAIN[s.rows.metric]
    gained = scoring.gain(metric, previous.best.score, level.best.score)
    noise = scoring.GAIN_ERRORS * scoring.gain_error(metric, previous.rows, level.rows)
    if gained >= max(least, noise):
        return True
    square_gain = square_noise = None
    if state.hinge and previous.square is not None:
        square_gain = scoring.gain(metric, previous.square[0], level.square[0])
        square_noise = scoring.GAIN_ERRORS * scoring.gain_error(metric, previous.square[1], level.square[1])
    if square_gain is None or square_gain < max(least, square_noise):
        s.log(f"auto: {level.M} centers gained {scoring.gain_words(metric, gained)} over {previous.M} (< "
              f"{scoring.gain_words(metric, least)}, or within the validation rows' "
              f"{scoring.gain_words(metric, noise)} standard error)")
        return False
    s.log(f"auto: {level.M} centers gained the squared hinge {scoring.gain_words(metric, gained)} over "
          f"{previous.M}, the square loss {scoring.gain_words(metric, square_gain)} (more than the validation rows' "
          f"{scoring.gain_words(metric, square_noise)} standard error): more centers still resolve more")
    return True


def _result(s, state, seed, seconds) -> Search:
    """The :class:`Search`: the best trial's system restored, and for the square loss given the validation rows'
    sums too (the system of every training row, which the final solve reuses: made where it is first read); for the
    squared hinge its start over every training row."""
    from kopt.numerics.backend import to_numpy

    problem, r, xp = s.problem, s.rows, s.problem.xp
    split = f"validation {r.n_val} of {problem.n} rows, seed {seed}"
    if state.both and state.best.loss == "square":
        _square_won(state)
    system, centers, hinge = state.kept.system, state.kept.centers, state.kept.hinge

    def restored():
        if system.shed_state:
            system.restore(_rows.dense(problem.X, xp.asarray(centers), xp, problem.dtype, order="F"))
        return system

    common = dict(best=state.best, trials=state.trials, split=split, seconds=seconds, metric=r.metric,
                  centers=centers, intercept=r.intercept, validation_rows=r.validation,
                  validation_scores=state.best_scores, loss_choice=state.loss_choice,
                  center_choice=state.center_choice)
    if hinge is not None:
        # the hinge's system sums the fit rows inside the chosen solution's margin: counted over every training row,
        # it is svm_nystrom's start (the validation rows go in as they fall inside the margin)
        restored().rescale(problem.n)
        in_T = np.zeros(problem.n, dtype=bool)
        in_T[r.fit] = to_numpy(hinge.in_T)
        return Search(make_system=lambda: system,
                      hinge_start={"v": hinge.v, "b": hinge.b, "in_T": xp.asarray(in_T)}, **common)

    def with_validation_rows():
        # the fit rows' sums plus the validation rows' are the system krr_nystrom builds from scratch on the same
        # centers and kernel; consume: the search's system is not used again, so the new one takes its M x M buffer
        return restored().plus(r.X_val, r.Y_val_centered, r.w_val_device, consume=True)

    return Search(make_system=with_validation_rows, **common)


def _square_won(state):
    """The loss left to auto, the hinge chosen by the screen, and a square-loss model won the ladder: the record says
    both."""
    trials = [t for t in state.trials if t.square_score is not None and np.isfinite(t.score)]
    hinge_best = max(trials, key=lambda t: t.score)
    choice, best = state.loss_choice, state.best
    choice.why += (f"; then the square loss's model at {best.centers} centers ({abs(best.score):.5g}) beat the "
                   f"squared hinge's best ({abs(hinge_best.score):.5g} at {hinge_best.centers}) by the ladder's "
                   f"rule: the square loss")
    choice.screen, choice.chosen = choice.chosen, "square"


def hinge_path(system, X, y, weights, X_val, Y_val, lambdas, center, start_inside=None, metric="accuracy",
               val_weights=None):
    """The squared hinge's λ path on a system of the fit rows ``X`` (±1 labels ``y``).

    Each λ is solved by :class:`kopt.nystrom.newton.HingeNewton` to its end, warm from the last, and scored on the
    validation rows; :data:`LAMBDA_REACH` half decades either side of index ``center``, widened while the best lies
    at an end (as the square loss's path), never below what the kernel values resolve (:func:`_hinge_lambdas`).
    ``start_inside``: the fit rows inside the last size's chosen margin, where the first Newton step starts.  The
    system's T is the margin rows' from then on.

    Returns
    -------
    tuple
        ``(best index, scores, per-row outcomes, HingeSolution)``.
    """
    from kopt.numerics.backend import to_numpy
    from kopt.nystrom.newton import MAX_STEPS, HingeNewton

    newton = HingeNewton(system, X, y, lambdas[0], weights, rtol=HINGE_RTOL, start_inside=start_inside)
    scores, outcomes, points, steps = {}, {}, {}, 0
    usable = _hinge_lambdas(system, lambdas)
    tried = [i for i in _lambda_window(len(lambdas), min(center, usable[-1])) if i in usable]
    while True:
        todo = [i for i in tried if i not in scores]
        if todo and scores and todo[0] < min(scores):  # the window widened towards larger λ: walk up from the nearest
            todo = todo[::-1]
        for i in todo:
            newton.lam, newton.converged = lambdas[i], False
            for _ in range(MAX_STEPS):
                newton.step()
                steps += 1
                if newton.converged:
                    break
            S = system.scores(X_val, newton.w[:, None]) + newton.b
            outcomes[i] = scoring.outcomes(metric, to_numpy(S), Y_val, 1.0, val_weights)
            scores[i] = scoring.score(metric, outcomes[i])
            points[i] = (newton.v.copy(), newton.b, newton.inside(), to_numpy(S))
        k = max(scores, key=lambda i: (scoring.tied(metric, scores[i]), -i))
        wider = [i for i in _lambda_window(len(lambdas), k) if i in usable]
        if k not in (min(tried), max(tried)) or set(wider) <= set(scores):
            break
        tried = sorted(set(tried) | set(wider))
    newton.settle()  # the system's T the margin rows' again, its factor given back
    v, b, inside, val_scores = points[k]
    return k, scores, outcomes, HingeSolution(v, b, inside, newton.in_T, steps, val_scores)


def _hinge_lambdas(system, lambdas):
    """The indices of the λs the hinge's Newton steps resolve: at least half the dtype's epsilon times trace(T) (a
    kernel value's rounding is another chunk's value of the same row, so T is the Hessian to within that), or the
    largest where none is; a path of one λ (the spec's) is taken as given (docs/design/squared-hinge-newton.md)."""
    if len(lambdas) == 1:
        return [0]
    floor = 0.5 * float(np.finfo(system.dtype).eps) * float(system.xp.trace(system.whitened()[0]))
    return [i for i in range(len(lambdas)) if lambdas[i] >= floor] or [0]


def _lambda_window(count, center):
    """Indices of the λ path to try: all of them, or :data:`LAMBDA_REACH` either side of ``center``."""
    if center is None:
        return list(range(count))
    return list(range(max(0, center - LAMBDA_REACH), min(count, center + LAMBDA_REACH + 1)))


def _fit_centers(order, rows) -> int:
    """How many of the center ``order``'s first rows are fit rows: the largest size none of whose centers is a
    validation row (the order reaches the validation rows last; a validation row that is a center is scored by a
    coefficient fitted without its label: docs/design/center-ladder.md)."""
    return int(np.isin(order, rows.fit).sum())


def _ladder(rows, max_centers):
    """The sizes: :data:`FIRST_CENTERS` doubled while below the rows and ``max_centers``, then the smaller of those."""
    out, M = [], FIRST_CENTERS
    top = min(rows, max_centers)
    while M < top:
        out.append(M)
        M *= 2
    out.append(top)
    return out
