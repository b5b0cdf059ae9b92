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



def test_a_column_whose_drop_lost_in_the_screen_tries_no_drop_in_the_sweeps():
    """Columns 0 and 2 are needed (the screen's drop lost clearly); column 1 is not: only column 1 tries the
    multiplier 0, and the first sweep tries two steps for each needed column (½ and 2, neither gains), three for
    column 1."""
    trials = _Scripted(3, lambda s, f: 8000 - (500 if s[0] == 0 or s[2] == 0 else 0))
    start = trials.evaluate(np.ones(3), 1.0)
    trials.tried.clear()
    columns._sweeps(trials, np.ones(3), start, 1.0, start, lambda line: None, 0.0, needed=frozenset({0, 2}))
    dropped = [int(np.flatnonzero(s == 0)[0]) for s, _ in trials.tried if (s == 0).any()]
    assert dropped == [1]
    steps = [int(np.flatnonzero(s != 1)[0]) for s, f in trials.tried if f == 1.0 and (s != 1).any()]
    assert steps == [0, 0, 1, 1, 1, 2, 2]


def test_without_the_screen_s_measure_every_kept_column_tries_a_drop():
    """No column named needed: each tries 0, ½ and 2, as the sweeps did before the screen measured the drops."""
    trials = _Scripted(3, lambda s, f: 8000 - (500 if (s == 0).any() else 0))
    start = trials.evaluate(np.ones(3), 1.0)
    trials.tried.clear()
    columns._sweeps(trials, np.ones(3), start, 1.0, start, lambda line: None, 0.0)
    assert sorted(int(np.flatnonzero(s == 0)[0]) for s, _ in trials.tried if (s == 0).any()) == [0, 1, 2]


def test_the_screen_names_the_columns_whose_drop_lost_clearly():
    """The screen's ``needed``: the columns whose drop alone lost more than NEEDED_ERRORS standard errors.  Column 0's
    drop loses 500 rows of 10,000 (many errors): needed.  Column 1's loses 60 rows and wins 45 others back: 0.15
    points, about 1.5 errors, more than the screen's drop allows and less than needed: kept, tried at 0 in the sweeps.
    Column 2's loses nothing: a drop."""
    class Mixed(_Scripted):
        def evaluate(self, scales, factor):
            rows = np.zeros(ROWS)
            rows[:8000] = 1.0
            if scales[0] == 0:
                rows[:500] = 0.0
            if scales[1] == 0:
                rows[:60] = 0.0
                rows[8000:8045] = 1.0
            return rows

    trials = Mixed(3, None)
    shared = trials.evaluate(np.ones(3), 1.0)
    error = columns.scoring.gain_error("accuracy", shared, trials.evaluate(np.array([1.0, 0.0, 1.0]), 1.0))
    assert 1 < 0.0015 / error < columns.NEEDED_ERRORS
    _, _, _, needed = columns._screen(trials, shared, 1.0, lambda line: None)
    assert needed == {0}
