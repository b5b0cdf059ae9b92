"""Atomic file writes: a temporary file in the same directory, fsync, then rename.

``tempfile.mkstemp`` creates files readable by their owner only (0600) and
``mkdtemp`` folders 0700, whatever the umask; a model, report or cached data
file renamed from one would stay private.  :func:`follow_umask` gives such a
file or folder the mode an ordinary ``open``/``mkdir`` would have given it
(0666/0777 minus the process umask), so collaborators read what the user's
umask lets them read.
"""
from __future__ import annotations

import contextlib
import errno
import json
import math
import os
import tempfile
import threading

import filelock

_UMASK_LOCK = threading.Lock()


def current_umask() -> int:
    """The process umask (read by setting and restoring it, under a lock)."""
    with _UMASK_LOCK:
        mask = os.umask(0o022)
        os.umask(mask)
    return mask


def follow_umask(target, *, directory=False):
    """chmod ``target`` (a path or an open file descriptor) to 0666 (0777 for a folder) minus the umask."""
    mode = (0o777 if directory else 0o666) & ~current_umask()
    os.chmod(target, mode)


@contextlib.contextmanager
def atomic_open(path, mode="wb"):
    """Open a temporary sibling of ``path``; on success it replaces ``path`` atomically.

    The file gets the mode a plain ``open(path, "w")`` would give it (the umask applies).
    """
    path = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", suffix=".tmp", dir=directory)
    try:
        follow_umask(fd)
        with os.fdopen(fd, mode) as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def lock(fd):
    """Hold an exclusive lock on ``fd`` (a temporary file or folder being written) until it is closed:
    a killed writer's lock goes with it, so :func:`abandoned` tells its leftovers from live work.
    ``filelock``'s primitive: ``flock`` on POSIX, ``LockFileEx`` on Windows."""
    filelock.lock_descriptor(fd)


def abandoned(path) -> bool:
    """Whether no live process holds ``path`` under :func:`lock` (the leftover of a killed writer)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return False
    try:
        return filelock.lock_descriptor(fd, blocking=False)
    except OSError:
        return False
    finally:
        os.close(fd)


def write_json(path, obj):
    """Write ``obj`` as strict JSON (a number that is not finite becomes ``null``: see :func:`strict`)."""
    with atomic_open(path, "w") as fh:
        json.dump(strict(obj), fh, indent=2, allow_nan=False)
        fh.write("\n")


def dumps(obj, **kwargs) -> str:
    """``json.dumps`` of :func:`strict` ``(obj)``: every JSON text kopt writes parses in jq, JavaScript, Go."""
    return json.dumps(strict(obj), allow_nan=False, **kwargs)


def strict(obj):
    """``obj`` for strict JSON: NumPy scalars and arrays as Python numbers and lists, and every float that is
    not finite (NaN, inf) as None.  Callers that know *why* a value is undefined (a metric on a test split
    of one class) say so first (:func:`kopt.numerics.metrics.defined`); this is the last guard."""
    if isinstance(obj, dict):
        return {k: strict(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [strict(v) for v in obj]
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, (str, int, bool, type(None))):
        return obj
    return strict(json_default(obj))


#: what each write error means for the person who has to fix it ({where}: the folder written)
_WRITE_ERRORS = {
    errno.ENOSPC: "the disk holding {where} is full; free space there or point the output elsewhere",
    getattr(errno, "EDQUOT", -1): "your disk quota on the disk holding {where} is used up; free space or point the output elsewhere",
    errno.EFBIG: "a file in {where} would pass the file-size limit of this process (ulimit -f); raise the limit "
                 "or point the output elsewhere",
    errno.EROFS: "{where} is on a read-only file system; point the output at a writable folder",
}


@contextlib.contextmanager
def writing(where, what="the output"):
    """Turn a full disk or quota, a file-size limit or a read-only file system while writing ``what`` into
    ``where`` into an :class:`~kopt.errors.OutputError` (exit status 2) that says what to do.  Files kopt
    writes are committed by rename, so the previous ones are still in place when this is raised."""
    try:
        yield
    except OSError as exc:
        why = _WRITE_ERRORS.get(exc.errno)
        if why is None:
            raise
        from ..errors import OutputError

        raise OutputError(f"cannot write {what}: {why.format(where=where)} ({os.strerror(exc.errno)}); "
                          f"files written before in {where} are unchanged") from None


def json_default(o):
    """``json.dump``'s ``default``: NumPy scalars and arrays as Python numbers and lists."""
    import numpy as np

    if isinstance(o, np.generic):
        return o.item()
    if isinstance(o, np.ndarray):
        return o.tolist()
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")
