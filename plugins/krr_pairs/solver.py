"""One-vs-one kernel ridge regression on Nyström centers: one system per pair of classes, as SVC's one-vs-one.

For class ids with C ≥ 3 classes, pair (a, b) is the square loss on the training rows of classes a and b (±1
targets, +1 for a, less their mean), on the centers among ``features.count`` seeded training rows
(:func:`kopt.nystrom.choose_centers`, krr_nystrom's sample) that belong to a or b: krr_nystrom's system and
refined Cholesky solve (:class:`kopt.nystrom.system.NystromSystem`) on the pair's rows alone.  With
``features.count`` ≥ n every training row is a center and each pair is its rows' exact KRR, one Cholesky of
n_ab³/3 flops (:func:`exact_pair`).  The C(C − 1)/2 pairs vote (:class:`kopt.models.predictors.PairwiseVotes`).

Why: a pair's rows are about 2n/C of the n, so all pairs' exact solves cost Σ n_ab³/3 ≈ (4/3) n³/C flops with every
row a center, where one-vs-rest on M centers costs n M² per system.  On mnist-10k one-vs-one on the same centers as
one-vs-rest scored about as well in less memory, and on every row (exact pairs) higher
(docs/design/multiclass-pairs.md).  ``solver: auto`` takes exact
pairs for class ids where that costs less than its one-vs-rest ladder (:mod:`kopt_plugins.auto.pairs`).

Each pair's problem is kopt's λ/2 ‖f_ab‖² + mean over the pair's rows of ½(f_ab(x_i) + μ_ab − y_i)²; the solver
reports the sum of the pairs' primals, of their duals (krr_nystrom's dual point per pair) and so their summed gap.
Row weights are renormalised to mean 1 on each pair's rows.

With every row a center the solve also makes the probability calibration's held-out scores
(:meth:`PairsKRR.held_out`): each pair's rows are ordered with the calibration's fit rows
(:func:`kopt.models.calibration.held_out_rows`) first, so the leading block of the pair's Cholesky factor is the
factor of the fit rows' own system, K_FF + n_ab λ W⁻¹; two triangular solves with it (n_F² flops) give the pair's
model of its fit rows alone (at λ n_ab / n_F, exact pairs being flat in λ: docs/design/multiclass-pairs.md), and those models score
the held-out rows -- no second solve of the pairs on the fit rows.
"""
from __future__ import annotations

import numpy as np

from kopt.contract.iterative import COMMON_OPTIONS, Check, IterativeSolver, Step
from kopt.errors import KoptError
from kopt.models import calibration
from kopt.models.predictors import PairwiseVotes, class_pairs, pairwise_scores
from kopt.numerics import rows as _rows
from kopt.numerics import threads as _threads
from kopt.numerics.backend import get_namespace, to_numpy
from kopt.numerics.linalg import ridge_apply, ridge_factor
from kopt.numerics.objectives import dual, primal
from kopt.nystrom import certificate
from kopt.nystrom.centers import centers_used, choose_centers
from kopt.nystrom.system import NystromSystem, symmetric_from_lower, target_offset


def pair_problem(problem, ids, centers, a, b, rows=None):
    """Pair (a, b)'s rows (positions in ``rows``, default every training row), their ±1 targets less their mean μ,
    their weights (mean 1) and its centers (positions in ``centers``): ``(rows, Y, mu, weights, own)``."""
    xp = problem.xp
    rows = np.arange(problem.n) if rows is None else np.asarray(rows)
    mine = rows[np.isin(ids[rows], (a, b))]
    Y = xp.asarray(np.where(ids[mine] == a, 1.0, -1.0)[:, None])
    w = problem.sample_weight
    if w is not None:
        w = w[xp.asarray(mine)]
        w = w / w.mean()
    mu = target_offset(Y, w)
    own = np.flatnonzero(np.isin(ids[centers], (a, b)))
    return mine, Y - mu, mu, w, own


