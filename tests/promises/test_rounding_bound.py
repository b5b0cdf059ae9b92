"""The negative-gap guard: a bound on the rounding of P − D, never a fixed ε multiple (issue 26, item 0).

A round-off "negative gap" once stopped a correct solve on an AVX-512 CPU (relative −6.1e-14 against a
fixed −64ε threshold): the bound must come from the sums actually formed.
"""
from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest

from kopt.contract.iterative import Check, _Stopping, rounding_bound
from kopt.errors import KoptError


def _problem(n, count=0, dtype="float64"):
    return SimpleNamespace(n=n, features=SimpleNamespace(count=count, dtype=dtype), dtype=np.dtype(dtype),
                           loss=SimpleNamespace(name="square"))


def _solver():
    return SimpleNamespace(name="demo", stopping="gap", criterion_name="criterion")


@pytest.mark.parametrize("n", [10, 1_000, 100_000])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_the_bound_covers_every_association_order_of_a_cancelling_sum(n, dtype):
    """P and D formed as sums of large cancelling terms, in the orders different BLAS kernels use."""
    rng = np.random.default_rng(n)
    terms = (rng.standard_normal(n) * 10.0 ** rng.uniform(-2, 2, n)).astype(dtype)
    terms = np.concatenate([terms, -terms[: n // 2] * (1 + 1e-3)]).astype(dtype)  # cancellation
    exact = math.fsum(terms.astype(np.float64))
    orders = [float(terms.sum()), float(np.cumsum(terms)[-1]), float(terms[::-1].sum()),
              float(terms[rng.permutation(terms.size)].sum()), float((terms.reshape(1, -1) @ np.ones(terms.size, dtype))[0])]
    check = Check(objective=exact, dual=0.0, scale=float(np.abs(terms.astype(np.float64)).sum()), terms=terms.size)
    bound = rounding_bound(check, _problem(terms.size, dtype=dtype))
    for value in orders:
        assert abs(value - exact) <= bound / 2  # P and D each get half of the bound


def test_the_bound_grows_with_rows_features_and_the_precision():
    check = Check(objective=1.0, dual=0.5)
    small, large = rounding_bound(check, _problem(100)), rounding_bound(check, _problem(100_000))
    assert large > 500 * small
    assert rounding_bound(check, _problem(100, count=10_000)) > 50 * small
    assert rounding_bound(check, _problem(100, dtype="float32")) > 1e8 * small
    # the terms' size, not the values': a dual formed from large cancelling terms rounds more
    assert rounding_bound(Check(objective=1.0, dual=0.5, scale=1e3), _problem(100)) == pytest.approx(small * 1e3 / 1.5)


def test_round_off_below_zero_converges_and_a_real_violation_is_an_error():
    problem = _problem(320, count=64)
    judge = _Stopping(_solver(), problem, tol=1e-6)
    P = 0.152
    # the figure from the report: P − D = −9.35e-15 on 320 rows and 64 Nystrom centers is rounding
    assert judge.judge(4, Check(objective=P, dual=P + 9.35e-15, scale=0.39)) is True
    assert judge.status == "converged"
    # a dual above the primal by a share of its terms is a wrong conjugate, whatever the CPU
    with pytest.raises(KoptError, match=r"duality gap is negative.*beyond the rounding bound"):
        _Stopping(_solver(), problem, tol=1e-6).judge(4, Check(objective=P, dual=P + 1e-3 * 0.39, scale=0.39))
