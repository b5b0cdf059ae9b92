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
import fcntl
import json
import os
import tempfile
import threading

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
    """Hold an exclusive ``flock`` on ``fd`` (a temporary file or folder being written) until it is closed:
    a killed writer's lock goes with it, so :func:`abandoned` tells its leftovers from live work."""
    fcntl.flock(fd, fcntl.LOCK_EX)


def abandoned(path) -> bool:
    """Whether no live process holds ``path`` under :func:`lock` (the leftover of a killed writer)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except OSError:
        return False
    finally:
        os.close(fd)


def write_json(path, obj):
    with atomic_open(path, "w") as fh:
        json.dump(obj, fh, indent=2, default=json_default)
        fh.write("\n")


def json_default(o):
    """``json.dump``'s ``default``: NumPy scalars and arrays as Python numbers and lists."""
    import numpy as np

    if isinstance(o, np.generic):
        return o.item()
    if isinstance(o, np.ndarray):
        return o.tolist()
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")
