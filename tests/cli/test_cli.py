"""The command line: exit statuses and outputs."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from helpers import regression_csv

import kopt
from kopt.cli import main

REPO = Path(__file__).resolve().parents[2]

SPEC = """\
name: cli
data: {train: train.csv, test: test.csv, label: 0, standardize_target: true}
model:
  loss: {name: square}
  kernel: {name: gaussian, bandwidth: median}
  regularizer: {name: l2, lambda: 1.0e-3}
  features: {dtype: float64}
solver: {name: krr_exact}
backend: numpy
output: {dir: out}
"""


@pytest.fixture()
def workdir(tmp_path, monkeypatch):
    regression_csv(tmp_path / "train.csv", n=300, seed=0)
    regression_csv(tmp_path / "test.csv", n=100, seed=1)
    (tmp_path / "spec.yaml").write_text(SPEC)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_solve_then_predict(workdir, capsys):
    assert main(["solve", "spec.yaml"]) == 0
    out = capsys.readouterr().out
    assert "krr_exact finished" in out and "test rmse" in out and "duality gap" in out
    assert {"model.json", "model.npz", "report.json"} <= {p.name for p in (workdir / "out").iterdir()}
    assert main(["predict", "out/model.json", "test.csv", "--out", "pred.csv"]) == 0
    err = capsys.readouterr().err
    assert "rmse" in err and "(100 rows)" in err
    P = np.loadtxt(workdir / "pred.csv", delimiter=",", skiprows=1)
    report = json.loads((workdir / "out" / "report.json").read_text())
    truth = np.loadtxt(workdir / "test.csv", delimiter=",")[:, 0]
    assert np.sqrt(np.mean((P[:, 0] - truth) ** 2)) == pytest.approx(report["metrics"]["rmse"], rel=1e-6)


def test_predict_without_label_column(workdir, capsys):
    assert main(["solve", "spec.yaml", "--quiet"]) == 0
    X = np.loadtxt(workdir / "test.csv", delimiter=",")[:, 1:]
    np.savetxt(workdir / "nolabel.csv", X, delimiter=",")
    assert main(["predict", "out/model.json", "nolabel.csv"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "prediction,decision" and len(out) == 101


def test_predict_feature_mismatch_and_bad_model(workdir, capsys):
    assert main(["solve", "spec.yaml", "--quiet"]) == 0
    np.savetxt(workdir / "wide.csv", np.ones((5, 7)), delimiter=",")
    assert main(["predict", "out/model.json", "wide.csv"]) == 2
    assert "trained on 3" in capsys.readouterr().err
    (workdir / "junk.json").write_text("[]")
    assert main(["predict", "junk.json", "test.csv"]) == 2
    assert "not a kopt model file" in capsys.readouterr().err


def test_set_override_and_out(workdir):
    assert main(["solve", "spec.yaml", "--quiet", "--set", "model.regularizer.lambda=0.5", "--out", "o2"]) == 0
    report = json.loads((workdir / "o2" / "report.json").read_text())
    assert report["spec"]["model"]["regularizer"]["lambda"] == 0.5


def test_internal_errors_are_reported_without_traceback(workdir, capsys, monkeypatch):
    def boom(*a, **k):
        raise RuntimeError("kaboom")

    monkeypatch.setattr(kopt.api, "solve", boom)
    assert main(["solve", "spec.yaml"]) == 1
    err = capsys.readouterr().err
    assert "internal error: RuntimeError: kaboom" in err and "Traceback" not in err


def test_validate_schema_is_json(capsys):
    assert main(["validate", "--schema"]) == 0
    schema = json.loads(capsys.readouterr().out)
    names = schema["properties"]["solver"]["properties"]["name"]["enum"]
    assert "krr_exact" in names


def test_validate_with_a_scheduler_refuses_what_cannot_run_distributed(capsys):
    # no cluster is contacted: the spec is checked as kopt solve --scheduler would run it
    assert main(["validate", "dsg_a9a", "quickstart", "--scheduler", "local:2"]) == 0
    assert "dsg_a9a: valid" in capsys.readouterr().out
    assert main(["validate", "joker_svm_higgs12k", "--scheduler", "local:2"]) == 2
    err = capsys.readouterr().err
    assert "$.solver.mode" in err and "features mode" in err
    assert main(["validate", "joker_svm_higgs12k"]) == 0  # the same spec on one machine


def test_plugins_command(capsys):
    assert main(["plugins"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("KIND") and "square" in out and "krr_exact" in out


@pytest.mark.slow
def test_python_dash_m_and_usage_errors(tmp_path):
    ok = subprocess.run([sys.executable, "-m", "kopt", "--version"], capture_output=True, text=True)
    assert ok.returncode == 0 and kopt.__version__ in ok.stdout
    usage = subprocess.run([sys.executable, "-m", "kopt"], capture_output=True, text=True)
    assert usage.returncode == 2 and usage.stderr.startswith("kopt: error: kopt: ") and "kopt --help" in usage.stderr
    unknown = subprocess.run([sys.executable, "-m", "kopt", "solv"], capture_output=True, text=True)
    assert unknown.returncode == 2 and "invalid choice" in unknown.stderr
    for err in (usage.stderr, unknown.stderr):  # one line, as every other error
        assert err.count("\n") == 1 and "usage:" not in err


@pytest.mark.slow
def test_every_shipped_spec_validates():
    specs = sorted((REPO / "specs").glob("*.yaml"))
    assert specs
    for path in specs:
        spec = kopt.load_spec(str(path), check_files=False, check_backend=False)
        assert spec["solver"]["name"]


def test_spec_reference_is_current():
    """docs/spec-reference.md is generated from the schema; regenerate it when a component changes:
    kopt validate --schema --markdown > docs/spec-reference.md"""
    from kopt.contract.registry import registry
    from kopt.spec.reference import render_markdown

    assert (REPO / "docs" / "spec-reference.md").read_text() == render_markdown(registry())
