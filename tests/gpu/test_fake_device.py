"""The GPU check's CuPy code paths on a fake device: NumPy under CuPy's name (tests/gpu/fake_cupy).

The dry run replaces CuPy by NumPy; these runs keep ``backend: cupy`` and give it a module that
computes with NumPy but answers to ``cupy`` and ``cupyx`` (a fake CUDA runtime with one device).
So every ``xp is not np`` branch, ``cupyx`` call, the probe, the device report and the benchmarks'
synchronisation run here, and a run on a GPU finds no typo in them.  What they cannot check is
CuPy itself: device copies, implicit host conversions, CUDA's rounding.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
FAKE = Path(__file__).resolve().parent / "fake_cupy"


pytestmark = pytest.mark.slow  # every test here: out of the fast loop, pytest -m "not slow"


def _run(args, **kw):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(FAKE), os.environ.get("PYTHONPATH", "")])}
    env.pop("KOPT_DEVICE_DRY_RUN", None)
    return subprocess.run([sys.executable, *args], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=600, **kw)


def test_fake_device_is_what_the_probe_sees():
    proc = _run(["-c", "import json; from kopt.numerics.backend import cupy_status, resolve, cupy_device_info; "
                       "print(json.dumps([cupy_status(), resolve('auto').name, cupy_device_info()]))"])
    assert proc.returncode == 0, proc.stderr[-3000:]
    status, name, info = json.loads(proc.stdout)
    assert status[0] and name == "cupy"
    assert info["device"] == "Fake CUDA device (NumPy)" and info["cuda_runtime"] == "13.0"


def test_every_gpu_test_passes_on_the_fake_device(tmp_path):
    """``pytest -m gpu`` runs (not skips) every GPU test's code, CuPy branches included, with NumPy arrays."""
    xml = tmp_path / "gpu.xml"
    proc = _run(["-m", "pytest", "-q", "-m", "gpu", "-p", "no:cacheprovider", f"--junitxml={xml}", "tests"])
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    suite = ET.parse(xml).getroot()
    suite = suite if suite.tag == "testsuite" else suite.find("testsuite")
    counts = {k: int(suite.get(k)) for k in ("tests", "skipped", "failures", "errors")}
    assert counts["tests"] >= 30 and counts["skipped"] == counts["failures"] == counts["errors"] == 0, counts


def test_compare_and_rates_on_the_fake_device(tmp_path):
    """``compare`` with backend cupy (every case, tiny) and the device figures at small sizes, not dry."""
    proc = _run(["tests/gpu/device_bench.py", "compare", "--tiny", "--rows", "300", "--out", str(tmp_path)])
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    recs = [json.loads(line) for line in (tmp_path / "compare.jsonl").read_text().splitlines()]
    from device_bench import CASES

    assert len(recs) == len(CASES) and all(r["ok"] for r in recs), [r.get("failures") for r in recs]
    assert {r["device"]["backend"] for r in recs} == {"cupy"} and not any(r["dry_run"] for r in recs)
    for cmd, name in (("features", "bench_features.json"), ("joker", "bench_joker_device.json")):
        proc = _run(["tests/gpu/device_bench.py", cmd, "--small", "--out", str(tmp_path)])
        assert proc.returncode == 0, proc.stderr[-3000:]
        res = json.loads((tmp_path / name).read_text())
        assert res["machine"]["device"] == "Fake CUDA device (NumPy)" and not res["machine"]["dry_run"]
        assert res["roofline"]["cos_G_per_s"] > 0
    proc = _run(["tests/gpu/device_bench.py", "pcg", "--small", "--out", str(tmp_path)])
    assert proc.returncode == 0, proc.stderr[-3000:]
    res = json.loads((tmp_path / "bench_pcg_device.json").read_text())
    first = res["runs"][0]
    assert first["numpy"]["backend"] == "numpy" and first["device"]["backend"] == "cupy"  # krr_pcg's CuPy branches
    assert first["same_model"]["objective_rel"] < 2.0 ** -16 and first["device"]["seconds_per_iteration"] > 0


def test_fake_device_refuses_host_device_mixes():
    """The fake is strict where CuPy is: a host array mixed into device work is a TypeError."""
    code = """
import numpy as np, cupy, cupyx.scipy.linalg as cl
from kopt.numerics.backend import get_namespace, to_numpy
d, h = cupy.asarray([1.0, 2.0]), np.ones(2)
assert get_namespace(d) is cupy and type(to_numpy(d)) is np.ndarray
assert type(d * 2.0 + cupy.cos(d)) is cupy.ndarray and type(np.maximum(d, d)) is cupy.ndarray
for bad in (lambda: d + h, lambda: np.maximum(d, h), lambda: cupy.cos(h), lambda: cl.solve_triangular(np.eye(2), d)):
    try:
        bad()
    except TypeError as exc:
        assert "fake cupy" in str(exc), exc
    else:
        raise AssertionError("a host/device mix went through")
print("ok")
"""
    proc = _run(["-c", code])
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr[-3000:]
