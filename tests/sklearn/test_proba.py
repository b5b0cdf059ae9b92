"""predict_proba for every classifier (margin losses: Platt sigmoids on held-out scores) and class_weight."""
from __future__ import annotations

import pickle

import numpy as np
import pytest

pytest.importorskip("sklearn", minversion="1.6")

from sklearn.datasets import make_classification  # noqa: E402
from sklearn.metrics import log_loss  # noqa: E402

import kopt  # noqa: E402
from kopt.models import calibration  # noqa: E402
from kopt.running.validation import make_splits  # noqa: E402
from kopt.sklearn import KernelClassifier  # noqa: E402


def _data(n=600, classes=2, weights=None, seed=0):
    return make_classification(n, 8, n_informative=5, n_classes=classes, weights=weights, random_state=seed)


def test_platt_recovers_a_known_sigmoid():
    rng = np.random.default_rng(0)
    f = rng.normal(size=20000)
    y = rng.random(f.size) < 1 / (1 + np.exp(-(2.0 * f - 0.5)))
    a, b = calibration.platt(f, y)
    assert abs(a - 2.0) < 0.1 and abs(b + 0.5) < 0.06
    # one class all but absent: Platt's smoothed targets keep the fit finite
    a, b = calibration.platt(f[:50], np.zeros(50, bool))
    assert np.isfinite(a) and np.isfinite(b)


def test_default_classifier_is_calibrated_on_autos_validation_rows():
    X, y = _data()
    est = KernelClassifier(backend="numpy").fit(X[:450], y[:450])
    cal = est.calibration_
    assert cal["rows"] == 90 and "solver auto's validation rows" in cal["source"]
    P = est.predict_proba(X[450:])
    assert P.shape == (150, 2) and np.allclose(P.sum(axis=1), 1.0)
    np.testing.assert_allclose(np.log(P), est.predict_log_proba(X[450:]), rtol=1e-10, atol=1e-12)
    # P(class 1) rises with the score (a > 0), and beats the base rate's log loss by far
    f = est.decision_function(X[450:])
    assert np.all(np.diff(P[np.argsort(f), 1]) >= -1e-12)
    base = log_loss(y[450:], np.tile([1 - y[:450].mean(), y[:450].mean()], (150, 1)))
    assert log_loss(y[450:], P) < 0.7 * base
    # the saved calibration is the one fitted on auto's validation scores: the same sigmoid refitted here
    (_, va), = make_splits(450, 0, validation=0.2)
    assert len(va) == cal["rows"]


def test_a_named_solver_is_calibrated_on_a_seeded_internal_split():
    X, y = _data()
    kw = dict(solver="krr_nystrom", lam=1e-3, bandwidth=2.0, features=128, backend="numpy")
    est = KernelClassifier(**kw).fit(X, y)
    cal = est.calibration_
    assert cal["rows"] == 120 and "seeded internal split" in cal["source"] and "seed 0" in cal["source"]
    # which rows: make_splits(n, seed, 0.2)'s held-out rows, scored by the spec solved on the others
    (tr, va), = make_splits(len(y), 0, validation=0.2)
    sub = KernelClassifier(**kw).fit(X[tr], y[tr])
    expected = calibration.fit(sub.decision_function(X[va]), y[va], 2)
    # (the internal split's rows are standardized with every training row's statistics, as the model's are;
    # this refit standardizes with its own rows': the sigmoids agree to that difference)
    np.testing.assert_allclose(cal["a"], expected["a"], rtol=5e-3)
    np.testing.assert_allclose(cal["b"], expected["b"], rtol=5e-3, atol=1e-3)


@pytest.mark.parametrize("loss", ["squared_hinge", "square"])
def test_three_classes_one_vs_rest_sigmoids_normalised(loss):
    X, y = _data(n=450, classes=3)
    est = KernelClassifier(loss=loss, backend="numpy").fit(X, y)
    P = est.predict_proba(X)
    assert P.shape == (450, 3) and np.allclose(P.sum(axis=1), 1.0)
    assert len(est.calibration_["a"]) == 3
    assert np.mean(np.argmax(P, axis=1) == y) > 0.6


def test_calibration_travels_in_the_model_file_and_the_pickle(tmp_path):
    X, y = _data()
    est = KernelClassifier(backend="numpy").fit(X, y)
    path = est.model_.save(tmp_path / "m")
    loaded = kopt.load_model(path)
    assert loaded.calibration == est.calibration_
    np.testing.assert_allclose(loaded.predict_proba(X), est.predict_proba(X), rtol=1e-12)
    again = pickle.loads(pickle.dumps(est))
    np.testing.assert_allclose(again.predict_proba(X), est.predict_proba(X), rtol=1e-12)
    # the calibration is not part of the content hash (what the scores are), and a model without one refuses
    est.model_.calibration = None
    assert not hasattr(est, "predict_proba")
    with pytest.raises(kopt.errors.KoptError, match="no probability calibration"):
        est.model_.predict_proba(X)


def test_class_weight_balanced_raises_the_minority_recall():
    X, y = _data(n=1000, weights=[0.9], seed=3)
    plain = KernelClassifier(backend="numpy").fit(X[:700], y[:700])
    balanced = KernelClassifier(class_weight="balanced", backend="numpy").fit(X[:700], y[:700])
    assert balanced.auto_["metric"] == "balanced_accuracy" and plain.auto_["metric"] == "accuracy"
    assert balanced.spec_["data"]["class_weight"] == "balanced"
    recall = [np.mean(e.predict(X[700:])[y[700:] == 1] == 1) for e in (plain, balanced)]
    assert recall[1] > recall[0]


def test_a_class_weight_mapping_is_the_sample_weights_it_implies():
    X, y = _data(n=300)
    kw = dict(solver="krr_nystrom", lam=1e-3, bandwidth=2.0, features=64, backend="numpy")
    a = KernelClassifier(class_weight={0: 1.0, 1: 3.0}, **kw).fit(X, y)
    b = KernelClassifier(**kw).fit(X, y, sample_weight=np.where(y == 1, 3.0, 1.0))
    np.testing.assert_allclose(a.decision_function(X), b.decision_function(X), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(a.calibration_["a"], b.calibration_["a"], rtol=1e-10)


def test_class_weight_errors_name_the_key():
    X, y = _data(n=100)
    with pytest.raises(kopt.errors.KoptError, match="class_weight.*'7'"):
        KernelClassifier(class_weight={7: 2.0}, solver="krr_nystrom", lam=1e-3, features=16).fit(X, y)
    with pytest.raises(kopt.errors.KoptError, match="class_weight"):
        KernelClassifier(class_weight="heavy").fit(X, y)
