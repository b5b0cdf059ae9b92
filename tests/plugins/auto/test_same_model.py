"""The same model on any machine: solver auto's choices depend on the data, the spec and its seed alone.

The same spec and seed give the same model bits -- route, center count, bandwidth, column scales, λ and
coefficients, compared by their content hash (``model_sha256``) -- on a quiet machine, beside two busy processes,
on 1 and on 2 threads, and on a machine whose clock says everything takes 300 times as long (time.perf_counter
scaled: a slow machine, as the search sees one), on both of auto's routes.  Each route's stopping rule binds in
its case (the ladder's next size, the grown center count), so a choice that read the clock or a measured rate
would move: before the work budget, the slow clock stopped the ladder at its first size and ruled out the grown
sizes.  A wall-clock limit the user sets (``solver.budget``) is the one way the machine enters, and then the
report says so.
"""
from __future__ import annotations

import contextlib
import subprocess
import sys
import time
import warnings

import pytest
from helpers import curved_classes

import kopt


@contextlib.contextmanager
def _busy(count=2):
    """Two CPU-bound processes beside the solve (ended by their own ids afterwards)."""
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(count)]
    try:
        time.sleep(0.2)
        yield
    finally:
        for p in hogs:
            p.kill()
            p.wait()


def _slow_clock(m, factor):
    """time.perf_counter running ``factor`` times fast: every stage seems ``factor`` times slower."""
    real = time.perf_counter
    start = real()
    m.setattr(time, "perf_counter", lambda: start + (real() - start) * factor)


def _fit(spec, data, monkeypatch, threads, busy=False, slow=None, capfd=None):
    with monkeypatch.context() as m, warnings.catch_warnings(), (_busy() if busy else contextlib.nullcontext()):
        warnings.simplefilter("ignore")
        m.setenv("KOPT_THREADS", str(threads))
        if slow:
            _slow_clock(m, slow)
        r = kopt.solve(spec, data=data, progress=True)
    log = capfd.readouterr().err if capfd is not None else ""
    return r, log


def _machines(spec, data, monkeypatch, capfd, runs):
    """The fits of ``spec`` under each (threads, busy, slow) of ``runs``: ``[(content hash, auto record, log)]``."""
    out = []
    for threads, busy, slow in runs:
        r, log = _fit(spec, data, monkeypatch, threads, busy, slow, capfd)
        out.append((r.model.content_hash(), r.auto, log))
    return out


def _same(fits):
    first = fits[0][1]
    for digest, auto, _ in fits:
        assert (auto["route"], auto["centers"], auto["bandwidth"], auto["lambda"], auto.get("column_scales")) == (
            first["route"], first["centers"], first["bandwidth"], first["lambda"], first.get("column_scales"))
        assert [t["centers"] for t in auto["trials"]] == [t["centers"] for t in first["trials"]]
        assert auto["budget"]["spent_flops"] == first["budget"]["spent_flops"]  # the work counted is the same
        assert not auto["budget"]["machine_dependent"] and auto["budget"]["time_limit_s"] is None
        assert digest == fits[0][0]


def test_the_small_route_chooses_the_same_model_on_any_machine(monkeypatch, capfd):
    """3,000 rows: the ladder grows until the next size's counted work would pass 4e9 flops (only that rule can
    stop it here: the gain rules are off), at 512 centers."""
    from kopt_plugins.auto import scoring

    monkeypatch.setattr(scoring, "MIN_GAIN", {"accuracy": -1.0, "rmse": -1.0})
    monkeypatch.setattr(scoring, "GAIN_ERRORS", -1e9)
    X, y = curved_classes(3000, 3, 0, 2, noise=0.3)
    spec = {"seed": 3, "model": {"loss": {"name": "square", "target": "binary"}, "kernel": {"name": "gaussian"}},
            "solver": {"name": "auto", "work": 4e9}, "output": {"model": False, "report": False}}
    fits = _machines(spec, (X, y), monkeypatch, capfd,
                     [(2, False, None), (1, False, None), (2, True, None), (2, False, 300.0)])
    _same(fits)
    auto, log = fits[0][1], fits[0][2]
    assert auto["route"] == "krr_nystrom"
    # the ladder's stopping rule bound: the next size's work, counted, would pass the budget
    assert "past the work budget" in log and "stop growing" in log
    assert max(t["centers"] for t in auto["trials"]) == 512
    assert auto["budget"]["work_flops"] == 4e9 and auto["budget"]["rule"] == "solver.work"
    assert "work budget 4e+09 flops" in log


