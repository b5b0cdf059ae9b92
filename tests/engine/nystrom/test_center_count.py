"""model.features.count above what the model can use: said on the console and in the report.

1,024 centers asked on 400 training rows of which 303 are distinct: the solve uses 303 centers, and says so -- a
one-line FeatureCountWarning naming ``model.features.count`` and the count used, and ``solver_info.centers_note``
in the report -- for every solver on Nystrom centers (the NystromSolver base, svm_nystrom, krr_pairs, joker's
primal mode).  Centers the kernel cannot tell apart (dropped by center_basis) are told apart from rows that ran out.
"""
from __future__ import annotations

import json
import warnings

import numpy as np
import pytest
import yaml

import kopt
from kopt.cli import main
from kopt.errors import FeatureCountWarning, SpecWarning


def _rows(n=400, distinct=303, classes=2, seed=0):
    rng = np.random.default_rng(seed)
    base = rng.standard_normal((distinct, 3))
    X = np.concatenate([base, base[rng.integers(0, distinct, n - distinct)]])
    y = (X[:, 0] > 0).astype(float) if classes == 2 else np.argsort(np.argsort(X[:, 0])) * classes // n
    return X, y.astype(float)


def _spec(solver, count=1024, loss="square", target="binary", bandwidth=0.2, extra=None, form="primal"):
    spec = {"name": "centers", "seed": 0,
            "model": {"loss": {"name": loss, **({"target": target} if target else {})}, "kernel": {"name": "gaussian", "bandwidth": bandwidth},
                      "regularizer": {"name": "l2", "lambda": 1.0e-3}, "form": form,
                      "features": {"kind": "nystrom", "count": count}},
            "solver": {"name": solver, **(extra or {})}, "backend": "numpy"}
    return spec


def _solve(spec, data):
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        r = kopt.solve(spec, data=data)
    said = [str(w.message) for w in seen if issubclass(w.category, FeatureCountWarning)]
    return r, said


CASES = [
    ("krr_nystrom", {}, "square", "binary", 2),
    ("krr_pcg", {"tol": 1.0e-6}, "square", "binary", 2),
    ("svm_nystrom", {}, "squared_hinge", None, 2),
    ("krr_pairs", {}, "square", "binary", 3),
    ("joker", {"mode": "primal", "tol": 1.0e-4, "iterations": 200}, "logistic", None, 2),
]


@pytest.mark.parametrize("solver, extra, loss, target, classes", CASES, ids=[c[0] for c in CASES])
def test_more_centers_than_distinct_rows_is_said(solver, extra, loss, target, classes):
    data = _rows(classes=classes)
    form = "dual" if solver == "joker" else "primal"
    r, said = _solve(_spec(solver, loss=loss, target=target, extra=extra, form=form), data)
    assert len(said) == 1, said
    text = said[0]
    assert text.startswith("model.features.count = 1,024 asks for more Nystrom centers than this model can use")
    assert "more centers than rows" in text and "the model uses" in text, text
    if solver == "krr_pairs":  # 1,024 >= 400 rows: every row is a center (each pair's exact KRR)
        assert "400 rows (every row is a center" in text and r.info["n_centers"] == 400
    else:
        assert "303 distinct rows" in text and "cannot tell apart" not in text, text
        assert r.info["n_centers"] == 303 and r.info["centers_dropped"] == 0
    assert f"the model uses {r.info['n_centers']:,} centers" in text
    assert r.info["centers_asked"] == 1024 and r.info["centers_note"] == text


def test_centers_the_kernel_cannot_tell_apart_are_told_from_rows_that_ran_out():
    """400 distinct rows, 200 centers asked, a bandwidth 50 times the data's spread: the pivoted Cholesky keeps a
    handful; the message names that reason, not the rows."""
    X, y = _rows(distinct=400)
    r, said = _solve(_spec("krr_nystrom", count=200, bandwidth=50.0), (X, y))
    assert len(said) == 1 and r.info["centers_dropped"] > 0
    text = said[0]
    assert "cannot tell apart" in text and "more centers than rows" not in text, text
    assert f"{r.info['centers_dropped']:,} of the 200 drawn centers" in text
    assert f"the model uses {r.info['n_centers']:,} centers" in text


def test_a_count_the_model_uses_says_nothing():
    r, said = _solve(_spec("krr_nystrom", count=64), _rows(distinct=400))
    assert said == [] and r.info["n_centers"] == 64 and "centers_note" not in r.info


def test_cli_prints_one_line_and_the_report_says_it(tmp_path, capsys):
    X, y = _rows()
    path = tmp_path / "rows.csv"
    np.savetxt(path, np.column_stack([y, X]), delimiter=",", fmt="%.17g")
    spec = {**_spec("krr_nystrom"), "data": {"train": str(path), "test_fraction": 0.25, "label": 0},
            "output": {"dir": str(tmp_path / "run")}}
    (tmp_path / "spec.yaml").write_text(yaml.safe_dump(spec))
    assert main(["solve", str(tmp_path / "spec.yaml")]) == 0
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if "model.features.count = 1,024" in ln]
    assert len(lines) == 1 and lines[0].startswith("kopt: warning: model.features.count = 1,024"), err
    report = json.loads((tmp_path / "run" / "report.json").read_text())
    note = report["solver_info"]["centers_note"]
    assert note in lines[0] and "more centers than rows" in note
    assert f"uses {report['solver_info']['n_centers']:,} centers" in note
    assert issubclass(FeatureCountWarning, SpecWarning)  # --quiet silences it with the other spec warnings


def test_a_count_solver_auto_chose_is_noted_not_warned_and_a_given_one_is_warned():
    """solver auto draws its center counts by doubling: where the basis keeps fewer, the note is the planner's record
    (solver_info.centers_note), not a warning telling a user who set no count to set one; a count the spec's author
    gave is still warned about under auto."""
    X, y = _rows(n=3000, distinct=3000)
    X[:, 1:] = 0.0  # one column: the kernel tells few of auto's 256 centers apart
    spec = {"name": "auto-centers", "seed": 0, "model": {"loss": {"name": "square", "target": "binary"},
                                                          "kernel": {"name": "gaussian"}}, "backend": "numpy"}
    r, said = _solve(spec, (X, y))
    assert said == [] and r.auto["centers"] == r.info["centers_asked"] > r.info["n_centers"]
    assert "cannot tell apart" in r.info["centers_note"]
    given = {**spec, "model": {**spec["model"], "features": {"kind": "nystrom", "count": 256}}}
    r, said = _solve(given, (X, y))
    assert len(said) == 1 and said[0].startswith("model.features.count = 256 asks for more")
