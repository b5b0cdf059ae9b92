"""Messages in the user's terms: each names the flag, parameter or key the user actually used (the Python parameter
from Python, the CLI flag from the CLI), suggests only alternatives that would accept the request, and never blames
a cause that did not happen."""
from __future__ import annotations

import numpy as np
import pytest
from helpers import check_error, curved_classes

import kopt


def _margin_spec(**extra):
    return {"model": {"loss": {"name": "squared_hinge"}, "kernel": {"name": "gaussian", "bandwidth": 1.0},
                      "regularizer": {"name": "l2", "lambda": 1e-3}, "features": {"count": 30}},
            "solver": {"name": "svm_nystrom"}, "backend": "numpy", **extra}


def test_calibrate_false_is_the_reason_given_for_no_probabilities(tmp_path, capsys, monkeypatch):
    """A model solved with calibrate=False and asked for --proba is told so, not that an older kopt or a Dask
    cluster wrote it."""
    X, y = curved_classes(n=150, seed=4)
    monkeypatch.chdir(tmp_path)
    result = kopt.solve(_margin_spec(), data=(X, y), calibrate=False)
    result.model.save(tmp_path / "model")
    model = kopt.load_model(tmp_path / "model.json")
    with pytest.raises(kopt.errors.KoptError, match="calibrate=False") as caught:
        model.predict_proba(X[:2])
    assert "before calibrations" not in str(caught.value) and "Dask" not in str(caught.value)
    np.savetxt(tmp_path / "x.csv", X[:3], delimiter=",")
    err = check_error(["predict", "model.json", "x.csv", "--labels", "none", "--proba"], capsys,
                      ["--proba", "calibrate=False"])
    assert "before calibrations" not in err


# -- data.held_out -------------------------------------------------------------------------------------------------
HIGGS_SMALL = {"data": {"source": "higgs-12k", "max_rows": 600}, "backend": "numpy",
               "model": {"loss": {"name": "logistic"}, "kernel": {"name": "gaussian"},
                         "regularizer": {"name": "l2", "lambda": 1e-3}, "features": {"count": 64}}}


def test_held_out_refusal_names_only_solvers_that_take_it():
    """adsg's refusal of data.held_out lists the solvers that accept it: never auto, which refuses it too."""
    spec = {**HIGGS_SMALL, "data": {**HIGGS_SMALL["data"], "held_out": {"rows": 50}}, "solver": {"name": "adsg"}}
    with pytest.raises(kopt.SpecError, match="solver 'adsg' takes no row weights") as caught:
        kopt.solve(spec)
    named = str(caught.value).split("solvers that take data.held_out: ")[1].split(", ")
    assert "auto" not in named and "adsg" not in named and named
    reg = kopt.contract.registry.registry()
    assert all(reg.get("solver", n).sample_weight and not reg.get("solver", n).plans for n in named)
    with pytest.raises(kopt.SpecError, match="solver 'auto' holds out its own validation rows"):
        kopt.solve({**spec, "solver": {"name": "auto"}})


@pytest.mark.parametrize("rows,phrase", [(479, "leaves 1 to fit; at least 2 must be left"),
                                         (480, "leaves 0 to fit")])
def test_held_out_that_leaves_too_few_rows_to_fit_is_refused(rows, phrase):
    X, y = curved_classes(n=480, seed=5)
    spec = {**_margin_spec(), "data": {"held_out": {"rows": rows}}}
    with pytest.raises(kopt.SpecError, match=phrase) as caught:
        kopt.solve(spec, data=(X, y))
    assert "$.data.held_out" in str(caught.value)


def test_held_out_that_leaves_one_class_is_refused():
    X = np.random.default_rng(6).standard_normal((20, 2))
    y = np.array([0] * 17 + [1] * 3)
    for seed in range(40):  # a seed whose two rows left to fit are of one class
        spec = {**_margin_spec(), "data": {"held_out": {"rows": 18, "seed": seed}}}
        try:
            kopt.solve(spec, data=(X, y), calibrate=False)
        except kopt.SpecError as exc:
            assert "all have label 0" in str(exc) and "at least two classes" in str(exc)
            return
    pytest.fail("no seed left one class")


# -- loss: auto ------------------------------------------------------------------------------------------------------
def test_loss_auto_on_a_real_target_from_the_cli(tmp_path, capsys, monkeypatch):
    from helpers import regression_csv

    monkeypatch.chdir(tmp_path)
    regression_csv(tmp_path / "data.csv", n=60)
    (tmp_path / "spec.yaml").write_text("data: {train: data.csv, label: 0, test_fraction: 0.2}\n"
                                        "model:\n  loss: {name: auto}\n  kernel: {name: gaussian}\nbackend: numpy\n")
    err = check_error(["solve", "spec.yaml", "-q"], capsys, ["spec.yaml:3:", "$.model.loss.name", "loss 'auto'",
                                                             "real values", "square"])
    assert "multiclass" not in err


def test_kernel_regressor_loss_auto_is_named_as_written():
    from kopt.sklearn import KernelRegressor

    X = np.random.default_rng(0).standard_normal((40, 2))
    with pytest.raises(kopt.SpecError) as caught:
        KernelRegressor(loss="auto").fit(X, X[:, 0])
    text = str(caught.value)
    assert text.startswith("KernelRegressor: loss: loss 'auto'") and "'square' is a" not in text


