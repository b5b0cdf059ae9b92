"""Checkpoint files: ``checkpoint.npz`` (arrays) + ``checkpoint.json`` (scalars, trace).

The two are committed as one set (:mod:`kopt.files.sets`): a crash while writing leaves the
previous checkpoint or the new one, and every field of the JSON (the iteration number too) is
covered by its checksum.
"""
from __future__ import annotations

import hashlib
import io
import json
import math
import os
import zipfile

import numpy as np

from ..contract.hookspecs import hookimpl
from ..errors import CheckpointError
from ..files import sets as fileset
from ..files.npz import BadArrayFile, read_npz
from ..numerics.backend import to_numpy

FORMAT = "kopt-checkpoint"


def _core(spec_data: dict) -> dict:
    """What in a resolved spec shapes the trajectory: ``output`` and the Dask scheduler's address excluded
    (a run checkpointed on one cluster resumes on another with the same partitions)."""
    core = {k: v for k, v in spec_data.items() if k != "output"}
    if "execution" in core:
        core["execution"] = {k: v for k, v in core["execution"].items() if k != "scheduler"}
    return core


def fingerprint(spec_data: dict) -> str:
    """Hash of :func:`_core` of a resolved spec."""
    return hashlib.sha256(json.dumps(_core(spec_data), sort_keys=True, default=str).encode()).hexdigest()


def changed_keys(old: dict, new: dict, prefix="") -> list:
    """``(key.path, old value, new value)`` of every leaf that differs between two spec dicts (a key one of
    them lacks has the value ``None`` there), in key order."""
    out = []
    for key in sorted(set(old) | set(new), key=str):
        a, b = old.get(key), new.get(key)
        path = f"{prefix}{key}"
        if isinstance(a, dict) and isinstance(b, dict):
            out += changed_keys(a, b, path + ".")
        elif a != b:
            out.append((path, a, b))
    return out


def _spec_changes(meta: dict, spec_data: dict) -> list | None:
    """None where the checkpoint was written for this spec (the same fingerprint, or a spec that differs only by keys
    a later kopt added, each at its default); else the changes that matter (empty where the checkpoint's spec is not
    readable)."""
    if meta.get("spec_fingerprint") == fingerprint(spec_data):
        return None
    if not isinstance(meta.get("spec"), dict) or fingerprint(meta["spec"]) != meta.get("spec_fingerprint"):
        return []
    changes = [c for c in changed_keys(_core(meta["spec"]), _core(spec_data)) if not _new_key_at_its_default(*c)]
    return changes or None


def _new_key_at_its_default(path: str, old, new) -> bool:
    """Whether a spec key the checkpoint's spec lacks holds its schema default now: a key a later kopt added, whose
    default is what the earlier one did (so the run's trajectory is the same)."""
    if old is not None:
        return False
    from ..spec.schema import CORE_SCHEMA

    node = CORE_SCHEMA
    for key in path.split("."):
        node = node.get("properties", {}).get(key)
        if not isinstance(node, dict):
            return False
    return "default" in node and node["default"] == new


def describe_changes(changes: list, limit=6) -> str:
    """``model.regularizer.lambda: 0.001 → 0.01; solver.name: joker → dsg`` (the first ``limit``)."""
    def show(v):
        return "(not set)" if v is None else v if isinstance(v, str) else json.dumps(v, default=str)

    text = "; ".join(f"{k}: {show(a)} → {show(b)}" for k, a, b in changes[:limit])
    return text + (f"; and {len(changes) - limit} more" if len(changes) > limit else "")


_ENVIRONMENT = None


def environment(backend="numpy") -> dict:
    """What besides the spec decides a run's bits: kopt, NumPy and SciPy versions, the BLAS libraries
    (name, version, the CPU kernels they picked), the CPU architecture, the reduction PARTS and the
    backend.  The thread count is not in it: every reduction is cut into PARTS whatever the threads."""
    global _ENVIRONMENT
    if _ENVIRONMENT is None:
        import platform

        import scipy
        import scipy.linalg  # noqa: F401  (its BLAS is loaded before threadpoolctl looks)
        from threadpoolctl import threadpool_info

        from ..contract.version import __version__
        from ..numerics.threads import PARTS

        blas = sorted(f"{d.get('internal_api')} {d.get('version')} {d.get('architecture')}"
                      for d in threadpool_info() if d.get("user_api") == "blas")
        _ENVIRONMENT = {"kopt": __version__, "numpy": np.__version__, "scipy": scipy.__version__, "blas": blas,
                        "machine": platform.machine(), "parts": PARTS}
    return {**_ENVIRONMENT, "backend": backend}


def paths(out_dir):
    return os.path.join(out_dir, "checkpoint.json"), os.path.join(out_dir, "checkpoint.npz")


