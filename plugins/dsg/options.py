"""Options of the DSG family (JSON-schema fragments), step-size schedules, spec checks."""
from __future__ import annotations

import math
import warnings

from kopt.contract.iterative import common_options
from kopt.errors import SpecWarning

POS_INT = {"type": "integer", "minimum": 1}

#: Options of all three solvers.  The shared ones (kopt.contract.iterative.common_options) keep the
#: family's defaults: checks (the exact training objective on ``check_rows`` seeded rows) only at
#: the end, ``holdout_every`` null = the same iterations as ``check_every``.
COMMON = {
    **common_options(iterations=1000, batch_size=256, check_every=0, check_rows=1024, holdout_rows=2048),
    "step_size": {"type": "number", "exclusiveMinimum": 0, "default": 1.0,
                  "description": "θ of the step γ_t = θ/(t0 + t) (schedule 'inverse')"},
    "step_schedule": {"enum": ["inverse", "inverse_sqrt", "constant"], "default": "inverse",
                      "description": "γ_t = θ/(t0+t) (Dai et al. 2014, O(1/t) rate), θ/√(t0+t), or θ"},
    "step_offset": {"type": "number", "minimum": 0, "default": 0.0, "description": "t0 of the schedule"},
    "sampling": {"enum": ["uniform", "shuffle"], "default": "uniform",
                 "description": "rows i.i.d. uniform with replacement (Dai et al. 2014), or epoch-wise shuffled"},
    "averaging": {"type": "boolean", "default": False,
                  "description": "return (and evaluate) the averaged iterate (1/t) Σ f_i of Dai et al. (2014) Sec. 7.1"},
    "objective_window": {**POS_INT, "default": 100,
                         "description": "iterations averaged (exponentially) in the per-iteration objective estimate"},
}

UDSG = {
    "grow": {"type": "integer", "minimum": 0, "default": 1,
             "description": "G of Li & Póczos (2016) Alg. 3: iterations per period that add a new feature block"},
    "reuse": {"type": "integer", "minimum": 0, "default": 1,
              "description": "U of Li & Póczos (2016) Alg. 3: iterations per period that update a uniformly drawn old block"},
}

_POS_OR_NULL = {"oneOf": [{"type": "number", "exclusiveMinimum": 0}, {"type": "null"}], "default": None}

CDSG = {
    "step_cap": {"oneOf": [{"type": "number", "exclusiveMinimum": 0}, {"type": "null"}, {"const": "auto"}],
                 "default": "auto",
                 "description": "θ': a re-use step is at most θ'/(t0+t) (Li & Póczos 2016, Thm. 14); 'auto': 2 × step_size "
                                "(1 × under a constant schedule); null: no cap"},
    "grad_bound": {**_POS_OR_NULL,
                   "description": "M ≥ |ℓ'| of eq. 9; null: use the batch's mean ℓ'² for M² (an estimate of E ℓ'² ≤ M²)"},
    "candidates": {"type": "integer", "minimum": 0, "default": 32,
                   "description": "old blocks checked per iteration, drawn uniformly; 0: all (Li & Póczos's rule, one "
                                  "fused prediction + adjoint of every block; measured slower, docs/design/dsg-family.md)"},
    "variance": {"oneOf": [{"type": "number", "minimum": 0}, {"type": "null"}], "default": None,
                 "description": "σ² of eq. 9 (variance of the feature products); null: estimated on 128 rows"},
}


def step_cap(options):
    """θ' of Li & Póczos (2016) Thm. 14 (None: no cap).

    'auto' allows re-use steps up to twice the new-block step while the steps decay, and no
    longer than it under a constant schedule: a constant step is tuned near the stability limit,
    and 2γ there makes the re-used block oscillate (each overshoot licenses the next re-use).
    """
    cap = options.step_cap
    if cap != "auto":
        return cap
    theta = options.step_size
    return theta if options.step_schedule == "constant" else 2.0 * theta


def schedule(options, t):
    """The step-size factor γ_t / θ of iteration t (1-based)."""
    s = options.step_schedule
    x = options.step_offset + t
    if s == "inverse":
        return 1.0 / x
    if s == "inverse_sqrt":
        return 1.0 / math.sqrt(x)
    return 1.0


def check_udsg(options):
    """Spec problems of UDSG's ``grow``/``reuse`` (``(path, message)`` pairs)."""
    G, U = options.grow, options.reuse
    if G + U == 0:
        yield ("solver", "grow"), (
            "grow + reuse = 0 (G + U = 0 in Li & Póczos (2016) Alg. 3): a period would have no iterations; "
            "set grow >= 1 (grow: 1, reuse: 1 is the paper's setting)"
        )
    elif G == 0:
        yield ("solver", "grow"), (
            f"grow = 0 never adds a feature block, so the {U} re-use iterations would have no block to update; "
            "set grow >= 1"
        )


def check_cdsg(options):
    """Spec problems of CDSG's ``step_cap`` (``(path, message)`` pairs)."""
    cap, theta = options.step_cap, options.step_size
    if isinstance(cap, (int, float)) and cap < theta:
        yield ("solver", "step_cap"), (
            f"step_cap θ' = {cap} is below step_size θ = {theta}; Li & Póczos (2016) Thm. 14 needs θ ≤ θ' "
            "(a re-use step must be allowed to be at least as long as a new-block step)"
        )


#: why: docs/design/dsg-family.md (docs/benchmarks/dsg_compare.py)
CANDIDATES_ADVICE = (
    "candidates: 0 checks every old block at each step; checking 32 drawn at random (candidates: 32) was measured "
    "to reach DSG's final objective sooner on both sets measured, where on ijcnn1 checking all never reached it "
    "(docs/design/dsg-family.md)"
)


def advise_cdsg(options, spec):
    """Warn (:class:`kopt.errors.SpecWarning`) where another CDSG option was measured better per second."""
    if options.candidates == 0 and options.iterations > 32:
        warnings.warn(str(spec.error(("solver", "candidates"), CANDIDATES_ADVICE)), SpecWarning, stacklevel=2)