# -- the face the user came through ---------------------------------------------------------------------------------
def test_scheduler_flag_is_named_not_a_set(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "spec.yaml").write_text("data: {source: higgs-12k}\nmodel:\n  loss: {name: squared_hinge}\n"
                                        "  kernel: {name: gaussian}\n  regularizer: {name: l2, lambda: 0.001}\n"
                                        "solver: {name: svm_nystrom}\n")
    err = check_error(["validate", "spec.yaml", "--scheduler", "local:1"], capsys,
                      ["--scheduler local:1: ", "cannot run on a Dask cluster"])
    assert "--set" not in err and "execution.engine" not in err
    with pytest.raises(kopt.SpecError) as caught:
        kopt.solve("spec.yaml", scheduler="local:1")
    assert str(caught.value).startswith("kopt.solve(scheduler='local:1'): ") and "--scheduler" not in str(caught.value)


def test_out_flag_is_named_not_a_set(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "taken").write_text("a file")
    (tmp_path / "spec.yaml").write_text("model:\n  loss: {name: square}\n  kernel: {name: gaussian}\n"
                                        "data: {train: d.csv}\n")
    (tmp_path / "d.csv").write_text("1,2\n3,4\n")
    err = check_error(["solve", "spec.yaml", "--out", "taken"], capsys, ["--out taken: "])
    assert "--set output.dir" not in err


def test_estimator_on_two_rows_names_its_parameter_not_a_cli_flag():
    from kopt.sklearn import KernelRegressor

    X = np.random.default_rng(0).standard_normal((2, 2))
    with pytest.raises(kopt.SpecError) as caught:
        KernelRegressor().fit(X, X[:, 0])
    text = str(caught.value)
    assert text.startswith("KernelRegressor: solver: ") and "--validation" not in text and "at least 3" in text
    with pytest.raises(kopt.SpecError) as caught:
        KernelRegressor(solver="krr_nystrom", features=2).fit(X, X[:, 0])
    assert str(caught.value).startswith("KernelRegressor: lam: ") and "give λ a number" in str(caught.value)


def test_tune_names_its_flag_on_the_cli_and_its_parameter_in_python(tmp_path, capsys, monkeypatch):
    from helpers import regression_csv

    monkeypatch.chdir(tmp_path)
    regression_csv(tmp_path / "data.csv", n=2)
    (tmp_path / "spec.yaml").write_text("data: {train: data.csv, label: 0}\nmodel:\n  loss: {name: square}\n"
                                        "  kernel: {name: gaussian, bandwidth: 1.0}\n"
                                        "  regularizer: {name: l2, lambda: 0.01}\nsolver: {name: krr_exact}\n")
    check_error(["tune", "spec.yaml", "--validation", "0.2", "-q"], capsys, ["--validation 0.2: ", "at least 3"])
    with pytest.raises(kopt.SpecError) as caught:
        kopt.tune("spec.yaml", validation=0.2)
    assert str(caught.value).startswith("validation=0.2: ")


def test_class_weight_names_the_part_that_failed_in_each_face(tmp_path, capsys, monkeypatch):
    from kopt.sklearn import KernelClassifier

    X, y = curved_classes(n=60, seed=7)
    with pytest.raises(kopt.SpecError) as caught:
        KernelClassifier(class_weight={-1: -1.0}).fit(X, y)
    assert str(caught.value) == "KernelClassifier: class_weight[-1]: a class weight must be a number >= 0, got -1.0"
    monkeypatch.chdir(tmp_path)
    (tmp_path / "spec.yaml").write_text("data: {source: higgs-12k, class_weight: {0: -1.0}}\n"
                                        "model:\n  loss: {name: squared_hinge}\n  kernel: {name: gaussian}\n")
    check_error(["validate", "spec.yaml"], capsys,
                ["spec.yaml:1:", "$.data.class_weight[0]: a class weight must be a number >= 0, got -1.0"])


# -- a third party's solver on Nystrom centers ------------------------------------------------------------------------
def test_a_third_party_nystrom_solver_suggests_only_solvers_that_accept_the_spec():
    """The example plugin (tests/thirdparty/kopt_nystrom_logistic, built on kopt.nystrom.NystromSolver) refuses the
    square loss; its message names the registered solvers whose own checks accept the spec, never a fixed list."""
    from helpers import _registered_module

    spec = {"model": {"loss": {"name": "square", "target": "binary"}, "kernel": {"name": "gaussian"},
                      "regularizer": {"name": "l2", "lambda": 1e-3}},
            "solver": {"name": "nystrom_logistic"}, "data": {"train": "x.csv"}}
    with _registered_module("kopt_nystrom_logistic", "nystrom_logistic"):
        with pytest.raises(kopt.SpecError) as caught:
            kopt.load_spec(spec, check_files=False)
        text = str(caught.value)
        assert "solves the logistic loss only, not 'square'" in text and "(mode: primal" not in text
        named = text.split("solvers that accept this spec: ")[1].split(", ")
        for name in named:  # each one named accepts the spec as written
            kopt.load_spec({**spec, "solver": {"name": name}}, check_files=False)
        assert "svm_nystrom" not in named  # the squared hinge only: it refuses the square loss
        assert "krr_nystrom" in named
