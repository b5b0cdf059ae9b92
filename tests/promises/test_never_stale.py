"""Issue 26 ("Never a stale answer") items 2-6, 8, 9, and issue 28 item 5: strict JSON, SIGTERM, full
disks, an unreachable scheduler, what changed on --resume, the output folder's lock and owner, the path
expansion rule, and ``import kopt`` without ``fcntl``.  (Item 1, the parse cache: test_cache_torn_reads.py.)"""
from __future__ import annotations

import errno
import json
import os
import signal
import subprocess
import sys
import time
import warnings

import numpy as np
import pytest
import yaml
from helpers import demo_plugin, install_demo_plugin, registered, regression_csv, signal_at_first_checkpoint

import kopt
from kopt.cli import main
from kopt.contract.hookspecs import hookimpl
from kopt.errors import OutputError, Terminated

POSIX_SIGNALS = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")


def _spec(tmp_path, *, iterations=20, checkpoint_every=0, sleep=0.0, out="out", lam=1e-3):
    regression_csv(tmp_path / "data.csv", n=300, seed=3)
    return {
        "name": "stale",
        "seed": 7,
        "data": {"train": str(tmp_path / "data.csv"), "label": 0, "test_fraction": 0.2},
        "model": {"loss": {"name": "demo_logcosh"}, "kernel": {"name": "gaussian", "bandwidth": "median"},
                  "features": {"count": 128, "block_size": 64}, "regularizer": {"name": "l2", "lambda": lam}},
        "solver": {"name": "demo_gd", "iterations": iterations, "batch_size": 64, "sleep": sleep},
        "backend": "numpy",
        "output": {"dir": str(tmp_path / out), "checkpoint_every": checkpoint_every},
    }


def _write(tmp_path, spec, name="spec.yaml"):
    path = tmp_path / name
    path.write_text(yaml.safe_dump(spec))
    return str(path)


def _strict(text):
    def refuse(token):
        raise AssertionError(f"not strict JSON: {token}")

    return json.loads(text, parse_constant=refuse)


@pytest.fixture(autouse=True)
def _demo():
    with demo_plugin():
        yield


def _subprocess_env(tmp_path):
    site = tmp_path / "site"
    if not site.exists():
        site.mkdir()
        install_demo_plugin(site)
    return dict(os.environ, PYTHONPATH=str(site))


# -- item 2: strict JSON ----------------------------------------------------------------------------------------

def _one_class_test_split():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((80, 3))
    y = np.where(X[:, 0] > 0, 1.0, -1.0)
    X_test = rng.standard_normal((10, 3))
    return X, y, X_test, np.ones(10)  # every test label is the positive class: AUC has no pair to rank


def test_an_undefined_metric_is_null_with_a_warning_and_the_report_is_strict_json(tmp_path):
    spec = {"name": "oneclass", "model": {"loss": {"name": "logistic"}, "kernel": {"name": "gaussian", "bandwidth": 1.0},
                                          "regularizer": {"name": "l2", "lambda": 1e-2}, "form": "dual"},
            "solver": {"name": "joker", "mode": "exact", "iterations": 5, "batch_size": 16}, "backend": "numpy",
            "output": {"dir": str(tmp_path / "out")}}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = kopt.solve(spec, data=_one_class_test_split(), write=True)
    said = [str(w.message) for w in caught if "undefined" in str(w.message)]
    assert len(said) == 1 and "auc" in said[0] and "one class" in said[0] and "\n" not in said[0]
    assert result.metrics["auc"] is None and 0.0 <= result.metrics["accuracy"] <= 1.0
    report = _strict((tmp_path / "out" / "report.json").read_text())
    assert report["metrics"]["auc"] is None
    _strict((tmp_path / "out" / "model.json").read_text())


def test_the_command_line_says_a_metric_is_undefined_and_writes_null(tmp_path, capsys):
    X, y, X_test, y_test = _one_class_test_split()
    np.savetxt(tmp_path / "train.csv", np.column_stack([y, X]), delimiter=",", fmt="%.6f")
    np.savetxt(tmp_path / "test.csv", np.column_stack([y_test, X_test]), delimiter=",", fmt="%.6f")
    spec = {"name": "oneclass", "data": {"train": "train.csv", "test": "test.csv", "label": 0},
            "model": {"loss": {"name": "logistic"}, "kernel": {"name": "gaussian", "bandwidth": 1.0},
                      "regularizer": {"name": "l2", "lambda": 1e-2}, "form": "dual"},
            "solver": {"name": "joker", "mode": "exact", "iterations": 5, "batch_size": 16}, "backend": "numpy",
            "output": {"dir": str(tmp_path / "cli")}}
    assert main(["solve", _write(tmp_path, spec)]) == 0
    out, err = capsys.readouterr()
    assert "test auc undefined" in out and "kopt: warning: auc on" in err and "one class" in err
    assert _strict((tmp_path / "cli" / "report.json").read_text())["metrics"]["auc"] is None


