"""The progress bar is a run-time hook implementation like any other listener."""
from __future__ import annotations

import io

import pytest

from kopt.running.context import IterationRecord
from kopt.running.listeners import ProgressBar


class _Run:
    total_iterations = 10


def test_progress_line_shows_iteration_objective_gap_and_rate():
    stream = io.StringIO()
    bar = ProgressBar(stream=stream, min_interval=0.0, mode="tty")
    bar.kopt_iteration(run=_Run(), record=IterationRecord(5, 2.0, objective=0.25, gap=1e-3, rows=1000))
    bar.kopt_run_end(run=_Run(), result=None)
    text = stream.getvalue()
    assert "it 5/10" in text and "obj 0.25" in text and "gap 0.001" in text and "500 rows/s" in text
    assert "[##########..........]" in text and text.endswith("\n")


def test_progress_is_rate_limited():
    stream = io.StringIO()
    bar = ProgressBar(stream=stream, min_interval=3600, mode="tty")
    for t in range(1, 50):
        bar.kopt_iteration(run=_Run(), record=IterationRecord(t, 0.1 * t))
    assert stream.getvalue().count("\r") == 1


def test_data_progress_can_be_silenced_on_a_terminal():
    from kopt.data.progress import ByteProgress, drawing

    class Tty(io.StringIO):
        def isatty(self):
            return True

    assert ByteProgress(100, "f", stream=Tty()).enabled
    with drawing(False):
        assert not ByteProgress(100, "f", stream=Tty()).enabled
        assert not ByteProgress(100, "f", stream=io.StringIO()).enabled
    with drawing(True):
        assert ByteProgress(100, "f", stream=Tty()).enabled


# -- the time left, as far as it is known --------------------------------------------------------------------------
class _GapRun:
    """A run of a solver that stops on its relative duality gap at tol 0.01, capped at 1000 iterations."""

    total_iterations = 1000
    start_iteration = 0
    elapsed_before = 0.0
    stopping = "gap"
    tol = 0.01


class _CapRun(_GapRun):
    stopping = "none"
    tol = None


class _Result:
    def __init__(self, status, message, n_iter):
        self.status, self.message, self.n_iter = status, message, n_iter
        self.success, self.objective, self.gap, self.metrics, self.timings = status == "converged", 1.0, 0.0, {}, {}


def _lines(run, gaps, result=None, every=1):
    """The log lines of a run whose check t (one a second, 10 iterations apart) has relative gap ``gaps[t]``."""
    stream = io.StringIO()
    bar = ProgressBar(stream=stream, mode="log", log_every_iter=every)
    for i, g in enumerate(gaps, start=1):
        extra = {} if g is None else {"rel_gap": g}
        bar.kopt_iteration(run=run, record=IterationRecord(10 * i, float(i), objective=1.0, rows=100, extra=extra))
    bar.kopt_run_end(run=run, result=result)
    return stream.getvalue().splitlines()


def test_a_gap_solver_shows_the_gap_s_rate_an_estimate_and_at_most_the_cap():
    """A gap halving every second from 0.64 reaches 0.01 six halvings later: the estimate says about 6s, labelled
    as an estimate at the measured rate, beside "at most" the cap's time; no bare ETA."""
    lines = _lines(_GapRun(), [0.64 / 2 ** k for k in range(4)])
    last = lines[-2]  # the last progress line before the end
    assert "rel gap 0.08 -> tol 0.01, halving every 1s" in last
    assert "about 3s left at that rate" in last  # 0.08 -> 0.01: three more halvings
    assert "at most 1m36s (the cap)" in last  # 960 iterations to go at 10 iterations a second
    assert "ETA" not in "\n".join(lines)
    assert "halving" not in lines[0] and "about" not in lines[1]  # too few checks to measure a rate


def test_a_gap_that_does_not_fall_gives_no_estimate():
    lines = _lines(_GapRun(), [0.5, 0.6, 0.55, 0.7])
    assert "not falling" in lines[-2] and "about" not in lines[-2] and "at most" in lines[-2]


def test_a_run_to_its_cap_says_the_time_left_plainly():
    lines = _lines(_CapRun(), [None] * 4)
    assert "1m36s left" in lines[-2] and "at most" not in lines[-2] and "rel gap" not in lines[-2]


@pytest.mark.parametrize("result,words", [
    (None, "(end: interrupted)"),
    (_Result("converged", "relative duality gap 0.0098 <= tol 0.01 after 40 iterations", 40),
     "(end: converged: relative duality gap 0.0098 <= tol 0.01 after 40 iterations)"),
    (_Result("iteration_cap", "stopped at the iteration cap (40) with relative duality gap 0.02 > tol 0.01; raise "
                              "solver.iterations or loosen solver.tol", 40), "(end: stopped at the iteration cap (40)"),
    (_Result("iteration_cap", "40 iterations", 40), "(end: the iteration cap (40 iterations))"),
])
def test_the_final_line_says_what_stopped_the_run(result, words):
    lines = _lines(_GapRun(), [0.64, 0.32, 0.16, 0.08], result=result)
    assert words in lines[-1] and "at most" not in lines[-1] and "left" not in lines[-1]


def test_json_lines_carry_the_labelled_times():
    import json

    from kopt.running.listeners import JsonLog

    stream = io.StringIO()
    log = JsonLog(stream, log_every_iter=10)
    for i, g in enumerate([0.64, 0.32, 0.16, 0.08], start=1):
        log.kopt_iteration(run=_GapRun(), record=IterationRecord(10 * i, float(i), rows=100, extra={"rel_gap": g}))
    log.kopt_run_end(run=_GapRun(), result=_Result("converged", "relative duality gap 0.008 <= tol 0.01", 40))
    events = [json.loads(x) for x in stream.getvalue().splitlines()]
    last = events[-2]
    assert last["halving_s"] == pytest.approx(1.0) and last["estimate_s"] == pytest.approx(3.0)
    assert last["cap_left_s"] == pytest.approx(96.0) and "eta_s" not in last
    assert events[-1]["stopped_by"].startswith("converged") and "estimate_s" not in events[-1]


def test_the_terminal_bar_is_drawn_to_the_cap_only_where_the_run_goes_there():
    stream = io.StringIO()
    bar = ProgressBar(stream=stream, min_interval=0.0, mode="tty")
    bar.kopt_iteration(run=_GapRun(), record=IterationRecord(500, 2.0, rows=10, extra={"rel_gap": 0.5}))
    bar.kopt_run_end(run=_GapRun(), result=_Result("converged", "relative duality gap 0.008 <= tol 0.01", 500))
    text = stream.getvalue()
    assert "[#" not in text and "(end: converged" in text
