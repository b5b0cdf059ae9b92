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


def _cupy_ok():
    from kopt.backend import cupy_status

    return cupy_status()[0]


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
    if _cupy_ok():
        return
    skip = pytest.mark.skip(reason="needs CuPy and a CUDA device")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
