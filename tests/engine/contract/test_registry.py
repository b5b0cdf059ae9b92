"""The registry: schemas checked at registration, failed plugins in 'unknown' errors, predictors as components."""
from __future__ import annotations

import numpy as np
import pytest
from helpers import demo_plugin, registered, regression_csv

import kopt
from kopt.contract.components import Loss, Predictor, Solver
from kopt.contract.hookspecs import hookimpl
from kopt.contract.registry import registry, unknown_component
from kopt.errors import ModelFileError, PluginLoadError, SpecError, UnknownComponentError


class TypoLoss(Loss):
    """A loss whose parameter schema has a typo ("flaot")."""

    name = "test_typo_schema"
    params = {"scale": {"type": "flaot", "default": 1.0}}


class FineLoss(Loss):
    name = "test_fine_loss"
    params = {"scale": {"type": "number", "default": 1.0}}


class SchemaTypos:
    @hookimpl
    def kopt_register_losses(self, register):
        register(TypoLoss)
        register(FineLoss)


@pytest.fixture
def errors_restored():
    """registry().errors as it was before the test (tests add failures on purpose)."""
    reg = registry()
    before = len(reg.errors)
    yield reg
    del reg.errors[before:]


def test_bad_parameter_schema_is_a_plugin_load_error_naming_plugin_component_and_problem(errors_restored):
    reg = errors_restored
    before = len(reg.errors)
    with registered(SchemaTypos(), "typo-plugin"):
        new = reg.errors[before:]
        assert len(new) == 1 and isinstance(new[0], PluginLoadError)
        msg = str(new[0])
        assert "plugin 'typo-plugin'" in msg and "loss 'test_typo_schema'" in msg
        assert "params.scale.type" in msg and "'flaot'" in msg
        assert "test_typo_schema" not in reg.components["loss"]  # refused ...
        assert "test_fine_loss" in reg.components["loss"]  # ... the plugin's other components are not
        with pytest.raises(UnknownComponentError) as info:
            reg.entry("loss", "test_typo_schema")
        assert "plugin 'typo-plugin' registers loss 'test_typo_schema' but it was refused" in str(info.value)
        with pytest.raises(SpecError, match="was refused: invalid parameter schema"):
            kopt.load_spec({"model": {"loss": {"name": "test_typo_schema"}}, "solver": {"name": "krr_exact"}})


def test_unknown_component_mentions_failed_plugins():
    failed = [PluginLoadError("kopt_foo = kopt_foo", "kopt-foo", ImportError("no module named 'scipy.nope'"))]
    err = unknown_component("kernel", "x", ["gaussian", "laplacian"], failed=failed)
    assert str(err) == ("<spec>: unknown kernel 'x'; registered kernels: gaussian, laplacian; note: plugin 'kopt_foo' "
                        "(kopt_foo = kopt_foo, from kopt-foo) failed to load (ImportError: no module named "
                        "'scipy.nope'), which may provide it")
    # a component refused under another kind or name is not relevant
    refused = [PluginLoadError("p", "d", ValueError("bad"), plugin="p", kind="loss", component="x")]
    assert "note" not in str(unknown_component("kernel", "x", ["gaussian"], failed=refused))


def test_unknown_component_of_the_registry_lists_its_failures(errors_restored):
    reg = errors_restored
    reg.errors.append(PluginLoadError("kopt_foo = kopt_foo", "kopt-foo", ImportError("boom")))
    with pytest.raises(UnknownComponentError, match=r"note: plugin 'kopt_foo' .*ImportError: boom"):
        reg.get("kernel", "no_such_kernel")
    with pytest.raises(SpecError, match="which may provide it"):  # the spec engine's message too
        kopt.load_spec({"model": {"kernel": {"name": "no_such_kernel"}}, "solver": {"name": "krr_exact"}})


class OwnPredictor(Predictor):
    name = "test_own_predictor"


class PredictorAsSolver:
    @hookimpl
    def kopt_register_solvers(self, register):
        register(OwnPredictor)


def test_predictors_register_through_their_own_hook(errors_restored):
    reg = errors_restored
    before = len(reg.errors)
    with registered(PredictorAsSolver(), "wrong-hook"):
        assert "test_own_predictor" not in reg.components["predictor"]
        msg = str(reg.errors[before])
        assert "expects a subclass of Solver" in msg and "register it through kopt_register_predictors" in msg


def test_builtin_predictors_come_from_the_predictors_plugin():
    reg = registry()
    for name in ("kernel_expansion", "feature_expansion", "linear"):
        entry = reg.entry("predictor", name)
        assert (entry.plugin, entry.distribution) == ("predictors", "kopt")
        assert issubclass(entry.cls, Predictor)
    assert reg.entry("predictor", "gp_posterior").plugin == "gp"
    assert not issubclass(reg.get("predictor", "linear"), Solver)


def _demo_model(tmp_path):
    regression_csv(tmp_path / "data.csv", n=200, seed=4)
    spec = {"data": {"train": str(tmp_path / "data.csv"), "label": 0},
            "model": {"loss": {"name": "demo_logcosh"}, "kernel": {"name": "gaussian", "bandwidth": "median"},
                      "features": {"count": 128, "block_size": 64}, "regularizer": {"name": "l2", "lambda": 1e-3}},
            "solver": {"name": "demo_gd", "iterations": 5}, "backend": "numpy",
            "output": {"dir": str(tmp_path / "run")}}
    res = kopt.solve(spec)
    return res.model.save(tmp_path / "model"), res


def test_model_files_find_third_party_predictors_in_the_registry(tmp_path):
    with demo_plugin():
        path, res = _demo_model(tmp_path)
        model = kopt.load_model(path)
        assert type(model.predictor).__name__ == "DemoExpansion"
        X = np.random.default_rng(0).standard_normal((7, 3))
        np.testing.assert_array_equal(model.decision_function(X), res.model.decision_function(X))
    with pytest.raises(ModelFileError, match="predictor 'demo_expansion' is not registered"):
        kopt.load_model(path)


def test_model_files_find_builtin_predictors_in_the_registry_only(tmp_path, monkeypatch):
    regression_csv(tmp_path / "data.csv", n=120, seed=5)
    spec = {"data": {"train": str(tmp_path / "data.csv"), "label": 0},
            "model": {"loss": {"name": "square"}, "kernel": {"name": "gaussian", "bandwidth": "median"}, "form": "dual",
                      "regularizer": {"name": "l2", "lambda": 1e-2}},
            "solver": {"name": "krr_exact"}, "backend": "numpy", "output": {"dir": str(tmp_path / "run")}}
    path = kopt.solve(spec).model.save(tmp_path / "model")
    assert type(kopt.load_model(path).predictor).__name__ == "KernelExpansion"
    monkeypatch.delitem(registry().components["predictor"], "kernel_expansion")  # no bypass around the registry
    with pytest.raises(ModelFileError, match="predictor 'kernel_expansion' is not registered"):
        kopt.load_model(path)
