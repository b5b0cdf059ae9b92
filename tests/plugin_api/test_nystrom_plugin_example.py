"""The guide's third-party solver on Nyström centers (docs/plugin-guide.md, "Solvers on Nyström centers"), and a
solver's ``default_feature_kind``.

``tests/thirdparty/kopt_nystrom_logistic`` is kernel logistic regression on the spec's centers by Newton steps, each
solved by the public preconditioned CG (:class:`kopt.nystrom.NystromCG`) on reweighted rows, certified by
:func:`kopt.nystrom.certificate`: it passes ``check_solver`` and closes its duality gap to float64 rounding, importing
only kopt's public modules.
"""
from __future__ import annotations

import ast

import numpy as np
import pytest
from helpers import HERE, _registered_module

from kopt.errors import SpecError
from kopt.spec import load_spec
from kopt.testing import check_solver

PACKAGE = HERE / "thirdparty" / "kopt_nystrom_logistic" / "__init__.py"
GUIDE = HERE.parent / "docs" / "plugin-example-nystrom.md"
MARKER = "<!-- the file tests/thirdparty/kopt_nystrom_logistic/__init__.py, checked by tests/plugin_api/test_nystrom_plugin_example.py -->"


def _public(module):
    """Whether ``module`` is one of the engine's public modules a third-party solver imports."""
    return (module in ("kopt.nystrom", "kopt.models.predictors")
            or module.startswith(("kopt.nystrom.", "kopt.contract.", "kopt.numerics.")))


def nystrom_logistic():
    return _registered_module("kopt_nystrom_logistic", "nystrom_logistic")


def test_the_example_passes_check_solver_and_closes_its_gap(tmp_path):
    with nystrom_logistic():
        out = check_solver("nystrom_logistic", out_dir=tmp_path, spec_overrides={"solver": {"tol": 1e-10}})
    r = out.result
    assert "answer" in out.ran and all(a["status"] == "converged" for a in out.answers)
    assert out.spec["model"]["features"]["kind"] == "nystrom"  # the solver's default kind, not given by the spec
    assert r.status == "converged" and r.success and 0 <= r.info["rel_gap"] <= 1e-10
    assert r.n_iter <= 8  # Newton: quadratic from the second step on (5 on this problem)
    assert r.info["n_centers"] <= 256 and r.info["passes"] > r.n_iter
    assert r.metrics["accuracy"] > 0.8
    assert out.resumed.n_iter == r.n_iter


def test_the_example_is_the_same_model_on_one_and_two_threads(tmp_path):
    from kopt.testing import solver_check_data

    X, y, Xt, yt = solver_check_data("binary", n=300, n_test=50, d=3, seed=1)
    spec = {"model": {"loss": {"name": "logistic"}, "kernel": {"name": "gaussian", "bandwidth": 1.3},
                      "features": {"count": 64}, "regularizer": {"name": "l2", "lambda": 0.01}},
            "solver": {"name": "nystrom_logistic", "tol": 1e-10}, "backend": "numpy"}
    import kopt

    with nystrom_logistic():
        a, b = (kopt.solve({**spec, "solver": {**spec["solver"], "threads": k}}, data=(X, y, Xt, yt), write=False)
                for k in (1, 2))
    assert a.status == b.status == "converged" and a.n_iter == b.n_iter
    for key, arr in a.model.predictor.arrays.items():
        assert np.array_equal(arr, b.model.predictor.arrays[key]), key


def test_the_example_imports_only_kopts_public_modules():
    imported = []
    for node in ast.walk(ast.parse(PACKAGE.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "kopt":
            imported.append(node.module)
        elif isinstance(node, ast.Import):
            imported += [a.name for a in node.names if a.name.split(".")[0] in ("kopt", "kopt_plugins")]
    assert imported and all(_public(m) for m in imported), imported
    assert "kopt_plugins" not in PACKAGE.read_text(encoding="utf-8")


def test_the_plugin_guide_shows_the_example_whole():
    guide = GUIDE.read_text(encoding="utf-8")
    assert guide.count(MARKER) == 1
    block = guide.split(MARKER, 1)[1].split("```python\n", 1)[1].split("\n```\n", 1)[0] + "\n"
    assert block == PACKAGE.read_text(encoding="utf-8")


# -- default_feature_kind --------------------------------------------------------------------------------

def _spec(solver, loss="square", **features):
    loss = {"name": "square", "target": "binary"} if loss == "binary_square" else {"name": loss}
    model = {"loss": loss, "kernel": {"name": "gaussian", "bandwidth": 1.0},
             "regularizer": {"name": "l2", "lambda": 1e-3}}
    if features:
        model["features"] = features
    return {"model": model, "solver": {"name": solver}, "data": {"train": "rows.csv"}}


@pytest.mark.parametrize("solver,loss", [("krr_nystrom", "square"), ("krr_pcg", "square"),
                                         ("svm_nystrom", "squared_hinge"), ("krr_pairs", "binary_square")])
def test_a_nystrom_solver_named_alone_gets_nystrom_centers(solver, loss):
    spec = load_spec(_spec(solver, loss), check_files=False)
    assert spec["model"]["features"]["kind"] == "nystrom"
    assert "kind" not in (spec.given["model"].get("features") or {})  # chosen by the solver, not by the author


@pytest.mark.parametrize("solver", ["joker", "auto", "dsg", "krr_exact"])
def test_the_other_solvers_keep_random_features_by_default(solver):
    assert load_spec(_spec(solver), check_files=False)["model"]["features"]["kind"] == "random"


def test_a_kind_given_is_kept_and_a_wrong_one_still_refused():
    spec = load_spec(_spec("joker", kind="nystrom", count=64), check_files=False)
    assert spec["model"]["features"]["kind"] == "nystrom"
    with pytest.raises(SpecError, match="solver 'krr_nystrom' handles features of kind nystrom, not 'random'") as e:
        load_spec(_spec("krr_nystrom", kind="random"), check_files=False)
    assert "model.features.kind" in str(e.value)


def test_a_default_kind_the_solver_does_not_handle_fails_the_interface_check(tmp_path):
    from helpers import example_solver

    GD = example_solver()

    from kopt.contract.iterative import IterativeSolver

    Wrong = type("WrongDefault", (GD,), {"name": "wrong_default", "default_feature_kind": "nystrom"})
    assert issubclass(Wrong, IterativeSolver)
    with pytest.raises(AssertionError, match="default_feature_kind = 'nystrom' is not one of its feature_kinds"):
        check_solver(Wrong, out_dir=tmp_path)
