"""kill -9 at seeded random points of a solve, then ``kopt solve --resume``: the model equals the
uninterrupted run's, bit for bit (its content hash).  Real processes, real SIGKILL.

A kill point is ``(K, J)``: after iteration K's listeners ran, file operation J of kopt.files.sets
(inside the next checkpoint's or the model's commit) never happens; J = -1 kills at iteration K
itself.  K is at least one checkpoint interval in, so there is a checkpoint to resume from.  The
killed run has 2 worker threads, the resumed one 1: a checkpoint resumes on any thread count.
"""
from __future__ import annotations

import os
import random
import signal
import subprocess
import sys

import pytest
import yaml
from helpers import regression_csv

import kopt

pytestmark = [pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals"), pytest.mark.slow]

DRIVER = r"""
import os, signal, sys
import kopt.files.sets as fileset
from kopt.cli import main
from kopt.contract.hookspecs import hookimpl
from kopt.contract.registry import registry

K, J = int(sys.argv[1]), int(sys.argv[2])
OPS = ("open", "write", "fsync", "close", "replace", "unlink")

def die():
    os.kill(os.getpid(), signal.SIGKILL)

class Os:
    armed, done = False, 0
    def __getattr__(self, name):
        real = getattr(os, name)
        if name not in OPS:
            return real
        def op(*args, **kwargs):
            if Os.armed:
                if Os.done == J:
                    die()
                Os.done += 1
            return real(*args, **kwargs)
        return op

class Killer:
    @hookimpl
    def kopt_iteration(self, run, record):
        if record.iteration == K:
            if J < 0:
                die()
            Os.armed = True

fileset.os = Os()
registry().register_plugin(Killer(), name="killer", distribution="kopt-tests")
sys.exit(main(sys.argv[3:]))
"""

CHECKPOINT_EVERY = 4
#: name -> (spec overrides, iterations)
CASES = {
    "dsg": ({"solver": {"name": "dsg", "batch_size": 64}}, 24),
    "joker-exact": ({"model": {"form": "dual"},
                     "solver": {"name": "joker", "mode": "exact", "batch_size": 64, "tol": 0.0}}, 16),
    "joker-features": ({"model": {"form": "dual"},
                        "solver": {"name": "joker", "mode": "features", "batch_size": 64, "tol": 0.0}}, 16),
    "adsg": ({"solver": {"name": "adsg", "batch_size": 32, "tol": 0.0}}, 12),
    "gp": ({"model": {"form": "gp"}, "solver": {"name": "gp", "batch_size": 32}}, 24),
}


def _points():
    out = []
    for i, (name, (_, iterations)) in enumerate(CASES.items()):
        rng = random.Random(1700 + i)
        k, j = rng.randrange(CHECKPOINT_EVERY, iterations - CHECKPOINT_EVERY), rng.randrange(-1, 16)
        out.append(pytest.param(name, k, j, id=f"{name}-it{k}-op{j}"))
    return out


def _spec(tmp_path, name):
    overrides, iterations = CASES[name]
    spec = {"name": name, "seed": 3,
            "data": {"train": str(regression_csv(tmp_path / "data.csv", n=300, d=3, seed=1)), "label": 0,
                     "test_fraction": 0.25},
            "model": {"loss": {"name": "square"}, "kernel": {"name": "gaussian", "bandwidth": "median"},
                      "regularizer": {"name": "l2", "lambda": 1e-2}, "features": {"count": 256, "block_size": 128},
                      **overrides.get("model", {})},
            "solver": {**overrides["solver"], "iterations": iterations},
            "backend": "numpy",
            "output": {"dir": str(tmp_path / "killed"), "checkpoint_every": CHECKPOINT_EVERY}}
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(spec))
    return spec, path


@pytest.mark.filterwarnings("ignore::kopt.errors.ConvergenceWarning")  # tol 0: every run goes to its cap
@pytest.mark.parametrize("name,k,j", _points())
def test_kill_9_then_resume_gives_the_uninterrupted_model(tmp_path, name, k, j):
    spec, path = _spec(tmp_path, name)
    env = {**os.environ, "KOPT_THREADS": "2"}
    killed = subprocess.run([sys.executable, "-c", DRIVER, str(k), str(j), "solve", str(path), "--quiet"],
                            env=env, capture_output=True, text=True, timeout=120)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    resumed = subprocess.run([sys.executable, "-m", "kopt", "solve", str(path), "--resume", "--quiet"],
                             env={**env, "KOPT_THREADS": "1"}, capture_output=True, text=True, timeout=120)
    assert resumed.returncode == 0, resumed.stderr
    spec["output"] = {"dir": str(tmp_path / "whole"), "checkpoint_every": 0}
    whole = kopt.solve(spec)
    assert whole.n_iter == spec["solver"]["iterations"]
    assert kopt.load_model(tmp_path / "killed" / "model.json").content_hash() == whole.model.content_hash()
