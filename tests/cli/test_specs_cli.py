"""Specs that travel with the package, the quick start, and output for people and logs."""
from __future__ import annotations

import io
import json
import os
import re
import stat
from pathlib import Path

import pytest
import yaml

import kopt
from kopt.cli import main
from kopt.running.context import IterationRecord
from kopt.running.listeners import JsonLog, ProgressBar
from kopt.spec import packaged as specfiles

REPO = Path(__file__).resolve().parents[2]
SPECS = sorted((REPO / "specs").glob("*.yaml"))


def test_every_spec_names_its_data_by_preset():
    """No spec reads a path outside the project: each names a registered preset and no file."""
    presets = set(kopt.contract.registry.registry().names("dataset"))
    for path in SPECS:
        data = yaml.safe_load(path.read_text())["data"]
        assert data.get("source") in presets, path.name
        assert not {"train", "test"} & set(data), path.name
        assert "shared/data" not in path.read_text(), path.name


def test_specs_list_show_copy(tmp_path, capsys):
    assert main(["specs", "list"]) == 0
    out = capsys.readouterr().out
    for path in SPECS:
        assert re.search(rf"^{path.stem}\s", out, re.M), path.stem
    assert main(["specs", "list", "--names"]) == 0
    assert capsys.readouterr().out.split() == [p.stem for p in SPECS]
    assert main(["specs", "show", "huber_higgs"]) == 0
    assert capsys.readouterr().out == (REPO / "specs" / "huber_higgs.yaml").read_text()
    assert main(["specs", "copy", "quickstart", "dsg_a9a", str(tmp_path / "mine")]) == 0
    assert (tmp_path / "mine" / "quickstart.yaml").read_text() == (REPO / "specs" / "quickstart.yaml").read_text()
    assert main(["specs", "copy", "quickstart", str(tmp_path / "mine")]) == 2  # never overwrites
    assert "exists" in capsys.readouterr().err
    assert main(["specs", "show", "quickstrat"]) == 2
    assert "did you mean quickstart" in capsys.readouterr().err


@pytest.mark.slow
def test_validate_every_spec_by_name(capsys):
    assert main(["validate", *[p.stem for p in SPECS]]) == 0
    out = capsys.readouterr().out
    assert out.count(": valid (") == len(SPECS)


@pytest.mark.slow
def test_quickstart_is_the_readme_first_command_and_prints_metrics(tmp_path, monkeypatch, capsys):
    """README's first command, run offline in an empty folder with an empty data folder."""
    readme = (REPO / "README.md").read_text()
    first = re.search(r"```bash\n(.*?)\n```", readme, re.S).group(1)
    assert first.strip() == "python3 -m pip install . && kopt solve quickstart"
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("KOPT_DATA", str(tmp_path / "data"))
    monkeypatch.setenv("KOPT_OFFLINE", "1")
    assert main(["solve", "quickstart"]) == 0
    out = capsys.readouterr().out
    for phrase in ("test accuracy", "test auc", "duality gap", "wrote runs/quickstart/model.json"):
        assert phrase in out
    report = json.loads((tmp_path / "runs" / "quickstart" / "report.json").read_text())
    assert report["success"] and report["metrics"]["accuracy"] > 0.66 and report["metrics"]["auc"] > 0.72


def test_guide_spec_example_is_the_quickstart_file():
    guide = (REPO / "docs" / "guide.md").read_text()
    block = re.search(r"```yaml\n(# Quick start.*?)```", guide, re.S)
    assert block, "docs/guide.md shows specs/quickstart.yaml in a ```yaml block"
    assert block.group(1) == (REPO / "specs" / "quickstart.yaml").read_text(), \
        "docs/guide.md's spec example drifted from specs/quickstart.yaml: paste the file into docs/guide.md again"


# -- output ---------------------------------------------------------------------------------------------

PLOT_SPEC = {"name": "p", "data": {"source": "higgs-12k", "max_rows": 600},
             "model": {"loss": {"name": "square", "target": "binary"}, "kernel": {"name": "gaussian", "bandwidth": "median"},
                       "regularizer": {"name": "l2", "lambda": 1e-3}, "features": {"dtype": "float64"}},
             "solver": {"name": "krr_exact"}, "backend": "numpy", "output": {"dir": "out", "plot": True}}


def _no_matplotlib(monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "matplotlib" else real(name, *a))


def test_plot_without_matplotlib_is_caught_before_any_work(tmp_path, monkeypatch, capsys):
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(PLOT_SPEC))
    monkeypatch.chdir(tmp_path)
    _no_matplotlib(monkeypatch)
    assert main(["validate", "s.yaml"]) == 2
    err = capsys.readouterr().err
    assert "s.yaml:" in err and "$.output.plot" in err and "kopt[plot]" in err and "Traceback" not in err
    assert main(["solve", "s.yaml"]) == 2
    assert "kopt[plot]" in capsys.readouterr().err and not (tmp_path / "out").exists()
    assert main(["solve", "quickstart", "--plot", "--set", "solver.iterations=2", "-q"]) == 2


