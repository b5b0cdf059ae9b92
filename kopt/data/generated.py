"""Generated data sets at scale: written once in chunks into the data folder, then memory-mapped.

A generator preset (the deformed digits, the HIGGS-shaped rows) describes its rows by a
:class:`Layout` -- what fixes their content (``key``), how many training rows, their width and
dtype -- and gives two functions: ``make_chunk(k, lo, hi)``, the training rows ``lo:hi`` of chunk
``k`` (a pure function of the key and ``k``: chunk ``k`` is the same whichever run makes it), and
``make_test()``, the test rows.  :func:`materialize` returns the arrays, memory-mapped read-only
from ``$KOPT_DATA/generated/<name>-<key digest>-<rows>/``:

- the rows are written a chunk at a time into a preallocated ``.npy`` file, never all in memory;
  a progress line counts bytes and rows (on a terminal, or every 10 s in a log);
- an entry is built in a ``.part-`` folder and renamed into place only once every chunk is on disk
  and its sealed ``meta.json`` written: a reader never sees a torn entry;
- after each chunk the file is synced and ``progress.json`` (atomically replaced) records the
  chunks done, so a run that is killed or interrupted resumes at its first missing chunk; the
  result is byte-for-byte the uninterrupted one (chunks are pure functions of the key);
- an entry with more rows of the same key serves a request for fewer (its first rows: chunks do
  not depend on the row count), so generating the largest size first serves the smaller ones;
- every byte it will write -- training rows, test rows, labels, metadata -- is counted against the disk's
  free space before the first is written (:func:`kopt.data.space.require`); a disk that fills anyway
  (ENOSPC, EDQUOT) removes the ``.part-`` folder and is a DataError naming the space needed and the folder;
- one writer per entry (a lock file); a second process waits for it, then reads its entry;
- a complete entry is checked cheaply when loaded (the sealed record, the array shapes and dtypes);
  one found broken is removed with a warning and generated again.  Delete ``generated/`` at any
  time to reclaim the space.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..errors import DataError
from ..files import sets as fileset
from ..files.atomic import write_json
from . import space
from .cache import default_data_dir
from .progress import ByteProgress
from .space import META_BYTES

FORMAT = "kopt-generated"
#: bump when the layout of an entry changes
VERSION = 1


@dataclass(frozen=True)
class Layout:
    """What a generated set is: ``name`` (the preset), ``key`` (every option that fixes the rows'
    content, the generator's version included -- not the row count), ``rows`` training rows of
    ``n_features`` columns stored as ``dtype``, made ``chunk_rows`` at a time."""

    name: str
    key: dict
    rows: int
    n_features: int
    dtype: str
    chunk_rows: int
    label_dtype: str = "float64"
    info: dict = field(default_factory=dict)

    @property
    def digest(self) -> str:
        body = {"format": FORMAT, "version": VERSION, "key": self.key, "n_features": self.n_features,
                "dtype": self.dtype, "chunk_rows": self.chunk_rows, "label_dtype": self.label_dtype}
        return hashlib.sha256(json.dumps(body, sort_keys=True, default=str).encode()).hexdigest()[:12]

    @property
    def chunks(self) -> int:
        return -(-self.rows // self.chunk_rows)

    def train_bytes(self) -> int:
        return self.rows * (self.n_features * np.dtype(self.dtype).itemsize + np.dtype(self.label_dtype).itemsize)


def generated_root() -> Path:
    """``$KOPT_DATA/generated``."""
    return default_data_dir() / "generated"


def entry_path(layout: Layout) -> Path:
    return generated_root() / f"{layout.name}-{layout.digest}-{layout.rows}"


def _partial_path(layout: Layout) -> Path:
    return generated_root() / f".part-{layout.name}-{layout.digest}-{layout.rows}"


def find_entry(layout: Layout):
    """The complete entry that serves ``layout``: its own, or the smallest one of the same key holding
    more rows; None when there is none."""
    root = generated_root()
    if not root.is_dir():
        return None
    prefix = f"{layout.name}-{layout.digest}-"
    sizes = []
    for d in root.iterdir():
        tail = d.name[len(prefix):] if d.name.startswith(prefix) else ""
        if tail.isdigit() and int(tail) >= layout.rows and (d / "meta.json").is_file():
            sizes.append((int(tail), d))
    return min(sizes)[1] if sizes else None


def _open(entry: Path, layout: Layout):
    """``(X, y, X_test, y_test, meta)`` of a complete entry, memory-mapped read-only; ValueError when broken."""
    with open(entry / "meta.json", encoding="utf-8") as fh:
        meta = json.load(fh)
    if meta.get("format") != FORMAT or meta.get("version") != VERSION or not fileset.sealed(meta):
        raise ValueError("its record was altered or is of another version")
    if meta.get("digest") != layout.digest or meta["rows"] < layout.rows:
        raise ValueError("its record does not match its name")
    arrays = {}
    for name in ("X", "y", "X_test", "y_test"):
        arr = np.load(entry / f"{name}.npy", mmap_mode="r", allow_pickle=False)
        want = meta["shapes"][name]
        if list(arr.shape) != want or str(arr.dtype) != meta["dtypes"][name]:
            raise ValueError(f"{name}.npy holds {arr.dtype} {list(arr.shape)}, its record says "
                             f"{meta['dtypes'][name]} {want}")
        arrays[name] = arr
    n = layout.rows
    return arrays["X"][:n], arrays["y"][:n], arrays["X_test"], arrays["y_test"], meta


def materialize(layout: Layout, make_chunk, make_test, *, progress=None):
    """``(X, y, X_test, y_test, info)`` of ``layout``: read from its entry, or generated into it first.

    ``make_chunk(k, lo, hi)`` returns the training rows ``lo:hi`` (chunk ``k``) as ``(X, y)``;
    ``make_test()`` returns ``(X_test, y_test)``.  ``progress``: draw the progress line (None: on a
    terminal, or as the command line decides).  ``info`` says where the arrays are, whether they were
    generated now, and at how many rows per second.
    """
    import filelock

    for attempt in range(2):
        entry = find_entry(layout)
        if entry is not None:
            try:
                X, y, Xt, yt, meta = _open(entry, layout)
            except (OSError, ValueError, KeyError, TypeError) as exc:
                warnings.warn(f"ignoring a broken generated data set {entry} ({exc}); generating it again",
                              stacklevel=3)
                shutil.rmtree(entry, ignore_errors=True)
                continue
            return X, y, Xt, yt, {"entry": str(entry), "generated_now": False, "rows_stored": meta["rows"],
                                  "rows_per_s": meta.get("rows_per_s")}
        break
    root = generated_root()
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise DataError(f"cannot create {root} for the generated data ({exc}); set KOPT_DATA to a writable "
                        "folder") from None
    lock = filelock.FileLock(str(root / f".{layout.name}-{layout.digest}-{layout.rows}.lock"))
    try:
        lock.acquire(timeout=0)
    except filelock.Timeout:
        print(f"kopt: another process is generating {layout.name} ({layout.rows:,} rows); waiting for it",
              file=sys.stderr, flush=True)
        lock.acquire()
    try:
        entry = find_entry(layout)
        if entry is None:
            stats = _generate(layout, make_chunk, make_test, progress)
            entry = entry_path(layout)
        else:
            stats = None
        X, y, Xt, yt, meta = _open(entry, layout)
    finally:
        lock.release()
    info = {"entry": str(entry), "generated_now": stats is not None, "rows_stored": meta["rows"],
            "rows_per_s": meta.get("rows_per_s")}
    if stats:
        info.update(stats)
    return X, y, Xt, yt, info


def _npy_file(path: Path, shape, dtype):
    """Create ``path`` as a ``.npy`` of ``shape`` (zero-filled, sparse on disk); the byte offset of its data."""
    arr = np.lib.format.open_memmap(path, mode="w+", dtype=np.dtype(dtype), shape=tuple(shape))
    offset = arr.offset
    del arr
    return offset


def _space_hint(layout: Layout) -> str:
    return "or ask for fewer rows" + (" (or options: {dtype: uint8}, 4x smaller)"
                                      if layout.dtype == "float32" and layout.n_features > 100 else "")


def _what(layout: Layout) -> str:
    return f"{layout.name} with {layout.rows:,} rows"


def _generate(layout: Layout, make_chunk, make_test, progress):
    """:func:`_write`, counting every byte it will write before the first one (:func:`kopt.data.space.require`);
    a disk that fills anyway (ENOSPC, EDQUOT) removes the ``.part-`` folder and is a
    :class:`~kopt.errors.DataError` naming the space needed and the folder (exit status 2)."""
    part = _partial_path(layout)
    need = [layout.train_bytes() + META_BYTES]  # set exactly by _write once it knows what is left to write
    with space.full_disk(part.parent, lambda: need[0], _what(layout), hint=_space_hint(layout),
                         cleanup=lambda: shutil.rmtree(part)):
        return _write(layout, make_chunk, make_test, progress, need)


def _write(layout: Layout, make_chunk, make_test, progress, need):
    """Write every missing chunk of ``layout`` into its ``.part-`` folder, then rename it into place."""
    part = _partial_path(layout)
    record = part / "progress.json"
    done = 0
    state = None
    if record.is_file():
        try:
            with open(record, encoding="utf-8") as fh:
                state = json.load(fh)
        except (OSError, ValueError):
            state = None
    if not (state and state.get("digest") == layout.digest and state.get("rows") == layout.rows
            and all((part / f"{n}.npy").is_file() for n in ("X", "y", "X_test", "y_test"))):
        shutil.rmtree(part, ignore_errors=True)
        state = None
    if state is None:
        # the test rows are made first (in memory: they are few) so the check counts them with the training rows
        Xt, yt = make_test()
        Xt = np.ascontiguousarray(Xt, dtype=layout.dtype)
        yt = np.ascontiguousarray(yt, dtype=layout.label_dtype)
        need[0] = layout.train_bytes() + Xt.nbytes + yt.nbytes + META_BYTES
        space.require(part.parent, need[0], _what(layout), hint=_space_hint(layout))
        part.mkdir(parents=True)
        np.save(part / "X_test.npy", Xt)
        np.save(part / "y_test.npy", yt)
        offsets = {"X": _npy_file(part / "X.npy", (layout.rows, layout.n_features), layout.dtype),
                   "y": _npy_file(part / "y.npy", (layout.rows,), layout.label_dtype)}
        state = {"digest": layout.digest, "rows": layout.rows, "offsets": offsets, "done": 0, "seconds": 0.0}
        write_json(record, state)
    else:
        done = int(state["done"])
        written = min(done * layout.chunk_rows, layout.rows) * layout.train_bytes() // layout.rows
        need[0] = layout.train_bytes() - written + META_BYTES  # the test rows are on disk already
        space.require(part.parent, need[0], _what(layout), hint=_space_hint(layout))
    row_bytes = {"X": layout.n_features * np.dtype(layout.dtype).itemsize, "y": np.dtype(layout.label_dtype).itemsize}
    total = layout.train_bytes()
    first = min(done * layout.chunk_rows, layout.rows)
    label = f"generating {layout.name} ({layout.rows:,} rows)"
    t0 = time.perf_counter()
    with ByteProgress(total, label, enabled=progress) as bar, \
            open(part / "X.npy", "r+b") as fx, open(part / "y.npy", "r+b") as fy:
        bar.update(first * (row_bytes["X"] + row_bytes["y"]), first)
        for k in range(done, layout.chunks):
            lo, hi = k * layout.chunk_rows, min(layout.rows, (k + 1) * layout.chunk_rows)
            Xc, yc = make_chunk(k, lo, hi)
            for fh, name, arr, dtype in ((fx, "X", Xc, layout.dtype), (fy, "y", yc, layout.label_dtype)):
                arr = np.ascontiguousarray(arr, dtype=dtype)
                if arr.shape[0] != hi - lo:
                    raise RuntimeError(f"{layout.name}: chunk {k} has {arr.shape[0]} rows, expected {hi - lo}")
                fh.seek(state["offsets"][name] + lo * row_bytes[name])
                fh.write(arr.tobytes())
                fh.flush()
                os.fsync(fh.fileno())
            state["done"] = k + 1
            state["seconds"] = state["seconds"] + (time.perf_counter() - t0)
            t0 = time.perf_counter()
            write_json(record, state)
            bar.update(hi * (row_bytes["X"] + row_bytes["y"]), hi)
    made = layout.rows - first
    rate = layout.rows / state["seconds"] if state["seconds"] > 0 else None
    shapes = {"X": [layout.rows, layout.n_features], "y": [layout.rows]}
    dtypes = {"X": layout.dtype, "y": layout.label_dtype}
    for name in ("X_test", "y_test"):
        arr = np.load(part / f"{name}.npy", mmap_mode="r", allow_pickle=False)
        shapes[name], dtypes[name] = list(arr.shape), str(arr.dtype)
    meta = {"format": FORMAT, "version": VERSION, "name": layout.name, "digest": layout.digest, "key": layout.key,
            "rows": layout.rows, "n_features": layout.n_features, "chunk_rows": layout.chunk_rows,
            "shapes": shapes, "dtypes": dtypes, "seconds": round(state["seconds"], 3),
            "rows_per_s": None if rate is None else round(rate, 1), "info": layout.info,
            "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    write_json(part / "meta.json", fileset.seal(meta))
    (part / "progress.json").unlink()
    final = entry_path(layout)
    if final.exists():
        shutil.rmtree(final, ignore_errors=True)
    os.replace(part, final)
    fileset._fsync_dir(final.parent)  # the rename itself survives a power cut
    return {"rows_made_now": made, "resumed_at_row": first or None}
