"""Past large.SEARCH_ROWS the column scales are kept only where the sample's direct search on the scaled columns beats
the same search on the columns as given (columns.ladder_confirms): where it does not, the plan is the one the columns
as given choose."""
from __future__ import annotations

import numpy as np
import pytest
from helpers import curved_classes

import kopt
from kopt_plugins.auto import columns, scoring


def test_the_scales_are_kept_only_where_they_gain_a_gain_the_rows_can_tell():
    rng = np.random.default_rng(0)
    plain = (rng.random(10_000) < 0.85).astype(float)
    clear = plain.copy()
    clear[np.flatnonzero(plain == 0)[:300]] = 1.0  # 3 points more, no row worse
    kept, gained, error = columns.ladder_confirms("accuracy", plain, clear)
    assert kept and gained == pytest.approx(0.03) and 0 < error < 0.01

    slight = plain.copy()
    slight[np.flatnonzero(plain == 0)[:5]] = 1.0  # 0.05 points: under MIN_GAIN
    assert not columns.ladder_confirms("accuracy", plain, slight)[0]

    noisy = plain.copy()  # 0.2 points net, spread over 2,000 changed rows: under one standard error
    noisy[np.flatnonzero(plain == 0)[:1010]] = 1.0
    noisy[np.flatnonzero(plain == 1)[:990]] = 0.0
    kept, gained, error = columns.ladder_confirms("accuracy", plain, noisy)
    assert not kept and gained >= scoring.MIN_GAIN["accuracy"] and gained < error

    kept, gained, _ = columns.ladder_confirms("accuracy", clear, plain)  # the scales lost
    assert not kept and gained < 0

    squared = rng.random(1000) + 0.5  # RMSE: a relative cut
    kept, gained, _ = columns.ladder_confirms("rmse", squared, 0.8 * squared)
    assert kept and gained == pytest.approx(1 - np.sqrt(0.8))


def _plan(X, y, monkeypatch, scales=None, max_centers=64, work=1.5e11, made=None):
    """``(plan, problem, log)``; ``made``: a list given one item for every search's system made on every training
    row of its sample (the validation rows' sums added)."""
    from kopt.nystrom.system import NystromSystem
    from kopt.running.assemble import assemble

    if made is not None:
        plus = NystromSystem.plus
        monkeypatch.setattr(NystromSystem, "plus", lambda self, *a, **k: (made.append(1), plus(self, *a, **k))[1])

    monkeypatch.setattr(columns, "CENTERS", 64)
    monkeypatch.setattr(columns, "FIT_ROWS", 4000)
    monkeypatch.setattr(columns, "VALIDATION_ROWS", 4000)
    doc = {"seed": 4, "backend": "numpy",
           "model": {"loss": {"name": "square", "target": "binary"}, "kernel": {"name": "gaussian"}},
           "solver": {"name": "auto", "max_centers": max_centers, "work": work},
           "output": {"model": False, "report": False}}
    if scales is not None:
        doc["data"] = {"column_scales": scales}
    spec = kopt.load_spec(doc)
    problem = assemble(spec, (X, y))
    lines = []
    plan = spec.component(("solver",)).plan(problem, spec.given, lines.append)
    return plan, problem, "\n".join(lines)


def _sample_trials(plan):
    """The sample's ladder's trials (the grown centers' carry their rows), less their seconds."""
    return [{k: v for k, v in t.items() if k != "seconds"} for t in plan.record["trials"] if "rows" not in t]


@pytest.mark.slow
def test_scales_the_sample_search_does_not_confirm_leave_the_columns_as_given(monkeypatch):
    X, y = curved_classes(60_000, 4, 2, 2, noise=0.3)  # columns 2 and 3 are noise
    made = []
    plan, problem, log = _plan(X, y, monkeypatch, made=made)
    assert len(made) == 1  # the two searches' systems: the one not taken was never made on every sample row
    check = plan.record["column_check"]
    assert check["kept"] and check["gain"] >= max(scoring.MIN_GAIN["accuracy"], check["error"])
    # the ladder on the columns as given climbed no further than the size the scales' ladder chose
    assert check["as_given"]["centers"] <= check["ladder_to"] == check["scaled"]["centers"]
    assert plan.record["column_scales"] == plan.overrides["data.column_scales"]
    assert "the same direct search on the columns as given" in log and "the scales kept" in log
    assert problem.X is None  # the rows as given went once the scales were confirmed

    monkeypatch.setattr(columns, "ladder_confirms", lambda metric, plain, scaled: (False, -0.01, 0.001))
    made = []
    refused, problem, log = _plan(X, y, monkeypatch, made=made)
    assert len(made) == 1
    assert refused.record["column_check"]["kept"] is False and "every column kept, as given" in log
    assert refused.record["column_scales"] is None and "data.column_scales" not in refused.overrides
    assert problem.X is not None  # the search went on with the rows as given

    # what the columns as given choose: the same sample ladder (each ladder counts its work in its own share of the
    # budget, so the column search's work spent before it does not change it)
    ones, _, log = _plan(X, y, monkeypatch, scales=[1.0] * 4)
    assert "column_check" not in ones.record and "column scales" not in log
    assert _sample_trials(refused) == _sample_trials(ones) and _sample_trials(ones)
    assert _sample_trials(refused) != _sample_trials(plan)


@pytest.mark.slow
def test_where_the_scales_lose_below_the_most_centers_the_ladder_on_the_columns_as_given_goes_on(monkeypatch):
    """The ladder on the columns as given stops at the size the scales' ladder chose (256 here, of at most 512); where
    the scales lose there, it runs again without that cap: the trials the columns as given choose on their own."""
    X, y = curved_classes(60_000, 4, 2, 2, noise=0.3)
    monkeypatch.setattr(columns, "ladder_confirms", lambda metric, plain, scaled: (False, -0.01, 0.001))
    refused, _, log = _plan(X, y, monkeypatch, max_centers=512, work=3e11)
    assert refused.record["column_check"]["ladder_to"] == 256
    assert "its ladder not stopped at 256 centers" in log
    ones, _, _ = _plan(X, y, monkeypatch, scales=[1.0] * 4, max_centers=512, work=3e11)
    assert max(t["centers"] for t in _sample_trials(ones)) == 512
    assert _sample_trials(refused) == _sample_trials(ones)
