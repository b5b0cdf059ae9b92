"""A Dask worker lost in the middle of a solve: the same model as an undisturbed run, or exit 2 naming the worker.

docs/scale.md promises the same model when a worker dies.  Every value a round reads travels inside a task the
scheduler can run again (``Partitions.put``): the krr_pcg centers and a resumed run's per-partition state (krr_pcg's
scores, Joker's α) were ``scatter``'ed, and a scattered copy lost with its worker cancelled every task reading it
(``FutureCancelledError ... lost dependencies``: an internal error, exit 1, in 3 of 5 kill steps measured).  The
worker holding partition 0 is killed after an iteration drawn from each seed.  Work Dask gives up on anyway is a
ClusterError (exit status 2) that names the lost worker.

A LocalCluster (two worker processes) for each test; higgs-12k's first 3,000 rows; about a minute in all.
"""
from __future__ import annotations

import copy
import time

import numpy as np
import pytest

pytest.importorskip("distributed")

from helpers import KillWorker  # noqa: E402

import kopt  # noqa: E402

pytestmark = pytest.mark.slow

STEPS = 8


@pytest.fixture
def client():
    """A new LocalCluster for each test: a nanny that has replaced a killed worker several times was seen not to bring
    the next one back within two minutes on a loaded machine, which failed the later tests of a shared cluster."""
    from distributed import Client, LocalCluster

    with LocalCluster(n_workers=2, processes=True, threads_per_worker=1, dashboard_address=None) as cluster, \
            Client(cluster) as c:
        yield c


def _pcg(**solver):
    return {"name": "pcg_lost", "seed": 1, "data": {"source": "higgs-12k", "max_rows": 3000},
            "model": {"loss": {"name": "square", "target": "binary"},
                      "kernel": {"name": "gaussian", "bandwidth": "median"},
                      "regularizer": {"name": "l2", "lambda": 1.0e-4}, "features": {"kind": "nystrom", "count": 300}},
            "solver": {"name": "krr_pcg", "iterations": STEPS, "tol": 0, **solver},
            "backend": "numpy", "output": {"model": False, "report": False},
            "execution": {"engine": "dask", "partitions": 2}}


def _joker():
    spec = kopt.load_spec("quickstart", ["data.max_rows=3000", "model.features.count=256",
                                         "model.regularizer.lambda=1.0e-2", f"solver.iterations={STEPS}",
                                         "solver.tol=0"])
    spec = copy.deepcopy(spec.given)  # as written (overrides applied), not resolved
    spec["output"] = {"model": False, "report": False}
    spec["execution"] = {"engine": "dask", "partitions": 2}  # not the workers up at the time: a fixed problem
    return spec


def _same(hit, full):
    for key, value in full.model.predictor.arrays.items():
        np.testing.assert_array_equal(hit.model.predictor.arrays[key], value, err_msg=key)
    assert hit.objective == full.objective and hit.n_iter == full.n_iter


def _kill_step(seed):
    return int(np.random.default_rng(seed).integers(1, STEPS))


def _hit(client, spec, at, **kw):
    client.wait_for_workers(2, timeout=120)  # the nanny's new worker from the kill before
    before = set(client.nthreads())
    out = kopt.solve(spec, scheduler=client, progress=[KillWorker(client, at)], **kw)
    assert set(client.nthreads()) != before  # a worker process was replaced
    return out


@pytest.mark.parametrize("name, make, seeds", [("krr_pcg", _pcg, (1, 5, 9, 11)), ("joker", _joker, (6, 7))])
def test_a_worker_killed_at_a_random_step_changes_nothing(client, name, make, seeds):
    spec = make()
    client.wait_for_workers(2, timeout=120)
    full = kopt.solve(spec, scheduler=client)
    for seed in seeds:
        _same(_hit(client, spec, _kill_step(seed)), full)


@pytest.mark.parametrize("name, make", [("krr_pcg", _pcg), ("joker", _joker)])
def test_a_worker_killed_after_a_resume_changes_nothing(client, tmp_path, name, make):
    """The resumed run's state (krr_pcg's scores, Joker's α) goes back to the workers inside tasks: a worker lost
    after the resume is made again from them."""
    from kopt.testing.solvers import interrupt_at

    spec = make()
    spec["output"] = {"checkpoint_every": 2, "model": False, "report": False, "dir": str(tmp_path / "full")}
    client.wait_for_workers(2, timeout=120)
    full = kopt.solve(spec, scheduler=client)
    spec["output"]["dir"] = str(tmp_path / "cut")
    with interrupt_at(3), pytest.raises(KeyboardInterrupt):
        kopt.solve(spec, scheduler=client)
    _same(_hit(client, spec, 5, resume=True), full)


def test_work_dask_gives_up_on_is_exit_2_naming_the_worker(client, monkeypatch, capsys, tmp_path):
    """A value Dask can no longer make (here: every gather after the first rounds answers as a lost scattered copy
    did) ends ``kopt solve`` with exit 2 and the lost worker's address, never an internal error."""
    import yaml
    from distributed.client import FutureCancelledError

    from kopt.cli import main
    from kopt.distributed.partitions import Partitions

    gather, calls = Partitions.gather, []

    def losing(self, futures):
        calls.append(1)
        if len(calls) > 3:
            victim = sorted(self.client.nthreads())[0]
            self._homes = [victim, *(self._homes or [])[1:]]
            self.client.run(__import__("os")._exit, 1, workers=[victim], on_error="ignore")
            deadline = time.monotonic() + 60  # the scheduler has seen the worker go (else the message cannot name it)
            while victim in self.client.nthreads() and time.monotonic() < deadline:
                time.sleep(0.05)
            self.client.gather = _raise(FutureCancelledError("_answer-1", "lost dependencies"))
        return gather(self, futures)

    monkeypatch.setattr(Partitions, "gather", losing)
    spec = {**_pcg(), "output": {"dir": str(tmp_path / "run")}}
    spec["execution"] = {"engine": "dask", "scheduler": client.scheduler.address, "partitions": 2}
    (tmp_path / "spec.yaml").write_text(yaml.safe_dump(spec))
    assert main(["solve", str(tmp_path / "spec.yaml"), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "kopt: error: lost tcp://" in err and "internal error" not in err, err
    assert "FutureCancelledError" in err and "run again" in err
    client.wait_for_workers(2, timeout=120)


def _raise(exc):
    def fail(*args, **kwargs):
        raise exc
    return fail
