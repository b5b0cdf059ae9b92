"""The ``answer`` part of :func:`kopt.testing.check_solver`: does the solver reach the optimum it claims?

The mechanics of the contract (status, certificate, resume, ...) pass for a solver whose gradient
forgets the regularizer: it runs, reports, checkpoints and resumes, only towards the wrong point.
This part solves small seeded problems whose optimum is known and compares:

* the square loss (a ``real`` target), whose optimum is the closed form of ridge regression, and
  the logistic loss (a smooth ``binary`` loss), whose optimum is found here by Newton's method to a
  gradient norm of 1e-13 (tests/plugin_api/test_solver_contract.py checks it against ``joker`` solved to a
  relative gap of 1e-10);
* on :data:`ANSWER_ROWS` rows in 3 dimensions, λ = :data:`ANSWER_LAMBDA` and the gaussian kernel at
  bandwidth :data:`ANSWER_BANDWIDTH` (not 1, where a missing factor of either cancels);
* in the hypothesis space of the model the solver returns (:func:`reference_space`): the span of a
  ``kernel_expansion``'s support rows (the exact kernel when they are the training rows), the M
  random features of ``model.features`` for a ``feature_expansion`` over that fixed map (ψ = φ/√M,
  ‖f‖² = ‖θ‖²), the inputs for a ``linear`` model, else (a growing expansion, a solver's own
  predictor) the exact kernel or those random features, whichever optimum is nearer.

A solver reaches the answer when its reported objective P is within ``rtol`` of the optimum P*
(|P − P*| ≤ rtol·|P*|) after at most ``budget`` iterations, and, for the dual form, its relative
duality gap is at most its ``tol`` (the answer runs set ``tol`` = ``rtol``).  There is no answer
check for the ``gp`` form (no objective) or a regularizer other than ``l2`` (the references are
those of λ/2‖f‖²).
"""
from __future__ import annotations

import copy
import math

import numpy as np

#: the reference problems: (loss, target); each runs when the solver and the spec engine accept it
ANSWER_LOSSES = (("square", "real"), ("logistic", "binary"))
ANSWER_LAMBDA = 1.0e-2
ANSWER_BANDWIDTH = 1.3
ANSWER_ROWS = 300
ANSWER_FEATURES = {"count": 64, "block_size": 32}
#: the default tolerance on the objective (and the answer runs' ``tol``)
ANSWER_RTOL = 1.0e-4


def answer_spec(contract_spec, cls, loss, *, budget, rtol, out_dir):
    """The contract's spec (overrides merged) set up for one reference problem (a new dict)."""
    from ..contract.registry import registry

    spec = copy.deepcopy(contract_spec)
    model = spec["model"]
    model["loss"] = {"name": loss}
    model["regularizer"] = {**model.get("regularizer", {}), "lambda": ANSWER_LAMBDA}
    model["features"] = {**model.get("features", {}), **ANSWER_FEATURES}
    kernel_cls = registry().get("kernel", model["kernel"]["name"])
    bandwidth = model["kernel"].get("bandwidth")
    if "bandwidth" in kernel_cls.params and (not isinstance(bandwidth, (int, float)) or bandwidth == 1):
        model["kernel"]["bandwidth"] = ANSWER_BANDWIDTH
    spec["data"] = {**spec.get("data", {}), "standardize": False}
    if "iterations" in cls.params:
        spec["solver"]["iterations"] = int(budget)
    if "tol" in cls.params:
        spec["solver"]["tol"] = float(rtol)
    spec["output"] = {"dir": str(out_dir), "checkpoint_every": 0}
    return spec


def answer_budget(cls, budget):
    """The iterations an answer run gets: ``budget``, else the solver's default ``iterations`` (None: no cap)."""
    if budget is not None:
        return int(budget)
    schema = cls.params.get("iterations")
    return schema.get("default") if isinstance(schema, dict) else None


def answer_data(target, seed):
    """``(X, y, X_test, y_test)`` of a reference problem: :data:`ANSWER_ROWS` seeded rows."""
    from .data import solver_check_data

    return solver_check_data(target, n=ANSWER_ROWS, n_test=50, d=3, seed=seed)


def reference_spaces(result, spec, X):
    """``[(Z, words)]``: features with ‖f‖² = ‖θ‖² for f = Zθ spanning the model's hypothesis space on rows X.

    One space for a model the check can place; for any other (a growing expansion, a solver's own
    predictor) two candidates, the exact kernel and the M random features of ``model.features``: the
    answer is compared with the nearer optimum.
    """
    kernel = spec.component(("model", "kernel"))
    pred = result.model.predictor
    X = np.asarray(X, dtype=np.float64)
    feats = spec["model"]["features"]
    if pred.name == "kernel_expansion":
        S = np.asarray(pred.arrays["support"], dtype=np.float64)
        whole = S.shape == X.shape and np.array_equal(S, X)
        words = "the exact kernel" if whole else f"the span of k(s, ·) over the model's {S.shape[0]} support rows"
        return [(_whiten(_gram(kernel, X, S), _gram(kernel, S, S)), words)]
    if pred.name == "feature_expansion":
        m, blocks = pred.meta, [int(b) for b in pred.arrays["blocks"]]
        if blocks == list(range(len(blocks))) and len(blocks) * int(m["block_size"]) == feats["count"]:
            return [(_random_features(kernel, X, m["seed"], m["block_size"], feats["count"], m["dtype"]),
                     f"the {feats['count']} random features of model.features (ψ = φ/√M)")]
    if pred.name == "linear" and "b" not in pred.arrays:
        return [(X, "the inputs (a linear model)")]
    K = _gram(kernel, X, X)
    out = [(_whiten(K, K), f"the exact kernel (nearer than the random features for the {pred.name!r} model)")]
    if kernel.has_features and feats["kind"] == "random":
        Z = _random_features(kernel, X, feats["seed"], feats["block_size"], feats["count"], feats["dtype"])
        out.append((Z, f"the {feats['count']} random features of model.features (nearer than the exact kernel for "
                       f"the {pred.name!r} model)"))
    return out