def test_the_default_budget_is_the_rows_rule_and_the_report_keeps_it(capfd):
    from kopt_plugins.auto import work

    X, y = curved_classes(800, 3, 1, 2)
    spec = {"model": {"loss": {"name": "square", "target": "binary"}, "kernel": {"name": "gaussian"}},
            "solver": {"name": "auto", "max_centers": 256}, "output": {"model": False, "report": False}}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = kopt.solve(spec, data=(X, y), progress=True)
    log = capfd.readouterr().err
    budget = r.auto["budget"]
    assert budget["work_flops"] == work.default_work(800) == work.WORK_MIN
    assert budget["rule"] == work.rule_words() and budget["rule"] in log
    assert 0 < budget["spent_flops"] < budget["work_flops"]
    assert budget["time_limit_s"] is None and budget["time_limit_bound"] == [] and not budget["machine_dependent"]


def test_a_time_limit_is_a_hard_stop_and_says_the_model_depends_on_the_machine(capfd):
    X, y = curved_classes(3000, 3, 0, 2)
    spec = {"model": {"loss": {"name": "square", "target": "binary"}, "kernel": {"name": "gaussian"}},
            "solver": {"name": "auto", "budget": 1e-3}, "output": {"model": False, "report": False}}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = kopt.solve(spec, data=(X, y), progress=True)
    log = capfd.readouterr().err
    assert {t["centers"] for t in r.auto["trials"]} == {256}
    budget = r.auto["budget"]
    assert budget["machine_dependent"] and budget["time_limit_s"] == 1e-3
    assert budget["time_limit_bound"] == ["the ladder after 256 centers"]
    assert "depends on the machine" in log
    from kopt.cli.solve import _budget_words  # kopt solve's summary line

    assert "time limit 0.001s (bound: the choice depends on the machine)" in _budget_words(r.auto)


@pytest.mark.slow
def test_the_large_route_chooses_the_same_model_on_any_machine(monkeypatch, capfd):
    """60,000 training rows, past large.SEARCH_ROWS: the column scales, the sample's ladder (at most 64 centers) and
    the grown center count, chosen by the work left (2e11 flops: 512 centers; 1,024 would pass it)."""
    from kopt_plugins.auto import columns, large

    # the column search's model at test size (its trials are still bounded by the columns alone)
    monkeypatch.setattr(columns, "CENTERS", 64)
    monkeypatch.setattr(columns, "FIT_ROWS", 4000)
    monkeypatch.setattr(columns, "VALIDATION_ROWS", 4000)
    X, y = curved_classes(60_000, 4, 2, 2, noise=0.3)  # columns 2 and 3 are noise
    assert len(X) > large.SEARCH_ROWS
    spec = {"seed": 4, "model": {"loss": {"name": "square", "target": "binary"}, "kernel": {"name": "gaussian"}},
            "solver": {"name": "auto", "max_centers": 64, "work": 2e11},
            "output": {"model": False, "report": False}}
    fits = _machines(spec, (X, y), monkeypatch, capfd, [(2, False, None), (1, False, None), (2, True, 300.0)])
    _same(fits)
    auto, log = fits[0][1], fits[0][2]
    assert "past 50,000 rows" in log and "the grown size's work on 60,000 rows" in log
    grown = [t for t in auto["trials"] if t.get("rows")]
    assert grown and grown[0]["centers"] == 512  # the largest doubling whose counted work fits what is left
    assert auto["column_scales"] is not None