@pytest.mark.slow
def test_a_failing_plot_never_loses_the_model_or_report(tmp_path, monkeypatch, capsys):
    import kopt.running.plotting

    def broken(*a, **k):
        raise RuntimeError("no display")

    monkeypatch.setattr(kopt.running.plotting, "plot_trace", broken)
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(PLOT_SPEC))
    monkeypatch.chdir(tmp_path)
    assert main(["solve", "s.yaml", "-q"]) == 1
    err = capsys.readouterr().err
    assert "plot failed" in err and "report.json" in err
    assert {"model.json", "model.npz", "report.json"} <= {p.name for p in (tmp_path / "out").iterdir()}


@pytest.mark.slow
@pytest.mark.parametrize("mask", [0o022, 0o077, 0o002])
def test_output_files_follow_the_umask(tmp_path, monkeypatch, mask):
    spec = {**PLOT_SPEC, "output": {"dir": str(tmp_path / "out")}}
    old = os.umask(mask)
    try:
        kopt.solve(spec, write=True)
    finally:
        os.umask(old)
    for p in (tmp_path / "out").iterdir():
        assert stat.S_IMODE(p.stat().st_mode) == 0o666 & ~mask, p.name


@pytest.mark.slow
def test_convergence_warning_is_one_clean_line(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["solve", "quickstart", "--set", "solver.iterations=3"]) == 0
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if "warning" in ln]
    assert len(lines) == 1, err
    assert lines[0].startswith("kopt: warning: joker stopped ") and "relative duality gap" in lines[0]
    assert "raise solver.iterations" in lines[0] and ".py" not in err and "Warning:" not in err
    assert main(["solve", "quickstart", "--set", "solver.iterations=3", "--quiet"]) == 0
    assert capsys.readouterr().err == ""


class _Run:
    total_iterations = 100
    start_iteration = 0
    elapsed_before = 0.0


def test_log_mode_progress_lines_every_n_iterations():
    stream = io.StringIO()
    bar = ProgressBar(stream=stream, mode="log", log_every_iter=25)
    for t in range(1, 61):
        bar.kopt_iteration(run=_Run(), record=IterationRecord(t, 0.5 * t, objective=1.0 / t, gap=0.1 / t, rows=100))
    bar.kopt_run_end(run=_Run(), result=None)
    lines = stream.getvalue().splitlines()
    assert [ln.split()[2] for ln in lines] == ["25/100", "50/100", "60/100"]
    assert "\r" not in stream.getvalue() and "\033" not in stream.getvalue()
    # the solver's stopping rule unknown: the cap's time is the most there is left, and labelled so
    assert "200 rows/s" in lines[0] and "at most 38s (the cap)" in lines[0] and "gap 0.004" in lines[0]
    assert lines[-1].endswith("(end: interrupted)") and "at most" not in lines[-1]


def test_log_mode_by_time_and_default_mode_off_a_terminal():
    assert ProgressBar(stream=io.StringIO()).mode == "log"
    stream = io.StringIO()
    bar = ProgressBar(stream=stream, log_every=3600)
    for t in range(1, 30):
        bar.kopt_iteration(run=_Run(), record=IterationRecord(t, 0.1 * t))
    assert stream.getvalue() == ""  # nothing before the first interval
    bar.kopt_run_end(run=_Run(), result=None)
    assert stream.getvalue().count("\n") == 1


@pytest.mark.slow
def test_json_lines_log(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["solve", "quickstart", "--set", "solver.iterations=40", "--log-json", "log.jsonl",
                 "--log-every", "10it", "--quiet"]) == 0
    events = [json.loads(ln) for ln in (tmp_path / "log.jsonl").read_text().splitlines()]
    assert events[0]["event"] == "start" and events[0]["name"] == "quickstart"
    assert [e["iteration"] for e in events if e["event"] == "progress"] == [10, 20, 30, 40]
    assert events[-1]["event"] == "end" and "accuracy" in events[-1]["metrics"]
    assert all({"time", "event"} <= set(e) for e in events)
    assert capsys.readouterr().err == ""


