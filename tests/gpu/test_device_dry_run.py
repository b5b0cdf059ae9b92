"""The GPU check without a GPU: its dry run (NumPy in place of CuPy, tiny sizes) must keep working.

Not gpu-marked: these run everywhere, so a typo in tests/gpu/device_check.sh or tests/gpu/device_bench.py
is found here and not in the first minute of a scarce GPU machine.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import device_bench as dev  # tests/gpu/, beside this file (the device check's driver is not part of the package)
import device_rates
import pytest

REPO = Path(__file__).resolve().parents[2]


def _side(objective=1.0, dual=0.99, metrics=None, n_iter=10):
    return {"objective": objective, "dual": dual, "gap": 0.01, "n_iter": n_iter,
            "metrics": metrics if metrics is not None else {"accuracy": 0.70, "auc": 0.75, "rmse": 2.0}}


def test_compare_results_accepts_float32_rounding_and_rejects_more():
    ref = _side()
    same = dev.compare_results(ref, _side(objective=1.0 + 1e-6, dual=0.99 * (1 - 1e-6)))
    assert same["ok"] and same["failures"] == []
    assert same["diffs"]["objective_float32_units"] == pytest.approx(1e-6 * 2 ** 24, rel=1e-3)
    bad = dev.compare_results(ref, _side(objective=1.0 + 1e-4))
    assert not bad["ok"] and bad["failures"][0].startswith("objective: ")


@pytest.mark.parametrize("metric,value,ok", [
    ("accuracy", 0.7009, True), ("accuracy", 0.7011, False),  # 0.1 points of a fraction: 0.001 absolute
    ("auc", 0.7489, False), ("rmse", 2.0019, True), ("rmse", 2.0021, False),  # RMSE: 0.1% relative
])
def test_compare_results_metric_tolerance(metric, value, ok):
    metrics = {"accuracy": 0.70, "auc": 0.75, "rmse": 2.0}
    got = dev.compare_results(_side(metrics=metrics), _side(metrics={**metrics, metric: value}))
    assert got["ok"] is ok, got["failures"]
    if not ok:
        assert got["failures"][0].startswith(f"metric {metric}: ")


def test_compare_results_missing_metric_and_missing_dual_fail():
    got = dev.compare_results(_side(), _side(dual=None, metrics={"accuracy": 0.70, "auc": 0.75}))
    assert not got["ok"]
    assert any("dual" in f for f in got["failures"]) and any("metric rmse: missing" in f for f in got["failures"])


def test_cases_cover_every_solver_family():
    from kopt.contract.registry import registry

    solvers = {dev.case_spec(c, "numpy")["solver"]["name"] for c in dev.CASES}
    assert solvers == set(registry().names("solver"))  # dsg, udsg, cdsg, adsg and its baselines, joker, gp, krr_exact
    modes = {dev.case_spec(c, "numpy")["solver"].get("mode") for c in dev.CASES
             if dev.case_spec(c, "numpy")["solver"]["name"] == "joker"}
    assert modes == {"exact", "features", "primal"}
    for c in dev.CASES:  # every case's data is packaged or generated: a bare GPU machine has no other
        assert dev.case_spec(c, "cupy")["data"]["source"] in ("higgs-12k", "dai_synthetic"), c.name


@pytest.mark.slow
@pytest.mark.parametrize("case", dev.CASES, ids=[c.name for c in dev.CASES])
def test_dry_run_case_is_bit_identical(case):
    """Each case in-process at tiny size, NumPy on both sides: the same spec and seed, the same model."""
    rec = dev.run_case(case, dry_run=True, rows=300, tiny=True)
    assert rec["ok"], rec.get("failures") or rec.get("traceback")
    assert rec["device"]["backend"] == "numpy" and rec["dry_run"]
    for key, value in rec["diffs"].items():
        assert value in (0, 0.0, None), (key, value)
    assert rec["numpy"]["metrics"], "the case has a test set to compare on"


def test_a_failing_case_is_recorded_not_raised():
    broken = dev.Case("broken", "quickstart", "joker", {"solver": {"iterations": -1}})
    rec = dev.run_case(broken, dry_run=True, rows=100)
    assert rec["ok"] is False and rec["failures"] and "traceback" in rec


@pytest.mark.slow
def test_device_rates_dry_run():
    lines = []
    feat = device_rates.run_features(dry_run=True, log=lines.append)
    assert [r["M"] for r in feat["runs"]] == list(device_rates.DRY_FEATURES)
    for r in feat["runs"]:
        assert r["predict"] > 0 and r["predict_fraction_of_cos_roofline"] > 0
        assert r["predict_fraction_of_engine_floor"] > 0
    assert feat["roofline"]["cos_G_per_s"] > 0 and feat["roofline"]["engine_floor_G_per_s"] > 0
    jk = device_rates.run_joker(dry_run=True, rows=1024, log=lines.append)
    for r in jk["by_M"]:
        assert r["floor_s"] > 0 and r["ratio_to_floor"] >= 0 and r["seconds_per_scored_row"] > 0
    assert len(lines) == 4 and json.dumps(jk)


def test_pcg_dry_run():
    """The pcg stage at small sizes on NumPy: seconds per CG iteration on both sides, the same model (bit for bit:
    NumPy twice), written as JSON."""
    lines = []
    res = device_rates.run_pcg(dry_run=True, log=lines.append)
    assert [(r["rows"], r["M"]) for r in res["runs"]] == [(n, M) for n, M, _ in device_rates.DRY_PCG_CONFIGS]
    first, second = res["runs"]
    for side in (first["numpy"], first["device"], second["device"]):
        assert side["backend"] == "numpy" and side["seconds_per_iteration"] > 0 and side["n_iter"] == 4
        assert side["passes"] >= side["n_iter"]
    assert first["same_model"] == {"objective_rel": 0.0, "max_score_diff": 0.0} and first["speedup"] > 0
    assert "numpy" not in second  # the large settings time the device alone
    assert len(lines) == 3 and json.dumps(res)


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("bash") is None or shutil.which("timeout") is None, reason="needs bash and timeout")
def test_device_check_script_dry_run(tmp_path):
    """``bash tests/gpu/device_check.sh --dry-run`` end to end: every stage ok, every figure file written."""
    out = tmp_path / "out"
    env = {**os.environ, "OUT": str(out), "KOPT_PYTHON": sys.executable, "KOPT_DEVICE_BUDGET_S": "400"}
    env.pop("KOPT_DEVICE_DRY_RUN", None)
    proc = subprocess.run(["bash", "tests/gpu/device_check.sh", "--dry-run"], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=420)
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert "figures in" in proc.stderr
    files = sorted(p.name for p in out.iterdir())
    assert files == ["bench_features.json", "bench_joker_device.json", "bench_pcg_device.json", "compare.jsonl",
                     "device_check.log", "gpu_tests.xml", "summary.json"]
    assert len(files) <= 7  # the script's limit (the device tool brings back at most 8 files)
    summary = json.loads((out / "summary.json").read_text())
    status = {s["stage"]: s["status"] for s in summary["stages"]}
    assert status == {"install": "ok", "gpu_tests": "ok", "compare": "ok", "features": "ok", "joker": "ok",
                      "pcg": "ok", "joker_cli": status.get("joker_cli")}
    assert status["joker_cli"] in ("ok", "skipped")
    assert summary["dry_run"] and summary["nvidia_smi"]["cuda"] == "13"  # parsed from the sample header
    assert summary["compare"]["cases"] == summary["compare"]["agree"] == len(dev.CASES)
    assert summary["gpu_tests"]["failures"] == summary["gpu_tests"]["errors"] == 0
    assert [r["M"] for r in summary["pcg"]["by_config"]] == [M for _, M, _ in device_rates.DRY_PCG_CONFIGS]
