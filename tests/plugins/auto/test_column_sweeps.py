"""The column sweeps' trial rules (plugins/auto/columns.py), on trials whose validation outcomes the test sets: which
steps are tried, and when a second sweep runs."""
from __future__ import annotations

import numpy as np

from kopt_plugins.auto import columns

ROWS = 10_000


class _Scripted(columns._Trials):
    """A column search's trials whose outcomes are scripted: ``right(scales, factor)`` rows of ROWS are right, the
    first ones; every trial is recorded."""

    def __init__(self, d, right):
        self.metric, self.X_fit, self.right, self.tried = "accuracy", np.zeros((4, d), np.float32), right, []

    def evaluate(self, scales, factor):
        self.tried.append((scales.copy(), factor))
        rows = np.zeros(ROWS)
        rows[:self.right(scales, factor)] = 1.0
        return rows

    def over_budget(self):
        return False


def _sweeps(trials, d):
    start = trials.evaluate(np.ones(d), 1.0)
    trials.tried.clear()
    lines = []
    scales, best, factor = columns._sweeps(trials, np.ones(d), start, 1.0, start, lines.append, 0.0)
    return scales, factor, [line for line in lines if "sweep" in line]


def test_a_first_sweep_that_gains_less_than_the_rows_can_tell_is_the_last():
    """Halving column 0 gains 6 rows of 10,000 (0.06 points: a step, less than the 0.10 points a gain must be): one
    sweep, whose step is kept."""
    trials = _Scripted(3, lambda s, f: 8000 + (6 if s[0] == 0.5 else 0))
    scales, factor, swept = _sweeps(trials, 3)
    assert len(swept) == 1 and scales[0] == 0.5 and factor == 1.0


def test_a_first_sweep_that_gains_what_the_rows_can_tell_is_followed_by_a_second():
    """Halving column 0 gains 50 rows of 10,000 (0.5 points, many standard errors): a second sweep runs."""
    trials = _Scripted(3, lambda s, f: 8000 + (50 if s[0] == 0.5 else 0))
    _, _, swept = _sweeps(trials, 3)
    assert len(swept) == 2