def write(out_dir, *, iteration, state: dict, spec_data, solver, trace, elapsed, backend="numpy"):
    json_path, npz_path = paths(out_dir)
    arrays, scalars = {}, {}
    for k, v in state.items():
        if hasattr(v, "shape") and getattr(v, "ndim", 0) > 0:
            arrays[k] = to_numpy(v)
        elif isinstance(v, (list, tuple)):
            arrays[k] = np.asarray(v)
        else:
            scalars[k] = v.item() if hasattr(v, "item") else v
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    fileset.commit(npz_path, buf.getvalue(), json_path, {
        "format": FORMAT,
        "iteration": int(iteration),
        "solver": solver,
        "spec_fingerprint": fingerprint(spec_data),
        "spec": _core(spec_data),  # to name what changed when a resume is refused
        "environment": environment(backend),
        "scalars": scalars,
        "elapsed": elapsed,
        "trace": trace,
    })


def read(out_dir, spec_data, solver, backend="numpy"):
    """``(state, meta)`` of the checkpoint in ``out_dir``; state includes ``_elapsed``.

    Refused when the spec or solver differ, and when the :func:`environment` differs (another
    kopt, NumPy, BLAS or CPU kind would not continue the run bit-identically)."""
    json_path, npz_path = paths(out_dir)
    try:
        with open(json_path, encoding="utf-8") as fh:
            meta = json.load(fh)
        with open(npz_path, "rb") as fh:
            payload = fh.read()
    except FileNotFoundError:
        raise CheckpointError(f"{json_path}: no checkpoint to resume from (set output.checkpoint_every)") from None
    except (OSError, json.JSONDecodeError) as exc:
        raise CheckpointError(f"{json_path}: unreadable checkpoint: {exc}") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise CheckpointError(f"{json_path}: not a kopt checkpoint")
    meta = fileset.matching(json_path, meta, payload)
    if meta is None:
        raise CheckpointError(f"{npz_path}: checksum mismatch (corrupt or from another run)")
    if not fileset.sealed(meta):
        raise CheckpointError(f"{json_path}: checksum mismatch: the checkpoint's fields were edited or are damaged "
                              "(or it was written by an older kopt); delete it to start over")
    changes = _spec_changes(meta, spec_data)
    if meta.get("solver") != solver or changes is not None:
        what = f" ({describe_changes(changes)})" if changes else ""
        raise CheckpointError(
            f"{json_path}: the checkpoint was written for a different spec or solver{what}; "
            "resume with the spec that started the run, or delete the checkpoint to start over"
        )
    here = environment(backend)
    there = meta.get("environment") or {}
    changed = [f"{k} {there.get(k)!r} -> {here[k]!r}" for k in here if there.get(k) != here[k]]
    if changed:
        raise CheckpointError(
            f"{json_path}: the checkpoint was written on another machine or software ({'; '.join(changed)}); "
            "resuming here would not end where an uninterrupted run ends. Resume where it was written, or delete "
            "the checkpoint to start over")
    _check_fields(meta, json_path)
    try:
        state = read_npz(io.BytesIO(payload))
    except (BadArrayFile, ValueError, OSError, EOFError, zipfile.BadZipFile) as exc:
        raise CheckpointError(f"{npz_path}: cannot read the checkpoint's arrays: {exc}") from None
    state.update(meta["scalars"])
    state["_elapsed"] = meta.get("elapsed", 0.0)
    return state, meta



def _check_fields(meta, json_path):
    """The fields :func:`read` and a resume use, with their types (a sealed file may still lack one)."""
    it, scalars, elapsed = meta.get("iteration"), meta.get("scalars"), meta.get("elapsed", 0.0)
    if not isinstance(it, int) or isinstance(it, bool) or it < 0:
        raise CheckpointError(f"{json_path}: field 'iteration' is missing or not an integer >= 0 (got {it!r})")
    if not isinstance(scalars, dict) or not isinstance(meta.get("trace", []), list):
        raise CheckpointError(f"{json_path}: field 'scalars' (a mapping) or 'trace' (a list) is missing or malformed")
    if not isinstance(elapsed, (int, float)) or not math.isfinite(elapsed):
        raise CheckpointError(f"{json_path}: field 'elapsed' is not a finite number (got {elapsed!r})")


# -- in-memory snapshots: continuing a run without files (warm starts) -----------------------------

