"""Mutation tests of kopt.testing's contract: each planted bug of issue 25's table is caught, by the named check.

Three plugins written as a third-party author writes them from docs/plugin-guide.md -- a log-cosh
loss with its conjugate, a product-Laplace kernel, and a momentum (Nesterov) variant of the guide's
example solver -- pass ``check_loss``, ``check_kernel`` and ``check_solver`` as written; each
mutant differs from its plugin by one planted bug, and must fail with the check the table names.
The first four rows were missed before issue 25 (a bug invisible at scale or bandwidth 1, or a
solver that runs, certifies and resumes towards the wrong point).
"""
from __future__ import annotations

import math

import numpy as np
import pytest
from helpers import LogCosh, example_solver

from kopt.contract.components import Kernel
from kopt.contract.iterative import Step
from kopt.numerics.backend import get_namespace
from kopt.testing import check_kernel, check_loss, check_solver

pytestmark = pytest.mark.slow  # every test here: out of the fast loop, pytest -m "not slow"


# -- the plugins, correct ---------------------------------------------------------------------------------------
class ProductLaplace(Kernel):
    """k(x, x') = Π_j exp(−|x_j − x'_j|/σ); ω_j ~ Cauchy(0, 1/σ), φ = √2 cos(ωᵀx + b)."""

    name = "m_laplace"
    summary = "product-Laplace kernel (mutation tests)"
    bandwidth_metric = "l1"
    params = {"bandwidth": {"type": "number", "exclusiveMinimum": 0, "default": 1.0}}

    def exact(self, X, Y):
        xp = get_namespace(X, Y)
        D = xp.abs(X[:, None, :] - Y[None, :, :]).sum(axis=-1)
        return xp.exp(-D / self.options.bandwidth)

    def diag(self, X):
        return np.ones(X.shape[0])

    def sample(self, rng, n_in, count):
        return {"W": rng.standard_cauchy((n_in, count)) / self.options.bandwidth,
                "b": rng.uniform(0.0, 2 * np.pi, count)}

    def features(self, X, params, out=None):
        xp = get_namespace(X)
        return math.sqrt(2.0) * xp.cos(X @ xp.asarray(params["W"], dtype=X.dtype) + xp.asarray(params["b"], X.dtype))


GD = example_solver()


class Nesterov(GD):
    """Nesterov's accelerated gradient over the example's features: y_t = θ_t + β(θ_t − θ_{t−1})."""

    name = "m_nesterov"

    def init(self, problem):
        st = GD.init(self, problem)
        st["previous"] = st["theta"]
        return st

    def save(self, st):
        return {"theta": np.asarray(st["theta"]), "previous": np.asarray(st["previous"])}

    def load(self, problem, saved):
        st = self._start(problem, saved["theta"])
        st["previous"] = problem.xp.asarray(saved["previous"])
        return st

    def step(self, st, t):
        p = st["problem"]
        kappa = (p.lam + 1.0 / st["eta"]) / p.lam  # L/μ
        beta = (math.sqrt(kappa) - 1) / (math.sqrt(kappa) + 1)
        theta, previous = st["theta"], st["previous"]
        point = theta + beta * (theta - previous)
        self._evaluate(st, point)  # the gradient at the extrapolated point
        st["previous"] = theta
        self._evaluate(st, point - st["eta"] * st["grad"])
        return Step(rows=2 * p.n, objective=st["P"])


def _mutant(base, name, **methods):
    return type(f"{base.__name__}_{name}", (base,), {"name": f"{base.name}_{name}", **methods})


# -- the planted bugs ---------------------------------------------------------------------------------------------
def _evaluate(self, st, theta, *, regularized_gradient=True, dual_quadratic=1.0):
    """The example's ``_evaluate`` (tests/thirdparty/kopt_gd_solver), with a switch for each planted bug."""
    from kopt.numerics.objectives import dual, primal

    p = st["problem"]
    loss, y, lam, n = p.loss, p.y, p.lam, p.n
    f, G = st["rows"].predict_adjoint(theta, lambda f, lo, hi: loss.grad(f[:, 0], y[lo:hi])[:, None])
    f, g = f[:, 0], G[:, 0] / n
    alpha = -loss.grad(f, y) / (lam * n)
    st.update(theta=theta, grad=lam * theta + g if regularized_gradient else g,
              P=primal(loss, y, f, lam, float(theta @ theta)),
              D=dual(loss, y, alpha, lam, dual_quadratic * float(g @ g) / lam**2))


def _grad_without_regularizer(self, st, theta):
    _evaluate(self, st, theta, regularized_gradient=False)  # ∇P = (1/n)Ψᵀℓ': λθ forgotten


def _dual_overstated(self, st, theta):
    _evaluate(self, st, theta, dual_quadratic=0.5)  # λ/2 αᵀKα computed as λ/4 ‖Ψᵀα‖²: D too large


def _grad_missing_scale(self, u, y):
    xp = get_namespace(u)
    return xp.tanh((u - xp.asarray(y, dtype=u.dtype)) / self.options.scale)  # no 1/s


