"""Hostile specs, environment variables and crafted model files (issue 17): exit 2, one line, no traceback.

Cases run in-process through ``kopt.cli.main`` (as tests/promises/test_spec_errors.py does); memory
checks see 2 GiB available (patched), so no case depends on the machine.
"""
from __future__ import annotations

import hashlib
import io
import json

import numpy as np
import pytest
from helpers import GIB, check_error, non_regular_path, npz_with_header, regression_csv

import kopt.numerics.memory
from kopt.cli import main
from kopt.files import sets as fileset

GOOD = """\
name: t
data: {train: data.csv, label: 0}
model:
  loss: {name: square}
  kernel: {name: gaussian, bandwidth: 1.0}
  regularizer: {name: l2, lambda: 0.001}
solver: {name: krr_exact}
backend: numpy
output: {dir: out}
"""
DSG = ["--set", "solver.name=dsg", "--set", "solver.batch_size=8", "--set", "solver.iterations=6"]
JOKER_FEATURES = ["--set", "solver.name=joker", "--set", "model.form=dual", "--set", "solver.mode=features"]


def _alias_bomb(levels=9, width=9):
    lines = [f"  a0: &a0 [{', '.join(['1'] * width)}]"]
    lines += [f"  a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * width)}]" for i in range(1, levels)]
    return "seed:\n" + "\n".join(lines) + "\n" + GOOD.replace("name: t\n", "")


def _flow_bomb(levels=9, width=9):
    parts = [f"&a0 [{', '.join(['1'] * width)}]"]
    parts += [f"&a{i} [{', '.join([f'*a{i - 1}'] * width)}]" for i in range(1, levels)]
    return "[" + ", ".join(parts) + "]"


# (id, spec text, extra CLI args, phrases)
SPEC_CASES = [
    ("step-size-nan", GOOD, [*DSG, "--set", "solver.step_size=.nan"], ["$.solver.step_size", "finite", ".nan"]),
    ("bandwidth-nan", GOOD.replace("bandwidth: 1.0", "bandwidth: .nan"), [], ["$.model.kernel.bandwidth", ".nan"]),
    ("bandwidth-inf", GOOD.replace("bandwidth: 1.0", "bandwidth: .inf"), [], ["$.model.kernel.bandwidth", ".inf"]),
    ("bandwidth-tiny", GOOD.replace("bandwidth: 1.0", "bandwidth: 1.0e-300"), [], ["bandwidth", "1e-300"]),
    ("lambda-inf", GOOD.replace("lambda: 0.001", "lambda: .inf"), [], ["$.model.regularizer.lambda", ".inf"]),
    ("lambda-minus-inf", GOOD.replace("lambda: 0.001", "lambda: -.inf"), [], ["lambda", "-.inf"]),
    ("lambda-tiny", GOOD.replace("lambda: 0.001", "lambda: 1.0e-300"), [], ["lambda", "1e-300", "1e-30"]),
    ("lambda-huge", GOOD.replace("lambda: 0.001", "lambda: 1.0e+300"), [], ["lambda", "1e+300"]),
    ("delta-nan", GOOD.replace("{name: square}", "{name: huber, delta: .nan}"), JOKER_FEATURES,
     ["$.model.loss.delta", ".nan"]),
    ("test-fraction-nan", GOOD.replace("label: 0}", "label: 0, test_fraction: .nan}"), [],
     ["$.data.test_fraction", ".nan"]),
    ("seed-huge-int", GOOD + "seed: 1180591620717411303424\n", [], ["$.seed", "integer between"]),
    ("set-nan", GOOD, ["--set", "model.regularizer.lambda=.nan"], ["--set model.regularizer.lambda", ".nan"]),
    ("alias-bomb", _alias_bomb(), [], ["expands to more than 100,000 values"]),
    ("set-alias-bomb", GOOD, ["--set", "seed=" + _flow_bomb()], ["--set", "expands to more than 100,000 values"]),
    ("deep-nesting", GOOD + "seed: " + "[" * 10000 + "]" * 10000 + "\n", [], ["nests more than 64 levels"]),
    ("deep-mapping", GOOD + "seed: " + "{a: " * 5000 + "1" + "}" * 5000 + "\n", [], ["nests more than 64 levels"]),
    ("huge-spec", GOOD + "# " + "x" * (1 << 20) + "\n", [], ["at most 1,048,576"]),
    ("name-escapes-runs", GOOD.replace("name: t", "name: ../../x").replace("output: {dir: out}\n", ""), [],
     ["$.name", "runs/NAME", "'../../x'"]),
    ("name-dot-dot", GOOD.replace("name: t", "name: '..'"), [], ["$.name"]),
    ("name-absolute", GOOD.replace("name: t", "name: /etc/x"), [], ["$.name"]),
    # a value every loss's rule refuses alike is said once, in one line
    ("set-loss-to-a-number", GOOD, ["--set", "model.loss=3"], ["--set model.loss", "$.model.loss",
                                                               "expected a mapping, got 3"]),
    ("seed-true", GOOD, ["--set", "seed=true"], ["$.seed", "got true (boolean)"]),
    ("output-dir-empty", GOOD, ["--set", "output.dir="], ["$.output.dir", "must not be empty"]),
    ("seed-exponent-inf", GOOD, ["--set", "seed=1e400"], ["$.seed", "finite"]),
    ("count-not-whole", GOOD, ["--set", "model.features.count=2.5e0"], ["$.model.features.count", "an integer",
                                                                         "2.5"]),
    ("class-weight-negative", GOOD.replace("label: 0}", "label: 0, class_weight: {1: -2}}"), [],
     ["$.data.class_weight[1]", "a class weight must be a number >= 0, got -2"]),
    ("held-out-rows-zero", GOOD.replace("label: 0}", "label: 0, held_out: {rows: 0}}"), [],
     ["$.data.held_out.rows", ">= 1", "got 0"]),
]