def test_json_log_object_alone():
    stream = io.StringIO()
    log = JsonLog(stream, log_every_iter=2, spec_name="x")
    log.kopt_run_start(run=_Run())
    for t in (1, 2, 3, 4):
        log.kopt_iteration(run=_Run(), record=IterationRecord(t, float(t), objective=2.0, rows=10))
    log.kopt_run_end(run=_Run(), result=None)
    events = [json.loads(x) for x in stream.getvalue().splitlines()]
    assert [e["event"] for e in events] == ["start", "progress", "progress", "interrupted"]
    assert events[1]["rows_per_s"] == pytest.approx(10.0) and events[1]["cap_left_s"] == pytest.approx(98.0)
    assert "eta_s" not in events[1] and events[-1]["stopped_by"] == "interrupted"


def test_bad_log_every_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["solve", "quickstart", "--log-every", "soon"])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and "'10s'" in err
    assert err.startswith("kopt: error: kopt solve: argument --log-every: ") and err.count("\n") == 1


def test_specs_dir_of_a_checkout():
    assert specfiles.specs_dir() == REPO / "specs"


def test_set_data_train_is_relative_to_the_current_folder(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["validate", "huber_higgs", "--set", "data.train=HIGGS.csv.gz", "--resolved"]) == 0
    assert f"train: {tmp_path / 'HIGGS.csv.gz'}" in capsys.readouterr().out


def test_predict_reads_data_with_the_presets_layout(seeded_data, tmp_path, monkeypatch, capsys):
    """A model trained on a preset (cal_housing: target in the last column) scores a file of that layout."""
    spec = {"name": "c", "data": {"source": "cal_housing", "max_rows": 800, "standardize_target": True},
            "model": {"loss": {"name": "square"}, "kernel": {"name": "gaussian", "bandwidth": "median"},
                      "regularizer": {"name": "l2", "lambda": 1e-3}, "features": {"dtype": "float64"}},
            "solver": {"name": "krr_exact"}, "backend": "numpy", "output": {"dir": str(tmp_path / "out")}}
    rmse = kopt.solve(spec, write=True).metrics["rmse"]
    lines = lzma_lines(seeded_data / "cal_housing" / "cal_housing.data.xz", 1000)
    (tmp_path / "rows.csv").write_text("".join(lines[800:]))
    assert main(["predict", str(tmp_path / "out" / "model.json"), str(tmp_path / "rows.csv"), "--out",
                 str(tmp_path / "p.csv")]) == 0
    got = float(re.search(r"rmse ([0-9.e+]+)", capsys.readouterr().err).group(1))
    assert 0.5 * rmse < got < 2 * rmse  # dollars, like the training report (not longitude as a target)


def lzma_lines(path, n):
    import lzma

    with lzma.open(path, "rt") as fh:
        return [next(fh) for _ in range(n)]


def test_validate_warns_in_one_line_where_another_option_is_measured_better(capsys):
    """The gp plugin's check_spec warns (kopt.SpecWarning) for variance: operator when the test-point fits
    are available; the spec stays valid (exit 0), and a spec without the choice gets no warning."""
    operator = ["validate", "gp_dai_operator", "--set", "solver.advice=true"]  # the packaged spec says advice: false
    assert main(operator) == 0
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1, err
    assert err.startswith("kopt: warning: ") and "$.solver.variance: variance: operator is measured" in err
    assert "variance: test_points" in err and ".py" not in err and "Warning:" not in err
    assert main(operator) == 0  # said again for every validation
    assert len(capsys.readouterr().err.splitlines()) == 1
    assert main(["validate", "gp_dai_synthetic"]) == 0
    assert capsys.readouterr().err == ""


@pytest.mark.slow
def test_every_packaged_spec_validates_silently(capsys):
    """A packaged example uses the measured-better setting, or keeps the paper's with ``advice: false`` and
    says why in its comment (issue 28 item 7): kopt validate prints nothing on stderr for any of them."""
    from kopt.spec import packaged as specfiles

    names = specfiles.names()
    assert len(names) >= 30
    for name in names:
        assert main(["validate", name]) == 0, name
        assert capsys.readouterr().err == "", name
    for name in ("adsg_reuters_ridge", "gp_dai_operator"):
        text = specfiles.path_of(name).read_text()
        assert "advice: false" in text and "# Why " in text, name


def test_validate_warns_for_cdsg_checking_every_block(capsys):
    """cdsg's check_spec: candidates: 0 (every block) is measured slower than candidates: 32 (docs/design/dsg-family.md)."""
    assert main(["validate", "cdsg_a9a"]) == 0  # the default, candidates: 32, is the measured-faster one
    assert capsys.readouterr().err == ""
    assert main(["validate", "cdsg_a9a", "--set", "solver.candidates=0"]) == 0
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "$.solver.candidates: candidates: 0 checks every old block" in err, err
    assert main(["validate", "cdsg_a9a", "--set", "solver.candidates=0", "--set", "solver.iterations=32"]) == 0
    assert capsys.readouterr().err == ""
