"""What ``solver: auto`` measures: Nyström centres, bandwidth and λ on a validation split.

The search runs on the square loss's normal equations (:class:`kopt_plugins.krr_nystrom.system.NystromSystem`),
where a λ path costs one M × M Cholesky per λ on top of the system itself:

1. the training rows are split once, seeded by the spec's seed (:func:`kopt.selection.make_splits`, 20%
   held out);
2. centres: the first M rows of one seeded order of the fit rows, so each size holds the smaller
   ones; M starts at :data:`FIRST_CENTERS` and doubles;
3. the bandwidth is tried at ½, 1 and 2 times the spec's rule (``auto``: the ``scale`` rule) at the
   first size, at the best factor and 1/√2 of it at the second (more centres resolve a shorter
   length scale, never a longer one), and kept from the third size on, where one system costs
   more than all smaller ones together; a number, or another rule, is taken as given;
4. λ walks :data:`LAMBDAS` (half decades, 1e-1 .. 1e-9) at the first size, then the best λ and
   two half decades either side of it (more where the best lies at an end); or is the spec's number.
   A λ whose system A/n + λR does not factor, or is conditioned beyond what float64 resolves
   (:meth:`NystromSystem.path`), would give another λ's solution and is not a choice;
5. M stops doubling when the last doubling gained less than a third of the tolerance kopt's
   defaults are held to (:data:`MIN_GAIN`: 0.1 points of accuracy, 0.67% of RMSE) -- gains shrink
   with each doubling, so the sizes left could not add up to the tolerance --, when the next size
   would pass ``max_centers``, the training rows or :data:`CENTER_ENTRIES` dense values of centres,
   or when its projected time (4x this size's: the system costs n M²) would pass the budget.

The best (M, bandwidth, λ) by validation accuracy (RMSE for a real target) wins; ties go to the
larger λ and the fewer centres.
"""
from __future__ import annotations

import math
import time

import numpy as np

from kopt import rows as _rows

#: the λ path (kopt's convention λ/2‖f‖² + mean ℓ): half decades from 1e-1 down to 1e-9
LAMBDAS = tuple(float(f"{10.0 ** (-k / 2):.6g}") for k in range(2, 19))
#: the first centre count of the ladder (doubled while it pays)
FIRST_CENTERS = 256
#: a doubling that gains less than this stops the ladder: accuracy points (absolute), or RMSE (relative)
MIN_GAIN = {"accuracy": 0.001, "rmse": 0.0067}
#: the centres are held dense (M × d): at most this many values (256 MiB in float32) -- wide sparse rows
#: (a 65,536-column text set caps M at 1,024)
CENTER_ENTRIES = 1 << 26
#: bandwidth factors at the first size
FIRST_FACTORS = (1.0, 0.5, 2.0)
#: λ values either side of the previous size's best, at the later sizes
LAMBDA_REACH = 2


def metric_of(problem):
    return "rmse" if problem.preprocessor.target == "real" else "accuracy"


def _score(metric, S, Y, y_scale):
    """The validation score of scores S (n × k) against label columns Y: higher is better."""
    if metric == "rmse":
        return -float(np.sqrt(np.mean((S[:, 0] - Y[:, 0]) ** 2))) * y_scale
    if S.shape[1] == 1:
        return float(np.mean(np.sign(S[:, 0]) == np.sign(Y[:, 0])))
    return float(np.mean(np.argmax(S, axis=1) == np.argmax(Y, axis=1)))


def _gain(metric, old, new):
    """What a larger size gained: accuracy points (as a fraction), or the relative cut in RMSE."""
    if metric == "rmse":
        return (new - old) / abs(old) if old else 0.0  # scores are −RMSE
    return new - old


def _gain_words(metric, gain):
    return f"{100 * gain:.2f}% of RMSE" if metric == "rmse" else f"{100 * gain:.2f} points"


def _lambda_window(count, center):
    """Indices of the λ path to try: all of them, or :data:`LAMBDA_REACH` either side of ``center``."""
    if center is None:
        return list(range(count))
    return list(range(max(0, center - LAMBDA_REACH), min(count, center + LAMBDA_REACH + 1)))