class PairsKRR(IterativeSolver):
    name = "krr_pairs"
    summary = "one-vs-one kernel ridge regression on Nystrom centers (a Cholesky per pair of classes, as SVC)"
    forms = ("primal", "dual")
    targets = ("binary",)
    kernel_mode = "features"
    feature_kinds = ("nystrom",)
    default_feature_kind = "nystrom"  # a spec naming the solver and no model.features.kind gets nystrom
    one_vs_rest = True  # takes class ids (as pairs, not one against the rest)
    needs_conjugate = True
    stopping = "none"
    blas = "single"  # the skeleton holds BLAS to one thread: exact pairs run on kopt's worker threads
    sample_weight = True
    warm_start = False
    iteration_unit = "every pair's system and Cholesky solve (one iteration)"
    params = {"threads": {**COMMON_OPTIONS["threads"], "default": None}}  # the exact pairs run on worker threads

    memory_key = "model.features.count"
    memory_hint = "or use solver krr_nystrom (one system for every class)"

    def memory_plan(self, sizes):
        """Every row a center (``features.count`` >= n): the pairs the worker threads solve at once, largest first,
        each its kernel matrix in the features' dtype and its float64 copy the Cholesky overwrites (n_ab x n_ab).
        Otherwise the largest pair's Nystrom system (:func:`kopt.nystrom.system.system_plan` at its rows n_ab and its
        centers, count x n_ab / n), its rows' copy and its targets, scores and residuals; the dense centers."""
        return pairs_plan(sizes, _threads.resolve_threads(getattr(self.options, "threads", None)))

    def check_spec(self, spec):
        if spec.loss.name != "square":
            ok = spec.solvers_accepting()  # the solvers whose own checks accept this spec
            yield ("model", "loss", "name"), (
                f"solver 'krr_pairs' solves the square loss only, not {spec.loss.name!r}"
                + (f"; solvers that accept this spec: {', '.join(ok)}" if ok else ""))

    def init(self, problem):
        if problem.preprocessor.target != "multiclass" or problem.n_classes < 3:
            raise KoptError("solver 'krr_pairs' trains one model per pair of classes: it needs class ids with at "
                            "least 3 classes, and these labels are "
                            f"{'real' if problem.preprocessor.target == 'real' else 'two classes'}; use krr_nystrom "
                            "(or solver: auto)")
        # features.count ≥ n: every row is a center, and each pair is its rows' exact KRR (repeated rows included)
        exact = problem.features.count >= problem.n
        centers = np.arange(problem.n) if exact else choose_centers(problem, problem.features.count)
        held = None
        if exact:  # the calibration's held-out rows: each pair's fit rows first (the module docstring)
            held = np.zeros(problem.n, dtype=bool)
            held[calibration.held_out_rows(problem.n, problem.spec["seed"])[1]] = True
        return {"problem": problem, "centers": centers, "ids": to_numpy(problem.y).astype(np.int64), "exact": exact,
                "pairs": class_pairs(problem.n_classes), "model": None, "sums": None, "held": held, "fit_model": None}

    def step(self, state, t):
        problem, centers, ids = state["problem"], state["centers"], state["ids"]
        xp = problem.xp
        # every row a center: the rows themselves (no copy where they are dense already)
        C_all = _rows.dense(problem.X, None if state["exact"] else xp.asarray(centers), xp, problem.dtype)
        pairs = state["pairs"]
        if state["exact"]:  # the pairs on kopt's worker threads, each one's BLAS on one thread (the skeleton's hold)
            threads = self.n_threads if xp is np else 1  # a GPU: one pair after the other on its stream
            done = _threads.parallel_map(lambda p: self._exact(problem, ids, centers, C_all, *pairs[p],
                                                               held=state["held"]),
                                         range(len(pairs)), threads)
            # each pair's model of the calibration's fit rows alone (the module docstring)
            state["fit_model"] = _pairs_arrays([d[4] for d in done])
        else:  # each pair's Nystrom system with every BLAS thread
            with _threads.blas_threads(self.n_threads):
                done = [self._nystrom(problem, ids, centers, C_all, a, b) for a, b in pairs]
        state["model"] = _pairs_arrays([d[:3] for d in done])
        state["sums"] = np.sum([d[3] for d in done], axis=0)
        state["C"] = C_all
        return Step(rows=problem.n)

    @staticmethod
    def _exact(problem, ids, centers, C_all, a, b, held=None):
        """Pair (a, b)'s exact KRR: ``(coef, columns, intercept, (P, D, scale, terms), fit rows' model)``, the last
        ``(coef, columns, intercept)`` of the pair's calibration fit rows alone (``held``: the calibration's held-out
        rows, a mask over the training rows; the pair's rows are ordered with the others first)."""
        xp = problem.xp
        rows, Y, mu, w, own = pair_problem(problem, ids, centers, a, b)
        order = np.argsort(held[own], kind="stable") if held is not None else np.arange(len(own))
        rows, own, Y = rows[order], own[order], Y[xp.asarray(order)]
        w = None if w is None else w[xp.asarray(order)]
        fit = len(own) - int(np.sum(held[own])) if held is not None else 0
        alpha, (p, d, s), fit_alpha = exact_pair(problem.kernel, C_all[xp.asarray(own)], Y[:, 0], problem.lam, w,
                                                 problem.loss, fit=fit, targets=Y[:, 0] + mu[0])
        fit_coef, fit_mu = fit_alpha
        return (to_numpy(alpha), own, float(to_numpy(mu)[0]), (p, d, s, 2 * len(rows)),
                (to_numpy(fit_coef), own[:fit], fit_mu))

    @staticmethod
    def _nystrom(problem, ids, centers, C_all, a, b):
        """Pair (a, b) on its centers' Nystrom system: ``(coef, columns, intercept, (P, D, scale, terms))``."""
        xp, lam = problem.xp, problem.lam
        rows, Y, mu, w, own = pair_problem(problem, ids, centers, a, b)
        X = _rows.take(problem.X, xp.asarray(rows))
        system = NystromSystem(problem.kernel, X, Y, C_all[xp.asarray(own)], dtype=problem.dtype, weights=w)
        try:
            wt, scores, Ktr, _ = system.refine(lam, X, Y, w)
        except np.linalg.LinAlgError:
            raise KoptError(f"the regularized Nystrom system of classes {a} and {b} is not positive definite; raise "
                            "lambda") from None
        p, d, s = certificate(problem.loss, lam, Y[:, 0], scores[:, 0], Ktr[:, 0], wt[:, 0], system.U, w)
        return to_numpy(wt[:, 0]), own[to_numpy(system.kept)], float(to_numpy(mu)[0]), (p, d, s, len(rows) + system.M)

    def held_out(self, state):
        """The calibration's held-out rows scored by the pairs' models of its fit rows (made in the exact solve: the
        module docstring); None where the pairs are Nyström's or the solve made none (a resumed run)."""
        fit = state.get("fit_model")
        if fit is None or state.get("C") is None:
            return None
        problem = state["problem"]
        rows = np.flatnonzero(state["held"])
        X = _rows.take(problem.X, problem.xp.asarray(rows))
        scores = pairwise_scores(problem.kernel, problem.xp, X, to_numpy(state["C"]), fit["coef"], fit["columns"],
                                 fit["offsets"], fit["intercepts"], state["pairs"], int(problem.n_classes))
        return {"rows": rows, "scores": to_numpy(scores),
                "words": f"the calibration's {len(rows)} held-out rows of {problem.n} (make_splits, validation "
                         f"{calibration.SHARE:g}, seed {problem.spec['seed']}), scored by each pair's "
                         f"model of the other rows, from the leading block of its factor (no second solve)"}

    def check(self, state, rows):
        if state["sums"] is None:
            return Check()
        P, D, scale, terms = (float(v) for v in state["sums"])
        return Check(objective=P, dual=D, scale=scale, terms=int(terms), extra={"pairs": len(state["pairs"])})

    def _predictor(self, state):
        m = state["model"]
        C = state.get("C")
        if C is None:
            problem = state["problem"]
            rows = None if state["exact"] else problem.xp.asarray(state["centers"])
            C = state["C"] = _rows.dense(problem.X, rows, problem.xp, problem.dtype)
        arrays = {"support": to_numpy(C), "pairs": np.asarray(state["pairs"], dtype=np.int64), **m}
        return PairwiseVotes(arrays, {"n_classes": int(state["problem"].n_classes)})

    def decision_function(self, state, X):
        problem = state["problem"]
        a = self._predictor(state).arrays
        return pairwise_scores(problem.kernel, problem.xp, X, a["support"], a["coef"], a["columns"], a["offsets"],
                               a["intercepts"], a["pairs"], int(problem.n_classes))

    def save(self, state):
        if state["model"] is None:
            return {}
        return {**state["model"], "sums": state["sums"]}

    def load(self, problem, saved):
        state = self.init(problem)
        if "coef" in saved:
            state["model"] = {k: np.asarray(saved[k]) for k in ("coef", "columns", "offsets", "intercepts")}
            state["sums"] = np.asarray(saved["sums"], dtype=np.float64)
        return state

    def finish(self, state):
        predictor = self._predictor(state)
        # every drawn center serves the pairs whose rows it is (no basis drops any): short only of the rows
        drawn = state["centers"].shape[0]
        used = centers_used(state["problem"].features.count, drawn, drawn,
                            rows="rows (every row is a center: each pair's exact KRR)" if state["exact"] else "distinct rows")
        return predictor, {**used, "n_centers": int(drawn), "pairs": len(state["pairs"]),
                           "pair_terms": int(state["model"]["coef"].shape[0])}


