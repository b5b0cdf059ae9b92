"""Shared fixtures: the team's data folder, backends, GPU skipping."""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
from hypothesis import settings

# Property tests are derandomized so CI never flakes; examples are capped per test.
settings.register_profile("kopt", derandomize=True, deadline=None, print_blob=True)
settings.load_profile("kopt")

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(os.environ.get("KOPT_SHARED_DATA", REPO.parent / "shared" / "data"))


@pytest.fixture(scope="session")
def shared_data():
    """../shared/data (real datasets, read in place; never copied into the project)."""
    if not SHARED_DATA.is_dir():
        pytest.skip(f"shared data folder not found at {SHARED_DATA}")
    return SHARED_DATA


_OWN_DATA_HOME = None


def pytest_configure(config):
    """Tests never write into the user's cache and never touch the network.

    ``KOPT_DATA`` points at a per-run folder unless set (``.ci/run`` sets it), ``KOPT_OFFLINE=1`` forbids
    downloads (the download tests use a local HTTP server and lift it), and the data folder is seeded
    from ../shared/data exactly as a user seeds it offline: ``kopt data import ../shared/data``.
    """
    global _OWN_DATA_HOME
    if "KOPT_DATA" not in os.environ:
        import tempfile

        _OWN_DATA_HOME = tempfile.mkdtemp(prefix="kopt-test-data-")
        os.environ["KOPT_DATA"] = _OWN_DATA_HOME
    os.environ.setdefault("KOPT_OFFLINE", "1")
    if hasattr(config, "workerinput"):
        # a pytest-xdist worker: the controller made and seeded the folder, its environment says where
        if config.workerinput.get("workercount", 1) > 1:
            _one_core_per_worker()
        return
    if SHARED_DATA.is_dir():
        from kopt.cli import main

        if main(["data", "import", str(SHARED_DATA), "--quiet"]) != 0:
            raise pytest.UsageError(f"kopt data import {SHARED_DATA} failed")


def _one_core_per_worker():
    """Each worker of ``pytest -n N`` gets one core's worth of threads: kopt's pool (``KOPT_THREADS``) and
    BLAS, here and in the processes a test starts.  OpenBLAS's idle threads spin, so two workers each
    running two BLAS threads on two cores made the BLAS-heavy tests slower: test_linalg, test_svm_nystrom,
    test_gp_validation, test_joker, test_solver_contract, test_distributed_dsg and test_auto took 64 s with one
    thread per worker against 169 s with two (``pytest -n 2``, 2026-11-29, 79982c4, 2 cores)."""
    for name in ("KOPT_THREADS", "OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(name, "1")
    import scipy.linalg  # noqa: F401  (SciPy's own OpenBLAS too, loaded before the limit is set)
    from threadpoolctl import threadpool_limits

    threadpool_limits(limits=int(os.environ["KOPT_THREADS"]), user_api="blas")


def pytest_unconfigure(config):
    if _OWN_DATA_HOME is not None:
        import shutil

        shutil.rmtree(_OWN_DATA_HOME, ignore_errors=True)
        os.environ.pop("KOPT_DATA", None)


@pytest.fixture(scope="session")
def seeded_data(shared_data):
    """The data folder, seeded from ../shared/data (every preset's files but full HIGGS and MNIST's
    train images); skips when ../shared/data is absent."""
    from kopt.data import default_data_dir

    return default_data_dir()


def cupy_status_cached():
    from kopt.numerics.backend import cupy_status

    return cupy_status()


def _cupy_ok():
    return cupy_status_cached()[0]


@pytest.fixture(params=["numpy", pytest.param("cupy", marks=pytest.mark.gpu)])
def xp(request):
    """The array module under test; the cupy case skips without a GPU."""
    if request.param == "cupy":
        if not _cupy_ok():
            pytest.skip("CuPy or a CUDA device is not available")
        import cupy

        return cupy
    return np


def pytest_collection_modifyitems(config, items):
    """Skip ``gpu``-marked tests unless CuPy runs a kernel on a CUDA device (kopt.numerics.backend.cupy_status).

    The marker, not ``item.keywords``: keywords also hold every parent's name, so a test in the
    folder tests/gpu/ would otherwise count as a GPU test.
    """
    ok, reason = cupy_status_cached()
    if ok:
        return
    skip = pytest.mark.skip(reason=f"needs CuPy and a CUDA device: {reason}")
    for item in items:
        if item.get_closest_marker("gpu") is not None:
            item.add_marker(skip)
