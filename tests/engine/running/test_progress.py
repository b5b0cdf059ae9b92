"""The progress bar is a run-time hook implementation like any other listener."""
from __future__ import annotations

import io

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
