"""Model and checkpoint files are committed as a set: a crash before any of the commit's file
operations leaves the previous set or the new one loadable, and every JSON field is checksummed."""
from __future__ import annotations

import json
import os
import tempfile

import numpy as np
import pytest

import kopt
from kopt.errors import CheckpointError
from kopt.files import sets as fileset
from kopt.running import checkpoint

OPS = ("open", "write", "fsync", "close", "replace", "unlink")


class Crash(BaseException):
    """The process dies: this operation and every later one do not happen."""


class CrashingOs:
    """What :mod:`kopt.files.sets` sees as ``os``: file operation number ``crash_at`` (0-based) and all
    after it raise :class:`Crash` instead of running; ``log`` names the operations that ran."""

    def __init__(self, crash_at=None):
        self.crash_at = crash_at
        self.log = []

    def __getattr__(self, name):
        real = getattr(os, name)
        if name not in OPS:
            return real

        def op(*args, **kwargs):
            if self.crash_at is not None and len(self.log) >= self.crash_at:
                raise Crash(name)
            self.log.append(name)
            return real(*args, **kwargs)

        return op


def _commit_ops():
    """The file operations of one commit over an existing set (counted on throwaway files)."""
    with tempfile.TemporaryDirectory() as d:
        a, m = os.path.join(d, "x.npz"), os.path.join(d, "x.json")
        fileset.commit(a, b"old", m, {"format": "t"})
        spy = CrashingOs()
        real, fileset.os = fileset.os, spy
        try:
            fileset.commit(a, b"new", m, {"format": "t"})
        finally:
            fileset.os = real
    return spy.log


COMMIT_OPS = _commit_ops()
CRASH_POINTS = [pytest.param(k, id=f"before-{k}-{name}") for k, name in enumerate(COMMIT_OPS)] + [
    pytest.param(len(COMMIT_OPS), id="after-all")]


def test_a_commit_fsyncs_both_files_and_the_folder_before_and_after_its_renames():
    assert COMMIT_OPS.count("replace") == 2 and COMMIT_OPS.count("fsync") == 4
    first, last = COMMIT_OPS.index("replace"), len(COMMIT_OPS) - 1 - COMMIT_OPS[::-1].index("replace")
    assert COMMIT_OPS[:first].count("fsync") == 3 and COMMIT_OPS[last:].count("fsync") == 1


@pytest.fixture(scope="module")
def two_models():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((80, 3))
    y = X[:, 0] - X[:, 1] ** 2
    spec = {"model": {"loss": {"name": "square"}, "kernel": {"name": "gaussian", "bandwidth": 1.0},
                      "regularizer": {"name": "l2", "lambda": 1e-2}},
            "solver": {"name": "krr_exact"}, "backend": "numpy"}
    first = kopt.solve(spec, data=(X, y)).model
    spec["model"]["regularizer"]["lambda"] = 1e-1
    return first, kopt.solve(spec, data=(X, y)).model


def _crash_during(monkeypatch, crash_at, write):
    spy = CrashingOs(crash_at)
    monkeypatch.setattr(fileset, "os", spy)
    try:
        write()
    except Crash:
        pass
    finally:
        monkeypatch.setattr(fileset, "os", os)
    return spy


@pytest.mark.slow
@pytest.mark.parametrize("crash_at", CRASH_POINTS)
def test_a_crash_while_saving_a_model_leaves_the_old_or_the_new_model(tmp_path, monkeypatch, two_models, crash_at):
    old, new = two_models
    old.save(tmp_path / "model")
    spy = _crash_during(monkeypatch, crash_at, lambda: new.save(tmp_path / "model"))
    assert spy.log == COMMIT_OPS[:crash_at]
    loaded = kopt.load_model(tmp_path / "model.json").content_hash()
    assert loaded == (new.content_hash() if crash_at >= COMMIT_OPS.index("replace") + 1 else old.content_hash())
    new.save(tmp_path / "model")  # the next save finishes or discards what the crash left
    assert kopt.load_model(tmp_path / "model").content_hash() == new.content_hash()
    assert sorted(os.listdir(tmp_path)) == ["model.json", "model.npz"]


def _ckpt(out, iteration, value):
    checkpoint.write(out, iteration=iteration, state={"coef": np.full(4, value), "step": value}, spec_data={"a": 1},
                     solver="s", trace=[{"iteration": iteration}], elapsed=float(iteration))


