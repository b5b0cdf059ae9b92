"""Model files: round trips give identical predictions; corrupt or foreign files are clear errors."""
from __future__ import annotations

import json
import os

import numpy as np
import pytest
from helpers import demo_plugin, extra_components

import kopt
from kopt.errors import ModelFileError
from kopt.files import sets as fileset


def _resealed(path, edit):
    """Edit a model.json's text and recompute its checksum (as a crafted file would)."""
    path.write_text(json.dumps(fileset.seal(json.loads(edit(path.read_text())))))


def _data(n=300, d=4, seed=0, binary=False):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d)) * [1.0, 10.0, 0.1, 3.0] + [0.0, 50.0, -1.0, 2.0]
    y = np.sin(X[:, 0]) + 0.05 * X[:, 1]
    if binary:
        y = np.where(y > np.median(y), "yes", "no")
    return X, y


def _spec(solver="krr_exact", loss="square", **model):
    return {
        "model": {"loss": {"name": loss}, "kernel": {"name": "gaussian", "bandwidth": "median"}, "regularizer": {"name": "l2", "lambda": 1e-3},
                  **model},
        "solver": {"name": solver},
        "backend": "numpy",
        "data": {"standardize_target": True},
    }


@pytest.fixture()
def krr_model(tmp_path):
    X, y = _data()
    result = kopt.solve(_spec(features={"dtype": "float64"}), data=(X[:200], y[:200], X[200:], y[200:]))
    return result, X


def test_round_trip_identical_predictions(krr_model, tmp_path):
    result, X = krr_model
    path = result.model.save(tmp_path / "m")
    assert path.endswith("m.json") and os.path.exists(tmp_path / "m.npz")
    loaded = kopt.load_model(tmp_path / "m.json")
    np.testing.assert_array_equal(loaded.predict(X), result.model.predict(X))
    np.testing.assert_array_equal(loaded.decision_function(X), result.model.decision_function(X))
    assert sorted(os.listdir(tmp_path)) == ["m.json", "m.npz"]  # no temporary files left behind


def test_model_file_carries_spec_version_seeds_and_preprocessing(krr_model, tmp_path):
    result, _ = krr_model
    meta = json.loads(open(result.model.save(tmp_path / "m")).read())
    assert meta["format"] == "kopt-model" and meta["kopt_version"] == kopt.__version__
    assert meta["spec"]["solver"]["name"] == "krr_exact" and meta["seeds"]["seed"] == 0
    assert meta["preprocessor"]["y_scale"] != 1.0
    with np.load(tmp_path / "m.npz", allow_pickle=False) as z:
        assert {"pre_mean", "pre_scale", "p_support", "p_coef"} <= set(z.files)


def test_standardization_is_applied_at_predict(krr_model):
    result, X = krr_model
    pred = result.model.predict(X[200:])
    assert result.metrics["rmse"] == pytest.approx(np.sqrt(np.mean((pred - _data()[1][200:]) ** 2)))


def test_binary_labels_round_trip_in_user_coding(tmp_path):
    X, y = _data(binary=True)
    with demo_plugin(), extra_components():
        spec = _spec(solver="demo_gd", loss="test_binary_square", features={"count": 256, "block_size": 128})
        spec["solver"].update(iterations=60, step=0.5)
        result = kopt.solve(spec, data=(X[:200], y[:200], X[200:], y[200:]))
        result.model.save(tmp_path / "b")
        loaded = kopt.load_model(tmp_path / "b")
    pred = loaded.predict(X[200:])
    assert set(pred) <= {"yes", "no"}
    np.testing.assert_array_equal(pred, result.model.predict(X[200:]))
    assert result.metrics["accuracy"] == pytest.approx(np.mean(pred == y[200:]))
    assert result.metrics["accuracy"] > 0.7


def test_feature_expansion_round_trip(tmp_path):
    X, y = _data(seed=4)
    with demo_plugin():
        spec = _spec(solver="demo_gd", loss="demo_logcosh", features={"count": 256, "block_size": 128})
        spec["solver"]["iterations"] = 5
        result = kopt.solve(spec, data=(X, y))
        result.model.save(tmp_path / "fe")
        loaded = kopt.load_model(tmp_path / "fe.npz")
        np.testing.assert_array_equal(loaded.predict(X), result.model.predict(X))


def test_wrong_feature_count_at_predict(krr_model):
    result, X = krr_model
    with pytest.raises(kopt.DataError, match="has 3 features; this model was trained on 4"):
        result.model.predict(X[:, :3])


@pytest.mark.parametrize(
    "damage,phrase",
    [
        (lambda j, z: j.write_text("{not json"), "invalid JSON"),
        (lambda j, z: j.write_text(json.dumps({"hello": 1})), "not a kopt model file"),
        (lambda j, z: z.write_bytes(z.read_bytes()[:-10]), "checksum mismatch"),
        (lambda j, z: z.unlink(), "array file is missing"),
        (lambda j, z: j.unlink(), "model file not found"),
        (lambda j, z: j.write_text(j.read_text().replace('"format_version": 2', '"format_version": 99')), "newer kopt"),
        (lambda j, z: _resealed(j, lambda t: t.replace('"kernel_expansion"', '"no_such_predictor"')), "not registered"),
        (lambda j, z: j.write_text(j.read_text().replace('"lambda": 0.001', '"lambda": 0.002')),
         "metadata was edited"),
        (lambda j, z: j.write_text(j.read_text().replace('"format_version": 2', '"format_version": 1')),
         "metadata was edited"),
    ],
    ids=["bad-json", "foreign-json", "truncated-npz", "missing-npz", "missing-json", "newer-format", "unknown-predictor",
         "edited-field", "downgraded-format"],
)
def test_corrupt_or_foreign_files(krr_model, tmp_path, damage, phrase):
    result, _ = krr_model
    result.model.save(tmp_path / "m")
    damage(tmp_path / "m.json", tmp_path / "m.npz")
    with pytest.raises(ModelFileError, match=phrase):
        kopt.load_model(tmp_path / "m.json")


def test_pickled_arrays_are_refused(krr_model, tmp_path):
    import hashlib
    import io

    result, _ = krr_model
    result.model.save(tmp_path / "m")
    buf = io.BytesIO()
    np.savez(buf, p_coef=np.array([{"evil": 1}], dtype=object))
    (tmp_path / "m.npz").write_bytes(buf.getvalue())
    meta = json.loads((tmp_path / "m.json").read_text())
    meta["arrays_sha256"] = hashlib.sha256(buf.getvalue()).hexdigest()
    (tmp_path / "m.json").write_text(json.dumps(fileset.seal(meta)))
    with pytest.raises(ModelFileError, match="cannot read arrays"):
        kopt.load_model(tmp_path / "m.json")


def test_string_labels_for_a_regression_loss_are_a_data_error():
    X, y = _data(binary=True)
    with pytest.raises(kopt.DataError, match="regression loss needs numeric labels"):
        kopt.solve(_spec(), data=(X, y))
