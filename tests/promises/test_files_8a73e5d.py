"""A model file and a checkpoint written by kopt at commit 8a73e5d (before the engine moved into layer folders)
load and resume today: the model scores the same rows to the same values, and ``kopt solve --resume`` from the
checkpoint (iteration 8 of 24, a dsg run on the packaged higgs-12k rows) ends at the uninterrupted run's model, bit
for bit (its content hash).  The files are in tests/data/files_8a73e5d/; expected.json holds what they gave then."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import kopt

FILES = Path(__file__).resolve().parents[1] / "data" / "files_8a73e5d"
EXPECTED = json.loads((FILES / "expected.json").read_text())
#: the BLAS the files were written with (OpenBLAS's Haswell kernels); another kernel (SkylakeX on AVX-512 machines)
#: rounds the float32 kernel products otherwise, so bits are promised only where it is the same
WRITTEN_WITH = json.loads((FILES / "checkpoint" / "checkpoint.json").read_text())["environment"]["blas"]


def _same_blas():
    from kopt.running.checkpoint import environment

    return environment()["blas"] == WRITTEN_WITH


def test_the_old_model_file_loads_and_scores_as_it_did():
    model = kopt.load_model(FILES / "model" / "model.json")
    X = np.asarray(EXPECTED["rows"])
    np.testing.assert_array_equal(np.asarray(model.predict(X)), np.asarray(EXPECTED["predictions"]))
    # the same bits with the same BLAS kernels; float32 products' rounding (a relative 1e-6 seen) with others
    np.testing.assert_allclose(np.asarray(model.decision_function(X)), np.asarray(EXPECTED["decision"]),
                               rtol=1e-12 if _same_blas() else 1e-5, atol=0)


def test_the_old_checkpoint_resumes_to_the_uninterrupted_model(tmp_path):
    shutil.copy(FILES / "spec.yaml", tmp_path / "spec.yaml")
    (tmp_path / "model").mkdir()
    for name in ("checkpoint.json", "checkpoint.npz"):
        shutil.copy(FILES / "checkpoint" / name, tmp_path / "model" / name)
    run = subprocess.run([sys.executable, "-m", "kopt", "solve", "spec.yaml", "--resume", "--quiet"], cwd=tmp_path,
                         capture_output=True, text=True, timeout=300)
    if not _same_blas():  # a resume would not end where the uninterrupted run did: refused, naming the change
        assert run.returncode == 2 and "written on another machine or software" in run.stderr, run.stderr
        assert "Haswell" in run.stderr and not (tmp_path / "model" / "model.json").exists()
        return
    assert run.returncode == 0, run.stderr
    meta = json.loads((tmp_path / "model" / "model.json").read_text())
    assert meta["model_sha256"] == EXPECTED["model_sha256"]


def test_the_old_model_file_has_no_calibration_and_says_so():
    """A file from before calibrations loads (no ``calibration`` field); its probabilities are its loss's own or
    refused with the reason, never a crash."""
    model = kopt.load_model(FILES / "model" / "model.json")
    assert model.calibration is None
    X = np.asarray(EXPECTED["rows"])
    if model.loss.name in ("logistic", "softmax"):
        assert np.allclose(model.predict_proba(X).sum(axis=1), 1.0)
    else:
        with pytest.raises(kopt.errors.KoptError, match="no probability calibration"):
            model.predict_proba(X)
