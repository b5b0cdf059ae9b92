"""YAML numbers as people write them: YAML 1.2's float rule everywhere a spec is read.

``1e-6``, ``1E+3``, ``2.5e6`` and ``-2.5e-3`` are numbers in YAML 1.2, JSON and Python; PyYAML (YAML 1.1) reads
them as text.  They are numbers in spec files, ``--set`` values, dicts built from either (``kopt.solve(dict)``),
``kopt validate`` and the spec a model records; a key that takes text keeps the text, and a whole number written
as a float is an integer where a key takes one."""
from __future__ import annotations

import json

import numpy as np
import pytest
import yaml
from helpers import check_error, regression_csv

import kopt
from kopt.cli import main
from kopt.spec.numbers import YAML12_EXPONENT

SPEC = """\
data: {{train: data.csv, label: 0}}
model:
  loss: {{name: square}}
  kernel: {{name: gaussian, bandwidth: {bandwidth}}}
  regularizer: {{name: l2, lambda: {lam}}}
  features: {{count: {count}}}
solver: {{name: krr_pcg, iterations: {iterations}, tol: {tol}}}
backend: numpy
"""


@pytest.fixture()
def workdir(tmp_path, monkeypatch):
    regression_csv(tmp_path / "data.csv", n=40)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _write(workdir, **values):
    given = {"bandwidth": "1.0", "lam": "1e-6", "count": "64", "iterations": "20", "tol": "1e-6",
             **values}
    (workdir / "spec.yaml").write_text(SPEC.format(**given))
    return "spec.yaml"


@pytest.mark.parametrize("text,value", [("1e-6", 1e-6), ("1E+3", 1e3), ("2.5e6", 2.5e6), ("-2.5e-3", -2.5e-3),
                                        (".5e1", 5.0), ("3.E-2", 0.03), ("+1e0", 1.0)])
def test_the_yaml_1_2_float_rule(text, value, workdir):
    assert YAML12_EXPONENT.match(text) and float(text) == value
    lam = kopt.load_spec(_write(workdir, lam="0.1"), [f"model.kernel.bandwidth={text.lstrip('-')}"])
    assert lam["model"]["kernel"]["bandwidth"] == abs(value)


@pytest.mark.parametrize("text", ["1e-6", "1E+3", "2.5e6", "1e5", ".5e1", "3E-2"])
def test_pyyaml_alone_reads_these_as_text(text):
    assert isinstance(yaml.safe_load(f"x: {text}")["x"], str)


@pytest.mark.parametrize("text", ["1e", "e5", "1.0.0e1", "1e-6x", "0x1e5", "1_000e2", "inf", "nan", "1 e5"])
def test_what_is_not_a_yaml_1_2_float(text):
    assert not YAML12_EXPONENT.match(text)


def test_spec_file_numbers(workdir):
    spec = kopt.load_spec(_write(workdir, lam="1e-6", tol="1E-6", bandwidth="2.5e0"))
    assert spec["model"]["regularizer"]["lambda"] == 1e-6 and spec["solver"]["tol"] == 1e-6
    assert spec["model"]["kernel"]["bandwidth"] == 2.5
    assert kopt.load_spec(_write(workdir, bandwidth="1E+1"))["model"]["kernel"]["bandwidth"] == 10.0


def test_set_overrides(workdir, capsys):
    name = _write(workdir, lam="0.001")
    assert main(["validate", name, "--resolved", "--set", "model.regularizer.lambda=1e-6",
                 "--set", "solver.tol=-2.5e-3"]) == 2  # a negative tol is out of range, not a string
    err = capsys.readouterr().err
    assert "$.solver.tol" in err and "got -0.0025" in err and "string" not in err
    assert main(["validate", name, "--resolved", "--set", "model.regularizer.lambda=1e-6"]) == 0
    resolved = yaml.safe_load(capsys.readouterr().out)
    assert resolved["model"]["regularizer"]["lambda"] == 1e-6


def test_dicts_of_strings_from_yaml():
    """A dict PyYAML made from a spec's text: kopt.load_spec and kopt.solve read its 1e-6 as a number."""
    raw = yaml.safe_load("model: {loss: {name: square}, kernel: {name: gaussian, bandwidth: 2.5e0}, "
                         "regularizer: {name: l2, lambda: 1e-3}}\nsolver: {name: krr_exact}\nbackend: numpy\n")
    assert raw["model"]["regularizer"]["lambda"] == "1e-3"
    spec = kopt.load_spec(raw, check_files=False)
    assert spec["model"]["regularizer"]["lambda"] == 1e-3 and spec["model"]["kernel"]["bandwidth"] == 2.5
    rng = np.random.default_rng(0)
    X = rng.standard_normal((60, 2))
    result = kopt.solve(raw, data=(X, X[:, 0]))
    assert result.report["spec"]["model"]["regularizer"]["lambda"] == 1e-3


def test_whole_numbers_where_an_integer_is_wanted(workdir):
    spec = kopt.load_spec(_write(workdir, count="1e2", iterations="2.0e1"), ["seed=1.0", "model.features.block_size=3.2e1"])
    assert spec["model"]["features"]["count"] == 100 and isinstance(spec["model"]["features"]["count"], int)
    assert spec["solver"]["iterations"] == 20 and isinstance(spec["solver"]["iterations"], int)
    assert spec["seed"] == 1 and isinstance(spec["seed"], int)
    assert isinstance(spec["model"]["features"]["block_size"], int)


def test_a_float_seed_and_iterations_solve(workdir, capsys):
    """seed: 1.0 and iterations: 10.0 ended in an internal error (a float handed on as a count)."""
    name = _write(workdir, iterations="10.0")
    assert main(["solve", name, "-q", "--set", "seed=1.0", "--set", "model.features.block_size=32.0"]) == 0
    meta = json.loads((workdir / "runs" / "spec" / "model.json").read_text())
    assert meta["spec"]["seed"] == 1 and meta["spec"]["solver"]["iterations"] == 10
    assert meta["spec"]["model"]["regularizer"]["lambda"] == 1e-6  # the recorded spec holds the number


@pytest.mark.parametrize("key,value,phrases", [
    ("model.features.count", "2.5e0", ["$.model.features.count", "an integer", "2.5"]),
    ("model.features.count", "1e400", ["$.model.features.count", "finite"]),
    ("model.regularizer.lambda", "'1e-6x'", ["$.model.regularizer.lambda", "'1e-6x'"]),
    ("solver.iterations", "1e30", ["$.solver.iterations", "an integer", "1e+30"]),
])
def test_numbers_that_do_not_fit_say_so(workdir, capsys, key, value, phrases):
    check_error(["validate", _write(workdir), "--set", f"{key}={value}"], capsys, phrases)


def test_text_keys_keep_the_text(workdir):
    """A key that takes text keeps a numeric-looking value as written: a run name, a header name, a folder."""
    (workdir / "1e3").write_text("")
    spec = kopt.load_spec(_write(workdir), ["name=1e5", "data.label=2E3", "output.dir=1e-3"], check_files=False)
    assert spec["name"] == "1e5" and spec["data"]["label"] == "2E3" and spec["output"]["dir"] == "1e-3"
