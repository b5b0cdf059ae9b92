"""scikit-learn's estimator checks on every kopt estimator, with small fast settings.

Each instance runs every check of ``sklearn.utils.estimator_checks``; the ones it is expected to fail
are listed, with their reasons, by :func:`kopt.sklearn.expected_failed_checks` (docs/sklearn.md
repeats the list).  They run as strict xfails -- a refused sample weight, an iterative solver's run
on repeated rows, the median bandwidth fail by construction, and a pass there is a change to look
at -- except the float32 rows (:data:`FLOAT32_ROUNDING`): there one row at a time or permuted rows
score the same to float32 rounding, 1e-8 to 1e-5 of the scale on these checks' data, and whether that
lands under the checks' 1e-7 bound is luck of the data and of the CPU's BLAS kernel (an XPASS there
says nothing).
"""
from __future__ import annotations

import warnings

import pytest

pytest.importorskip("sklearn", minversion="1.6")

from sklearn.utils.estimator_checks import parametrize_with_checks  # noqa: E402

from kopt.sklearn import GPRegressor, KernelClassifier, KernelRegressor, expected_failed_checks  # noqa: E402

FAST = {"block_size": 32, "count": 64}

INSTANCES = [
    # the defaults: solver auto (Nystrom centers, bandwidth and lambda chosen; one-hot square loss)
    KernelClassifier(backend="numpy"),
    # joker, exact kernel (squared hinge; one-vs-rest for more classes)
    KernelClassifier(loss="squared_hinge", solver="joker", lam=1e-3, solver_options={"iterations": 200},
                     backend="numpy"),
    # logistic loss on joker's random-feature route: predict_proba, one-vs-rest probabilities
    KernelClassifier(loss="logistic", lam=1e-3, features=FAST, solver="joker",
                     solver_options={"mode": "features", "iterations": 100}, backend="numpy"),
    # dsg: sample weights, binary only (logistic)
    KernelClassifier(loss="logistic", solver="dsg", lam=1e-3, features={"block_size": 32},
                     solver_options={"iterations": 30, "batch_size": 8}, backend="numpy"),
    # softmax (multiclass) on udsg
    KernelClassifier(loss="softmax", solver="udsg", lam=1e-3, features={"block_size": 32},
                     solver_options={"iterations": 40, "batch_size": 8, "step_size": 2.0}, backend="numpy"),
    KernelRegressor(backend="numpy"),
    KernelRegressor(loss="huber", lam=1e-3, features=FAST, solver="joker",
                    solver_options={"mode": "primal", "iterations": 20}, backend="numpy"),
    # exact KRR with weights and a numeric bandwidth: the weight-equivalence checks pass exactly
    KernelRegressor(solver="krr_exact", bandwidth=2.0, lam=1e-3, features={"dtype": "float64"}, backend="numpy"),
    KernelRegressor(solver="cdsg", lam=1e-3, features={"block_size": 32},
                    solver_options={"iterations": 40, "batch_size": 8, "step_size": 1.0, "step_schedule": "constant"},
                    backend="numpy"),
    GPRegressor(iterations=40, batch_size=16, features={"block_size": 32}, backend="numpy"),
    GPRegressor(backend="numpy"),  # the defaults: iterations="auto" keeps the checks' tiny inputs to seconds
]


#: expected failures that a float32 rounding difference under the checks' bound can pass on a given CPU
FLOAT32_ROUNDING = {"check_methods_subset_invariance", "check_methods_sample_order_invariance"}
#: expected failures a check's data passes where no row lies near the boundary (margin losses' calibrated
#: probabilities against the score's sign): strictness would test the data, not the estimator
NEAR_BOUNDARY = {"check_classifiers_train"}


@pytest.mark.slow
@parametrize_with_checks(INSTANCES)
def test_estimator_checks(estimator, check, request):
    name = check.func.__name__  # parametrize_with_checks hands functools.partial(check_function, estimator name)
    reason = expected_failed_checks(estimator).get(name)
    if reason is not None:
        request.applymarker(pytest.mark.xfail(reason=reason, strict=name not in FLOAT32_ROUNDING | NEAR_BOUNDARY))
    with warnings.catch_warnings():
        # small iteration caps: some solvers stop before their tolerance (warned, not an error)
        warnings.simplefilter("ignore", category=Warning)
        check(estimator)


def test_expected_failures_have_reasons():
    for est in INSTANCES:
        for name, reason in expected_failed_checks(est).items():
            assert name.startswith("check_") and len(reason) > 20
    # the exact solver with a numeric bandwidth and float64 features is expected to pass every check
    assert expected_failed_checks(INSTANCES[7]) == {}