@pytest.fixture(autouse=True)
def _two_gib(monkeypatch):
    monkeypatch.setattr(kopt.numerics.memory, "available_bytes", lambda: 2 * GIB)


@pytest.fixture()
def workdir(tmp_path, monkeypatch):
    regression_csv(tmp_path / "data.csv", n=40)
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.slow
@pytest.mark.parametrize("case_id,text,extra,phrases", SPEC_CASES, ids=[c[0] for c in SPEC_CASES])
def test_hostile_spec(case_id, text, extra, phrases, workdir, capsys):
    (workdir / "spec.yaml").write_text(text)
    check_error(["validate", "spec.yaml", *extra], capsys, phrases)


# (id, argv, phrases): wrong flags and flag values end in one line naming the command and the flag, exit 2
USAGE_CASES = [
    ("unknown-flag", ["solve", "spec.yaml", "--foo"], ["unrecognized arguments: --foo"]),
    ("log-every-word", ["solve", "spec.yaml", "--log-every", "soon"], ["kopt solve", "--log-every", "'soon'"]),
    ("folds-word", ["tune", "spec.yaml", "--folds", "x"], ["kopt tune", "--folds", "'x'"]),
    ("missing-argument", ["predict", "out/model.json"], ["kopt predict", "required"]),
    ("bad-choice", ["predict", "m.json", "d.csv", "--labels", "middle"], ["--labels", "'middle'"]),
    ("no-command", [], ["kopt", "COMMAND"]),
]


@pytest.mark.parametrize("case_id,argv,phrases", USAGE_CASES, ids=[c[0] for c in USAGE_CASES])
def test_wrong_flags_are_one_line(case_id, argv, phrases, workdir, capsys):
    (workdir / "spec.yaml").write_text(GOOD)
    with pytest.raises(SystemExit) as caught:
        main(argv)
    err = capsys.readouterr().err
    assert caught.value.code == 2 and err.startswith("kopt: error: ") and err.count("\n") == 1, err
    assert "usage:" not in err and "--help" in err
    for phrase in phrases:
        assert phrase in err, err


def test_an_empty_out_is_refused_not_ignored(workdir, capsys):
    (workdir / "spec.yaml").write_text(GOOD)
    check_error(["solve", "spec.yaml", "--out", ""], capsys, ["--out ''", "must not be empty"])
    assert not (workdir / "out").exists() and not (workdir / "model.json").exists()


@pytest.mark.parametrize("kind", ["fifo", "dev-zero", "directory"])
def test_non_regular_spec_file(kind, workdir, capsys):
    path = non_regular_path(kind, workdir, "spec.yaml")
    if path is None:
        pytest.skip("no /dev/zero here")
    check_error(["validate", str(path)], capsys, [str(path)])


def test_feature_count_is_checked_before_the_solve(workdir, capsys):
    (workdir / "spec.yaml").write_text(GOOD)
    err = check_error(["solve", "spec.yaml", "-q", *JOKER_FEATURES, "--set", "model.features.count=1000000000"],
                      capsys, ["model.features.count 1,000,000,000 (joker)", "GiB", "lower model.features.count"])
    assert "feature parameters" in err and "at most ~" in err  # joker's memory plan (kopt.numerics.memory)
    assert not (workdir / "out").exists()


def test_kopt_threads_not_a_number(workdir, capsys, monkeypatch):
    (workdir / "spec.yaml").write_text(GOOD)
    monkeypatch.setenv("KOPT_THREADS", "abc")
    check_error(["solve", "spec.yaml", "-q", *DSG], capsys, ["KOPT_THREADS='abc'", "positive integer"])


def test_diverged_solve_writes_no_model(workdir, capsys):
    (workdir / "spec.yaml").write_text(GOOD)
    check_error(["solve", "spec.yaml", "-q", *DSG, "--set", "solver.step_size=1.0e+30"], capsys,
                ["NaN or inf in the model", "no model was written", "step_size"])
    assert not (workdir / "out" / "model.json").exists()


# -- crafted model files: each edit keeps the checksum valid, so only the content is wrong -------------
def _edit_json(meta, arrays):
    del meta["preprocessor"]
    return meta, arrays


def _bad_feature_dtype(meta, arrays):
    meta["spec"]["model"]["features"]["dtype"] = "(100000000,)f8"
    return meta, arrays