def pair_rows(sizes):
    """Each pair of classes' training rows, largest first: from the labels where the problem is at hand, else the
    classes taken as equal (``sizes.outputs`` of them, at least 3)."""
    problem = sizes.problem
    if problem is not None:
        counts = np.bincount(to_numpy(problem.y).astype(np.int64), minlength=int(problem.n_classes))
    else:
        k = max(3, int(sizes.outputs))
        counts = np.full(k, sizes.n // k)
    return sorted((int(counts[a] + counts[b]) for a, b in class_pairs(len(counts))), reverse=True)


def pairs_plan(sizes, threads):
    """:meth:`PairsKRR.memory_plan`."""
    from kopt.numerics.memory import matrices
    from kopt.nystrom.system import system_plan

    n, d = sizes.n, sizes.d
    problem = sizes.problem
    if problem is not None and (problem.preprocessor.target != "multiclass" or problem.n_classes < 3):
        return []  # init refuses these labels, saying why
    rows = pair_rows(sizes)
    if sizes.count >= n:  # exact pairs on worker threads
        at_once = rows[:max(1, int(threads))]
        return [(f"{len(at_once)} pairs' kernel matrices at once ({rows[0]:,} rows the largest), in "
                 f"{sizes.dtype.name} and float64", sum(r * r for r in at_once) * (sizes.itemsize + 8)),
                matrices(2, at_once[0], 1, "float64", "the largest pair's targets and scores")]
    n_ab = rows[0]
    M_ab = max(1, min(n_ab, -(-sizes.count * n_ab // max(1, n))))
    return [*system_plan(sizes.replace(n=n_ab, count=M_ab)),
            matrices(1, n_ab, d, sizes.dtype, "the largest pair's rows"),
            matrices(4, n_ab, 1, "float64", "its targets, scores and residuals"),
            matrices(1, min(sizes.count, n), d, sizes.dtype, "every pair's centers")]


def _pairs_arrays(pairs):
    """A :class:`PairwiseVotes` model's arrays from each pair's ``(coef, columns, intercept)``."""
    return {"coef": np.concatenate([p[0] for p in pairs]),
            "columns": np.concatenate([p[1] for p in pairs]).astype(np.int64),
            "offsets": np.cumsum([0] + [len(p[1]) for p in pairs]).astype(np.int64),
            "intercepts": np.asarray([p[2] for p in pairs])}


def exact_pair(kernel, X, y, lam, weights, loss, fit=0, targets=None):
    """A pair's exact kernel ridge regression on its rows X (every row a center): α = (K + nλW⁻¹)⁻¹ y, solved as
    krr_exact does -- (DKD + nλI)β = Dy, α = Dβ, D = W^½.  K = k(X, X) stays in the kernel's dtype (float32 by
    default, its lower triangle mirrored: the Cholesky reads that one); the factored matrix is float64 and the
    products with K accumulate in float64 a block of rows at a time (:func:`times`), so a pair holds one n_ab² float64
    array beside K.  One Cholesky of n³/3 flops where the Nyström system of the same centers costs ~10x that (n³
    for A, 2n³ to whiten it).

    ``fit``: the first ``fit`` rows' own model too, from the factor's leading block (the factor of their rows' DKD +
    nλI: the module docstring), for their ±1 ``targets`` less their weighted mean.  Returns ``(α, (primal, dual,
    scale), (α_fit, μ_fit))`` (α_fit empty and μ_fit 0 where ``fit`` is 0)."""
    xp = get_namespace(X)
    n = X.shape[0]
    K = symmetric_from_lower(kernel.exact(X, X))
    d = None if weights is None else xp.sqrt(xp.asarray(weights, dtype=np.float64))
    try:
        # the factor with the GIL released: the pairs run on kopt's worker threads (SciPy's factor held the GIL,
        # so two threads solved one pair at a time)
        L = ridge_factor(K.astype(np.float64), n * lam, d, released=True)
    except np.linalg.LinAlgError:
        raise KoptError("the regularized kernel matrix of a pair of classes is not positive definite; raise "
                        "lambda") from None
    alpha = ridge_apply(L, y, d, released=True)
    fit_alpha, fit_mu = xp.zeros(0, dtype=np.float64), 0.0
    if fit:
        t = targets[:fit]
        fit_mu = float(to_numpy(target_offset(t[:, None], None if d is None else d[:fit] ** 2))[0])
        # the leading block: the fit rows' own factor
        fit_alpha = ridge_apply(xp.ascontiguousarray(L[:fit, :fit]), t - fit_mu, None if d is None else d[:fit],
                                released=True)
    del L
    scores = times(K, alpha)
    norm = float(alpha @ scores)
    g = loss.grad(scores, y)
    a = -(g if weights is None else g * weights) / (lam * n)  # the dual point (α itself at the optimum)
    norm_d = float(a @ times(K, a))
    P = primal(loss, y, scores, lam, norm, weights)
    D = dual(loss, y, a, lam, norm_d, weights)
    return alpha, (P, D, lam * (norm + norm_d) + 2.0 * float(xp.mean(xp.abs(loss.value(scores, y))))), (fit_alpha,
                                                                                                          fit_mu)


def times(K, v, block=1024):
    """K v in float64 for a float32 (or float64) K, a block of K's rows at a time (no float64 copy of K)."""
    xp = get_namespace(K)
    out = xp.empty(K.shape[0], dtype=np.float64)
    for lo in range(0, K.shape[0], block):
        out[lo:lo + block] = K[lo:lo + block].astype(np.float64) @ v
    return out
