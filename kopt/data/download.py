"""Downloading a preset's file: progress bar, atomic rename, size and SHA-256 checks.

The bytes go to a temporary file next to the destination (``.NAME.XXXX.part``)
while their SHA-256 is computed; the file is renamed into place only when the
transfer is complete (the server's Content-Length and the declared size both
match) and the checksum matches.  Any failure -- a dropped connection, a
truncated body, a checksum mismatch, Ctrl-C -- deletes the temporary file, so
the cache never holds a partial or wrong file.  Without network the error
says which URL to download and where to put the file.
"""
from __future__ import annotations

import hashlib
import http.client
import os
import shutil
import socket
import tempfile
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import DataError
from .progress import ByteProgress, _human

CHUNK = 1 << 20


@dataclass(frozen=True)
class Remote:
    """A downloadable file: where it lives and what it must be.

    ``sha256`` and ``size`` are checked after every download (either may be
    None to skip that check); ``mirrors`` are tried in order when ``url``
    cannot be reached; ``provenance`` says where the checksum comes from.
    """

    url: str
    filename: str
    sha256: str | None = None
    size: int | None = None
    mirrors: tuple = field(default_factory=tuple)
    provenance: str = ""

    @property
    def urls(self):
        return (self.url, *self.mirrors)


class _Unreachable(Exception):
    """The URL could not be reached at all (no byte was received): try the next one."""


def how_to_get(remote: Remote, dest) -> str:
    """The manual instructions of an offline error."""
    facts = []
    if remote.size:
        facts.append(_human(remote.size))
    if remote.sha256:
        facts.append(f"sha256 {remote.sha256}")
    extra = f" ({', '.join(facts)})" if facts else ""
    return (f"download {remote.url}{extra} yourself and put it at {dest}, or point data.train at a copy "
            "you already have")


def fetch(remote: Remote, dest=None, *, progress=None, timeout=60.0) -> Path:
    """Download ``remote`` to ``dest`` (default ``$KOPT_DATA/<filename>``) and verify it.

    Returns the destination path.  Raises DataError on a failed or corrupt
    transfer (nothing is left behind) and when no URL can be reached (the
    message says what to download and where to put it).
    """
    from .cache import default_data_dir

    dest = Path(dest) if dest is not None else default_data_dir() / remote.filename
    try:
        dest.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise DataError(f"cannot create the data directory {dest.parent}: {exc}") from None
    if remote.size:
        free = shutil.disk_usage(dest.parent).free
        if free < remote.size:
            raise DataError(f"{dest.parent}: {_human(free)} free, {remote.filename} needs {_human(remote.size)}; "
                            "set KOPT_DATA to a roomier folder")
    reasons = []
    for url in remote.urls:
        try:
            _download(url, dest, remote, progress, timeout)
            return dest
        except _Unreachable as exc:
            reasons.append(f"{url}: {exc}")
    raise DataError(f"cannot download {remote.filename} ({'; '.join(reasons)}); " + how_to_get(remote, dest))


def _open(url, timeout):
    req = urllib.request.Request(url, headers={"User-Agent": "kopt-data-fetch"})
    try:
        return urllib.request.urlopen(req, timeout=timeout)
    except urllib.error.HTTPError as exc:
        raise _Unreachable(f"HTTP {exc.code} {exc.reason}") from None
    except (urllib.error.URLError, socket.timeout, OSError, http.client.HTTPException) as exc:
        reason = getattr(exc, "reason", exc)
        raise _Unreachable(str(reason) or type(exc).__name__) from None


def _download(url, dest: Path, remote: Remote, progress, timeout):
    resp = _open(url, timeout)
    fd, tmp = tempfile.mkstemp(prefix=f".{dest.name}.", suffix=".part", dir=dest.parent)
    try:
        with resp, os.fdopen(fd, "wb") as out:
            length = resp.headers.get("Content-Length")
            length = int(length) if length and length.isdigit() else None
            digest, got = _copy(resp, out, length or remote.size, dest.name, progress, url)
            out.flush()
            os.fsync(out.fileno())
        _verify(url, remote, length, got, digest)
        os.replace(tmp, dest)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def _copy(resp, out, total, label, progress, url):
    h = hashlib.sha256()
    got = 0
    with ByteProgress(total, label, enabled=progress) as bar:
        while True:
            try:
                buf = resp.read(CHUNK)
            except http.client.IncompleteRead as exc:
                got += len(exc.partial)
                raise DataError(f"download of {url} was cut off after {got:,} bytes"
                                + (f" of {total:,}" if total else "") + "; nothing was saved, try again") from None
            except (OSError, http.client.HTTPException) as exc:
                raise DataError(f"download of {url} failed after {got:,} bytes ({exc}); nothing was saved, "
                                "try again") from None
            if not buf:
                return h.hexdigest(), got
            out.write(buf)
            h.update(buf)
            got += len(buf)
            bar.update(got)


def _verify(url, remote, length, got, digest):
    if length is not None and got != length:
        raise DataError(f"download of {url} was cut off: {got:,} of {length:,} bytes; nothing was saved, try again")
    if remote.size is not None and got != remote.size:
        raise DataError(f"{url}: received {got:,} bytes, but {remote.filename} is {remote.size:,} bytes; "
                        "the file on the server differs from the one kopt knows, nothing was saved")
    if remote.sha256 is not None and digest != remote.sha256.lower():
        raise DataError(f"{url}: checksum mismatch for {remote.filename}: sha256 {digest}, expected "
                        f"{remote.sha256}; the download was discarded")


def sha256_of(path, progress=None) -> str:
    """SHA-256 of a file, streamed."""
    h = hashlib.sha256()
    size = os.path.getsize(path)
    with open(path, "rb") as fh, ByteProgress(size, f"checking {os.path.basename(path)}", enabled=progress) as bar:
        done = 0
        for buf in iter(lambda: fh.read(CHUNK * 4), b""):
            h.update(buf)
            done += len(buf)
            bar.update(done)
    return h.hexdigest()


def ensure(remote: Remote, dest, *, allow_fetch=True, progress=None) -> Path:
    """``dest`` if it exists; else download it (fetch-on-first-use) or explain how to get it."""
    dest = Path(dest)
    if dest.is_file():
        return dest
    if not allow_fetch:
        raise DataError(f"{dest}: file not found and data.fetch is false; " + how_to_get(remote, dest)
                        + " (or run: kopt data fetch, or set data.fetch: true)")
    return fetch(remote, dest, progress=progress)