def _nan_array(meta, arrays):
    key = next(k for k, v in arrays.items() if v.dtype.kind == "f" and v.size)
    arrays[key] = np.full_like(arrays[key], np.nan)
    return meta, arrays


def _short_mean(meta, arrays):
    arrays["pre_mean"] = arrays["pre_mean"][:1]
    return meta, arrays


def _short_predictor(meta, arrays):
    key = max((k for k in arrays if k.startswith("p_")), key=lambda k: arrays[k].size)
    arrays[key] = arrays[key][:1]
    return meta, arrays


def _n_features_string(meta, arrays):
    meta["preprocessor"]["n_features"] = "3"
    return meta, arrays


MODEL_CASES = [
    ("missing-preprocessor", _edit_json, ["field 'preprocessor'"]),
    ("n-features-string", _n_features_string, ["preprocessor.n_features"]),
    ("feature-dtype-string", _bad_feature_dtype, ["spec.model.features.dtype", "(100000000,)f8"]),
    ("nan-array", _nan_array, ["NaN or inf"]),
    ("short-pre-mean", _short_mean, ["'pre_mean'", "shape (1,)"]),
    ("short-predictor-array", _short_predictor, ["do not fit together"]),
]


@pytest.fixture()
def model_dir(workdir, capsys):
    (workdir / "spec.yaml").write_text(GOOD)
    assert main(["solve", "spec.yaml", "-q"]) == 0
    capsys.readouterr()
    return workdir / "out"


def _rewrite(model_dir, meta, payload):
    """Write crafted contents with valid checksums (the npz's and the JSON's own), as a forger would."""
    (model_dir / "model.npz").write_bytes(payload)
    meta["arrays_sha256"] = hashlib.sha256(payload).hexdigest()
    (model_dir / "model.json").write_text(json.dumps(fileset.seal(meta)))


@pytest.mark.slow
@pytest.mark.parametrize("case_id,edit,phrases", MODEL_CASES, ids=[c[0] for c in MODEL_CASES])
def test_crafted_model_file(case_id, edit, phrases, model_dir, capsys):
    meta = json.loads((model_dir / "model.json").read_text())
    with np.load(model_dir / "model.npz") as z:
        arrays = {k: z[k] for k in z.files}
    meta, arrays = edit(meta, arrays)
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    _rewrite(model_dir, meta, buf.getvalue())
    check_error(["predict", "out/model.json", "data.csv"], capsys, phrases)


@pytest.mark.parametrize("header", [{"descr": "(100000000,)f8", "fortran_order": False, "shape": (1,)},
                                    {"descr": "<f8", "fortran_order": False, "shape": (10**12,)},
                                    {"descr": "|O", "fortran_order": False, "shape": (3,)}],
                         ids=["subarray-dtype", "huge-shape", "object"])
def test_crafted_model_array_header(header, model_dir, capsys):
    meta = json.loads((model_dir / "model.json").read_text())
    _rewrite(model_dir, meta, npz_with_header("p_coef", header))
    check_error(["predict", "out/model.json", "data.csv"], capsys, ["cannot read arrays", "'p_coef'"])


@pytest.mark.slow
@pytest.mark.parametrize("field,value,phrase", [("iteration", None, "field 'iteration'"),
                                                ("iteration", -3, "field 'iteration'"),
                                                ("scalars", None, "field 'scalars'"),
                                                ("elapsed", "soon", "field 'elapsed'")],
                         ids=["no-iteration", "negative-iteration", "no-scalars", "elapsed-string"])
def test_crafted_checkpoint_fields(field, value, phrase, workdir, capsys):
    (workdir / "spec.yaml").write_text(GOOD)
    ck = [*DSG, "--set", "output.checkpoint_every=3"]
    assert main(["solve", "spec.yaml", "-q", *ck]) == 0
    capsys.readouterr()
    meta = json.loads((workdir / "out" / "checkpoint.json").read_text())
    if value is None:
        del meta[field]
    else:
        meta[field] = value
    (workdir / "out" / "checkpoint.json").write_text(json.dumps(fileset.seal(meta)))
    check_error(["solve", "spec.yaml", "-q", *ck, "--resume"], capsys, ["checkpoint.json", phrase])


def test_cli_paths_that_are_not_what_the_command_wants(workdir, capsys):
    """A spec copied under a file, a data file given as a model, a scheduler that is not one: one line, exit 2."""
    (workdir / "afile").write_text("x")
    check_error(["specs", "copy", "quickstart", str(workdir / "afile" / "sub")], capsys,
                ["cannot copy spec 'quickstart'", "a folder you can write"])
    check_error(["model-hash", "data.csv"], capsys, ["data.csv: not a model file"])
    check_error(["predict", "data.csv", "data.csv"], capsys, ["data.csv: not a model file"])
    (workdir / "spec.yaml").write_text(GOOD)
    err = check_error(["validate", "spec.yaml", "--scheduler", "bogus"], capsys,
                      ["--scheduler bogus: ", "'bogus' is not a scheduler"])
    assert "cannot run on a Dask cluster" not in err
