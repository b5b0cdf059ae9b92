"""Where kopt keeps downloaded and parsed data, and the parsed-array cache.

A text file (CSV/TSV, LIBSVM, IDX) is parsed once; its arrays are saved as
``.npy`` under ``$KOPT_DATA/cache/<name>-<options>-<state>/`` and
memory-mapped (read-only) on later runs.  The key holds the source's real
path and the state of the file *before it was read* (``<state>``: size,
modification and change times, inode) and every parse option (``<options>``):
editing or replacing the file, or reading it differently, misses the cache.
The reader takes :func:`source_state` before the parse and again after it; when
the two differ the file changed while it was read, and the read is refused
(:func:`check_unchanged`) instead of being stored under either key.  An entry is
written to a temporary directory and renamed
into place, so a crash never leaves a half-written entry; stale entries of
the same file and options, and the temporary folders of killed writers, are
removed when a new entry is stored.  ``meta.json``
records each array file's SHA-256 and its own checksum (:mod:`kopt.files.sets`):
an entry whose arrays or record were altered is dropped with a one-line warning
and the file is parsed again.  Delete the ``cache`` folder at any time to
reclaim the space.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import tempfile
import warnings
from pathlib import Path

import numpy as np

from ..files import sets as fileset
from ..files.atomic import abandoned, follow_umask, lock

CACHE_FORMAT = "kopt-data-cache"
#: bump when a reader's output for the same options changes (2: checksums of every file; 3: keyed by the
#: source's state before the read; 4: class-name labels, the label column found by its header name)
CACHE_VERSION = 4
#: files parsing to fewer values (non-zeros for sparse data) are not cached:
#: they parse in milliseconds, and test suites would fill the cache with them
MIN_VALUES = 1 << 16


def default_data_dir() -> Path:
    """``$KOPT_DATA``, else the platform's user cache folder (``platformdirs``): ``$XDG_CACHE_HOME/kopt``
    or ``~/.cache/kopt`` (Linux and other POSIX), ``~/Library/Caches/kopt`` (macOS),
    ``%LOCALAPPDATA%\\kopt\\Cache`` (Windows)."""
    env = os.environ.get("KOPT_DATA")
    if env:
        return Path(env).expanduser()
    import platformdirs

    return Path(platformdirs.user_cache_dir("kopt", appauthor=False))


def cache_root() -> Path:
    """The parsed-array cache: ``default_data_dir() / "cache"``."""
    return default_data_dir() / "cache"


def _digest(obj) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True, default=str).encode()).hexdigest()


def source_state(paths) -> list:
    """What identifies the content of ``paths`` (the source and any companion files) without reading it:
    size, modification and change times (ns) and inode of each.  Taken before a parse and after it."""
    stats = [os.stat(os.path.realpath(p)) for p in paths]
    return [[s.st_size, s.st_mtime_ns, s.st_ctime_ns, s.st_ino, s.st_dev] for s in stats]


def check_unchanged(paths, before: list):
    """Raise a :class:`~kopt.errors.DataError` (exit status 2) when ``paths`` changed since ``before``
    (:func:`source_state`): rows read from a file that was being written or truncated are a mix of two
    files, and must be neither trained on nor cached."""
    from ..errors import DataError

    after = source_state(paths)
    for path, b, a in zip(paths, before, after):
        if a != b:
            what = f"its size went from {b[0]:,} to {a[0]:,} bytes" if a[0] != b[0] else "it was modified"
            raise DataError(f"{path}: the file changed while it was read ({what}); another program is writing "
                            "it. Nothing was trained on it or cached: run again once the file is complete")


def entry_dir(paths, options: dict, state: list) -> Path:
    """The cache directory for ``paths`` read with ``options`` while in ``state`` (:func:`source_state`,
    taken *before* the read: an entry holds what was read from that state, never from a later one)."""
    real = [os.path.realpath(p) for p in paths]
    ident = _digest({"v": CACHE_VERSION, "paths": real, "options": options})[:10]
    name = re.sub(r"[^A-Za-z0-9_.-]", "_", os.path.basename(real[0]))[:60]
    return cache_root() / f"{name}-{ident}-{_digest(state)[:12]}"


def load(paths, options: dict, state: list):
    """``(X, y, meta)`` memory-mapped from the cache entry of ``paths`` in ``state``, or None on a miss."""
    d = entry_dir(paths, options, state)
    info = d / "meta.json"
    if not info.is_file():
        return None
    try:
        with open(info, encoding="utf-8") as fh:
            meta = json.load(fh)
        if meta.get("format") != CACHE_FORMAT or not fileset.sealed(meta):
            raise ValueError("its record was altered")
        for name, digest in meta["sha256"].items():
            if _sha256_file(d / name) != digest:
                raise ValueError(f"{name} was altered")
        X = _load_X(d, meta)
        y = np.asarray(np.load(d / "y.npy", mmap_mode="r", allow_pickle=False)) if meta["has_y"] else None
    except (OSError, ValueError, KeyError) as exc:
        warnings.warn(f"ignoring a broken data cache entry {d} ({exc}); re-parsing", stacklevel=3)
        shutil.rmtree(d, ignore_errors=True)
        return None
    return X, y, dict(meta["meta"], cache=str(d), cached=True)


def _sha256_file(path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for buf in iter(lambda: fh.read(1 << 22), b""):
            h.update(buf)
    return h.hexdigest()


def _load_X(d, meta):
    if not meta["sparse"]:
        return np.asarray(np.load(d / "X.npy", mmap_mode="r", allow_pickle=False))  # a read-only view
    from scipy import sparse

    parts = [np.load(d / f"X_{k}.npy", mmap_mode="r", allow_pickle=False) for k in ("data", "indices", "indptr")]
    return sparse.csr_matrix(tuple(parts), shape=tuple(meta["shape"]))


def worth_caching(X) -> bool:
    """Whether parsed arrays are big enough to be cached (``MIN_VALUES``)."""
    return (X.nnz if hasattr(X, "tocsr") else X.size) >= MIN_VALUES


def entry_bytes(X, y) -> int:
    """The bytes a cache entry of ``X`` and ``y`` takes: every array (a CSR matrix's three) and the record."""
    from .space import META_BYTES

    if hasattr(X, "tocsr"):
        X = X.tocsr()
        arrays = sum(getattr(X, k).nbytes for k in ("data", "indices", "indptr"))
    else:
        arrays = np.asarray(X).nbytes
    return arrays + (0 if y is None else np.asarray(y).nbytes) + META_BYTES


def store(paths, options: dict, state: list, X, y, meta: dict):
    """Save arrays parsed from ``paths`` in ``state`` (:func:`source_state` before the read, checked
    unchanged after it); returns the entry directory, or None when it could not be written.

    The entry's bytes (:func:`entry_bytes`) are counted against the free space first; a disk without room for
    them, before or during the write (ENOSPC, EDQUOT), is a :class:`~kopt.errors.DataError` (exit status 2)
    naming the space and the folder, with nothing of the entry left behind.  Other write errors (a read-only
    or unwritable folder) warn and continue without the cache."""
    from . import space

    final = entry_dir(paths, options, state)
    root = final.parent
    need = entry_bytes(X, y)
    what = f"the parsed-array cache entry of {os.path.basename(paths[0])}"
    hint = "or set data.cache: false"
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        if space.no_room(exc):
            raise space.full_disk_error(root, need, what, exc, hint=hint) from None
        warnings.warn(f"cannot create the data cache in {root} ({exc}); continuing without it", stacklevel=3)
        return None
    space.require(root, need, what, hint=hint)
    try:
        tmp = Path(tempfile.mkdtemp(prefix=f".tmp-{final.name}-", dir=root))
        follow_umask(tmp, directory=True)  # mkdtemp makes it 0700
        held = os.open(tmp, os.O_RDONLY)
        lock(held)  # while it is written: _remove_stale removes only the folders of killed writers
    except OSError as exc:
        if space.no_room(exc):
            raise space.full_disk_error(root, need, what, exc, hint=hint) from None
        warnings.warn(f"cannot create the data cache in {root} ({exc}); continuing without it", stacklevel=3)
        return None
    try:
        sparse = hasattr(X, "tocsr")
        if sparse:
            X = X.tocsr()
            for k in ("data", "indices", "indptr"):
                np.save(tmp / f"X_{k}.npy", getattr(X, k))
        else:
            np.save(tmp / "X.npy", np.ascontiguousarray(X))
        if y is not None:
            np.save(tmp / "y.npy", y)
        record = {"format": CACHE_FORMAT, "version": CACHE_VERSION, "source": [os.path.realpath(p) for p in paths],
                  "source_state": state, "options": options, "sparse": sparse, "shape": list(X.shape), "has_y": y is not None,
                  "meta": meta, "sha256": {f.name: _sha256_file(f) for f in sorted(tmp.glob("*.npy"))}}
        with open(tmp / "meta.json", "w", encoding="utf-8") as fh:
            json.dump(fileset.seal(json.loads(json.dumps(record, default=str))), fh, indent=1)
        os.replace(tmp, final) if not final.exists() else shutil.rmtree(tmp, ignore_errors=True)
    except OSError as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        if space.no_room(exc):
            raise space.full_disk_error(root, need, what, exc, hint=hint) from None
        warnings.warn(f"cannot write the data cache entry {final} ({exc}); continuing without it", stacklevel=3)
        return None
    finally:
        os.close(held)
    _remove_stale(final)
    return final


def _remove_stale(final: Path):
    """Drop older entries of the same source and options (the file changed since), entries whose
    source file is gone, and the temporary folders of writers that were killed."""
    prefix = final.name.rsplit("-", 1)[0] + "-"
    for other in final.parent.iterdir():
        if other == final or not other.is_dir():
            continue
        if other.name.startswith(".tmp-"):
            if abandoned(other):
                shutil.rmtree(other, ignore_errors=True)
        elif other.name.startswith(prefix) or not _sources_exist(other):
            shutil.rmtree(other, ignore_errors=True)


def _sources_exist(entry: Path) -> bool:
    try:
        with open(entry / "meta.json", encoding="utf-8") as fh:
            return all(os.path.exists(p) for p in json.load(fh)["source"])
    except (OSError, ValueError, KeyError, TypeError):
        return True  # not ours to judge (or being written): leave it
