"""Progress from Python reaches the ``logging`` logger ``kopt`` (issue 28 item 3); ``verbose`` maps onto levels."""
from __future__ import annotations

import logging

import numpy as np
import pytest

import kopt
import kopt.running.logs as logs
from kopt.running.listeners import ProgressBar
from kopt.running.logs import progress_listeners

pytestmark = pytest.mark.filterwarnings("ignore::kopt.ConvergenceWarning")  # small fixed runs stop at the cap


def _spec(iterations=40):
    return {
        "name": "logged",
        "seed": 0,
        "data": {"test_fraction": 0.25},
        "model": {"loss": {"name": "logistic"}, "kernel": {"name": "gaussian", "bandwidth": 2.0},
                  "features": {"count": 64}, "regularizer": {"name": "l2", "lambda": 1e-2}, "form": "dual"},
        "solver": {"name": "joker", "iterations": iterations, "batch_size": 4, "check_every": 1, "tol": 1e-12},
        "backend": "numpy",
    }


def _data(n=200):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((n, 3))
    return X, np.sign(X[:, 0] + 0.3 * rng.standard_normal(n))


class _Records(logging.Handler):
    def __init__(self):
        super().__init__(logging.DEBUG)
        self.records = []

    def emit(self, record):
        self.records.append(record)


@pytest.fixture()
def records():
    handler = _Records()
    logger = logging.getLogger("kopt")
    logger.addHandler(handler)
    previous = logger.level
    yield handler, logger
    logger.removeHandler(handler)
    logger.setLevel(previous)


@pytest.mark.slow
def test_solve_progress_reaches_a_logging_handler(records, monkeypatch):
    handler, logger = records
    logger.setLevel(logging.INFO)
    monkeypatch.setattr(logs, "LOG_EVERY", 0.0)  # a record every iteration instead of every 10 s
    kopt.solve(_spec(), data=_data())
    lines = [r.getMessage() for r in handler.records]
    assert all(r.name == "kopt" and r.levelno == logging.INFO for r in handler.records)
    assert lines[0].startswith("logged: solver joker on 200 rows, at most 40 iterations")
    assert any(ln.startswith("it 20/40  obj ") for ln in lines)
    assert lines[-1].startswith("it 40/40") and lines[-1].endswith(")") and "(end: stopped at the iteration cap" in lines[-1]


@pytest.mark.slow
def test_default_cadence_is_ten_seconds_plus_the_end(records):
    handler, logger = records
    logger.setLevel(logging.INFO)
    kopt.solve(_spec(), data=_data())  # well under 10 s: the start and the end only
    lines = [r.getMessage() for r in handler.records]
    assert len(lines) == 2 and "(end: stopped at the iteration cap (40)" in lines[1]


@pytest.mark.slow
def test_gap_checks_are_debug_records(records):
    handler, logger = records
    logger.setLevel(logging.DEBUG)
    kopt.solve(_spec(), data=_data())
    checks = [r for r in handler.records if r.getMessage().startswith("check: ")]
    assert checks and all(r.levelno == logging.DEBUG and " gap " in r.getMessage() for r in checks)


@pytest.mark.slow
def test_nothing_is_printed_without_configuration(capsys):
    kopt.solve(_spec(), data=_data())
    assert capsys.readouterr().err == ""


@pytest.mark.slow
@pytest.mark.parametrize("verbose,expect", [(0, "none"), (False, "none"), (1, "bar"), (True, "bar"), (2, "debug")])
def test_sklearn_verbose_maps_to_levels(verbose, expect, capsys, monkeypatch):
    pytest.importorskip("sklearn")
    from kopt.sklearn import KernelClassifier

    monkeypatch.setattr(logging.getLogger(), "handlers", [])  # no application logging (pytest's own removed)
    X, y = _data()
    est = KernelClassifier(loss="logistic", solver="joker", features=64, lam=1e-2, verbose=verbose, backend="numpy",
                           solver_options={"iterations": 30, "batch_size": 4, "check_every": 1, "tol": 1e-12})
    with pytest.warns(Warning):  # the iteration cap
        est.fit(X, y)
    err = capsys.readouterr().err
    if expect == "none":
        assert err == ""
    elif expect == "bar":
        assert "it 30/30" in err and "check:" not in err
    else:
        assert "kopt: check: it " in err and "(end: " in err
    assert logging.getLogger("kopt").level == logging.NOTSET  # restored after the fit


@pytest.mark.slow
def test_notebook_gets_a_tqdm_bar(monkeypatch, capsys):
    pytest.importorskip("tqdm")
    monkeypatch.setattr(logs, "in_notebook", lambda: True)
    (listener,) = progress_listeners(True)
    assert isinstance(listener, logs.NotebookBar)
    kopt.solve(_spec(), data=_data(), progress=True)
    err = capsys.readouterr().err  # outside a real notebook tqdm.auto draws its text bar on stderr
    assert "logged: 100%" in err and "40/40" in err


def test_terminal_and_logs_keep_the_progress_line(monkeypatch):
    monkeypatch.setattr(logs, "in_notebook", lambda: False)
    assert isinstance(progress_listeners(True)[0], ProgressBar)
    assert isinstance(progress_listeners(False)[0], logs.LogProgress)
