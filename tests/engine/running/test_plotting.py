"""The convergence plot explains convergence (issue 28 item 4): relative gap (log) by iteration and by time
with the tolerance line, primal and dual on their own linear panel, the holdout metrics, titles and units."""
from __future__ import annotations

import pytest

pytest.importorskip("matplotlib")

from kopt.running.plotting import GAP_FLOOR, convergence_figure, plot_trace  # noqa: E402


def _dual_trace(n=30):
    out = []
    for i in range(1, n + 1):
        P, D = 1.0 + 1.0 / i, 1.0 - 1.0 / i
        rec = {"iteration": i, "elapsed": 0.1 * i, "dual": D}
        if i % 5 == 0:
            rec.update(objective=P, gap=P - D, rel_gap=(P - D) / P, test_accuracy=0.5 + i / 100)
        out.append(rec)
    out[-1]["rel_gap"] = -1e-17  # a rounding residue below zero is drawn at the floor, not dropped
    return out


def _labels(ax):
    return [line.get_label() for line in ax.get_lines()]


@pytest.mark.slow
def test_gap_panels_objectives_and_metrics():
    import matplotlib.pyplot as plt

    fig = convergence_figure(_dual_trace(), "demo", tol=1e-2, solver="joker")
    try:
        by_it, by_time, objectives, holdout = fig.axes
        for ax, xlabel in ((by_it, "iteration"), (by_time, "wall time (s)")):
            assert ax.get_yscale() == "log" and ax.get_xlabel() == xlabel
            assert ax.get_ylabel() == "(P − D) / max(|P|, |D|)"
            assert _labels(ax) == ["relative gap", "stopping tol 0.01"]
            gap, tol = ax.get_lines()
            assert set(tol.get_ydata()) == {1e-2}
            assert list(gap.get_ydata())[0] == pytest.approx(((1 + 1 / 5) - (1 - 1 / 5)) / (1 + 1 / 5))
            assert list(gap.get_ydata())[-1] == GAP_FLOOR
        assert list(by_time.get_lines()[0].get_xdata())[:2] == pytest.approx([0.5, 1.0])
        assert objectives.get_yscale() == "linear" and _labels(objectives) == ["primal P", "dual D"]
        assert "Primal and dual" in objectives.get_title()
        lo, hi = objectives.get_ylim()
        assert lo > 0.5 and hi < 1.5  # the last half's range, not the first iterations'
        assert _labels(holdout) == ["accuracy"] and holdout.get_ylabel() == "metric on the test split"
        title = fig._suptitle.get_text()
        assert title.startswith("demo: joker, 30 iterations in 3 s") and "(tol 0.01)" in title
    finally:
        plt.close(fig)


def test_primal_only_run_draws_its_objective():
    import matplotlib.pyplot as plt

    trace = [{"iteration": i, "elapsed": 0.01 * i, "objective": 2.0 - 0.01 * i} for i in range(1, 21)]
    for r in trace[4::5]:
        r["objective_estimate"] = r["objective"] + 0.05
        r["objective"] -= 0.1
    fig = convergence_figure(trace, "p", tol=1e-3)
    try:
        (ax,) = fig.axes
        assert ax.get_title().startswith("Primal objective")
        assert _labels(ax) == ["P, minibatch estimate", "primal P (all rows)"]
        assert len(ax.get_lines()[1].get_xdata()) == 4
        assert "relative gap" not in fig._suptitle.get_text()
    finally:
        plt.close(fig)


@pytest.mark.slow
def test_plot_trace_writes_a_png(tmp_path):
    path = plot_trace(_dual_trace(), str(tmp_path / "c.png"), "demo", tol=1e-2)
    assert open(path, "rb").read(4) == b"\x89PNG"
