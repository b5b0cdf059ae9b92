"""Checkpoint files: ``checkpoint.npz`` (arrays) + ``checkpoint.json`` (scalars, trace)."""
from __future__ import annotations

import hashlib
import io
import json
import os

import numpy as np

from .backend import to_numpy
from .errors import CheckpointError
from .fileio import atomic_open, write_json

FORMAT = "kopt-checkpoint"


def fingerprint(spec_data: dict) -> str:
    """Hash of everything in a resolved spec that shapes the trajectory (``output`` excluded)."""
    core = {k: v for k, v in spec_data.items() if k != "output"}
    return hashlib.sha256(json.dumps(core, sort_keys=True, default=str).encode()).hexdigest()


def paths(out_dir):
    return os.path.join(out_dir, "checkpoint.json"), os.path.join(out_dir, "checkpoint.npz")


def write(out_dir, *, iteration, state: dict, spec_data, solver, trace, elapsed):
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
    payload = buf.getvalue()
    with atomic_open(npz_path, "wb") as fh:
        fh.write(payload)
    write_json(json_path, {
        "format": FORMAT,
        "iteration": int(iteration),
        "solver": solver,
        "spec_fingerprint": fingerprint(spec_data),
        "arrays_sha256": hashlib.sha256(payload).hexdigest(),
        "scalars": scalars,
        "elapsed": elapsed,
        "trace": trace,
    })


def read(out_dir, spec_data, solver):
    """``(state, meta)`` of the checkpoint in ``out_dir``; state includes ``_elapsed``."""
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
    if meta.get("format") != FORMAT:
        raise CheckpointError(f"{json_path}: not a kopt checkpoint")
    if hashlib.sha256(payload).hexdigest() != meta.get("arrays_sha256"):
        raise CheckpointError(f"{npz_path}: checksum mismatch (corrupt or from another run)")
    if meta.get("solver") != solver or meta.get("spec_fingerprint") != fingerprint(spec_data):
        raise CheckpointError(
            f"{json_path}: the checkpoint was written for a different spec or solver; "
            "resume with the spec that started the run, or delete the checkpoint to start over"
        )
    with np.load(io.BytesIO(payload), allow_pickle=False) as z:
        state = {k: z[k] for k in z.files}
    state.update(meta["scalars"])
    state["_elapsed"] = meta.get("elapsed", 0.0)
    return state, meta

