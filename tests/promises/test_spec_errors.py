"""The malformed-spec corpus: every case exits with status 2 and a message a person can act on."""
from __future__ import annotations

import textwrap

import numpy as np
import pytest
from helpers import demo_plugin, extra_components, regression_csv

from kopt.cli import main

GOOD = """\
name: t
data: {train: data.csv, label: 0}
model:
  loss: {name: square}
  kernel: {name: gaussian, bandwidth: median}
  regularizer: {name: l2, lambda: 0.001}
solver: {name: krr_exact}
backend: numpy
"""

# (id, spec text, extra CLI args, phrases that must all appear in stderr)
CASES = [
    ("broken-yaml-flow", "model: {loss: {name: square}\nsolver: x\n", [], ["invalid YAML", "spec.yaml:"]),
    ("broken-yaml-indent", "model:\n  loss:\n    name: square\n   kernel: x\n", [], ["invalid YAML", "spec.yaml:4"]),
    ("empty-file", "", [], ["the spec is empty"]),
    ("top-level-list", "- model\n- solver\n", [], ["must be a mapping"]),
    ("duplicate-key", GOOD + "backend: auto\n", [], ["duplicate key 'backend'"]),
    ("unknown-top-key", GOOD + "solvr: {name: x}\n", [], ["unknown key 'solvr'", "did you mean 'solver'", "spec.yaml:9:1"]),
    ("unknown-model-key", GOOD.replace("  regularizer:", "  regulariser:"), [],
     ["$.model.regulariser", "unknown key 'regulariser'", "did you mean 'regularizer'"]),
    ("unknown-solver-option", GOOD.replace("{name: krr_exact}", "{name: krr_exact, tol: 1}"), [],
     ["$.solver.tol", "unknown key 'tol'", "allowed keys here: jitter, max_rows, name"]),
    ("unknown-kernel-param", GOOD.replace("bandwidth: median}", "bandwith: 2}"), [],
     ["unknown key 'bandwith'", "did you mean 'bandwidth'"]),
    ("seed-not-int", GOOD + "seed: abc\n", [], ["$.seed", "expected an integer", "'abc' (string)"]),
    ("lambda-not-number", GOOD.replace("lambda: 0.001", "lambda: small"), [],
     ["$.model.regularizer.lambda", "got 'small'", "a number >= 0", "spec.yaml:6:"]),
    ("lambda-negative", GOOD.replace("lambda: 0.001", "lambda: -1"), [], ["expected a number >= 0", "got -1"]),
    ("features-count-zero", GOOD.replace("  regularizer:", "  features: {count: 0}\n  regularizer:"), [],
     ["$.model.features.count", ">= 1", "got 0"]),
    ("features-dtype", GOOD.replace("  regularizer:", "  features: {dtype: float16}\n  regularizer:"), [],
     ["$.model.features.dtype", "allowed: float32, float64"]),
    ("backend-enum", GOOD.replace("backend: numpy", "backend: gpu"), [], ["$.backend", "allowed: auto, numpy, cupy"]),
    ("form-near-miss", GOOD.replace("  regularizer:", "  form: primel\n  regularizer:"), [],
     ["$.model.form", "did you mean 'primal'"]),
    ("loss-near-miss", GOOD.replace("{name: square}", "{name: sqare}"), [],
     ["$.model.loss.name", "unknown loss 'sqare'", "did you mean 'square'", "registered losses:"]),
    ("kernel-near-miss", GOOD.replace("name: gaussian", "name: gausian"), [],
     ["unknown kernel 'gausian'", "did you mean 'gaussian'", "spec.yaml:5:"]),
    ("solver-near-miss", GOOD.replace("krr_exact", "krr_exac"), [], ["unknown solver 'krr_exac'", "did you mean 'krr_exact'"]),
    ("regularizer-unknown", GOOD.replace("name: l2", "name: l7"), [], ["unknown regularizer 'l7'", "registered regularizers:"]),
    ("missing-model", "solver: {name: krr_exact}\n", [], ["missing required key 'model'"]),
    ("missing-loss", GOOD.replace("  loss: {name: square}\n", ""), [], ["$.model", "missing required key 'loss'"]),
    ("section-not-mapping", GOOD.replace("solver: {name: krr_exact}", "solver: krr_exact"), [],
     ["$.solver", "expected a mapping", "'krr_exact' (string)"]),
    ("component-without-name", GOOD.replace("{name: square}", "{delta: 1}"), [], ["$.model.loss", "missing required key 'name'"]),
    ("bandwidth-negative", GOOD.replace("bandwidth: median", "bandwidth: -2"), [],
     ["$.model.kernel.bandwidth", "expected a number > 0, got -2", "one of: median, scale"]),
    ("test-fraction-range", GOOD.replace("label: 0}", "label: 0, test_fraction: 1.5}"), [], ["$.data.test_fraction", "< 1"]),
    ("data-format", GOOD.replace("label: 0}", "label: 0, format: parquet}"), [], ["$.data.format", "allowed: auto, csv"]),
    ("checkpoint-negative", GOOD + "output: {checkpoint_every: -1}\n", [], ["$.output.checkpoint_every", ">= 0"]),
    ("form-incompatible", GOOD.replace("  regularizer:", "  form: gp\n  regularizer:"), [],
     ["$.model.form", "solver 'krr_exact' solves form primal or dual, not 'gp'"]),
    ("solver-check-spec", GOOD.replace("{name: square}", "{name: test_binary_square}"), [],
     ["$.model.loss.name", "solves the square loss only"]),
    ("smooth-only-solver", GOOD.replace("{name: square}", "{name: test_nonsmooth}").replace("krr_exact", "demo_gd"), [],
     ["needs a smooth loss", "'test_nonsmooth' is not smooth", "smooth losses:"]),
    ("conjugate-needed", GOOD.replace("{name: square}", "{name: demo_logcosh}"), [],
     ["works on the dual", "'demo_logcosh' has none", "Losses with a conjugate:"]),
    ("features-needed", GOOD.replace("name: gaussian, bandwidth: median", "name: test_exact_only").replace("krr_exact", "demo_gd"), [],
     ["needs random features", "'test_exact_only' has no sampler"]),
    ("target-incompatible", GOOD.replace("{name: square}", "{name: test_multiclass}"), [],
     ["handles real, binary targets", "'test_multiclass' is multiclass"]),
    ("cupy-unavailable", GOOD.replace("backend: numpy", "backend: cupy"), [], ["$.backend", "backend 'cupy' is not available"]),
    ("data-file-missing", GOOD.replace("train: data.csv", "train: nope.csv"), [], ["$.data.train", "data file not found", "nope.csv"]),
    ("data-list-file-missing", GOOD.replace("train: data.csv", "train: [data.csv, gone.csv]"), [],
     ["$.data.train[1]", "data file not found"]),
    ("env-var-unset", GOOD.replace("train: data.csv", "train: \"${KOPT_TEST_UNSET_VAR}/d.csv\""), [],
     ["environment variable KOPT_TEST_UNSET_VAR is not set"]),
    ("set-no-equals", GOOD, ["--set", "solver.max_rows"], ["expected KEY.PATH=VALUE"]),
    ("set-wrong-type", GOOD, ["--set", "solver.max_rows=many"], ["--set solver.max_rows", "expected an integer"]),
    ("set-unknown-key", GOOD, ["--set", "solver.itrations=3"], ["unknown key 'itrations'"]),
    ("dataset-options", GOOD.replace("data: {train: data.csv, label: 0}", "data: {source: dai_synthetic, options: {n_tran: 5}}"), [],
     ["$.data.options.n_tran", "did you mean 'n_train'"]),
]


