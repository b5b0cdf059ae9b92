"""Decompressing, newline-aligned block streams of text files.

Compression is recognised by the file's magic bytes (gzip, xz, bzip2), falling
back to the extension, so a mis-named file still reads.  :func:`iter_blocks`
decompresses in a background thread (zlib, lzma and bz2 release the GIL) while
the caller parses the previous block, and yields blocks that end on a line
boundary together with the file line number of their first line.
"""
from __future__ import annotations

import bz2
import gzip
import lzma
import os
import queue
import stat
import threading
import zlib
from dataclasses import dataclass

from ..errors import DataError

BLOCK_SIZE = 4 << 20

_MAGIC = ((b"\x1f\x8b", "gzip"), (b"\xfd7zXZ\x00", "xz"), (b"BZh", "bzip2"))
_EXT = {".gz": "gzip", ".xz": "xz", ".bz2": "bzip2"}
COMPRESSED_SUFFIXES = tuple(_EXT)


def check_exists(path):
    """Raise a DataError naming ``path`` unless it is a regular file (a pipe or a device such as
    ``/dev/zero`` would block or never end)."""
    path = os.fspath(path)
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        raise DataError(f"{path}: file not found") from None
    except OSError as exc:
        raise DataError(f"{path}: cannot read: {exc.strerror or exc}") from None
    if stat.S_ISDIR(mode):
        raise DataError(f"{path}: is a directory, not a data file")
    if not stat.S_ISREG(mode):
        raise DataError(f"{path}: not a regular file (a pipe, socket or device); kopt reads data from files")


def open_raw(path):
    """``open(path, "rb")`` of a checked regular file; OSError (permission denied...) becomes a DataError."""
    check_exists(path)
    try:
        return open(path, "rb")
    except OSError as exc:
        raise DataError(f"{path}: cannot read: {exc.strerror or exc}") from None


def compression_of(path) -> str | None:
    """``"gzip"``, ``"xz"``, ``"bzip2"`` or ``None`` (from the magic bytes, else the extension)."""
    with open_raw(path) as fh:
        head = fh.read(6)
    for magic, name in _MAGIC:
        if head.startswith(magic):
            return name
    return None


def strip_compression_suffix(name: str) -> str:
    """``"a.csv.gz"`` -> ``"a.csv"``."""
    low = name.lower()
    for ext in COMPRESSED_SUFFIXES:
        if low.endswith(ext):
            return name[: -len(ext)]
    return name


def open_binary(path):
    """``(raw, stream)``: the raw file (for progress, via ``raw.tell()``) and a
    binary stream of the decompressed bytes.  Close ``stream`` then ``raw``."""
    comp = compression_of(path)
    raw = open_raw(path)
    try:
        if comp == "gzip":
            stream = gzip.GzipFile(fileobj=raw, mode="rb")
        elif comp == "xz":
            stream = lzma.LZMAFile(raw, mode="rb")
        elif comp == "bzip2":
            stream = bz2.BZ2File(raw, mode="rb")
        else:
            stream = raw
    except BaseException:
        raw.close()
        raise
    return raw, stream


def read_head(path, nbytes=1 << 16) -> bytes:
    """The first ``nbytes`` decompressed bytes of a file."""
    raw, stream = open_binary(path)
    try:
        return _read_checked(stream, nbytes, path)
    finally:
        stream.close()
        raw.close()


def _read_checked(stream, nbytes, path):
    try:
        return stream.read(nbytes)
    except (OSError, EOFError, lzma.LZMAError, zlib.error) as exc:
        raise DataError(f"{path}: cannot decompress: {exc} (is the file truncated or corrupt?)") from None


@dataclass
class Block:
    """A run of whole lines: ``data`` bytes, the 1-based file line number of
    its first line, and how many raw (compressed) bytes were read so far."""

    data: bytes
    first_line: int
    raw_pos: int


_END = object()


def _produce(path, raw, stream, out, stop, block_size):
    carry = b""
    line = 1
    try:
        while not stop.is_set():
            chunk = _read_checked(stream, block_size, path)
            if not chunk:
                break
            buf = carry + chunk if carry else chunk
            cut = buf.rfind(b"\n") + 1
            if cut == 0:
                carry = buf
                continue
            block = Block(buf[:cut], line, raw.tell())
            line += block.data.count(b"\n")
            carry = buf[cut:]
            _put(out, block, stop)
        if carry and not stop.is_set():
            _put(out, Block(carry, line, raw.tell()), stop)
        _put(out, _END, stop)
    except BaseException as exc:  # handed to the consumer, raised there
        _put(out, exc, stop)


def _put(out, item, stop):
    while not stop.is_set():
        try:
            out.put(item, timeout=0.1)
            return
        except queue.Full:
            continue


def iter_blocks(path, block_size=BLOCK_SIZE, prefetch=2):
    """Yield :class:`Block` s of whole lines of ``path`` (decompressed).

    A background thread reads and decompresses up to ``prefetch`` blocks
    ahead.  Closing the generator early (``break``) stops the thread.
    """
    raw, stream = open_binary(path)
    out = queue.Queue(maxsize=prefetch)
    stop = threading.Event()
    worker = threading.Thread(target=_produce, args=(path, raw, stream, out, stop, block_size), daemon=True)
    worker.start()
    try:
        while True:
            item = out.get()
            if item is _END:
                return
            if isinstance(item, BaseException):
                raise item
            yield item
    finally:
        stop.set()
        worker.join()
        stream.close()
        raw.close()


def file_size(path) -> int:
    return os.stat(path).st_size
