"""``backend: auto`` picks CuPy only when a CUDA device answers (runs on any machine).

A fake ``cupy`` module stands in for the real one (``sys.modules``), so both sides of the rule are
checked here without a GPU: an importable CuPy whose device count is 0, whose runtime raises, or
whose first kernel fails or answers wrongly must give NumPy with the reason in the backend's note.
"""
from __future__ import annotations

import sys
import types

import numpy as np
import pytest

from kopt.errors import BackendError
from kopt.numerics import backend as backends


class _FakeArray:
    """The few array operations the probe uses, computed with NumPy."""

    def __init__(self, a):
        self.a = np.asarray(a)

    def __mul__(self, other):
        return _FakeArray(self.a * other.a)

    def sum(self):
        return _FakeArray(self.a.sum())

    def get(self):
        return self.a


def fake_cupy(devices=1, runtime_error=None, kernel_error=None, wrong=False):
    """A module shaped like cupy: ``cuda.runtime.getDeviceCount``, ``arange``, ``float32``, ``__version__``."""
    mod = types.ModuleType("cupy")
    mod.__version__ = "99.0-fake"
    mod.float32 = np.float32
    mod.calls = []

    def get_device_count():
        mod.calls.append("getDeviceCount")
        if runtime_error is not None:
            raise runtime_error
        return devices

    def arange(n, dtype=None):
        mod.calls.append("arange")
        if kernel_error is not None:
            raise kernel_error
        return _FakeArray(np.arange(n, dtype=dtype) + (1 if wrong else 0))

    mod.cuda = types.SimpleNamespace(runtime=types.SimpleNamespace(getDeviceCount=get_device_count))
    mod.arange = arange
    mod.asnumpy = lambda a: a.get()
    return mod


@pytest.fixture
def with_cupy(monkeypatch):
    """Install a fake cupy for one test; the cached status is cleared before and after."""

    def install(mod):
        if mod is None:
            monkeypatch.setitem(sys.modules, "cupy", None)  # ``import cupy`` raises ImportError
        else:
            monkeypatch.setitem(sys.modules, "cupy", mod)
        backends.cupy_status.cache_clear()
        return mod

    yield install
    backends.cupy_status.cache_clear()


def test_auto_picks_cupy_when_a_device_runs_a_kernel(with_cupy):
    mod = with_cupy(fake_cupy(devices=2))
    b = backends.resolve("auto")
    assert b.name == "cupy" and b.xp is mod
    assert "auto chose cupy" in b.note and "2 device(s)" in b.note and "99.0-fake" in b.note
    assert mod.calls == ["getDeviceCount", "arange"]  # the kernel ran, not just the count
    assert backends.resolve("cupy").xp is mod


@pytest.mark.parametrize("fake,reason", [
    (dict(devices=0), "found no CUDA device"),
    (dict(runtime_error=RuntimeError("cudaErrorNoDevice: no CUDA-capable device is detected")),
     "cannot reach a CUDA device (RuntimeError: cudaErrorNoDevice"),
    (dict(kernel_error=RuntimeError("CUDA_ERROR_UNSUPPORTED_PTX_VERSION")),
     "a tiny kernel failed (RuntimeError: CUDA_ERROR_UNSUPPORTED_PTX_VERSION)"),
    (dict(wrong=True), "a tiny kernel returned 204.0, not 140.0"),
], ids=["no-device", "runtime-error", "kernel-fails", "kernel-wrong"])
def test_auto_falls_back_to_numpy_when_no_device_answers(with_cupy, fake, reason):
    with_cupy(fake_cupy(**fake))
    b = backends.resolve("auto")
    assert b.name == "numpy" and b.xp is np
    assert b.note.startswith("auto fell back to numpy: ") and reason in b.note
    with pytest.raises(BackendError, match="backend 'cupy' is not available") as err:
        backends.resolve("cupy")
    assert reason in str(err.value)


def test_auto_falls_back_to_numpy_without_cupy(with_cupy):
    with_cupy(None)
    b = backends.resolve("auto")
    assert b.name == "numpy" and "CuPy is not installed" in b.note and "cupy-cuda12x" in b.note


def test_status_is_probed_once_per_process(with_cupy):
    mod = with_cupy(fake_cupy())
    assert backends.cupy_status()[0] and backends.cupy_status()[0]
    assert mod.calls.count("getDeviceCount") == 1


def test_spec_with_cupy_is_an_error_naming_the_reason(with_cupy):
    """A spec asking for backend: cupy on a machine whose CuPy has no device fails validation, not the solve."""
    import kopt
    from kopt.errors import SpecError

    with_cupy(fake_cupy(devices=0))
    spec = {"name": "t", "data": {"source": "higgs-12k"}, "backend": "cupy",
            "model": {"loss": {"name": "square"}, "kernel": {"name": "gaussian", "bandwidth": 1.0},
                      "regularizer": {"name": "l2", "lambda": 0.1}},
            "solver": {"name": "krr_exact"}}
    with pytest.raises(SpecError, match="found no CUDA device"):
        kopt.load_spec(spec, check_files=False)


@pytest.mark.slow
def test_gpu_tests_skip_without_a_device(tmp_path):
    """Where the probe fails, ``pytest -m gpu`` collects the gpu-marked tests and skips each, failing none."""
    import subprocess
    import xml.etree.ElementTree as ET
    from pathlib import Path

    if backends.cupy_status()[0]:
        pytest.skip("a CUDA device is usable here: the gpu tests run instead")
    tests = Path(__file__).resolve().parents[1]
    xml = tmp_path / "gpu.xml"
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-m", "gpu", "-p", "no:cacheprovider",
                           f"--junitxml={xml}", str(tests / "plugins" / "regularizers" / "test_regularizers.py"), str(tests / "engine" / "numerics" / "test_features.py")],
                          capture_output=True, text=True, timeout=300, cwd=tests.parent)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    suite = ET.parse(xml).getroot()
    suite = suite if suite.tag == "testsuite" else suite.find("testsuite")
    counts = {k: int(suite.get(k)) for k in ("tests", "skipped", "failures", "errors")}
    assert counts["tests"] >= 6 and counts["skipped"] == counts["tests"], counts  # every one skipped
    assert counts["failures"] == counts["errors"] == 0, counts
    reasons = {c.find("skipped").get("message") for c in suite.iter("testcase")}
    assert all("CUDA" in r for r in reasons), reasons
