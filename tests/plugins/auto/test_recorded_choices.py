"""Solver auto's choices on a few seeded runs are the ones recorded: a change to the search's code that is meant to
keep its behaviour keeps ``report["auto"]`` (every trial, score, λ, bandwidth, center count, the loss screen, the
work counted and the words saying why) and the test metrics of the model it solves.

The record (``recorded_choices.json``) holds, per case, ``report["auto"]`` less its seconds and the solved model's
test metrics.  A change that is meant to change a choice rewrites it, and its diff shows what moved:

    python tests/plugins/auto/test_recorded_choices.py --write [case ...]
"""
from __future__ import annotations

import json
import math
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

HERE = Path(__file__).resolve().parent
RECORD = HERE / "recorded_choices.json"
#: keys whose values are wall-clock seconds (machine-dependent): left out of the record
TIMED = {"seconds", "search_s"}


def _board(n, seed):
    """A 4 x 4 checkerboard of uneven squares on [-1, 1]² (the loss-choice tests' board: the squared hinge gains)."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, (n, 2))
    return X, np.where(np.sin(4 * np.pi * X[:, 0]) * np.sin(4 * np.pi * X[:, 1]) > 0.3, 1, -1)


def _curved(n, d, seed, classes=2, noise=0.3):
    sys.path.insert(0, str(HERE.parents[1]))
    try:
        from helpers import curved_classes
    finally:
        sys.path.pop(0)
    return curved_classes(n, d, seed, classes, noise=noise)


def _regression(n, d, seed):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    return X, np.sin(1.5 * X[:, 0]) + 0.5 * X[:, 1] * X[:, 2] + 0.2 * rng.standard_normal(n)


def _spec(loss, seed, data=None, **solver):
    spec = {"seed": seed, "backend": "numpy", "model": {"loss": loss, "kernel": {"name": "gaussian"}},
            "solver": {"name": "auto", **solver}, "output": {"model": False, "report": False}}
    if data:
        spec["data"] = data
    return spec


def _cases():
    """name -> (spec, rows, training rows, patches): each case one of auto's routes or rules."""
    return {
        "loss-auto-board": (_spec({"name": "auto"}, 0), _board(8000, 0), 6000, {}),
        "square-binary": (_spec({"name": "square", "target": "binary"}, 3), _curved(3000, 3, 0), 2400, {}),
        "regression": (_spec({"name": "square"}, 1), _regression(3000, 4, 1), 2400, {}),
        "squared-hinge": (_spec({"name": "squared_hinge"}, 3, work=4e10), _curved(3000, 5, 0, noise=0.5), 2400, {}),
        "balanced": (_spec({"name": "square", "target": "binary"}, 2, data={"class_weight": "balanced"}),
                     _unbalanced(3000, 2), 2400, {}),
        "pairs": (_spec({"name": "square", "target": "binary"}, 0), _curved(1500, 3, 0, classes=3), 1200, {}),
        "one-vs-rest": (_spec({"name": "square", "target": "binary"}, 1, max_centers=512), _curved(3000, 3, 1, classes=4), 2400, {}),
        "large": (_spec({"name": "square", "target": "binary"}, 4, max_centers=64, work=2e11),
                  _curved(60_000, 4, 2, noise=0.3), 55_000,
                  {"columns.CENTERS": 64, "columns.FIT_ROWS": 4000, "columns.VALIDATION_ROWS": 4000}),
        # the sample's ladder saturates and its rows gain nothing over half of them: nothing is grown
        "large-saturated": (_spec({"name": "square", "target": "binary"}, 4, max_centers=2048, work=2e12),
                            _curved(60_000, 4, 2, noise=0.3), 55_000,
                            {"columns.CENTERS": 64, "columns.FIT_ROWS": 4000, "columns.VALIDATION_ROWS": 4000}),
    }


def _unbalanced(n, seed):
    X, y = _curved(n, 3, seed)
    y = np.where((y > 0) & (X[:, 2] > -0.2), 1, -1)  # about a third positive
    return X, y


SLOW = {"large", "large-saturated"}


def _clean(value):
    """``value`` as JSON holds it, less its seconds."""
    if isinstance(value, dict):
        return {str(k): _clean(v) for k, v in value.items() if k not in TIMED}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    if isinstance(value, np.ndarray):
        return _clean(value.tolist())
    if isinstance(value, (np.floating, float)):
        return None if not math.isfinite(float(value)) else float(value)
    if isinstance(value, (np.integer, np.bool_)):
        return value.item()
    return value


def run(name):
    """The case's record: ``{"auto": report["auto"] less its seconds, "metrics": the test metrics}``."""
    import importlib

    import kopt

    spec, (X, y), cut, patches = _cases()[name]
    saved = []
    for where, value in patches.items():
        module, attr = where.split(".")
        mod = importlib.import_module(f"kopt_plugins.auto.{module}")
        saved.append((mod, attr, getattr(mod, attr)))
        setattr(mod, attr, value)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            r = kopt.solve(spec, data=(X[:cut], y[:cut], X[cut:], y[cut:]))
    finally:
        for mod, attr, value in saved:
            setattr(mod, attr, value)
    return {"auto": _clean(r.auto), "metrics": _clean(r.metrics)}


def _same(recorded, now, where="$"):
    """Assert ``now`` equals ``recorded``: the same keys, strings and integers; floats to 1e-9 relative."""
    if isinstance(recorded, dict):
        assert isinstance(now, dict) and sorted(now) == sorted(recorded), f"{where}: keys {sorted(now)}"
        for k in recorded:
            _same(recorded[k], now[k], f"{where}.{k}")
    elif isinstance(recorded, list):
        assert isinstance(now, list) and len(now) == len(recorded), f"{where}: {now!r} != {recorded!r}"
        for i, (a, b) in enumerate(zip(recorded, now)):
            _same(a, b, f"{where}[{i}]")
    elif isinstance(recorded, float) and not isinstance(now, bool) and isinstance(now, (int, float)):
        assert now == pytest.approx(recorded, rel=1e-9, abs=1e-12), f"{where}: {now!r} != {recorded!r}"
    else:
        assert now == recorded, f"{where}: {now!r} != {recorded!r}"


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.slow) if n in SLOW else n for n in _cases()])
def test_the_seeded_runs_choose_what_was_recorded(name):
    recorded = json.loads(RECORD.read_text())[name]
    _same(recorded, run(name))


if __name__ == "__main__":
    if sys.argv[1:2] != ["--write"]:
        sys.exit("usage: python tests/plugins/auto/test_recorded_choices.py --write [case ...]")
    names = sys.argv[2:] or list(_cases())
    records = json.loads(RECORD.read_text()) if RECORD.exists() else {}
    for case in names:
        records[case] = run(case)
        print(case, records[case]["auto"]["route"], records[case]["auto"]["centers"], records[case]["metrics"])
    RECORD.write_text(json.dumps(records, indent=1, sort_keys=True) + "\n")
