"""kopt bench peers / joker: the harness (figures are printed, never asserted)."""
import json
import subprocess
import sys
import time

import numpy as np
import pytest

from kopt.cli.bench import peers
from kopt.cli.bench.joker import floors, run_joker


def test_peers_summary_ratios_and_verdicts(monkeypatch):
    runs = {"kopt": [{"config": "k", "accuracy": 0.99, "fit_s": f, "predict_s": 1.0, "peak_mb": 100.0, "success": True,
                      "rel_gap": 1e-3} for f in (1.0, 3.0, 2.0)],
            "peer": [{"config": "p", "accuracy": 0.985, "fit_s": 8.0, "predict_s": 4.0, "peak_mb": 400.0}] * 3}
    calls = []

    def fake(side, bench, spec, overrides, timeout):
        calls.append(side)
        return runs[side][sum(c == side for c in calls) - 1]

    monkeypatch.setattr(peers, "_child", fake)
    line = peers.compare(peers.SETS["ijcnn1"], repeat=3, log=lambda *a, **k: None)
    assert calls == ["kopt", "peer"] * 3  # alternating, each in its own process
    assert line["kopt"]["fit_s"] == 2.0 and line["kopt"]["fit_s_all"] == [1.0, 3.0, 2.0]  # the median
    assert line["ratios"] == {"fit": 0.25, "predict": 0.25, "peak_mb": 0.25}
    assert line["met"] == {"accuracy": True, "rel_gap": True, "fit": True, "predict": True, "peak_mb": True}
    assert set(line["machine"]) >= {"cpu", "cpu_flags", "loadavg"}
    json.dumps(line)


def test_a_peer_child_failure_is_reported_not_raised(monkeypatch):
    monkeypatch.setattr(peers, "_child", lambda *a: {"error": "exit 1: boom"})
    line = peers.compare(peers.SETS["a9a"], repeat=1, log=lambda *a, **k: None)
    assert line["kopt"] == {"error": "exit 1: boom"} and line["ratios"] == {}