@pytest.fixture(autouse=True)
def _components():
    with extra_components(), demo_plugin():
        yield


@pytest.mark.slow
@pytest.mark.parametrize("case_id,text,extra,phrases", CASES, ids=[c[0] for c in CASES])
def test_malformed_spec(case_id, text, extra, phrases, tmp_path, capsys, monkeypatch):
    if case_id == "cupy-unavailable":
        from kopt.numerics.backend import cupy_status

        if cupy_status()[0]:
            pytest.skip("CuPy is available here")
    monkeypatch.delenv("KOPT_TEST_UNSET_VAR", raising=False)
    regression_csv(tmp_path / "data.csv", n=20)
    path = tmp_path / "spec.yaml"
    path.write_text(text)
    status = main(["validate", str(path), *extra])
    err = capsys.readouterr().err
    assert status == 2, err
    assert "Traceback" not in err
    assert err.startswith("kopt: error: ")
    for phrase in phrases:
        assert phrase in err, f"{phrase!r} not in {err!r}"


def test_corpus_is_large_enough():
    assert len(CASES) >= 25


def test_missing_spec_file(tmp_path, capsys):
    assert main(["validate", str(tmp_path / "nope.yaml")]) == 2
    assert "spec file not found" in capsys.readouterr().err


def test_dict_spec_validates_like_yaml(tmp_path):
    import yaml

    import kopt

    regression_csv(tmp_path / "data.csv", n=20)
    bad = yaml.safe_load(GOOD.replace("lambda: 0.001", "lambda: -1"))
    bad["data"]["train"] = str(tmp_path / "data.csv")
    with pytest.raises(kopt.SpecError) as dict_err:
        kopt.load_spec(bad)
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(bad))
    with pytest.raises(kopt.SpecError) as yaml_err:
        kopt.load_spec(str(path))
    assert dict_err.value.detail == yaml_err.value.detail
    assert dict_err.value.path == yaml_err.value.path == "$.model.regularizer.lambda"
    assert dict_err.value.line is None and yaml_err.value.line is not None


def test_binary_loss_with_three_classes_is_a_data_error(tmp_path, capsys):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((30, 2))
    np.savetxt(tmp_path / "data.csv", np.column_stack([np.arange(30) % 3, X]), delimiter=",")
    spec = tmp_path / "spec.yaml"
    spec.write_text(GOOD.replace("{name: square}", "{name: test_binary_square}").replace("krr_exact", "demo_gd"))
    status = main(["solve", str(spec), "--quiet", "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert status == 2
    assert "needs exactly two label values, found 3" in err and "data.csv" in err
    assert not (tmp_path / "out" / "model.json").exists()


@pytest.mark.parametrize("text", [textwrap.dedent(GOOD)])
def test_good_spec_validates_and_resolves(text, tmp_path, capsys):
    regression_csv(tmp_path / "data.csv", n=20)
    path = tmp_path / "spec.yaml"
    path.write_text(text)
    assert main(["validate", str(path), "--resolved"]) == 0
    out = capsys.readouterr().out
    assert "form: primal" in out and "count: 4096" in out and str(tmp_path / "data.csv") in out