@pytest.mark.slow
@pytest.mark.parametrize("crash_at", CRASH_POINTS)
def test_a_crash_while_checkpointing_leaves_the_old_or_the_new_checkpoint(tmp_path, monkeypatch, crash_at):
    _ckpt(tmp_path, 5, 1.0)
    spy = _crash_during(monkeypatch, crash_at, lambda: _ckpt(tmp_path, 10, 2.0))
    assert spy.log == COMMIT_OPS[:crash_at]  # the checkpoint is written through the commit, and died there
    state, meta = checkpoint.read(tmp_path, {"a": 1}, "s")
    assert (meta["iteration"], state["step"]) == ((10, 2.0) if crash_at > COMMIT_OPS.index("replace") else (5, 1.0))
    assert np.array_equal(state["coef"], np.full(4, state["step"]))  # never the arrays of one, fields of the other
    assert meta["trace"] == [{"iteration": meta["iteration"]}]


@pytest.mark.slow
def test_two_crashes_in_a_row_still_leave_a_complete_set(tmp_path, monkeypatch):
    a, m = str(tmp_path / "x.npz"), str(tmp_path / "x.json")
    monkeypatch.setattr(os, "fsync", lambda fd: None)  # 867 commits: the order of operations is what is tested
    for first in range(len(COMMIT_OPS)):
        for second in range(len(COMMIT_OPS)):
            for f in os.listdir(tmp_path):
                os.unlink(tmp_path / f)
            fileset.commit(a, b"v1", m, {"format": "t", "v": 1})
            _crash_during(monkeypatch, first, lambda: fileset.commit(a, b"v2", m, {"format": "t", "v": 2}))
            _crash_during(monkeypatch, second, lambda: fileset.commit(a, b"v3", m, {"format": "t", "v": 3}))
            payload = open(a, "rb").read()
            meta = fileset.matching(m, json.load(open(m)), payload)
            assert meta is not None and fileset.sealed(meta), (first, second)
            assert payload == b"v%d" % meta["v"]


def test_an_edited_checkpoint_iteration_is_refused(tmp_path):
    _ckpt(tmp_path, 5, 1.0)
    path = tmp_path / "checkpoint.json"
    path.write_text(path.read_text().replace('"iteration": 5', '"iteration": 50'))
    with pytest.raises(CheckpointError, match="edited"):
        checkpoint.read(tmp_path, {"a": 1}, "s")


def test_the_model_hash_ignores_the_timestamp_and_output_but_not_the_arrays(tmp_path, two_models):
    old, new = two_models
    a = json.loads(open(old.save(tmp_path / "a")).read())
    old.spec = {**old.spec, "name": "renamed", "output": {"dir": "elsewhere"}}
    b = json.loads(open(old.save(tmp_path / "b")).read())
    assert a["model_sha256"] == b["model_sha256"] == old.content_hash() != new.content_hash()


def test_kopt_model_hash_prints_the_content_hash_and_refuses_an_edited_model(tmp_path, two_models, capsys):
    from kopt.cli import main

    old, _ = two_models
    old.save(tmp_path / "m")
    assert main(["model-hash", str(tmp_path / "m.json")]) == 0
    assert capsys.readouterr().out.split() == [old.content_hash(), str(tmp_path / "m.json")]
    path = tmp_path / "m.json"
    path.write_text(path.read_text().replace('"gaussian"', '"laplacian"'))
    assert main(["model-hash", str(path)]) == 2
    err = capsys.readouterr().err
    assert "metadata was edited" in err and "Traceback" not in err


def test_a_checkpoint_from_another_machine_is_refused_with_what_differs(tmp_path):
    """Issue 17 defect 4: a resume on a different machine was accepted silently."""
    _ckpt(tmp_path, 5, 1.0)
    path = tmp_path / "checkpoint.json"
    meta = json.loads(path.read_text())
    assert meta["environment"] == checkpoint.environment() and "threads" not in meta["environment"]
    meta["environment"]["blas"] = ["openblas 0.3.30 SkylakeX"]
    path.write_text(json.dumps(fileset.seal(meta)))
    with pytest.raises(CheckpointError, match=r"another machine or software \(blas .*SkylakeX.*Resume where"):
        checkpoint.read(tmp_path, {"a": 1}, "s")


def test_content_hash_reads_fortran_order_arrays_as_their_c_order_bytes(monkeypatch):
    """A Fortran-order array is hashed a block of rows at a time (no whole copy), to the bytes a C-order copy has."""
    import numpy as np

    from kopt.models import model as model_module

    rng = np.random.default_rng(0)
    C = rng.standard_normal((300, 7)).astype(np.float32)
    meta = {"format": "kopt-model", "spec": {"seed": 0}}
    want = model_module.content_hash(meta, {"p_C": C, "p_w": np.ones((300, 2))})
    monkeypatch.setattr(model_module, "HASH_BLOCK_BYTES", 100)  # many blocks
    assert model_module.content_hash(meta, {"p_C": np.asfortranarray(C), "p_w": np.ones((300, 2))}) == want
    assert model_module.content_hash(meta, {"p_C": np.asfortranarray(C[::-1]), "p_w": np.ones((300, 2))}) != want