def search(problem, *, bandwidth_rule, lambdas, counts, max_centers, budget_s, seed, validation, log):
    """Measure the ladder; returns ``(best trial, trials, split description, seconds, metric)``.

    ``bandwidth_rule``: True to search factors of ``problem.kernel``'s bandwidth, False to keep it;
    ``lambdas``: the λ values; ``counts``: the centre counts to try (None: the doubling ladder up to
    ``max_centers``).
    """
    from kopt.backend import to_numpy
    from kopt.selection import make_splits
    from kopt_plugins.krr_nystrom.system import NystromSystem

    t0 = time.perf_counter()
    xp = problem.xp
    n = problem.n
    (tr, va), = make_splits(n, seed, validation=validation)
    metric = metric_of(problem)
    Y = problem.label_matrix()
    y_scale = float(getattr(problem.preprocessor, "y_scale", 1.0) or 1.0)
    X_fit, X_val = _rows.take(problem.X, xp.asarray(tr)), _rows.take(problem.X, xp.asarray(va))
    Y_fit, Y_val = Y[xp.asarray(tr)], to_numpy(Y[xp.asarray(va)])
    w = problem.sample_weight
    w_fit = None if w is None else w[xp.asarray(tr)]
    order = _distinct_order(X_fit, problem, seed, max(counts) if counts else max_centers)
    cls, options = type(problem.kernel), problem.kernel.options.as_dict()
    has_bw = "bandwidth" in options
    base_bw = options.get("bandwidth")
    ladder = list(counts) if counts else _ladder(len(order), min(max_centers, CENTER_ENTRIES // max(1, problem.d)))
    trials, best, previous_best = [], None, None
    factor, lam_index = 1.0, None
    for level, M in enumerate(ladder):
        t_level = time.perf_counter()
        if not has_bw or not bandwidth_rule or level >= 2:
            factors = (factor,)
        elif level == 0:
            factors = FIRST_FACTORS
        else:
            factors = (factor, float(f"{factor / math.sqrt(2):.6g}"))
        C = _rows.dense(X_fit, xp.asarray(order[:M]), xp, problem.dtype)
        level_best = None
        for f in factors:
            t1 = time.perf_counter()
            kernel = cls(**{**options, "bandwidth": base_bw * f}) if has_bw else problem.kernel
            system = NystromSystem(kernel, X_fit, Y_fit, C, dtype=problem.dtype, weights=w_fit)
            K_val = system.features(X_val)
            tried = _lambda_window(len(lambdas), lam_index)
            scores = {}
            while True:
                todo = [i for i in tried if i not in scores]
                for i, S in zip(todo, system.path([lambdas[i] for i in todo], K_val)):
                    # a λ below what the system resolves (it needs extra jitter to factor) is not a choice
                    scores[i] = -np.inf if S is None else _score(metric, to_numpy(S), Y_val, y_scale)
                # ties: the larger λ (lambdas run from large to small, so the first best)
                k = max(scores, key=lambda i: (scores[i], -i))
                wider = _lambda_window(len(lambdas), k)
                if k not in (min(tried), max(tried)) or set(wider) <= set(scores):
                    break
                tried = sorted(set(tried) | set(wider))  # the best lies at an end of the window: look past it
            trial = dict(centers=int(M), bandwidth_factor=f, bandwidth=(base_bw * f if has_bw else None),
                         lam=lambdas[k], score=scores[k], lam_index=k,
                         path={f"{lambdas[i]:g}": (round(scores[i], 6) if np.isfinite(scores[i]) else None)
                               for i in sorted(scores)},
                         seconds=time.perf_counter() - t1)
            trials.append(trial)
            log(f"auto: {M} centres, bandwidth {trial['bandwidth'] if has_bw else '-'} (x{f:g}): best "
                f"lambda {trial['lam']:g}, validation {metric} {abs(trial['score']):.5g} ({trial['seconds']:.2f} s)")
            if level_best is None or trial["score"] > level_best["score"]:
                level_best = trial
        factor, lam_index = level_best["bandwidth_factor"], level_best["lam_index"]
        if best is None or level_best["score"] > best["score"]:
            best = level_best
        level_s = time.perf_counter() - t_level
        spent = time.perf_counter() - t0
        if level + 1 < len(ladder):
            if previous_best is not None and counts is None:
                gain = _gain(metric, previous_best["score"], level_best["score"])
                if gain < MIN_GAIN[metric]:
                    log(f"auto: {M} centres gained {_gain_words(metric, gain)} over {M // 2} (< "
                        f"{_gain_words(metric, MIN_GAIN[metric])}): stop growing")
                    break
            next_factors = 2 if has_bw and bandwidth_rule and level == 0 else 1
            projected = level_s / len(factors) * next_factors * 4.0
            if spent + projected > budget_s:
                log(f"auto: {ladder[level + 1]} centres would take ~{projected:.1f} s, past the budget "
                    f"({budget_s:g} s, {spent:.1f} s spent): stop growing")
                break
        previous_best = level_best
    split = f"validation {len(va)} of {n} rows, seed {seed}"
    return best, trials, split, time.perf_counter() - t0, metric


def _ladder(rows, max_centers):
    out, M = [], FIRST_CENTERS
    top = min(rows, max_centers)
    while M < top:
        out.append(M)
        M *= 2
    out.append(top)
    return out


def _distinct_order(X, problem, seed, needed):
    """The first ``needed`` rows of a seeded order of X's rows, repeated rows dropped (a repeated centre
    makes K_CC singular)."""
    from kopt.backend import to_numpy

    n = X.shape[0]
    order = np.random.default_rng([int(seed), 0x61757430]).permutation(n)
    kept, seen = [], set()
    for lo in range(0, n, 4096):
        idx = order[lo:lo + 4096]
        block = to_numpy(_rows.dense(X, problem.xp.asarray(idx), problem.xp, problem.dtype))
        for i, row in zip(idx, block):
            key = row.tobytes()
            if key not in seen:
                seen.add(key)
                kept.append(int(i))
                if len(kept) == needed:
                    return np.asarray(kept)
    return np.asarray(kept)