def test_every_json_writer_is_strict(tmp_path):
    from kopt.files import sets as fileset
    from kopt.files.atomic import write_json
    from kopt.running.listeners import JsonLog

    bad = {"a": float("nan"), "b": np.float32("inf"), "c": [np.nan, 1.5], "d": np.array([np.inf, 2.0])}
    write_json(tmp_path / "r.json", bad)
    assert _strict((tmp_path / "r.json").read_text()) == {"a": None, "b": None, "c": [None, 1.5], "d": [None, 2.0]}
    fileset.commit(tmp_path / "s.npz", b"payload", tmp_path / "s.json", {"format": "x", "trace": [{"gap": np.nan}]})
    meta = _strict((tmp_path / "s.json").read_text())
    assert meta["trace"] == [{"gap": None}] and fileset.sealed(meta)

    class Stream(list):
        def write(self, text):
            self.append(text)

        def flush(self):
            pass

    log = JsonLog(Stream())
    log._emit({"event": "progress", "gap": float("nan"), "obj": np.float64("-inf")})
    assert _strict(log.stream[0]) == {"event": "progress", "gap": None, "obj": None}


# -- item 3: SIGTERM --------------------------------------------------------------------------------------------

class _SigtermAt:
    def __init__(self, iteration):
        self.iteration = iteration

    @hookimpl
    def kopt_iteration(self, run, record):
        if record.iteration == self.iteration:
            os.kill(os.getpid(), signal.SIGTERM)


@POSIX_SIGNALS
def test_sigterm_from_python_writes_the_checkpoint_of_that_iteration_and_raises_terminated(tmp_path):
    before = signal.getsignal(signal.SIGTERM)
    with registered(_SigtermAt(7), "sigterm-at"), pytest.raises(Terminated) as caught:
        kopt.solve(_spec(tmp_path, checkpoint_every=5, out="cut"))
    assert caught.value.code == 143 and isinstance(caught.value, SystemExit)
    assert json.loads((tmp_path / "cut" / "checkpoint.json").read_text())["iteration"] == 7
    assert signal.getsignal(signal.SIGTERM) == before  # the handler is the caller's again
    resumed = kopt.solve(_spec(tmp_path, checkpoint_every=5, out="cut"), resume=True)
    full = kopt.solve(_spec(tmp_path, out="full"))
    assert np.array_equal(resumed.model.predictor.arrays["coef"], full.model.predictor.arrays["coef"])


@POSIX_SIGNALS
def test_sigterm_stops_an_estimator_fit_like_ctrl_c():
    pytest.importorskip("sklearn")
    from kopt.sklearn import KernelRegressor

    rng = np.random.default_rng(1)
    X = rng.standard_normal((120, 3))
    est = KernelRegressor(solver="dsg", solver_options={"iterations": 50, "batch_size": 32}, lam=1e-2)
    with registered(_SigtermAt(2), "sigterm-at"), pytest.raises(Terminated):
        est.fit(X, X[:, 0])
    assert not hasattr(est, "model_")


