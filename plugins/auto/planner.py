"""What ``solver: auto`` measures: Nyström centers, bandwidth and λ on a validation split.

The search runs on the square loss's normal equations (:class:`kopt.nystrom.system.NystromSystem`),
where a λ path costs one M × M Cholesky per λ on top of the system itself:

1. the training rows are split once, seeded by the spec's seed (:func:`kopt.running.validation.make_splits`, 20%
   held out);
2. centers: the first M rows of one seeded order of the training rows (:func:`kopt.nystrom.center_order`,
   unsupervised: no label is read), so each size holds the smaller ones and is the sample ``krr_nystrom``
   draws for ``features.count: M``; M starts at :data:`FIRST_CENTERS` and doubles.  The order puts the
   held-out rows last, so up to 80% of the rows no center is a row the validation scores are taken on (a
   held-out center's coefficient is fitted without its label: it biased the search towards large λ);
3. the bandwidth is tried at ½, 1 and 2 times the spec's rule (``auto``: the ``scale`` rule) at the
   first size, at the best factor and 1/√2 of it at the second (more centers resolve a shorter
   length scale, never a longer one), and from the third size on at 1/√2 of it again while the
   shorter one won the last size by more than :data:`GAIN_ERRORS` standard errors, else kept (one
   system costs more than all smaller ones together); a number, or another rule, is taken as given;
4. λ walks :data:`LAMBDAS` (half decades, 1e-1 .. 1e-9) at the first size, then the best λ and
   one half decade either side of it (more where the best lies at an end); or is the spec's number.
   A λ whose system A/n + λR does not factor, or is conditioned beyond what float64 resolves
   (:meth:`NystromSystem.path`), would give another λ's solution and is not a choice;
5. M stops doubling when the last doubling gained less than a third of the tolerance kopt's
   defaults are held to (:data:`MIN_GAIN`: 0.1 points of accuracy, 0.67% of RMSE) -- gains shrink
   with each doubling, so the sizes left could not add up to the tolerance --, or less than
   :data:`GAIN_ERRORS` standard errors of the paired difference on the validation rows (:func:`_gain_error`:
   the rows cannot tell that it gained, nor would they a smaller later gain), when the next size
   would pass ``max_centers`` (capped by the memory available: :meth:`.solver.AutoSolver.most_centers`) or the rows
   (a squared-hinge search: only where the square loss's path at that size, measured anyway, did not gain either --
   the hinge's score stalls at its λ floor while more centers still resolve the function),
   or when the next size's work, counted by formula (:mod:`.work`: its systems' n M² + M³/3 flops and kernel
   values, its λ path's Choleskys), would pass the work budget -- never where a clock says so, so the same spec
   and seed stop at the same size on any machine.  A wall-clock limit the user sets (``solver.budget``) stops it
   too, where the time spent plus the next size's work at the rate measured so far would pass it (the choice then
   depends on the machine, and the report says so).

The best (M, bandwidth, λ) by validation accuracy (RMSE for a real target) wins; ties go to the
larger λ and the fewer centers, and more centers win only by :data:`MIN_GAIN`.  Its system then takes the validation rows' sums too (their kernel values
are at hand), which makes it the system of every training row: the solve on all rows reuses it
(:attr:`Search.system`) instead of building it again.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

from kopt.numerics import rows as _rows

from . import work

#: the λ path (kopt's convention λ/2‖f‖² + mean ℓ): half decades from 1e-1 down to 1e-9
LAMBDAS = tuple(float(f"{10.0 ** (-k / 2):.6g}") for k in range(2, 19))
#: the first center count of the ladder (doubled while it pays)
FIRST_CENTERS = 256
#: a doubling that gains less than this stops the ladder: accuracy points (absolute), or RMSE (relative)
MIN_GAIN = {"accuracy": 0.001, "balanced_accuracy": 0.001, "weighted_accuracy": 0.001, "rmse": 0.0067}
#: a doubling whose validation gain is within this many standard errors of its paired difference (:func:`_gain_error`)
#: stops the ladder: the validation rows cannot tell that it gained, so a further doubling (whose gains are smaller)
#: could not be told apart either
GAIN_ERRORS = 1.0
#: ``choose_loss``: the squared hinge replaces the square loss only where it gains at least :data:`MIN_GAIN` and more
#: than this many standard errors of the paired difference on the validation rows.  Two, not :data:`GAIN_ERRORS`' one:
#: the square loss is the default the hinge must displace, and where the two losses are alike a one-error rule takes
#: the hinge on about one seed in six (a one-sided normal tail), which would make the loss follow the seed
LOSS_ERRORS = 2.0
#: from the third size on, the bandwidth is shortened by 1/√2 again while the shorter one won the last size by more
#: than :data:`GAIN_ERRORS` standard errors
SHORTEN_WHILE_RESOLVED = True
#: the squared hinge's λ path solves each λ until a Newton step lowers its objective by less than this share
#: (:class:`kopt.nystrom.newton.HingeNewton`'s ``rtol``): the last steps move single rows across the
#: margin, which validation accuracy does not see (ijcnn1 at 1,024 centers: steps 5-9 of a warm λ each lowered J by
#: 1e-7..1e-8)
HINGE_RTOL = 1e-6
#: bandwidth factors at the first size
FIRST_FACTORS = (1.0, 0.5, 2.0)
#: λ values either side of the previous size's best, at the later sizes; the window widens while the best lies
#: at its end, so a λ that moves further with the size is still followed (validation error is unimodal in λ)
LAMBDA_REACH = 1


def metric_of(problem):
    """rmse for a real target; balanced accuracy where the spec asks for balanced classes (``data.class_weight:
    balanced``), the rows' weighted accuracy where it gives the classes' weights; else accuracy."""
    if problem.preprocessor.target == "real":
        return "rmse"
    given = (problem.spec.get("data") or {}).get("class_weight")
    return "accuracy" if given is None else "balanced_accuracy" if given == "balanced" else "weighted_accuracy"


def _outcomes(metric, S, Y, y_scale, weights=None):
    """Per validation row: 1/0 for a right/wrong class, or the squared error (in the target's units); balanced
    accuracy weighs a row 1 / (classes x its class's rows), weighted accuracy by its weight (``weights``: the
    validation rows'), each normalised to mean 1 over the rows, so their mean is the metric."""
    if metric == "rmse":
        return ((S[:, 0] - Y[:, 0]) * y_scale) ** 2
    if S.shape[1] == 1:
        right, truth = (np.sign(S[:, 0]) == np.sign(Y[:, 0])).astype(np.float64), Y[:, 0] > 0
    else:
        right, truth = (np.argmax(S, axis=1) == np.argmax(Y, axis=1)).astype(np.float64), np.argmax(Y, axis=1)
    if metric == "balanced_accuracy":  # each row counts 1 / (classes x its class's rows): the mean is balanced accuracy
        _, index, counts = np.unique(truth, return_inverse=True, return_counts=True)
        right = right * (len(truth) / (len(counts) * counts[index.ravel()]))
    elif metric == "weighted_accuracy" and weights is not None:
        weights = np.asarray(weights, dtype=np.float64)
        right = right * (weights / weights.mean())
    return right


def _score(metric, rows):
    """The validation score of per-row outcomes (:func:`_outcomes`): higher is better (−RMSE)."""
    return -float(np.sqrt(np.mean(rows))) if metric == "rmse" else float(np.mean(rows))


def _tied(metric, score):
    """The score λ paths are ranked by: the score itself, or for the weighted metrics (balanced, weighted accuracy)
    its whole multiples of :data:`MIN_GAIN` -- a few heavy rows make every other row's weight a sliver, and a
    difference under MIN_GAIN is a tie, which the larger λ wins (plain accuracy and RMSE: unchanged)."""
    if metric in ("balanced_accuracy", "weighted_accuracy") and np.isfinite(score):
        return math.floor(score / MIN_GAIN[metric] + 1e-9)
    return score


def _gain(metric, old, new):
    """What a larger size gained: accuracy points (as a fraction), or the relative cut in RMSE."""
    if metric == "rmse":
        return (new - old) / abs(old) if old else 0.0  # scores are −RMSE
    return new - old


def _gain_error(metric, old_rows, new_rows):
    """The standard error of :func:`_gain` between two models scored on the same validation rows (paired: the
    per-row differences of their outcomes), in :func:`_gain`'s units."""
    n = len(old_rows)
    if n < 2:
        return 0.0
    error = float(np.std(new_rows - old_rows, ddof=1)) / math.sqrt(n)
    if metric == "rmse":  # a relative cut in RMSE: d(MSE) / (2 MSE), by the delta method
        mse = float(np.mean(old_rows))
        return error / (2.0 * mse) if mse > 0 else 0.0
    return error


def _better(metric, trial, best):
    """Whether ``trial`` beats ``best``: any gain at the same or fewer centers; at more centers a gain of at
    least :data:`MIN_GAIN`, the gain that keeps the ladder growing (a smaller gain is within what the
    validation rows can tell, and the smaller model solves and predicts faster)."""
    gain = _gain(metric, best["score"], trial["score"])
    return gain >= MIN_GAIN[metric] if trial["centers"] > best["centers"] else gain > 0


def _gain_words(metric, gain):
    return f"{100 * gain:.2f}% of RMSE" if metric == "rmse" else f"{100 * gain:.2f} points"


def _budget_words(budget):
    """The search's progress against its work budget and its ETA at the rate measured so far
    (:meth:`.work.Budget.words`; the solve on every row comes after)."""
    return budget.words()


def _lambda_window(count, center):
    """Indices of the λ path to try: all of them, or :data:`LAMBDA_REACH` either side of ``center``."""
    if center is None:
        return list(range(count))
    return list(range(max(0, center - LAMBDA_REACH), min(count, center + LAMBDA_REACH + 1)))


def search(problem, *, bandwidth_rule, lambdas, counts, max_centers, seed, validation, log, hinge=False, budget=None,
           budget_s=None, choose_loss=False):
    """Measure the ladder; returns a :class:`Search`.

    ``budget``: the :class:`.work.Budget` the ladder's work is counted in (None: :func:`.work.default_work` of the
    rows, with ``budget_s`` seconds as its wall-clock limit, None: none).

    ``bandwidth_rule``: True to search factors of ``problem.kernel``'s bandwidth, False to keep it;
    ``lambdas``: the λ values; ``counts``: the center counts to try (None: the doubling ladder up to
    ``max_centers``); ``hinge``: score the squared hinge (``svm_nystrom``) on each system, for a binary target
    (:func:`_hinge_path`): its λ and validation score are the trial's; ``choose_loss``: for a binary target, the
    squared hinge's λ path is measured beside the square loss's on the first size's chosen system, and where it gains
    what the validation rows can tell (:func:`_choose_loss`) the rest of the ladder is the squared hinge's, as with
    ``hinge``; else the square loss's (``Search.loss_choice`` says what was measured).
    """
    from kopt.numerics.backend import to_numpy
    from kopt.nystrom import cache as nystrom_cache
    from kopt.nystrom.centers import center_order
    from kopt.nystrom.system import target_offset
    from kopt.running.validation import make_splits

    t0 = time.perf_counter()
    xp = problem.xp
    n = problem.n
    if budget is None:
        budget = work.Budget(work.default_work(n), budget_s, rule=work.rule_words())
    (tr, va), = make_splits(n, seed, validation=validation)
    metric = metric_of(problem)
    Y = problem.label_matrix()
    w = problem.sample_weight
    intercept = to_numpy(target_offset(Y, w))  # krr_nystrom's fixed intercept: the systems fit Y − μ
    Y = Y - problem.xp.asarray(intercept)
    y_scale = float(getattr(problem.preprocessor, "y_scale", 1.0) or 1.0)
    X_fit, X_val = _rows.take(problem.X, xp.asarray(tr)), _rows.take(problem.X, xp.asarray(va))
    Y_fit, Y_val = Y[xp.asarray(tr)], to_numpy(Y[xp.asarray(va)]) + intercept
    w_fit = None if w is None else w[xp.asarray(tr)]
    w_val = None if w is None else to_numpy(w[xp.asarray(va)])
    hinge = hinge and Y.shape[1] == 1 and metric != "rmse"
    choose_loss = choose_loss and not hinge and Y.shape[1] == 1 and metric != "rmse"
    y_fit = Y_fit[:, 0] + float(intercept[0]) if hinge or choose_loss else None  # the ±1 labels the hinge reads
    d, outputs, n_fit, n_val = int(problem.d), int(Y.shape[1]), len(tr), len(va)

    def system_work(M, lams):  # a trial's work by formula: its system, the validation rows' kernel values, its path
        return (work.system(n_fit, M, d) + work.kernel_values(n_val, M, d)
                + lams * work.direct_lambda(M, n_val, outputs))

    hinge_index = None  # the last level's hinge λ (its window's center at the next size)
    hinge_inside = level_inside = None  # the fit rows inside the last level's (this level's) best hinge margin
    order = center_order(problem, max(counts) if counts else max_centers)
    cls, options = type(problem.kernel), problem.kernel.options.as_dict()
    has_bw = "bandwidth" in options
    base_bw = options.get("bandwidth")
    ladder = list(counts) if counts else _ladder(len(order), max_centers)
    trials, best, previous_best, kept, best_scores = [], None, None, None, None
    previous_square = None  # a hinge search: the last level's best square-loss score and per-row outcomes
    previous_rows = level_rows = None  # the per-row outcomes of the last level's best and of this one's
    shorten = False  # from the third size on: whether a shorter bandwidth is tried too
    factor, lam_index = 1.0, None
    loss_choice = None  # choose_loss: the first size's comparison of the two losses (:func:`_choose_loss`)
    both = False  # choose_loss, the hinge taken: at each later size both losses' models compete
    for level, M in enumerate(ladder):
        if not has_bw or not bandwidth_rule or (level >= 2 and not shorten):
            factors = (factor,)
        elif level == 0:
            factors = FIRST_FACTORS
        else:
            factors = (factor, float(f"{factor / math.sqrt(2):.6g}"))
        centers = np.sort(order[:M])  # krr_nystrom's centers for features.count = M (kopt.nystrom.choose_centers)
        level_best, factor_rows, level_square = None, {}, None
        square_best = -np.inf  # the level's best square-loss score so far (the hinge runs only where it is beaten)
        for f in factors:
            t1 = time.perf_counter()
            if kept is not None:
                # the best so far waits as its T alone while another system is built, at this size too: with
                # features.count given, the three bandwidths' systems at one size held two systems' U, T and centers
                # at once (docs/benchmarks.md, "Measurements behind the code's choices")
                kept[0].shed()
            # the bandwidth as the chosen spec will write it (6 digits), so the final solve's kernel is this one
            kernel = cls(**{**options, "bandwidth": _digits(base_bw * f)}) if has_bw else problem.kernel
            # the dense centers made for this system only, in the Fortran order it keeps them in, and handed over:
            # it reorders them in place (a copy of its own, while this one lived, was M x d float32 more at the
            # peak: docs/benchmarks.md, "Measurements behind the code's choices")
            C = _rows.dense(problem.X, xp.asarray(centers), xp, problem.dtype, order="F")
            system = nystrom_cache.system(kernel, X_fit, Y_fit, C, dtype=problem.dtype, weights=w_fit,
                                          own_centers=True)
            del C
            budget.count(system_work(M, 0))
            tried = _lambda_window(len(lambdas), lam_index)
            scores, outcomes, raw = {}, {}, {}
            while True:
                todo = [i for i in tried if i not in scores]
                budget.count(len(todo) * work.direct_lambda(M, n_val, outputs))
                for i, S in zip(todo, system.path([lambdas[i] for i in todo], X_val)):
                    # a λ the system does not resolve is not a choice
                    if S is None:
                        scores[i] = -np.inf
                    else:
                        raw[i] = to_numpy(S) + intercept  # the held-out scores: kopt.api calibrates on them
                        outcomes[i] = _outcomes(metric, raw[i], Y_val, y_scale, w_val)
                        scores[i] = _score(metric, outcomes[i])
                # ties: the larger λ (lambdas run from large to small, so the first best)
                k = max(scores, key=lambda i: (_tied(metric, scores[i]), -i))
                wider = _lambda_window(len(lambdas), k)
                if k not in (min(tried), max(tried)) or set(wider) <= set(scores):
                    break
                tried = sorted(set(tried) | set(wider))  # the best lies at an end of the window: look past it
            square = dict(lam_index=k, score=scores[k], path=_path_words(lambdas, scores))
            trial_bw = _digits(base_bw * f) if has_bw else None
            target, square_kept = system, None  # the system the trial's loss runs on; the square model kept aside
            if hinge and (level_square is None or scores[k] > level_square[0]):
                level_square = (scores[k], outcomes[k])  # the level's best square-loss score, and its per-row outcomes
            hinge_start, skipped = None, False
            if hinge and scores[k] < square_best:
                # the square loss's path is nearly free, the hinge's is Newton steps: a bandwidth the square loss scores
                # below one already tried at this size is not tried for the hinge (not a choice)
                skipped, scores, outcomes, raw = True, {k: -np.inf}, {}, {}
            elif hinge:  # the trial is the squared hinge's on this system (its T becomes the margin rows')
                square_best = square["score"]
                if both:
                    # the loss left to auto: the square loss's model at this size competes with the hinge's too
                    square_trial = dict(centers=int(M), bandwidth_factor=f, bandwidth=trial_bw, lam=lambdas[k],
                                        score=scores[k], lam_index=k, path=square["path"], loss="square",
                                        seconds=time.perf_counter() - t1)
                    if _better(metric, square_trial, best):
                        # it beats the best so far, so one of this size's two models replaces that one (released
                        # first: its T's room holds the copy) and the square loss's system is kept as it is -- the
                        # hinge's Newton steps run on a copy of its T
                        kept = best_scores = None
                        square_kept = (square_trial, system, raw[k])
                        target = system.own_copy()
                k, scores, outcomes, hinge_start = _hinge_path(
                    target, X_fit, y_fit, w_fit, X_val, Y_val, lambdas, k if hinge_index is None else hinge_index,
                    hinge_inside, metric=metric, val_weights=w_val)
                raw = {k: hinge_start.pop("val_scores")}
                budget.count(hinge_start["steps"] * work.newton_step(n_fit, M, d)
                             + len(scores) * work.direct_lambda(M, n_val))
            trial = dict(centers=int(M), bandwidth_factor=f, bandwidth=trial_bw,
                         lam=lambdas[k], score=scores[k], lam_index=k, path=_path_words(lambdas, scores),
                         seconds=time.perf_counter() - t1)
            if hinge:
                trial.update(square_lam_index=square["lam_index"], square_score=square["score"],
                             square_path=square["path"], newton_steps=0 if skipped else hinge_start.pop("steps"))
                if skipped:
                    trial["skipped"] = "the square loss scored this bandwidth below another at this size"
            trials.append(trial)
            said = (f"square loss {abs(square['score']):.5g}, below this size's best: not tried for the hinge" if skipped
                    else f"best lambda {trial['lam']:g}, validation {metric} {abs(trial['score']):.5g} "
                         f"({trial['seconds']:.2f} s)")
            log(f"auto: {M} centers, bandwidth {trial['bandwidth'] if has_bw else '-'} (x{f:g}): {said} "
                f"[{_budget_words(budget)}]")
            factor_rows[f] = outcomes.get(k)
            if skipped:
                del system, target
                continue
            if level_best is None or trial["score"] > level_best["score"]:
                level_best, level_rows = trial, outcomes[k]
                level_inside = hinge_start["inside"] if hinge else None
            if square_kept is not None:
                best, kept, best_scores = square_kept[0], (square_kept[1], centers, None), square_kept[2]
            if best is None or _better(metric, trial, best):
                # the solve on every row reuses this system
                best, kept = trial, (target, centers, hinge_start)
                best_scores = raw.get(k)
            del system, target, square_kept
        if choose_loss and level == 0:
            # the loss is screened on the first size's chosen system, where a Newton step is cheap: the squared hinge
            # only where it gains what the validation rows can tell; it then runs the rest of the ladder as a search
            # for the squared hinge does (each size's square path, then the hinge's from the last size's margin rows)
            system, chosen_centers, _ = kept
            if system.shed_state:
                system.restore(_rows.dense(problem.X, xp.asarray(chosen_centers), xp, problem.dtype, order="F"))
            square_rows = _outcomes(metric, best_scores, Y_val, y_scale, w_val)
            loss_choice, hinge_system, hinge_trial, hinge_rows, start = _choose_loss(
                system, best, square_rows, X_fit, y_fit, w_fit, X_val, Y_val, w_val, lambdas, metric, budget, d)
            trials.append(hinge_trial)
            log(f"auto: the squared hinge on {M} centers: best lambda {hinge_trial['lam']:g}, validation {metric} "
                f"{abs(hinge_trial['score']):.5g} against the square loss's {abs(best['score']):.5g}: "
                f"{loss_choice['why']} [{_budget_words(budget)}]")
            del system
            if loss_choice["chosen"] == "squared_hinge":
                hinge = both = True
                hinge_trial.update(square_lam_index=best["lam_index"], square_score=best["score"],
                                   square_path=best["path"])
                best_scores = start.pop("val_scores")
                level_inside, level_rows = start["inside"], hinge_rows
                best = level_best = hinge_trial
                kept = (hinge_system, chosen_centers, start)
                level_square = (hinge_trial["square_score"], square_rows)
            del hinge_system, start
        if level >= 1 and len(factors) == 2:
            # the shorter bandwidth is tried again at the next size while it won here by more than the validation
            # rows' standard error (more centers resolve a shorter length scale); else the bandwidth is kept
            longer, shorter = factors
            won = level_best["bandwidth_factor"] == shorter and factor_rows.get(longer) is not None
            shorten = SHORTEN_WHILE_RESOLVED and won and _gain(
                metric, _score(metric, factor_rows[longer]), level_best["score"]) > GAIN_ERRORS * _gain_error(
                metric, factor_rows[longer], factor_rows[shorter])
        factor, lam_index = level_best["bandwidth_factor"], level_best.get("square_lam_index", level_best["lam_index"])
        hinge_index = level_best["lam_index"] if hinge else None
        hinge_inside = level_inside if hinge else None
        if level + 1 < len(ladder):
            if previous_best is not None and counts is None:
                gain = _gain(metric, previous_best["score"], level_best["score"])
                noise = GAIN_ERRORS * _gain_error(metric, previous_rows, level_rows)
                if gain < max(MIN_GAIN[metric], noise):
                    square_gain = square_noise = None
                    if hinge and previous_square is not None:
                        # the squared hinge's score can stall where its λ reaches what float32 resolves while more
                        # centers still resolve the function: the square loss's path, measured at each size anyway,
                        # says whether they do (w8a: the hinge +0.06 points from 512 to 1,024 centers, the square
                        # loss +0.47)
                        square_gain = _gain(metric, previous_square[0], level_square[0])
                        square_noise = GAIN_ERRORS * _gain_error(metric, previous_square[1], level_square[1])
                    if square_gain is None or square_gain < max(MIN_GAIN[metric], square_noise):
                        log(f"auto: {M} centers gained {_gain_words(metric, gain)} over {M // 2} (< "
                            f"{_gain_words(metric, MIN_GAIN[metric])}, or within the validation rows' "
                            f"{_gain_words(metric, noise)} standard error): stop growing")
                        break
                    log(f"auto: {M} centers gained the squared hinge {_gain_words(metric, gain)} over {M // 2}, the "
                        f"square loss {_gain_words(metric, square_gain)} (more than the validation rows' "
                        f"{_gain_words(metric, square_noise)} standard error): more centers still resolve more")
            next_factors = 2 if has_bw and bandwidth_rule and (level == 0 or shorten) else 1
            # the next size's work by formula (its systems and a λ window of 2 LAMBDA_REACH + 1), never its time
            projected = next_factors * system_work(ladder[level + 1], 2 * LAMBDA_REACH + 1)
            if not budget.affords(projected):
                log(f"auto: {ladder[level + 1]} centers would count {projected:.2g} flops, past the work budget "
                    f"({budget.spent:.2g} of {budget.work:.2g} spent): stop growing")
                break
            if budget.out_of_time(f"the ladder after {M} centers", projected):
                log(f"auto: {ladder[level + 1]} centers would pass the time limit ({budget.seconds:g} s, "
                    f"{budget.elapsed():.1f} s spent): stop growing -- this choice depends on the machine's speed")
                break
        previous_best, previous_rows, previous_square = level_best, level_rows, level_square
    split = f"validation {len(va)} of {n} rows, seed {seed}"
    if both and best.get("loss") == "square":
        hinge_best = max((t for t in trials if t.get("square_score") is not None and np.isfinite(t["score"])),
                         key=lambda t: t["score"])
        loss_choice = {**loss_choice, "chosen": "square", "screen": loss_choice["chosen"],
                       "why": loss_choice["why"] + f"; then the square loss's model at {best['centers']} centers "
                              f"({abs(best['score']):.5g}) beat the squared hinge's best ({abs(hinge_best['score']):.5g} "
                              f"at {hinge_best['centers']}) by the ladder's rule: the square loss"}
    system, centers, hinge_start = kept
    if system.shed_state:
        system.restore(_rows.dense(problem.X, xp.asarray(centers), xp, problem.dtype, order="F"))
    if hinge_start is not None:
        # the hinge's system sums the fit rows inside the chosen solution's margin: counted over every training row,
        # it is svm_nystrom's start (the validation rows go in as they fall inside the margin)
        system.rescale(n)
        in_T = np.zeros(n, dtype=bool)
        in_T[tr] = to_numpy(hinge_start["in_T"])
        hinge_start.pop("inside", None)
        hinge_start["in_T"] = xp.asarray(in_T)
        return Search(best, trials, split, time.perf_counter() - t0, metric, system, centers, intercept, hinge_start,
                      va, best_scores, loss_choice)
    # the chosen system over every training row: the fit rows' sums plus the validation rows', which is the
    # system krr_nystrom builds from scratch on the same centers and kernel
    # consume: the search's system is not used again, so the new one takes its M x M buffer (a shared one's is copied)
    system = system.plus(X_val, Y[xp.asarray(va)], None if w is None else w[xp.asarray(va)], consume=True)
    return Search(best, trials, split, time.perf_counter() - t0, metric, system, centers, intercept, None, va,
                  best_scores, loss_choice)


@dataclass
class Search:
    """What :func:`search` measured: the ``best`` trial, every trial, the split's description, the seconds
    spent, the metric, and the best trial's system over every training row (``system``: a
    :class:`NystromSystem` on the centers ``centers``, indices into the training rows, for the targets less
    their mean ``intercept``)."""

    best: dict
    trials: list
    split: str
    seconds: float
    metric: str
    system: object
    centers: np.ndarray
    intercept: np.ndarray
    #: the squared hinge's start (a ``hinge`` search): ``in_T`` (the training rows the system's T sums), ``v``, ``b``
    hinge_start: dict | None = None
    #: the validation rows (indices into the training rows) and the best trial's scores of them, ``(n_va, C)``: the
    #: scores of a model not fitted on those rows, which the probability calibration is fitted on
    validation_rows: np.ndarray | None = None
    validation_scores: np.ndarray | None = None
    #: a ``choose_loss`` search's comparison of the square loss and the squared hinge (:func:`_choose_loss`): the loss
    #: chosen, both scores, the gain and its standard error, and why
    loss_choice: dict | None = None


def _choose_loss(system, best, square_rows, X_fit, y_fit, w_fit, X_val, Y_val, w_val, lambdas, metric, budget, d):
    """The squared hinge against the square loss on the square loss's chosen system (its centers and bandwidth):
    the hinge's λ path (:func:`_hinge_path`, from the square loss's λ) on a copy of the system (Newton steps change
    T), scored on the same validation rows.  The hinge is chosen only where it gains at least :data:`MIN_GAIN` and
    more than :data:`LOSS_ERRORS` standard errors of the paired difference (:func:`_gain_error`), so the loss is
    changed only for a gain the validation rows can tell, and steadily across seeds.  Returns ``(record,
    the hinge's system, its trial, its per-row outcomes, its start)``."""
    t1 = time.perf_counter()
    hinge_system = system.own_copy()  # the square loss's system stays as it is, should the square loss stand
    k, scores, outcomes, start = _hinge_path(hinge_system, X_fit, y_fit, w_fit, X_val, Y_val, lambdas,
                                             best["lam_index"], None, metric=metric, val_weights=w_val)
    M, n_fit, n_val = int(system.M), int(X_fit.shape[0]), int(X_val.shape[0])
    steps = int(start.pop("steps"))
    budget.count(steps * work.newton_step(n_fit, M, d) + len(scores) * work.direct_lambda(M, n_val))
    gain = _gain(metric, best["score"], scores[k])
    error = _gain_error(metric, square_rows, outcomes[k])
    hinge = gain >= MIN_GAIN[metric] and gain > LOSS_ERRORS * error
    trial = dict(centers=int(best["centers"]), bandwidth_factor=best["bandwidth_factor"], bandwidth=best["bandwidth"],
                 lam=lambdas[k], score=scores[k], lam_index=k, path=_path_words(lambdas, scores), loss="squared_hinge",
                 newton_steps=steps, seconds=time.perf_counter() - t1)
    words = (f"the squared hinge gained {_gain_words(metric, gain)}, at least {_gain_words(metric, MIN_GAIN[metric])} "
             f"and more than {LOSS_ERRORS:g} x the validation rows' {_gain_words(metric, error)} standard error: "
             f"chosen" if hinge else
             f"the squared hinge gained {_gain_words(metric, gain)} (< {_gain_words(metric, MIN_GAIN[metric])}, or "
             f"within {LOSS_ERRORS:g} x the validation rows' {_gain_words(metric, error)} standard error): the square "
             f"loss stands")
    record = {"chosen": "squared_hinge" if hinge else "square", "centers": int(best["centers"]),
              "bandwidth_factor": best["bandwidth_factor"], "square_score": abs(float(best["score"])),
              "squared_hinge_score": abs(float(scores[k])), "square_lambda": best["lam"], "squared_hinge_lambda":
              lambdas[k], "gain": float(gain), "standard_error": float(error), "newton_steps": steps,
              "seconds": trial["seconds"], "why": words}
    return record, hinge_system, trial, outcomes[k], start


def _path_words(lambdas, scores):
    return {f"{lambdas[i]:g}": (round(scores[i], 6) if np.isfinite(scores[i]) else None) for i in sorted(scores)}


def _hinge_path(system, X, y, weights, X_val, Y_val, lambdas, center, start_inside=None, metric="accuracy",
                val_weights=None):
    """The squared hinge's λ path on a system of the fit rows ``X`` (±1 labels ``y``): each λ solved by
    :class:`kopt.nystrom.newton.HingeNewton` to its end, warm from the last, and scored on the
    validation rows; :data:`LAMBDA_REACH` half decades either side of ``center``, widened while the best lies at an
    end (as the square loss's path).  ``start_inside``: the fit rows inside the last size's chosen margin, where the
    first Newton step starts.  The system's T is the margin rows' from then on.  Returns ``(best index, scores,
    per-row outcomes, start)`` with ``start`` the best λ's ``v``, ``b``, its margin rows (``inside``), the rows T
    sums (``in_T``) and the Newton steps taken (``steps``)."""
    from kopt.numerics.backend import to_numpy
    from kopt.nystrom.newton import MAX_STEPS, HingeNewton

    newton = HingeNewton(system, X, y, lambdas[0], weights, rtol=HINGE_RTOL, start_inside=start_inside)
    scores, outcomes, points, steps = {}, {}, {}, 0
    # the λ the Newton steps resolve: a kernel value's rounding (half the dtype's epsilon, relative) is the same
    # row's value in another chunk of rows, so T_S, updated row by row, is the true Hessian to within
    # eps/2 · ‖T‖ ≤ eps/2 · trace(T); Newton with that Hessian converges only while this stays below λ (ijcnn1,
    # float32, 1,024 centers: 9 steps at 1e-7, none converged within 50 at 1e-8)
    floor = 0.5 * float(np.finfo(system.dtype).eps) * float(system.xp.trace(system.whitened()[0]))
    # (a λ the spec gives is taken as given, resolved or not)
    usable = [i for i in range(len(lambdas)) if lambdas[i] >= floor] if len(lambdas) > 1 else [0]
    usable = usable or [0]  # every λ of the path below the floor: its largest
    center = min(center, usable[-1])
    tried = [i for i in _lambda_window(len(lambdas), center) if i in usable]
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
            outcomes[i] = _outcomes(metric, to_numpy(S), Y_val, 1.0, val_weights)
            scores[i] = _score(metric, outcomes[i])
            points[i] = (newton.v.copy(), newton.b, newton.inside(), to_numpy(S))
        k = max(scores, key=lambda i: (_tied(metric, scores[i]), -i))
        wider = [i for i in _lambda_window(len(lambdas), k) if i in usable]
        if k not in (min(tried), max(tried)) or set(wider) <= set(scores):
            break
        tried = sorted(set(tried) | set(wider))
    newton.settle()  # the system's T the margin rows' again, its factor given back
    v, b, inside, val_scores = points[k]
    return k, scores, outcomes, {"v": v, "b": b, "inside": inside, "in_T": newton.in_T, "steps": steps,
                                 "val_scores": val_scores}


def _digits(x):
    """``x`` to the 6 significant digits a chosen spec records."""
    return float(f"{x:.6g}")


def _ladder(rows, max_centers):
    out, M = [], FIRST_CENTERS
    top = min(rows, max_centers)
    while M < top:
        out.append(M)
        M *= 2
    out.append(top)
    return out