def model_offset(result):
    """A single-output model's fixed intercept (its predictor's ``intercept`` meta: a number or a one-element
    list), else 0: the reference problem then has the same offset, fixed, unpenalised."""
    value = result.model.predictor.meta.get("intercept") if result.model.predictor.meta else None
    if value is None:
        return 0.0
    value = np.ravel(np.asarray(value, dtype=np.float64))
    return float(value[0]) if value.size == 1 else 0.0


def _random_features(kernel, X, seed, block_size, count, dtype):
    """ψ(X) = φ(X)/√M of the map a solver builds from ``model.features`` (float64)."""
    from ..numerics.features import FeatureMap

    fmap = FeatureMap(kernel, X.shape[1], seed=seed, block_size=block_size, count=count, dtype=dtype)
    return np.asarray(fmap.transform(X), dtype=np.float64) / math.sqrt(count)


def _gram(kernel, A, B):
    from ..numerics.backend import to_numpy

    return np.asarray(to_numpy(kernel.exact(A, B)), dtype=np.float64)


def _whiten(Z, R):
    """Features Z R^{-1/2} on R's range (eigenvalues above 1e-12 of the largest): f = Zβ, ‖f‖² = βᵀRβ."""
    ev, U = np.linalg.eigh(0.5 * (R + R.T))
    keep = ev > 1e-12 * max(float(ev[-1]), 1e-300)
    return Z @ (U[:, keep] / np.sqrt(ev[keep]))


def reference_objective(loss, Z, y, lam, *, max_iter=100, offset=0.0):
    """min_θ λ/2‖θ‖² + mean ℓ(y, Zθ + offset) by damped Newton (one step for the square loss); returns P*.
    ``offset``: a model's fixed, unpenalised intercept (``krr_nystrom``'s label mean), 0 for none."""
    from ..numerics.objectives import primal

    n, m = Z.shape
    y = np.asarray(y, dtype=np.float64)
    theta = np.zeros(m)

    def objective(t):
        return primal(loss, y, Z @ t + offset, lam, float(t @ t))

    P = objective(theta)
    for _ in range(max_iter):
        f = Z @ theta + offset
        g = lam * theta + Z.T @ np.asarray(loss.grad(f, y), dtype=np.float64) / n
        if float(np.linalg.norm(g)) <= 1e-13 * max(1.0, abs(P)):
            break
        H = lam * np.eye(m) + (Z.T * np.asarray(loss.curvature(f, y), dtype=np.float64)) @ Z / n
        step = np.linalg.solve(H, g)
        s = 1.0
        while s > 1e-10:
            P_new = objective(theta - s * step)
            if P_new <= P + 1e-4 * s * float(g @ -step) or P_new <= P:
                break
            s *= 0.5
        theta, P = theta - s * step, P_new
    return P


def answer_problems(result, spec, data, *, budget, rtol):
    """``(P*, messages)``: the optimum and what keeps one answer run from it (no messages: it got there)."""
    P = result.objective
    if P is None:  # form gp: no objective (the certificate check requires one for the other forms)
        return None, []
    lam = float(spec["model"]["regularizer"]["lambda"])
    loss = spec.component(("model", "loss"))
    X, y = data[0], data[1]
    offset = model_offset(result)
    refs = [(reference_objective(loss, Z, y, lam, offset=offset), words + (f" and the model's fixed intercept {offset:g}"
                                                                          if offset else ""))
            for Z, words in reference_spaces(result, spec, X)]
    ref, space = min(refs, key=lambda r: abs(P - r[0]))
    rel = (P - ref) / abs(ref)
    bandwidth = spec["model"]["kernel"].get("bandwidth")
    where = (f"on the {loss.name} reference problem ({X.shape[0]} rows, λ = {lam:g}, kernel "
             f"{spec['model']['kernel']['name']}" + (f" at bandwidth {bandwidth:g}" if isinstance(bandwidth, (int, float))
                                                    else "") + f"; optimum over {space})")
    ran = f"after {result.n_iter} iterations" + (f" (budget {budget})" if budget else "")
    state = f"status {result.status!r}" + (f", relative duality gap {result.info['rel_gap']:.3g}"
                                           if result.info.get("rel_gap") is not None else "")
    out = []
    if rel > rtol:
        out.append(f"{where}, {ran} the objective {P:.10g} is {rel:.3g} (relative) above the optimum {ref:.10g}, "
                   f"rtol {rtol:g}; {state}. The iterates do not minimise λ/2‖f‖² + mean ℓ (is the regularizer's "
                   "λθ in the gradient? is the step right?), or the solver needs more iterations: "
                   "check_solver(..., budget=N)")
    elif rel < -rtol:
        out.append(f"{where}, {ran} the objective {P:.10g} is {-rel:.3g} (relative) below the optimum {ref:.10g}, "
                   f"rtol {rtol:g}; {state}. No point of the space is below the optimum: the reported objective is "
                   "not λ/2‖f‖² + mean ℓ of the model (kopt.numerics.objectives.primal computes it)")
    tol = spec["solver"].get("tol")
    if spec["model"]["form"] == "dual" and tol:
        gap = result.info.get("rel_gap")
        if gap is None or not gap <= tol * (1 + 1e-9):
            out.append(f"{where}, {ran} the relative duality gap is {gap!r}, above tol {tol:g} ({state}): a dual "
                       "solver certifies its answer by the gap, and must close it within its budget")
    return ref, out
