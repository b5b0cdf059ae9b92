"""kopt bench peers / joker: the harness (figures are printed, never asserted)."""
import json
import subprocess
import sys

import pytest

from kopt.bench import peers
from kopt.bench.joker import floors, run_joker


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


def test_the_kopt_child_runs_a_packaged_spec():
    proc = subprocess.run([sys.executable, "-m", "kopt.bench.peers", "--child", "kopt", "--set", "higgs-12k",
                           "--set-option", "model.features.count=200"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    res = json.loads(proc.stdout.strip().splitlines()[-1])
    assert res["accuracy"] > 0.6 and res["fit_s"] > 0 and res["peak_mb"] > 0 and "primal" in res["config"]


def test_unknown_set_is_a_clear_error():
    from argparse import Namespace

    from kopt.errors import KoptError

    with pytest.raises(KoptError, match="unknown benchmark set"):
        peers.peers(Namespace(sets=["mnist"], repeat=1, json=None, set_option=None))


def test_bench_joker_reports_cost_floor_and_projection():
    res = run_joker(rows=3000, features=(512,), iterations=5, score_rows=500, project_iterations=100,
                    gap_rows=1000, test_rows=1000, log=lambda *a: None)
    entry = res["by_M"][0]
    assert entry["seconds_per_iteration"]["median_s"] > 0 and entry["floor_s"] > 0
    assert entry["projection"]["total_hours"] > 0 and res["machine"]["cpu_flags"] is not None
    f = floors(100_000, 512, 28, cos_rate=3.7, gemm_gflops=300.0)
    assert f["gram_s"] == pytest.approx(2 * 512 * 512 * 100_000 / 300e9)
