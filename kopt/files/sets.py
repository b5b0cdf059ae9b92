"""Files kopt writes as a set: an array file (``.npz``) and the JSON manifest that vouches for it.

A model (``model.json`` + ``model.npz``) and a checkpoint (``checkpoint.json`` + ``checkpoint.npz``)
are each committed as one set, so that a crash (kill -9, power loss after the fsyncs) at any
point leaves a loadable set, the previous one or the new one:

1. finish or discard what an interrupted earlier commit left behind (``*.new``, see below);
2. write ``ARRAYS.new`` and ``MANIFEST.new``, fsync each, fsync the folder;
3. rename ``ARRAYS.new`` over ``ARRAYS``, then ``MANIFEST.new`` over ``MANIFEST``; fsync the folder.

Between the two renames the folder holds the new arrays and the old manifest.  A reader
(:func:`matching`) then takes the pending ``MANIFEST.new``, which is complete (fsynced before
the first rename) and names the new arrays' SHA-256: the new set rolls forward.  Before the
first rename the old set is untouched; after the second the new one is in place.

The manifest records the arrays' SHA-256 (``arrays_sha256``) and its own ``checksum``: the
SHA-256 of its canonical JSON without that field, so every field (an iteration number, the
spec, a timestamp) is covered; :func:`sealed` checks it.  The checksum detects damage and
edits, not forgery: anyone can recompute it (:func:`seal`).
"""
from __future__ import annotations

import hashlib
import json
import os

from .atomic import json_default, strict

PENDING = ".new"


def canonical(obj) -> bytes:
    """The bytes a checksum is taken of: JSON with sorted keys and no spaces."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), default=json_default).encode()


def seal(meta: dict) -> dict:
    """``meta`` as plain JSON values with ``checksum`` (SHA-256 of every other field) added."""
    plain = json.loads(canonical(strict({k: v for k, v in meta.items() if k != "checksum"})))
    plain["checksum"] = hashlib.sha256(canonical(plain)).hexdigest()
    return plain


def sealed(meta: dict) -> bool:
    """Whether ``meta`` carries a ``checksum`` that matches every other field."""
    body = {k: v for k, v in meta.items() if k != "checksum"}
    return isinstance(meta.get("checksum"), str) and hashlib.sha256(canonical(body)).hexdigest() == meta["checksum"]


def sha256(payload: bytes) -> str:
    return hashlib.sha256(payload).hexdigest()


def _write_durable(path, payload: bytes):
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o666)  # the umask applies
    try:
        view = memoryview(payload)
        while view:
            view = view[os.write(fd, view):]
        os.fsync(fd)
    finally:
        os.close(fd)


def _fsync_dir(directory):
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _read_json(path):
    try:
        with open(path, encoding="utf-8") as fh:
            value = json.load(fh)
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) else None


def _finish_pending(arrays_path, manifest_path, directory):
    """Complete a commit interrupted between its renames; remove what an earlier one left."""
    pending = _read_json(manifest_path + PENDING)
    if pending is not None and os.path.exists(arrays_path):
        with open(arrays_path, "rb") as fh:
            if pending.get("arrays_sha256") == sha256(fh.read()):
                os.replace(manifest_path + PENDING, manifest_path)
                _fsync_dir(directory)
    for path in (arrays_path + PENDING, manifest_path + PENDING):
        if os.path.lexists(path):
            os.unlink(path)


def commit(arrays_path, payload: bytes, manifest_path, meta: dict) -> dict:
    """Write ``payload`` and ``meta`` (with ``arrays_sha256`` and ``checksum`` added) as one set.

    Both paths must be in one folder (created if missing).  Returns the manifest as written.
    """
    arrays_path, manifest_path = os.fspath(arrays_path), os.fspath(manifest_path)
    directory = os.path.dirname(os.path.abspath(manifest_path))
    os.makedirs(directory, exist_ok=True)
    _finish_pending(arrays_path, manifest_path, directory)
    manifest = seal({**meta, "arrays_sha256": sha256(payload)})
    text = json.dumps(manifest, indent=2, allow_nan=False) + "\n"
    _write_durable(arrays_path + PENDING, payload)
    _write_durable(manifest_path + PENDING, text.encode())
    _fsync_dir(directory)
    os.replace(arrays_path + PENDING, arrays_path)
    os.replace(manifest_path + PENDING, manifest_path)
    _fsync_dir(directory)
    return manifest


def matching(manifest_path, meta: dict, payload: bytes):
    """The manifest that vouches for ``payload``: ``meta`` (read from ``manifest_path``), or the
    pending manifest of a commit interrupted between its renames; None when neither does."""
    digest = sha256(payload)
    if meta.get("arrays_sha256") == digest:
        return meta
    pending = _read_json(os.fspath(manifest_path) + PENDING)
    if pending is not None and pending.get("arrays_sha256") == digest and pending.get("format") == meta.get("format"):
        return pending
    return None
