"""Room on disk for what the data layer writes: counted before a write, and a full disk met anyway said plainly.

Every write of the data layer -- a generated set (:mod:`kopt.data.generated`), the parsed-array cache
(:mod:`kopt.data.cache`), a file copied in by ``kopt data import`` or ``KOPT_DATA_MIRROR``
(:func:`kopt.data.store.store_copy`), a download (:mod:`kopt.data.download`) -- first counts every byte it will
write (training rows, test rows, labels and the metadata files: :data:`META_BYTES` for the small records) and
calls :func:`require`, which refuses the write when the folder's disk has less free space.  A disk that fills
anyway (another process wrote to it meanwhile, a quota, a file system whose free-space figure is optimistic)
raises ``OSError`` ENOSPC or EDQUOT mid-write; :func:`full_disk` turns it into the same
:class:`~kopt.errors.DataError` (exit status 2) naming the space needed and the folder.  The writer removes
what it had written before the error reaches the user: nothing partial is kept.
"""
from __future__ import annotations

import contextlib
import errno
import os
import shutil

from ..errors import DataError
from .progress import human_bytes

#: the bytes allowed for an entry's small files (meta.json, progress.json, .npy headers, a .verified record)
META_BYTES = 1 << 16

#: the write errors that mean "no room": a full disk, a used-up quota
NO_ROOM = tuple(e for e in (errno.ENOSPC, getattr(errno, "EDQUOT", None)) if e is not None)


def free_bytes(folder) -> int:
    """The bytes this process may still write on the disk holding ``folder`` (its nearest existing parent)."""
    path = os.path.abspath(os.fspath(folder))
    while not os.path.exists(path) and os.path.dirname(path) != path:
        path = os.path.dirname(path)
    return shutil.disk_usage(path).free


def _advice(hint: str) -> str:
    return "free space there, or set KOPT_DATA to a folder on a bigger disk" + (f", {hint}" if hint else "")


def require(folder, need: int, what: str, *, hint: str = ""):
    """Refuse (a :class:`~kopt.errors.DataError`, exit status 2) to write ``need`` bytes of ``what`` into
    ``folder`` when its disk has less free space; ``hint``: another way out (fewer rows, a smaller dtype)."""
    free = free_bytes(folder)
    if need > free:
        raise DataError(f"{what} needs {human_bytes(need)} in {folder}; {human_bytes(free)} are free there: "
                        f"{_advice(hint)}. Nothing was written")


def no_room(exc: BaseException) -> bool:
    """Whether ``exc`` is a full disk or a used-up quota."""
    return isinstance(exc, OSError) and exc.errno in NO_ROOM


def full_disk_error(folder, need, what: str, exc: OSError, *, hint: str = "") -> DataError:
    """The :class:`~kopt.errors.DataError` for ``exc`` (ENOSPC/EDQUOT) met while writing ``what`` into ``folder``
    (``need``: the bytes the write needed, or a callable giving them)."""
    need = need() if callable(need) else need
    why = "is full" if exc.errno == errno.ENOSPC else "is over your quota"
    return DataError(f"{what} needs {human_bytes(need)} in {folder}, and the disk holding it {why} "
                     f"({os.strerror(exc.errno)}; {human_bytes(free_bytes(folder))} free now): {_advice(hint)}. "
                     "Nothing partial was kept")


@contextlib.contextmanager
def full_disk(folder, need, what: str, *, hint: str = "", cleanup=None):
    """Run the write in the ``with`` block; ENOSPC/EDQUOT in it calls ``cleanup()`` (remove what was written),
    then raises :func:`full_disk_error`.  Other errors pass unchanged.  ``need``: the bytes, or a callable giving
    them (for a writer that counts them inside the block)."""
    try:
        yield
    except OSError as exc:
        if not no_room(exc):
            raise
        if cleanup is not None:
            with contextlib.suppress(OSError):
                cleanup()
        raise full_disk_error(folder, need, what, exc, hint=hint) from None
