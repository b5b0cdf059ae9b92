"""Options of the ``gp`` solver (JSON-schema fragments), step sizes, memory sizing and spec checks."""
from __future__ import annotations

import warnings

from kopt.contract.iterative import common_options
from kopt.errors import SpecWarning

POS_INT = {"type": "integer", "minimum": 1}

#: the shared options (iterations T, batch_size B, the check/holdout cadence, threads) and the GP's own
PARAMS = {
    **common_options(iterations=1000, batch_size=64),
    "noise_variance": {"type": "number", "exclusiveMinimum": 0, "default": 0.1,
                       "description": "σ² of the likelihood y = f(x) + ε, ε ~ N(0, σ²), in the units the solver sees "
                                      "(the z-scored target when data.standardize_target); kopt's λ is σ²/n"},
    "variance": {"enum": ["test_points", "operator", "none"], "default": "test_points",
                 "description": "test_points: one KRR-type fit per test point of the data's test split (Dai et al. (2014) "
                                "Sec. 4, formulation 2; the model gives variances at those points only); operator: "
                                "the variance operator Â (formulation 1, App. D; any point, memory O(T²B²)); none: "
                                "the posterior mean only"},
    "step_size": {"type": "number", "exclusiveMinimum": 0, "default": 1.0,
                  "description": "θ: γ_t = θ (schedule constant) or θ/(t0 + t) (schedule inverse)"},
    "step_schedule": {"enum": ["constant", "inverse"], "default": "constant",
                      "description": "constant γ_t = θ, or γ_t = θ/(t0 + t) (Dai et al.'s O(1/t) schedule)"},
    "step_offset": {"type": "number", "minimum": 0, "default": 0.0, "description": "t0 of the inverse schedule"},
    "averaging": {"enum": ["tail", "all", "none"], "default": "tail",
                  "description": "the model is the average of the iterates after ⌊T/2⌋ (tail), of all iterates "
                                 "(all, Dai et al. (2014) Sec. 7.1), or the last iterate (none)"},
    "evaluation": {"enum": ["auto", "track", "regenerate"], "default": "auto",
                   "description": "how the current fits are evaluated on a batch: track (keep their values on all n "
                                  "training rows, O(nF) a step, memory O(n(1+m))), regenerate (Dai et al. 2014, Alg. 1: "
                                  "sum every earlier block, O(tBF) a step, memory O(tF(1+m))), auto (track when "
                                  "n < T·B/2)"},
    "interval_level": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1, "default": 0.95,
                       "description": "coverage level of the predictive interval [lower, upper]"},
    "interval": {"enum": ["observation", "latent"], "default": "observation",
                 "description": "interval for a new observation y* (variance + σ²) or for the latent f(x*)"},
    "max_memory_mb": {"type": "number", "exclusiveMinimum": 0, "default": 2048,
                      "description": "refuse a run whose variance state would exceed this many MiB"},
    "advice": {"type": "boolean", "default": True,
               "description": "warn when another option was measured better on this spec (variance: operator with a "
                              "test split); false when a spec keeps it on purpose, saying why in its comment"},
    "unknown_points": {"enum": ["error", "nan"], "default": "error",
                       "description": "variance: test_points models asked about other points: raise, or return NaN "
                                      "variance and interval there (the mean is always available)"},
    "compare_exact": {"type": "boolean", "default": False,
                      "description": "also compute the closed-form posterior on the test split (n ≤ exact_max_rows) "
                                     "and report the relative L2 errors of the mean and the variance"},
    "exact_max_rows": {**POS_INT, "default": 20000, "description": "largest n for compare_exact"},
}


def gamma(options, t):
    """The step size γ_t of iteration t (1-based)."""
    theta = float(options.step_size)
    if options.step_schedule == "inverse":
        return theta / (float(options.step_offset) + t)
    return theta


def operator_bytes(iterations, batch_size, block_size):
    """Memory of the variance operator for T iterations: β (float64) + cached batch features (float32).

    The coefficients β_ij (i ≤ j) are B × B blocks: T(T+1)/2 · B² numbers -- O(T²), Dai et al. (2014) Sec. 4.
    """
    T, B = int(iterations), int(batch_size)
    return 8 * B * B * T * (T + 1) // 2 + 4 * T * B * int(block_size)


def max_operator_iterations(batch_size, block_size, budget_mb):
    """The largest T whose operator fits in ``budget_mb`` MiB."""
    lo, hi = 0, 1
    while operator_bytes(hi, batch_size, block_size) <= budget_mb * 2**20:
        lo, hi = hi, hi * 2
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if operator_bytes(mid, batch_size, block_size) <= budget_mb * 2**20:
            lo = mid
        else:
            hi = mid
    return lo


def check(options, spec):
    """Yield ``(key_path, message)`` for options that cannot work together.

    ``options``: the solver's typed options; ``spec``: the resolved :class:`kopt.spec.Spec`.
    """
    o = options
    loss, reg = spec.loss, spec.regularizer
    if loss.name != "square":
        yield ("model", "loss", "name"), (
            f"solver 'gp' computes the Gaussian-likelihood posterior, whose mean is the square-loss fit; "
            f"got loss {loss.name!r}: set model.loss.name to square"
        )
    if reg.name != "l2":
        yield ("model", "regularizer", "name"), (
            f"solver 'gp' uses the RKHS-norm (l2) regularizer with λ = noise_variance/n, not {reg.name!r}; "
            "set model.regularizer.name to l2 (its lambda is not used: set solver.noise_variance)"
        )
    if o.variance == "operator":
        T, B, F = o.iterations, o.batch_size, spec["model"]["features"]["block_size"]
        need = operator_bytes(T, B, F) / 2**20
        if need > o.max_memory_mb:
            tmax = max_operator_iterations(B, F, o.max_memory_mb)
            yield ("solver", "iterations"), (
                f"variance: operator keeps T(T+1)/2 blocks of B x B coefficients (memory O(T²)): "
                f"{T} iterations at batch_size {B} need {need:,.0f} MiB, more than max_memory_mb = "
                f"{o.max_memory_mb:g}. Lower solver.iterations (at most {tmax} fit) or solver.batch_size, "
                "raise solver.max_memory_mb, or use solver.variance: test_points (memory O(n·m))"
            )
    if o.variance == "test_points":
        d = spec["data"]
        # (no data.train and no source: the arrays come through the Python API; checked at run time)
        if d.get("train") and not _has_test_split(d):
            yield ("solver", "variance"), (
                "variance: test_points fits one function per test point and needs a test split: set data.test "
                "or data.test_fraction, or use variance: operator (any point)"
            )


def _has_test_split(data):
    return bool(data.get("test") or data.get("test_fraction") or data.get("source"))


#: why: docs/design/gp-variance.md (docs/benchmarks/gp_operator.py, gp_convergence.py)
OPERATOR_ADVICE = (
    "variance: operator is measured far less accurate than variance: test_points, which this spec's test split "
    "allows: on Dai et al.'s Fig. 5 set-up its variance stays far from the closed form in the memory that caps T "
    "(O(T²B²)), where the test-point fits come close (docs/design/gp-variance.md); "
    "use the operator for points not known in advance"
)


def advise(options, spec):
    """Warn (:class:`kopt.errors.SpecWarning`) where another option of this solver was measured better."""
    if options.advice and options.variance == "operator" and _has_test_split(spec["data"]):
        warnings.warn(str(spec.error(("solver", "variance"), OPERATOR_ADVICE)), SpecWarning, stacklevel=2)
