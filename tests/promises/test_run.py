"""Runs: checkpoints, Ctrl-C, --resume ending where an uninterrupted run ends; reports and plots."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import numpy as np
import pytest
from helpers import demo_plugin, install_demo_plugin, regression_csv, signal_at_first_checkpoint

import kopt
from kopt.testing import check_resume, interrupt_at


def _spec(tmp_path, iterations=30, checkpoint_every=5, sleep=0.0, out="out"):
    regression_csv(tmp_path / "data.csv", n=500, seed=3)
    return {
        "name": "resume",
        "seed": 7,
        "data": {"train": str(tmp_path / "data.csv"), "label": 0, "test_fraction": 0.2},
        "model": {
            "loss": {"name": "demo_logcosh"},
            "kernel": {"name": "gaussian", "bandwidth": "median"},
            "features": {"count": 256, "block_size": 128},
            "regularizer": {"name": "l2", "lambda": 1e-3},
        },
        "solver": {"name": "demo_gd", "iterations": iterations, "batch_size": 64, "sleep": sleep},
        "backend": "numpy",
        "output": {"dir": str(tmp_path / out), "checkpoint_every": checkpoint_every},
    }


@pytest.fixture(autouse=True)
def _demo():
    with demo_plugin():
        yield


@pytest.mark.slow
def test_resume_ends_where_an_uninterrupted_run_ends(tmp_path):
    full, resumed = check_resume(_spec(tmp_path), stop_at=13, out_dir=tmp_path)
    assert resumed.n_iter == full.n_iter == 30
    assert [r["iteration"] for r in resumed.trace] == list(range(1, 31))


def test_interrupt_writes_a_checkpoint_of_that_iteration(tmp_path):
    with interrupt_at(13), pytest.raises(KeyboardInterrupt):
        kopt.solve(_spec(tmp_path, out="cut"))
    meta = json.loads((tmp_path / "cut" / "checkpoint.json").read_text())
    assert meta["iteration"] == 13  # written on interrupt, not only every 5


@pytest.mark.slow
def test_check_resume_catches_a_solver_that_does_not_resume(tmp_path, monkeypatch):
    from kopt_demo_plugin import DemoGD

    original = DemoGD.run

    def forgetful(self, problem, run):
        run.resume_state = None  # ignores the checkpoint's coefficients
        return original(self, problem, run)

    monkeypatch.setattr(DemoGD, "run", forgetful)
    with pytest.raises(AssertionError, match="differs from the uninterrupted run"):
        check_resume(_spec(tmp_path), stop_at=13, out_dir=tmp_path)


def test_resume_refuses_a_different_spec(tmp_path):
    spec = _spec(tmp_path, iterations=10, out="x")
    kopt.solve(spec)
    spec["model"]["regularizer"]["lambda"] = 0.5
    with pytest.raises(kopt.errors.CheckpointError, match="different spec"):
        kopt.solve(spec, resume=True)


def test_resume_without_checkpoint_is_a_clear_error(tmp_path):
    with pytest.raises(kopt.errors.CheckpointError, match="no checkpoint to resume from"):
        kopt.solve(_spec(tmp_path, out="none"), resume=True)


@pytest.mark.slow
def test_report_and_plot_written(tmp_path):
    spec = _spec(tmp_path, iterations=8, checkpoint_every=0, out="rep")
    spec["output"]["plot"] = True
    result = kopt.solve(spec, write=True)
    out = tmp_path / "rep"
    report = json.loads((out / "report.json").read_text())
    for key in ("spec", "versions", "seed", "trace", "metrics", "timings", "memory", "backend"):
        assert key in report
    assert report["seed"] == 7 and report["memory"]["peak_rss_mb"] > 10
    assert report["spec"]["model"]["kernel"]["bandwidth"] == "median"
    assert report["kernel"]["bandwidth"] > 0  # the resolved median bandwidth
    assert (out / "convergence.png").read_bytes()[:4] == b"\x89PNG"
    assert result.metrics["rmse"] == report["metrics"]["rmse"]


@pytest.mark.slow
@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_ctrl_c_keeps_checkpoint_and_resume_finishes(tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    install_demo_plugin(site)
    import yaml

    spec = _spec(tmp_path, iterations=60, checkpoint_every=4, sleep=0.03, out="sig")
    (tmp_path / "spec.yaml").write_text(yaml.safe_dump(spec))
    env = dict(os.environ, PYTHONPATH=str(site))
    cmd = [sys.executable, "-m", "kopt", "solve", str(tmp_path / "spec.yaml"), "--quiet"]
    ck = tmp_path / "sig" / "checkpoint.json"
    returncode, err = signal_at_first_checkpoint(cmd, env, ck, signal.SIGINT)
    assert returncode == 130, err
    assert "--resume" in err and "Traceback" not in err
    assert not (tmp_path / "sig" / "model.json").exists()
    stopped_at = json.loads(ck.read_text())["iteration"]
    assert 0 < stopped_at < 60
    done = subprocess.run(cmd + ["--resume"], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    reference = kopt.solve(_spec(tmp_path, iterations=60, checkpoint_every=0, out="ref"))
    resumed = kopt.load_model(tmp_path / "sig" / "model.json")
    assert np.array_equal(resumed.predictor.arrays["coef"], reference.model.predictor.arrays["coef"])


def test_check_resume_takes_a_str_out_dir(tmp_path):
    full, resumed = check_resume(_spec(tmp_path, iterations=12), stop_at=7, out_dir=str(tmp_path / "runs"))
    assert resumed.n_iter == full.n_iter == 12
    assert (tmp_path / "runs" / "cut" / "checkpoint.json").is_file()


@pytest.mark.parametrize("where", ["the-file", "the-file/sub"])
def test_an_output_dir_that_is_a_file_fails_before_the_solve(tmp_path, monkeypatch, capsys, where):
    """Issue 17 defect 6: the check came after the solve, so the work was lost."""
    import yaml

    from kopt.cli import main

    (tmp_path / "the-file").write_text("not a folder")
    spec = _spec(tmp_path, checkpoint_every=0)
    spec["output"]["dir"] = str(tmp_path / where)
    (tmp_path / "spec.yaml").write_text(yaml.safe_dump(spec))

    def no_solve(*args, **kwargs):
        raise AssertionError("the data were read and the solve started")

    monkeypatch.setattr(kopt.api, "assemble", no_solve)
    assert main(["solve", str(tmp_path / "spec.yaml"), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "output.dir" in err and "a file, not a folder" in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1