@pytest.mark.slow
def test_the_large_route_lets_the_rows_as_given_go_once_it_has_their_column_scaled_copy(monkeypatch):
    """Past large.SEARCH_ROWS with column scales chosen, the search reads the column-scaled copy of the rows: the
    problem's rows as given are released (Solver.plan's contract: the solve on every row assembles its own)."""
    from kopt.running.assemble import assemble
    from kopt_plugins.auto import columns

    monkeypatch.setattr(columns, "CENTERS", 64)
    monkeypatch.setattr(columns, "FIT_ROWS", 4000)
    monkeypatch.setattr(columns, "VALIDATION_ROWS", 4000)
    X, y = curved_classes(60_000, 4, 2, 2, noise=0.3)
    spec = kopt.load_spec({"seed": 4, "backend": "numpy",
                           "model": {"loss": {"name": "square", "target": "binary"}, "kernel": {"name": "gaussian"}},
                           "solver": {"name": "auto", "max_centers": 64, "work": 1.5e11},
                           "output": {"model": False, "report": False}})
    problem = assemble(spec, (X, y))
    plan = spec.component(("solver",)).plan(problem, spec.given, None)
    assert plan.record["column_scales"] is not None
    assert problem.X is None and problem.y is not None


def test_the_squared_hinge_chooses_the_same_model_on_any_machine(monkeypatch, capfd):
    """The squared hinge's search and solve (Newton steps on held factors, the square loss's λ path from 1,024 centers
    on) factor on every worker thread by tiles in fixed parts: the same model on 1 and 2 threads and on a busy
    machine.  A threaded LAPACK Cholesky gave another model on 1 thread (its bits follow the cores)."""
    from kopt.nystrom.system import PATH_THREADED
    from kopt_plugins.auto import scoring

    monkeypatch.setattr(scoring, "MIN_GAIN", {"accuracy": -1.0, "rmse": -1.0})  # the ladder grows to its budget
    monkeypatch.setattr(scoring, "GAIN_ERRORS", -1e9)
    X, y = curved_classes(3000, 5, 0, 2, noise=0.5)
    spec = {"seed": 3, "model": {"loss": {"name": "squared_hinge"}, "kernel": {"name": "gaussian"}},
            "solver": {"name": "auto", "work": 4e10}, "output": {"model": False, "report": False}}
    fits = _machines(spec, (X, y), monkeypatch, capfd, [(2, False, None), (1, False, None), (2, True, None)])
    _same(fits)
    auto = fits[0][1]
    assert auto["route"] == "svm_nystrom"
    assert max(t["centers"] for t in auto["trials"]) >= PATH_THREADED
    assert sum(t.get("newton_steps", 0) for t in auto["trials"]) > 0


@pytest.mark.slow
@pytest.mark.parametrize("rows", [60_000, 20_000])
def test_column_scales_the_spec_gives_are_kept(monkeypatch, rows):
    """``data.column_scales`` given in the spec is the author's: the search neither searches scales over it nor
    replaces it, past large.SEARCH_ROWS (the sweeps) or below it (the screen's drops); the same task without it has
    its noise columns searched (the scales chosen)."""
    from kopt.running.assemble import assemble
    from kopt_plugins.auto import columns

    monkeypatch.setattr(columns, "CENTERS", 64)
    monkeypatch.setattr(columns, "FIT_ROWS", 4000)
    monkeypatch.setattr(columns, "VALIDATION_ROWS", 4000)
    X, y = curved_classes(rows, 4, 2, 2, noise=0.3)  # columns 2 and 3 are noise
    records = []
    for scales in (None, [1.0, 1.0, 0.5, 0.5]):
        doc = {"seed": 4, "backend": "numpy",
               "model": {"loss": {"name": "square", "target": "binary"}, "kernel": {"name": "gaussian"}},
               "solver": {"name": "auto", "max_centers": 64, "work": 1.5e11},
               "output": {"model": False, "report": False}}
        if scales is not None:
            doc["data"] = {"column_scales": scales}
        spec = kopt.load_spec(doc)
        lines = []
        plan = spec.component(("solver",)).plan(assemble(spec, (X, y)), spec.given, lines.append)
        records.append((plan.record.get("column_scales"), plan.overrides.get("data.column_scales"),
                        any("column scales" in line for line in lines)))
    searched, kept = records
    assert searched[0] is not None and searched[2]
    assert kept == (None, None, False)