def _conj_sign(self, v, y):
    return LogCosh.conj(self, -v, y)


def _sample_sigma(self, rng, n_in, count):
    return {"W": rng.standard_cauchy((n_in, count)) * self.options.bandwidth,  # σ instead of 1/σ
            "b": rng.uniform(0.0, 2 * np.pi, count)}


def _sample_global(self, rng, n_in, count):
    return ProductLaplace.sample(self, np.random.default_rng(), n_in, count)  # a fresh generator, not rng


def _features_without_sqrt2(self, X, params, out=None):
    return ProductLaplace.features(self, X, params) / math.sqrt(2.0)


def _load_drops_momentum(self, problem, saved):
    st = self._start(problem, saved["theta"])
    st["previous"] = st["theta"]  # the momentum θ − θ_prev is lost
    return st


def _load_restarts(self, problem, saved):
    return self.init(problem)


def _step_global_rng(self, st, t):
    st["eta"] *= 1.0 + 1e-3 * np.random.default_rng().random()
    return Nesterov.step(self, st, t)


#: (planted bug, plugin, the check that must catch it, the message it must give); the first four were missed
MUTATIONS = [
    ("solver gradient ignores the regularizer", "solver", Nesterov, {"_evaluate": _grad_without_regularizer},
     r"\(answer\): on the square reference problem .* above the optimum"),
    ("solver dual overstated (‖Ψᵀα‖²/4)", "solver", Nesterov, {"_evaluate": _dual_overstated},
     r"\(answer\): on the square reference problem .*duality gap is negative"),
    ("loss gradient missing its 1/scale", "loss", LogCosh, {"grad": _grad_missing_scale},
     r"at scale=0\.5: loss 'm_logcosh_mutant': primal gradient is not a subgradient"),
    ("kernel sampler at σ instead of 1/σ", "kernel", ProductLaplace, {"sample": _sample_sigma},
     r"at bandwidth=1\.3: kernel 'm_laplace_mutant': E\[φ\(x\)φ\(x'\)\] ≠ k\(x, x'\)"),
    ("loss conjugate with the wrong sign", "loss", LogCosh, {"conj": _conj_sign},
     r"loss 'm_logcosh_mutant': Fenchel–Young inequality"),
    ("kernel sampler on a global generator", "kernel", ProductLaplace, {"sample": _sample_global},
     r"not regenerated from its seed"),
    ("kernel features missing √2", "kernel", ProductLaplace, {"features": _features_without_sqrt2},
     r"kernel 'm_laplace_mutant': E\[φ\(x\)φ\(x'\)\] ≠ k\(x, x'\)"),
    ("solver resume drops the momentum", "solver", Nesterov, {"load": _load_drops_momentum},
     r"\(resume\): interrupted at iteration 6 and resumed, the run gave a different model array"),
    ("solver resume restarts", "solver", Nesterov, {"load": _load_restarts},
     r"\(resume\): interrupted at iteration 6 and resumed, the run gave a different model array"),
    ("solver draws from a global generator", "solver", Nesterov, {"step": _step_global_rng},
     r"\(reproducible\): a second run of the same spec gave a different model array"),
]


def _check(kind, component, tmp_path):
    if kind == "loss":
        return check_loss(component())
    if kind == "kernel":
        return check_kernel(component(), n=5)
    return check_solver(component, out_dir=tmp_path)


@pytest.mark.parametrize("kind,plugin", [("loss", LogCosh), ("kernel", ProductLaplace), ("solver", Nesterov)])
def test_the_plugins_pass_as_written(kind, plugin, tmp_path):
    ran = _check(kind, plugin, tmp_path)
    if kind == "solver":
        assert ran.ran[:6] == ("interface", "spec", "solve", "status", "certificate", "answer")
        assert [a["loss"] for a in ran.answers] == ["square", "logistic"]
    else:
        assert ran


@pytest.mark.parametrize("what,kind,plugin,methods,message", MUTATIONS, ids=[m[0] for m in MUTATIONS])
def test_the_planted_bug_is_caught(what, kind, plugin, methods, message, tmp_path):
    mutant = _mutant(plugin, "mutant", **methods)
    with pytest.raises(AssertionError, match=message):
        _check(kind, mutant, tmp_path)


@pytest.mark.parametrize("what,kind,plugin,methods,message", MUTATIONS[:4], ids=[m[0] for m in MUTATIONS[:4]])
def test_the_four_bugs_pass_the_checks_of_before(what, kind, plugin, methods, message, tmp_path):
    """Without the answer part and the parameters other than 1, the first four mutants pass: the new parts catch them."""
    mutant = _mutant(plugin, "mutant", **methods)
    if kind == "loss":
        assert check_loss(mutant(), vary=False)
    elif kind == "kernel":
        assert check_kernel(mutant(), n=5, vary=False)
    else:
        assert check_solver(mutant, out_dir=tmp_path, skip=("answer",)).result.status == "iteration_cap"
