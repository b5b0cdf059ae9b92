"""The output folder of a run: one run at a time, and no other spec's model overwritten without a word.

:func:`claimed` holds ``OUTPUT_DIR/.kopt.lock`` (``filelock``: ``flock`` on POSIX, ``LockFileEx`` on
Windows; a killed run's lock goes with its process) from before the data are read until the model and
report are written.  A second run into the same folder gets exit status 2 naming the first one's PID.
:func:`check_overwrite` refuses, also before any data is read, to replace a model that another spec
trained (the spec without ``name`` and ``output`` differs: the same keys :func:`kopt.models.model.content_hash`
covers), unless ``output.overwrite: true`` (``kopt solve --force``); the same spec run again overwrites.
"""
from __future__ import annotations

import contextlib
import json
import os
import socket

import filelock

from ..files.atomic import writing
from .checkpoint import changed_keys, describe_changes

LOCK = ".kopt.lock"


def _mark(fd):
    """Write who holds the lock into the lock file (read by the run that is refused)."""
    os.ftruncate(fd, 0)
    os.write(fd, f"{os.getpid()} {socket.gethostname()}\n".encode())


def _holder(lock_path) -> str:
    try:
        with open(lock_path, encoding="utf-8") as fh:
            pid, _, host = fh.read().strip().partition(" ")
    except OSError:
        return "another process"
    return f"PID {pid}" + (f" on {host}" if host and host != socket.gethostname() else "") if pid else "another process"


@contextlib.contextmanager
def claimed(spec):
    """Hold the lock of ``spec``'s ``output.dir`` (created if missing) for the block."""
    out = spec["output"]["dir"]
    path = os.path.join(out, LOCK)
    created = not os.path.isdir(out)
    with writing(out, "the output folder's lock"):
        os.makedirs(out, exist_ok=True)
        lock = filelock.FileLock(path, thread_local=False, on_acquired=_mark)
        try:
            lock.acquire(timeout=0)
        except filelock.Timeout:
            raise spec.error(("output", "dir"), f"{out} is in use by another kopt run ({_holder(path)}), which "
                                                "writes its model there; wait for it to end or point output.dir "
                                                "(--out) at another folder") from None
    try:
        yield
    finally:
        lock.release()
        if created and os.listdir(out) == [LOCK]:  # a run that failed before writing: leave no trace
            with contextlib.suppress(OSError):
                os.unlink(path)
                os.rmdir(out)


def _shaping(spec_data: dict) -> dict:
    return {k: v for k, v in spec_data.items() if k not in ("name", "output")}


def check_overwrite(spec, ignore=()):
    """Raise a SpecError at ``output.dir`` when it holds the model of another spec and ``output.overwrite``
    is false.  ``ignore``: key paths not compared (``lambda: auto`` does not know its λ yet)."""
    if spec["output"].get("overwrite") or not spec["output"].get("model", True):
        return
    path = os.path.join(spec["output"]["dir"], "model.json")
    try:
        with open(path, encoding="utf-8") as fh:
            theirs = json.load(fh)["spec"]
        changes = changed_keys(_shaping(theirs), _shaping(spec.data))
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return  # no model there (or not one kopt can read): nothing of value to keep
    changes = [c for c in changes if c[0] not in ignore]
    if changes:
        raise spec.error(("output", "dir"), f"{path} is the model of another spec ({describe_changes(changes)}); "
                                            "kopt would overwrite it: point output.dir (--out) elsewhere, or "
                                            "replace it with --force (output.overwrite: true)")