def continuation_key(spec_data: dict, free_lambda: bool = False) -> str:
    """Hash of what a continued run must share with the run it continues: the spec without ``output``,
    ``name``, ``solver.iterations`` and ``solver.tol`` (the cap and the stopping rule may change);
    ``free_lambda``: without ``model.regularizer.lambda`` too (a warm start along a λ path)."""
    core = {k: v for k, v in spec_data.items() if k not in ("output", "name")}
    core["solver"] = {k: v for k, v in core["solver"].items() if k not in ("iterations", "tol")}
    if free_lambda:
        model = dict(core["model"])
        model["regularizer"] = {k: v for k, v in model["regularizer"].items() if k != "lambda"}
        core["model"] = model
    return hashlib.sha256(json.dumps(core, sort_keys=True, default=str).encode()).hexdigest()


def _detach(state: dict) -> dict:
    """The state as :func:`read` would return it from a file: host arrays (copies) and plain scalars."""
    out = {}
    for k, v in state.items():
        if hasattr(v, "shape") and getattr(v, "ndim", 0) > 0:
            out[k] = np.array(to_numpy(v), copy=True)
        elif isinstance(v, (list, tuple)):
            out[k] = np.asarray(v)
        else:
            out[k] = v.item() if hasattr(v, "item") else v
    return out


class Snapshot:
    """A run's final solver state, kept in memory (``kopt.solve(..., keep_state=True)``).

    ``kopt.solve(spec, data, resume=snapshot)`` continues it: the same problem and data, with
    ``solver.iterations`` (at least ``iteration``) and ``solver.tol`` free to change, for solvers
    that declare ``warm_start``.  The state is detached from the run (host copies), exactly as a
    checkpoint file would give it back.
    """

    def __init__(self, solver, iteration, state, spec_data, trace, elapsed, status):
        self.solver = solver
        self.iteration = int(iteration)
        self.state = state
        self.key = continuation_key(spec_data)
        self.path_key = continuation_key(spec_data, free_lambda=True)
        self.lam = spec_data["model"]["regularizer"].get("lambda")
        self.iterations = spec_data["solver"].get("iterations")
        self.tol = spec_data["solver"].get("tol")
        self.trace = list(trace)
        self.elapsed = float(elapsed)
        self.status = status

    def resume_state(self) -> dict:
        return {**{k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in self.state.items()},
                "_elapsed": self.elapsed}

    def __repr__(self):
        return f"Snapshot(solver={self.solver!r}, iteration={self.iteration}, status={self.status!r})"


def check_continuation(snapshot: Snapshot, spec, solver_cls):
    """Raise :class:`CheckpointError` unless ``spec`` may continue ``snapshot`` (see :class:`Snapshot`)."""
    name = solver_cls.name
    if not solver_cls.warm_start:
        raise CheckpointError(f"solver {name!r} cannot continue an earlier run: its result depends on "
                              "solver.iterations (or it solves directly), so a continued run would not end where a "
                              "fresh run ends; fit from scratch")
    if snapshot.solver != name or snapshot.key != continuation_key(spec.data):
        raise CheckpointError("the snapshot was taken from a different problem (only solver.iterations and "
                              "solver.tol may change between a run and its continuation); fit from scratch")
    cap = spec["solver"].get("iterations")
    if cap is not None and cap < snapshot.iteration:
        raise CheckpointError(f"the earlier run already took {snapshot.iteration} iterations, more than "
                              f"solver.iterations = {cap}; a continuation needs iterations >= {snapshot.iteration}")


def warm_start_state(snapshot: Snapshot, spec, solver) -> dict:
    """The starting state of ``spec`` warm-started from ``snapshot`` (a run of the same problem at another
    λ; :meth:`kopt.contract.components.Solver.warm_state`); raises :class:`CheckpointError` when it cannot be."""
    name = solver.name
    if not solver.lambda_warm_start:
        raise CheckpointError(f"solver {name!r} cannot start from a run at another lambda; fit from scratch")
    if snapshot.solver != name or snapshot.path_key != continuation_key(spec.data, free_lambda=True):
        raise CheckpointError("the snapshot was taken from a different problem (only model.regularizer.lambda, "
                              "solver.iterations and solver.tol may change for a warm start); fit from scratch")
    state = solver.warm_state({k: v for k, v in snapshot.resume_state().items() if k != "_elapsed"},
                              snapshot.lam, spec["model"]["regularizer"]["lambda"])
    return {**state, "_elapsed": 0.0}


class StateKeeper:
    """Run-time listener keeping the latest state callback, for :class:`Snapshot` (``keep_state=True``)."""

    def __init__(self):
        self.save = None
        self.iteration = 0

    @hookimpl
    def kopt_iteration(self, run, record):
        if record.state is not None:
            self.save, self.iteration = record.state, record.iteration

    def snapshot(self, solver, spec_data, trace, elapsed, status):
        return Snapshot(solver, self.iteration, _detach(self.save()), spec_data, trace, elapsed, status)