@pytest.mark.slow
@POSIX_SIGNALS
def test_sigterm_on_the_command_line_checkpoints_says_how_to_resume_and_exits_143(tmp_path):
    spec = _spec(tmp_path, iterations=60, checkpoint_every=4, sleep=0.03, out="sig")
    cmd = [sys.executable, "-m", "kopt", "solve", _write(tmp_path, spec), "--quiet"]
    env = _subprocess_env(tmp_path)
    ck = tmp_path / "sig" / "checkpoint.json"
    returncode, err = signal_at_first_checkpoint(cmd, env, ck, signal.SIGTERM)
    assert returncode == 143, err
    assert "terminated (SIGTERM)" in err and "--resume" in err and "Traceback" not in err
    stopped_at = json.loads(ck.read_text())["iteration"]
    assert 0 < stopped_at < 60 and not (tmp_path / "sig" / "model.json").exists()
    done = subprocess.run(cmd + ["--resume"], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    reference = kopt.solve(_spec(tmp_path, iterations=60, out="ref"))
    resumed = kopt.load_model(tmp_path / "sig" / "model.json")
    assert np.array_equal(resumed.predictor.arrays["coef"], reference.model.predictor.arrays["coef"])


# -- item 4: full disks, file-size limits, read-only file systems ------------------------------------------------

@pytest.mark.slow
@pytest.mark.skipif(sys.platform == "win32", reason="RLIMIT_FSIZE")
def test_a_file_size_limit_is_exit_2_and_the_previous_model_stays(tmp_path):
    """``ulimit -f``: the model write fails with EFBIG (Python ignores SIGXFSZ)."""
    path = _write(tmp_path, _spec(tmp_path, out="lim"))
    env = _subprocess_env(tmp_path)
    first = subprocess.run([sys.executable, "-m", "kopt", "solve", path, "-q", "--set", "seed=8"], env=env,
                           capture_output=True, text=True, timeout=120)
    assert first.returncode == 0, first.stderr
    before = kopt.load_model(tmp_path / "lim" / "model.json").content_hash()
    limit = ("import resource, runpy, sys; resource.setrlimit(resource.RLIMIT_FSIZE, (2048, 2048)); "
             "sys.argv = ['kopt', 'solve', sys.argv[1], '-q', '--force']; runpy.run_module('kopt', "
             "run_name='__main__')")
    done = subprocess.run([sys.executable, "-c", limit, path], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    assert "file-size limit" in done.stderr and "internal error" not in done.stderr and "Traceback" not in done.stderr
    assert kopt.load_model(tmp_path / "lim" / "model.json").content_hash() == before


@pytest.mark.slow
@pytest.mark.parametrize("code, words", [(errno.ENOSPC, "is full"), (errno.EROFS, "read-only file system"),
                                          (errno.EFBIG, "file-size limit"), (errno.EDQUOT, "quota")])
def test_disk_errors_while_writing_the_model_are_exit_2_saying_what_to_do(tmp_path, monkeypatch, capsys, code, words):
    import kopt.files.sets

    path = _write(tmp_path, _spec(tmp_path, out="full"))

    def fail(target, payload):
        raise OSError(code, os.strerror(code), target)

    monkeypatch.setattr(kopt.files.sets, "_write_durable", fail)
    assert main(["solve", path, "-q"]) == 2
    err = capsys.readouterr().err
    assert words in err and str(tmp_path / "full") in err and "permission denied" not in err.lower()
    assert err.startswith("kopt: error: cannot write the model and report") and len(err.strip().splitlines()) == 1


def test_a_full_disk_while_writing_predictions_is_exit_2(tmp_path, monkeypatch, capsys):
    path = _write(tmp_path, _spec(tmp_path, out="m"))
    assert main(["solve", path, "-q"]) == 0
    def full(target, mode="wb"):
        raise OSError(errno.ENOSPC, "No space left on device", target)

    monkeypatch.setattr("kopt.models.predict_file.atomic_open", full)
    assert main(["predict", str(tmp_path / "m" / "model.json"), str(tmp_path / "data.csv"),
                 "--out", str(tmp_path / "p" / "pred.csv")]) == 2
    err = capsys.readouterr().err
    assert "cannot write the predictions: the disk holding" in err and "internal error" not in err


def test_a_full_disk_while_checkpointing_from_python_is_an_output_error(tmp_path, monkeypatch):
    import kopt.files.sets

    def full(target, payload):
        raise OSError(errno.ENOSPC, "No space left on device", target)

    monkeypatch.setattr(kopt.files.sets, "_write_durable", full)
    with pytest.raises(OutputError, match="the checkpoint of iteration 5: the disk holding .* is full") as caught:
        kopt.solve(_spec(tmp_path, checkpoint_every=5, out="ck"))
    assert caught.value.exit_status == 2


# -- item 5: an unreachable scheduler ---------------------------------------------------------------------------

@pytest.mark.slow
def test_an_unreachable_scheduler_is_exit_2_after_the_connect_timeout(tmp_path, capsys):
    pytest.importorskip("distributed")
    spec = _spec(tmp_path)
    spec["model"]["loss"] = {"name": "square"}
    spec["solver"] = {"name": "dsg", "iterations": 5}
    path = _write(tmp_path, spec)
    t0 = time.perf_counter()
    assert main(["solve", path, "-q", "--scheduler", "tcp://127.0.0.1:1", "--connect-timeout", "1"]) == 2
    assert time.perf_counter() - t0 < 20
    err = capsys.readouterr().err
    assert "cannot connect" in err and "--connect-timeout" in err and "internal error" not in err


def test_the_connect_timeout_must_be_positive_seconds(tmp_path, capsys):
    with pytest.raises(SystemExit) as caught:
        main(["solve", "x.yaml", "--connect-timeout", "-3"])
    assert caught.value.code == 2 and "seconds > 0" in capsys.readouterr().err


# -- item 6: what changed on --resume ---------------------------------------------------------------------------

def test_resume_after_a_spec_change_names_the_keys_that_differ(tmp_path):
    kopt.solve(_spec(tmp_path, iterations=10, checkpoint_every=5, out="r"))
    changed = _spec(tmp_path, iterations=10, checkpoint_every=5, out="r", lam=0.5)
    changed["solver"]["batch_size"] = 32
    with pytest.raises(kopt.errors.CheckpointError) as caught:
        kopt.solve(changed, resume=True)
    text = str(caught.value)
    assert "model.regularizer.lambda: 0.001 → 0.5" in text and "solver.batch_size: 64 → 32" in text
    assert "output" not in text.split("(", 1)[1]  # the output folder is not part of the run's identity


# -- item 8: the output folder ----------------------------------------------------------------------------------

@pytest.mark.slow
@POSIX_SIGNALS
def test_a_second_run_into_a_folder_in_use_is_refused_naming_the_first_ones_pid(tmp_path, capsys):
    spec = _spec(tmp_path, iterations=400, sleep=0.05, out="busy")
    path = _write(tmp_path, spec)
    proc = subprocess.Popen([sys.executable, "-m", "kopt", "solve", path, "-q"], env=_subprocess_env(tmp_path),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        lock = tmp_path / "busy" / ".kopt.lock"
        deadline = time.time() + 60
        while not (lock.exists() and lock.read_text().strip()) and time.time() < deadline and proc.poll() is None:
            time.sleep(0.05)
        assert main(["solve", path, "-q"]) == 2
        err = capsys.readouterr().err
        assert f"in use by another kopt run (PID {proc.pid})" in err and "output.dir" in err
    finally:
        proc.kill()
        proc.communicate()
    assert main(["solve", path, "-q", "--set", "solver.iterations=3", "--set", "solver.sleep=0"]) == 0  # lock gone


@pytest.mark.slow
def test_another_specs_model_is_not_overwritten_without_force(tmp_path, capsys):
    first = _write(tmp_path, _spec(tmp_path, out="shared"), "a.yaml")
    other = _write(tmp_path, _spec(tmp_path, out="shared", lam=0.01), "b.yaml")
    assert main(["solve", first, "-q"]) == 0
    kept = kopt.load_model(tmp_path / "shared" / "model.json").content_hash()
    assert main(["solve", other, "-q"]) == 2
    err = capsys.readouterr().err
    assert "model of another spec (model.regularizer.lambda: 0.001 → 0.01)" in err and "--force" in err
    assert kopt.load_model(tmp_path / "shared" / "model.json").content_hash() == kept
    assert main(["solve", first, "-q"]) == 0  # the same spec again overwrites its own model
    assert main(["solve", other, "-q", "--force"]) == 0
    assert kopt.load_model(tmp_path / "shared" / "model.json").spec["model"]["regularizer"]["lambda"] == 0.01
    assert main(["solve", first, "-q", "--set", "output.overwrite=true"]) == 0


# -- item 9: which paths are expanded ---------------------------------------------------------------------------

def test_a_tilde_and_variables_expand_in_the_three_path_keys_and_nothing_is_executed(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("RUNS", str(tmp_path / "runs"))
    spec = _spec(tmp_path)
    spec["data"]["train"] = "~/data.csv"
    spec["output"]["dir"] = "$RUNS/x"
    loaded = kopt.load_spec(spec)
    assert loaded["data"]["train"] == str(tmp_path / "data.csv")
    assert loaded["output"]["dir"] == str(tmp_path / "runs" / "x")
    marker = tmp_path / "executed"
    spec["data"]["train"] = f"$(touch {marker})/data.csv"
    with pytest.raises(kopt.SpecError):
        kopt.load_spec(spec)
    spec["data"]["train"] = f"`touch {marker}`"
    with pytest.raises(kopt.SpecError):
        kopt.load_spec(spec)
    assert not marker.exists()


# -- issue 28 item 5: no POSIX-only imports ----------------------------------------------------------------------

@pytest.mark.slow
def test_import_kopt_works_without_fcntl():
    code = """
import sys, warnings
class NoFcntl:
    def find_spec(self, name, path=None, target=None):
        if name == "fcntl":
            raise ImportError("no fcntl here")
sys.modules.pop("fcntl", None)
sys.meta_path.insert(0, NoFcntl())
warnings.simplefilter("ignore")  # filelock says it falls back to soft locks
import kopt, kopt.cli, kopt.api, kopt.files.atomic, kopt.running.outdir, kopt.data.cache, kopt.data.download, kopt.numerics.memory
assert "fcntl" not in sys.modules, "something imported fcntl"
assert kopt.numerics.memory.available_bytes() > 0 and kopt.numerics.memory.peak_rss_mb() > 0
print("ok")
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr
