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
