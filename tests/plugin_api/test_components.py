"""Component base classes: parameters read from typed options, declared capabilities, public helpers."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from kopt.contract.bandwidth import median_distance, resolve_bandwidth, scale_distance
from kopt.contract.components import Kernel, Loss
from kopt.contract.registry import registry
from kopt.numerics.prox import newton_prox
from kopt.testing import check_prox

REG = registry()
COMPONENTS = [(kind, name) for kind in ("loss", "kernel", "regularizer") for name in REG.names(kind)]


@pytest.mark.parametrize("kind,name", COMPONENTS)
def test_parameters_live_in_options_only(kind, name):
    """No built-in copies a parameter into an attribute: ``self.options`` is the one place."""
    cls = REG.get(kind, name)
    given = {k: s["default"] for k, s in cls.params.items() if "default" in s}
    given.update({"bandwidth": 1.5} if "bandwidth" in cls.params else {})
    given.update({"lambda": 0.1} if kind == "regularizer" else {})
    inst = cls(**given)
    fields = {f.name for f in dataclasses.fields(inst.options)}
    copied = (set(vars(inst)) & fields) - {"target"}  # target: a declared class attribute set per instance
    assert not copied, f"{kind} {name!r} copies parameters {sorted(copied)} into attributes"


def test_declared_capabilities_have_defaults():
    loss = Loss()
    assert loss.has_offset is False and loss.has_balance_weights is False
    with pytest.raises(NotImplementedError, match="has no offset"):
        loss.offset_grad(np.zeros(2), 0.0)
    with pytest.raises(NotImplementedError, match="has no row weights"):
        loss.balance_weights(np.zeros(2))
    assert REG.get("loss", "novelty").has_offset and REG.get("loss", "kl_density_ratio").has_balance_weights
    flags = {n: (REG.get("loss", n).has_offset, REG.get("loss", n).has_balance_weights) for n in REG.names("loss")}
    assert [n for n, f in flags.items() if any(f)] == ["kl_density_ratio", "novelty"]


class FeaturesOnly(Kernel):
    name = "test_features_only"

    def features(self, X, params, out=None):
        return X @ params["W"]


def test_kernel_fast_path_defaults_fall_back_on_features():
    k = FeaturesOnly()
    X = np.arange(6.0).reshape(3, 2)
    assert k.prepare_rows(X) is X
    Z, scale = k.raw_features(X, {"W": np.eye(2)})
    assert scale == 1.0 and np.array_equal(Z, X)


def test_regularizer_weight_is_read_from_options():
    reg = REG.get("regularizer", "elastic_net")(**{"lambda": 0.25})
    assert reg.lam == 0.25 and reg.options.l1_ratio == 0.5 and reg.strong_convexity() == 0.125


@pytest.mark.parametrize("name,params,closed_form", [("square", {}, True), ("huber", {"delta": 0.7}, True),
                                                     ("squared_hinge", {}, True), ("logistic", {}, False),
                                                     ("kl_density_ratio", {}, False)])
def test_newton_prox_is_the_prox(name, params, closed_form):
    loss = REG.get("loss", name)(**params)
    rng = np.random.default_rng(1)
    y = {"real": 2.0 * rng.standard_normal(30), "binary": rng.choice([-1.0, 1.0], 30),
         "two_sample": rng.integers(0, 2, 30).astype(float)}[loss.target]
    u = y + rng.standard_normal(30)
    for step in (0.1, 1.0, 10.0):
        z = newton_prox(loss, u, y, step)
        assert z.dtype == u.dtype and z.shape == u.shape
        if closed_form:
            np.testing.assert_allclose(z, loss.prox(u, y, step), rtol=1e-10, atol=1e-12)

    class ViaNewton(type(loss)):
        def prox(self, u, y, step):
            return newton_prox(self, u, y, step)

    assert check_prox(ViaNewton(**params), u, y)


def test_resolve_bandwidth_applies_the_median_heuristic():
    X = np.random.default_rng(2).standard_normal((300, 4))
    lap = REG.get("kernel", "laplacian")
    given = {"bandwidth": "median", "bandwidth_factor": 0.5, "bandwidth_subsample": 100}
    out = resolve_bandwidth(lap, given, X, seed=3)
    assert out["bandwidth"] == pytest.approx(0.5 * median_distance(X, "l1", 100, seed=3))
    assert given["bandwidth"] == "median"  # not modified
    # the default rule, scale (docs/defaults.md)
    assert resolve_bandwidth(lap, {}, X, seed=3)["bandwidth"] == pytest.approx(scale_distance(X, "l1", 2000, 3))
    assert resolve_bandwidth(lap, {"bandwidth": 2.0}, X, seed=3) == {"bandwidth": 2.0}
    assert resolve_bandwidth(REG.get("kernel", "chi2"), {"sincos": False}, X, seed=3) == {"sincos": False}
    kernel = lap(**out)
    assert kernel.bandwidth == out["bandwidth"]
    with pytest.raises(ValueError, match="bandwidth_factor"):
        resolve_bandwidth(lap, {"bandwidth_factor": -1.0}, X, seed=3)


def test_resolve_bandwidth_matches_the_spec_engine():
    from kopt.running.assemble import build_kernel
    from kopt.spec import load_spec

    X = np.random.default_rng(3).standard_normal((400, 3))
    spec = load_spec({"model": {"loss": {"name": "square"}, "form": "dual",
                                "kernel": {"name": "matern", "bandwidth_factor": 2.0, "bandwidth_subsample": 150}},
                      "solver": {"name": "krr_exact"}, "backend": "numpy"})
    params = {k: v for k, v in spec["model"]["kernel"].items() if k != "name"}
    want = resolve_bandwidth(REG.get("kernel", "matern"), params, X, spec["seed"])["bandwidth"]
    assert build_kernel(spec, X).bandwidth == pytest.approx(want, rel=0, abs=0)
