"""A checkpoint resumes under the spec that wrote it; a key a later kopt added, left at its default, is the same
spec; any other change is refused, naming it."""
from __future__ import annotations

import copy

import numpy as np
import pytest

from kopt.running import checkpoint

SPEC = {"model": {"loss": {"name": "square"}, "features": {"kind": "nystrom", "count": 64, "centers": "uniform"}},
        "solver": {"name": "krr_pcg"}, "output": {"dir": "x"}}


def _written_without(tmp_path, key):
    old = copy.deepcopy(SPEC)
    del old["model"]["features"][key]
    checkpoint.write(str(tmp_path), iteration=3, state={"w": np.arange(4.0)}, spec_data=old, solver="krr_pcg",
                     trace=[], elapsed=1.0)


def test_a_key_added_later_at_its_default_resumes(tmp_path):
    _written_without(tmp_path, "centers")
    state, meta = checkpoint.read(str(tmp_path), SPEC, "krr_pcg")
    assert meta["iteration"] == 3 and np.array_equal(state["w"], np.arange(4.0))


def test_a_key_added_later_away_from_its_default_is_refused(tmp_path):
    _written_without(tmp_path, "centers")
    other = copy.deepcopy(SPEC)
    other["model"]["features"]["centers"] = "rpcholesky"
    with pytest.raises(checkpoint.CheckpointError, match=r"model\.features\.centers: \(not set\) → rpcholesky"):
        checkpoint.read(str(tmp_path), other, "krr_pcg")


def test_a_changed_value_is_refused(tmp_path):
    checkpoint.write(str(tmp_path), iteration=3, state={"w": np.zeros(2)}, spec_data=SPEC, solver="krr_pcg",
                     trace=[], elapsed=1.0)
    other = copy.deepcopy(SPEC)
    other["model"]["features"]["count"] = 128
    with pytest.raises(checkpoint.CheckpointError, match=r"model\.features\.count: 64 → 128"):
        checkpoint.read(str(tmp_path), other, "krr_pcg")