@pytest.mark.slow
def test_the_kopt_child_runs_a_packaged_spec():
    proc = subprocess.run([sys.executable, "-m", "kopt.cli.bench.peers", "--child", "kopt", "--set", "higgs-12k",
                           "--set-option", "model.features.count=200"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    res = json.loads(proc.stdout.strip().splitlines()[-1])
    assert res["accuracy"] > 0.6 and res["fit_s"] > 0 and res["peak_mb"] > 0 and "primal" in res["config"]


def test_unknown_set_is_a_clear_error():
    from argparse import Namespace

    from kopt.errors import KoptError

    with pytest.raises(KoptError, match="unknown benchmark set"):
        peers.peers(Namespace(sets=["mnist"], repeat=1, json=None, set_option=None))


@pytest.mark.slow
def test_bench_joker_reports_cost_floor_and_projection():
    res = run_joker(rows=3000, features=(512,), iterations=5, score_rows=500, project_iterations=100,
                    gap_rows=1000, test_rows=1000, log=lambda *a: None)
    entry = res["by_M"][0]
    assert entry["seconds_per_iteration"]["median_s"] > 0 and entry["floor_s"] > 0
    assert entry["projection"]["total_hours"] > 0 and res["machine"]["cpu_flags"] is not None
    f = floors(100_000, 512, 28, cos_rate=3.7, gemm_gflops=300.0)
    assert f["gram_s"] == pytest.approx(2 * 512 * 512 * 100_000 / 300e9)


# -- kopt bench tune ------------------------------------------------------------------------------
def test_bench_tune_line_ratio_machine_and_blas(monkeypatch):
    from kopt.cli.bench import tune as bt

    calls = []

    def fake(module, args, timeout):
        calls.append(args)
        side = args[args.index("--child") + 1]
        secs = {"kopt": 6.0, "svc": 40.0}[side]
        return {"config": side, "seconds": secs, "cv_score": 0.97, "test_accuracy": 0.98 if side == "kopt" else 0.985,
                "best": {}, "points": 20, "peak_mb": 10.0}

    monkeypatch.setattr(bt, "child", fake)
    line = bt.compare("mnist-10k", jobs=2)
    assert [a[1] for a in calls] == ["kopt", "svc"]  # each side in its own process, one after the other
    # the same folds and bandwidth factors on both sides; grids of the same size
    for flag in ("--folds", "--factors", "--set"):
        assert calls[0][calls[0].index(flag) + 1] == calls[1][calls[1].index(flag) + 1]
    assert len(calls[0][calls[0].index("--lambdas") + 1].split(",")) == len(calls[1][calls[1].index("--C") + 1].split(","))
    assert line["ratio"] == pytest.approx(0.15) and line["met"] and line["accuracy_points"] == pytest.approx(-0.5)
    assert set(line["machine"]) >= {"cpu", "cpu_flags", "loadavg"} and isinstance(line["blas"], list)
    assert "kopt / svc seconds 0.150" in bt.text(line)
    json.dumps(line)
    with pytest.raises(Exception, match="same size"):
        bt.compare("ijcnn1", lambdas=(1e-3, 1e-4), cs=(1.0,))


@pytest.mark.slow
def test_bench_tune_sides_search_the_same_folds(monkeypatch):
    """Both children on small synthetic rows: SVC's CV score is its mean over kopt tune's own folds."""
    import numpy as np
    from sklearn.model_selection import cross_val_score
    from sklearn.svm import SVC

    from kopt.cli.bench import tune as bt
    from kopt.data import as_dataset
    from kopt.running.validation import make_splits

    rng = np.random.default_rng(0)
    X = rng.random((300, 4))  # values in [0, 1]: standardize: auto leaves them, so SVC's rows are X's
    y = np.where((X[:, 0] - 0.5) * (X[:, 1] - 0.5) > 0, 1, -1)
    ds = as_dataset((X[:240], y[:240], X[240:], y[240:]))
    monkeypatch.setattr(bt, "_arrays", lambda name: ds)
    k = bt.run_kopt("ijcnn1", (1e-4, 1e-2), (0.5, 1.0), 3, 32)
    assert k["points"] == 4 and k["systems"] == 3 * 2 and 0.5 < k["test_accuracy"] <= 1.0
    s = bt.run_svc("ijcnn1", (1.0, 10.0), (0.5, 1.0), 3, 1)
    assert s["points"] == 4 and 0.5 < s["test_accuracy"] <= 1.0
    folds = make_splits(240, bt.SEED, folds=3)
    again = cross_val_score(SVC(C=s["best"]["C"], gamma=s["best"]["gamma"]), X[:240], y[:240], cv=folds).mean()
    assert s["cv_score"] == pytest.approx(again, abs=1e-12)


def test_bench_tune_is_a_command():
    from kopt.cli import build_parser

    args = build_parser().parse_args(["bench", "tune", "--sets", "ijcnn1", "--centers", "256", "--jobs", "1"])
    assert args.sets == ["ijcnn1"] and args.centers == 256 and args.jobs == 1


def test_bench_defaults_squared_hinge_side_on_binary_sets_only(monkeypatch):
    from kopt.cli.bench import defaults as bd

    calls = []

    def fake(module, args, timeout):
        side, name = args[args.index("--child") + 1], args[args.index("--set") + 1]
        calls.append((name, side))
        acc = {"spec": 0.95, "spec_squared_hinge": 0.982, "svc_c10": 0.9876, "svc": 0.987}[side]
        fit = {"spec": 24.0, "spec_squared_hinge": 20.0, "svc_c10": 4.5, "svc": 5.3}[side]
        return {"config": side, "accuracy": acc, "fit_s": fit, "predict_s": 1.0, "peak_mb": 400.0}

    monkeypatch.setattr(bd, "child", fake)
    sides = ("spec", "svc_c10", "svc", "spec_squared_hinge")
    line = bd.compare("ijcnn1", repeat=1, sides=sides)
    assert [s for _, s in calls] == list(sides)
    assert line["better_peer"] == "svc_c10"
    assert line["spec_squared_hinge_ratios"]["fit"] == pytest.approx(20.0 / 4.5)
    assert line["spec_squared_hinge_met"] == {"accuracy": False, "fit": False, "peak_mb": True}
    assert line["spec_ratios"]["accuracy_points"] == pytest.approx(-3.76)
    calls.clear()
    bd.compare("mnist-10k", repeat=1, sides=sides)  # multiclass: the binary loss's side is not run
    assert "spec_squared_hinge" not in [s for _, s in calls]
    assert bd.spec_of("ijcnn1", "squared_hinge")["model"]["loss"] == {"name": "squared_hinge"}
    assert bd.spec_of("ijcnn1")["model"]["loss"] == {"name": "auto"}  # the defaults' spec leaves the loss to auto
    assert bd.spec_of("cal_housing")["model"]["loss"] == {"name": "square"}


def test_bench_defaults_takes_the_better_svc_of_both_scalings_and_reports_the_grid_beside_it(monkeypatch):
    from kopt.cli.bench import defaults as bd

    def fake(module, args, timeout):
        side = args[args.index("--child") + 1]
        acc = {"spec": 0.985, "svc_c10": 0.980, "svc": 0.978, "svc_c10_other": 0.99, "svc_other": 0.97,
               "svc_grid": 0.995}[side]
        fit = {"spec": 10.0, "svc_c10": 4.0, "svc": 5.0, "svc_c10_other": 8.0, "svc_other": 6.0, "svc_grid": 900.0}[side]
        return {"config": side, "accuracy": acc, "fit_s": fit, "predict_s": 1.0, "peak_mb": 400.0}

    monkeypatch.setattr(bd, "child", fake)
    line = bd.compare("w8a", repeat=1, sides=("spec", "svc_c10", "svc", "svc_c10_other", "svc_other", "svc_grid"))
    assert line["better_peer"] == "svc_c10_other"  # the grid is beside the peers, not one of them
    assert line["spec_ratios"]["accuracy_points"] == pytest.approx(-0.5)
    assert line["spec_ratios"]["fit"] == pytest.approx(10.0 / 8.0)
    assert line["svc_grid"]["fit_s"] == 900.0


def test_bench_defaults_kills_a_grid_past_its_time_limit_and_reports_the_bound(monkeypatch):
    """svc_grid runs under its own limit; a run killed at it is reported as at least that long, and not run again."""
    from kopt.cli.bench import defaults as bd

    calls = []

    def fake(module, args, timeout):
        side = args[args.index("--child") + 1]
        calls.append((side, timeout))
        if side == "svc_grid":
            return {"error": f"killed after its time limit of {timeout:g} s", "timed_out": True,
                    "time_limit_s": timeout}
        return {"config": side, "accuracy": 0.9, "fit_s": 2.0, "predict_s": 1.0, "peak_mb": 400.0}

    monkeypatch.setattr(bd, "child", fake)
    line = bd.compare("a9a", repeat=2, sides=("spec", "svc", "svc_grid"), timeout=50.0, grid_timeout=7.0)
    assert calls == [("spec", 50.0), ("svc", 50.0), ("svc_grid", 7.0), ("spec", 50.0), ("svc", 50.0)]
    assert line["svc_grid"]["timed_out"] is True and line["svc_grid"]["fit_s_at_least"] == 7.0
    assert line["better_peer"] == "svc" and line["spec_ratios"]["fit"] == pytest.approx(1.0)


def test_a_bench_child_past_its_time_limit_is_killed_and_says_so():
    from kopt.cli.bench.runs import child

    t0 = time.perf_counter()
    out = child("timeit", ["-n", "1", "-r", "1", "import time; time.sleep(30)"], 1.0)
    assert time.perf_counter() - t0 < 20
    assert out["timed_out"] is True and out["time_limit_s"] == 1.0 and "time limit of 1 s" in out["error"]


def test_bench_defaults_refuses_a_time_limit_that_is_not_positive(capsys):
    from kopt.cli import main

    assert main(["bench", "defaults", "--sets", "a9a", "--grid-time-limit", "0"]) != 0
    assert "--grid-time-limit must be a number of seconds above 0" in capsys.readouterr().err


@pytest.mark.parametrize("side", ["svc_other", "svc_grid"])
def test_bench_defaults_svc_sides_fit_a_small_set(side, monkeypatch):
    """The SVC sides' own code on a small array set: the other scaling, and the grid's 76 fits."""
    from kopt.cli.bench import defaults as bd
    from kopt.data import Dataset

    rng = np.random.default_rng(0)
    X = rng.standard_normal((90, 3)) * [1.0, 10.0, 100.0]
    y = np.where(X[:, 2] + 10 * X[:, 1] > 0, 1, -1)  # the widest columns decide: raw rows separate it too
    monkeypatch.setattr(bd, "_arrays", lambda name: Dataset(X=X[:60], y=y[:60], X_test=X[60:], y_test=y[60:]))
    out = bd.run_side("higgs-12k", side)
    assert out["accuracy"] >= 0.6 and "features" in out["config"]
    if side == "svc_grid":
        assert out["fits"] == 76 and "-> C " in out["config"]
    else:
        assert "raw features" in out["config"]  # kopt's rule z-scores these columns: the other scaling is raw


# -- kopt bench scale -------------------------------------------------------------------------------
@pytest.mark.slow
def test_bench_scale_writes_valid_lines_at_a_tiny_size(tmp_path, monkeypatch):
    """Two configurations on 2,000 generated rows: a data line, then a fit line each, as JSON lines."""
    from kopt.cli.bench import scale

    monkeypatch.setenv("KOPT_DATA", str(tmp_path / "data"))
    out = tmp_path / "scale.jsonl"
    lines = scale.bench(["higgs-shaped"], [2000], ["spec", "nystroem_ridge"], time_limit=300, out=str(out),
                        log=lambda *a, **k: None)
    written = [json.loads(text) for text in out.read_text().splitlines()]
    assert written == json.loads(json.dumps(lines)) and [ln["kind"] for ln in written] == ["data", "fit", "fit"]
    data, spec, ridge = written
    assert data["rows"] == 2000 and data["bayes_accuracy"] == 0.9 and data["generated_now"]
    for line in (spec, ridge):
        assert line["status"] == "ok" and line["rows"] == 2000 and 0.5 < line["accuracy"] <= 0.9 + 0.01
        assert line["fit_s"] > 0 and line["peak_mb"] > 0 and line["machine"]["cpu_flags"] is not None
        assert isinstance(line["machine"]["blas"], list) and line["commit"] is not None
    assert spec["auto"]["route"] and spec["auto"]["centers"] > 0 and spec["certificate"] is not None
    png = scale.plot(written, str(tmp_path / "scale.png"))
    assert (tmp_path / "scale.png").stat().st_size > 0 and png.endswith("scale.png")


@pytest.mark.slow
def test_bench_scale_reports_a_configuration_past_its_limit_as_timed_out(tmp_path, monkeypatch):
    from kopt.cli.bench import scale

    monkeypatch.setenv("KOPT_DATA", str(tmp_path / "data"))
    res = scale.run_child(["--child", "estimator", "--set", "higgs-shaped", "--rows", "2000"], time_limit=0.5)
    assert res["status"] == "timed_out" and "0.5 s" in res["why"]
    # with a log file, what the child wrote before it was killed is kept, and the line says where
    log = tmp_path / "fits.log"
    res = scale.run_child([sys.executable, "-c", "import sys, time; print('kopt: half way', file=sys.stderr, "
                           "flush=True); time.sleep(30)"], time_limit=3, log_file=str(log), _command=[])
    assert res["status"] == "timed_out" and str(log) in res["why"]
    assert "kopt: half way" in log.read_text()
    seen = []
    monkeypatch.setattr(scale, "run_child", lambda args, limit, log_file=None: seen.append((args[1], limit)) or {"status": "timed_out"})
    monkeypatch.setattr(scale, "prepare", lambda name, rows: {"kind": "data", "set": name, "rows": rows})
    lines = scale.bench(["digits-10"], [1000, 2000], ["svc", "joker_rff"], time_limit=5000, log=lambda *a, **k: None)
    fits = [(ln["rows"], ln["config"], ln["status"]) for ln in lines if ln["kind"] == "fit"]
    # SVC gets at most 600 s, and once past it the larger sizes are skipped; Joker's huber loss is binary only
    assert fits == [(1000, "svc", "timed_out"), (1000, "joker_rff", "skipped"), (2000, "svc", "skipped"),
                    (2000, "joker_rff", "skipped")]
    assert seen == [("svc", scale.SVC_LIMIT_S)]


def test_bench_scale_test_digits_reach_the_digit_sets_and_their_children(monkeypatch):
    """``--test-digits N``: the digit sets' data spec names it, the children are told it, higgs-shaped ignores it."""
    from kopt.cli import build_parser
    from kopt.cli.bench import scale

    seen = []
    monkeypatch.setattr(scale, "run_child", lambda args, limit, log_file=None: seen.append(args) or {"status": "timed_out"})
    monkeypatch.setattr(scale, "prepare", lambda name, rows: {"kind": "data", "set": name, "rows": rows,
                                                              "spec": scale.data_spec(name, rows)})
    monkeypatch.setattr(scale, "TEST_DIGITS", None)
    args = build_parser().parse_args(["bench", "scale", "--sets", "digits-8v6", "higgs-shaped", "--rows", "1000",
                                      "--configs", "spec", "--test-digits", "5000"])
    args.func(args)
    assert seen[0][-2:] == ["--test-digits", "5000"] and "--test-digits" not in seen[1]
    assert scale.data_spec("digits-8v6", 1000)["options"] == {"rows": 1000, "test_digits": 5000}
    assert scale.data_spec("higgs-shaped", 1000)["options"] == {"rows": 1000}


def test_bench_scale_is_a_command_with_clear_errors(tmp_path):
    from kopt.cli import build_parser
    from kopt.errors import KoptError

    args = build_parser().parse_args(["bench", "scale", "--sets", "higgs-shaped", "--rows", "2000", "--configs", "svcc",
                                      "--time-limit", "10"])
    with pytest.raises(KoptError, match="unknown configuration svcc; configurations: spec"):
        args.func(args)
    args = build_parser().parse_args(["bench", "scale", "--plot-only", "--out", str(tmp_path / "none.jsonl")])
    with pytest.raises(KoptError, match="--plot-only draws the lines of --out"):
        args.func(args)


def test_bench_scale_asks_for_8_million_rows_only_when_they_fit(monkeypatch):
    from kopt.cli.bench import scale
    from kopt.numerics import memory

    monkeypatch.setattr(memory, "available_bytes", lambda: 24e9)
    assert scale.default_rows(["higgs-shaped"])[-1] == 8_000_000  # 1.5 x 0.96 GB + 0.5 GB fits
    assert scale.default_rows(["higgs-shaped", "digits-8v6"]) == list(scale.ROWS)  # 1.5 x 25 GB does not
    monkeypatch.setattr(memory, "available_bytes", lambda: 64e9)
    assert scale.default_rows(["digits-10"])[-1] == 8_000_000


def test_bench_scale_names_the_library_falkon_runs_on():
    """A Falkon line names torch's version, the BLAS its build reports and its threads (its GEMM is not NumPy's)."""
    import types

    from kopt.cli.bench import scale

    built = "PyTorch built with:\n  - GCC 13.3\n  - Intel(R) oneAPI Math Kernel Library Version 2024.2 for x\n  - OpenMP\n"
    torch = types.SimpleNamespace(__version__="2.13.0+cpu", get_num_threads=lambda: 2,
                                  __config__=types.SimpleNamespace(show=lambda: built))
    assert scale.torch_library(torch) == {"torch": "2.13.0+cpu", "threads": 2,
                                          "blas": "Intel(R) oneAPI Math Kernel Library Version 2024.2 for x"}
    torch.__config__ = types.SimpleNamespace(show=lambda: "PyTorch built with:\n  - GCC 13.3\n")
    assert scale.torch_library(torch)["blas"] is None


def test_bench_scale_falkon_hopt_starts_at_the_scale_rule_and_reports_its_tuning_beside_its_fit(monkeypatch):
    """``falkon_hopt``: the family's peer (falkon.hopt, then one fit) on float32 rows, every column's σ starting at the
    scale rule's, Falkon's kernel blocks held as ``falkon_lean``'s; the line has the tuning's seconds beside the fit's
    and the library Falkon ran on."""
    import types

    from kopt.cli.bench import falkon_peer, scale

    seen = {}
    monkeypatch.setitem(sys.modules, "falkon", types.SimpleNamespace(FalkonOptions=lambda **kw: kw))
    monkeypatch.setitem(sys.modules, "torch", types.SimpleNamespace(
        __version__="2.13.0+cpu", get_num_threads=lambda: 2,
        __config__=types.SimpleNamespace(show=lambda: "PyTorch built with:\n  - OpenBLAS 0.3.30\n")))

    def hopt(X, y, Xt, yt, kind, options, sigma0=None):
        seen.update(dtype=X.dtype, test_dtype=Xt.dtype, kind=kind, options=options, sigma0=sigma0)
        return {"fit_s": 2.0, "tune_s": 30.0, "accuracy": 0.8}

    monkeypatch.setattr(falkon_peer, "falkon_hopt", hopt)
    X = np.random.default_rng(0).normal(size=(40, 3))
    y = np.arange(40) % 2
    out = scale._run_falkon_hopt(X, y, X, y, 0.125, "binary")
    assert seen["sigma0"] == pytest.approx(2.0) and seen["dtype"] == seen["test_dtype"] == np.float32
    assert seen["kind"] == "binary" and seen["options"]["max_cpu_mem"] == scale.FALKON_LEAN_MEMORY
    assert out["fit_s"] == 2.0 and out["tune_s"] == 30.0 and out["peer_library"]["blas"] == "OpenBLAS 0.3.30"
    assert "falkon_hopt" in scale.CONFIGS


def test_bench_family_reports_the_spread_of_the_ratios_over_the_tasks():
    """The summary's per-task ratios against each peer and their median and worst over the family (accuracy: the
    lowest points; RMSE, fit time: the highest ratio)."""
    from kopt.cli.bench.family import summary

    def fit(index, kind, config, **k):
        return {"kind": "fit", "status": "ok", "config": config, "task": {"key": index, "kind": kind, "rows": 10}, **k}

    lines = [{"kind": "data", "task": {"key": i}, "data_mb": 10.0} for i in range(3)] + [
        fit(0, "binary", "kopt", accuracy=0.90, fit_s=10.0, search_s=4.0, peak_mb=110.0),
        fit(0, "binary", "falkon", accuracy=0.88, fit_s=20.0),
        fit(1, "binary", "kopt", accuracy=0.80, fit_s=30.0, search_s=20.0, peak_mb=60.0),
        fit(1, "binary", "falkon", accuracy=0.81, fit_s=10.0),
        fit(1, "binary", "falkon_hopt", accuracy=0.79, fit_s=10.0, tune_s=20.0),
        fit(2, "regression", "kopt", rmse=0.5, fit_s=5.0, search_s=1.0, peak_mb=30.0),
        fit(2, "regression", "falkon", rmse=0.4, fit_s=5.0),
        {"kind": "fit", "status": "timed_out", "config": "svc", "task": {"key": 2, "kind": "regression"}},
    ]
    out = summary(lines)
    f = out["spread"]["falkon"]
    assert f["tasks"] == 3
    assert f["accuracy_points"]["median"] == pytest.approx(0.5) and f["accuracy_points"]["worst"] == pytest.approx(-1.0)
    assert f["rmse_ratio"] == {"median": 1.25, "worst": 1.25}
    assert f["fit_ratio"]["median"] == pytest.approx(1.0) and f["fit_ratio"]["worst"] == pytest.approx(3.0)
    assert f["kopt_peak_above_data_mb"]["worst"] == pytest.approx(100.0)
    h = out["spread"]["falkon_hopt"]
    assert h["tasks"] == 1 and h["fit_ratio_with_tuning"]["worst"] == pytest.approx(1.0)
    assert "svc" not in out["spread"]


def test_bench_family_runs_kopt_on_a_tiny_task_and_skips_falkon_without_its_interpreter(tmp_path, monkeypatch):
    from kopt.cli.bench import family

    monkeypatch.setenv("KOPT_DATA", str(tmp_path))
    monkeypatch.setattr(family, "TEST_ROWS", 300)
    lines = family.bench(family.tasks(5, 1, rows=1500), ["kopt", "falkon"], 300, out=str(tmp_path / "f.jsonl"),
                         log=lambda *a, **k: None)
    fits = [ln for ln in lines if ln["kind"] == "fit"]
    assert fits[0]["status"] == "ok" and fits[0]["fit_s"] > 0 and ("accuracy" in fits[0] or "rmse" in fits[0])
    assert fits[1]["status"] == "skipped" and "falkon-python" in fits[1]["why"]
    assert lines[-1]["kind"] == "summary" and lines[0]["kind"] == "run"
    assert len((tmp_path / "f.jsonl").read_text().splitlines()) == len(lines)
    assert fits[0]["task"]["key"] == "5:0" and lines[1]["rows"] == 1500


def test_bench_family_takes_the_public_sets_as_tasks_of_their_own(tmp_path, monkeypatch, seeded_data):
    from kopt.cli.bench import family

    entries = family.public_sets(["higgs-12k", "cal_housing"])
    assert [(e.key, e.kind) for e in entries] == [("higgs-12k", "binary"), ("cal_housing", "regression")]
    assert family.spec_of(entries[1])["model"]["loss"] == {"name": "square"}
    assert family.spec_of(entries[0])["model"]["loss"] == {"name": "auto"}
