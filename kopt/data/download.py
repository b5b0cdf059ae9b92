"""Downloading a preset's file: progress bar, atomic rename, size and SHA-256 checks.

The bytes go to a temporary file next to the destination (``.NAME.XXXX.part``)
while their SHA-256 is computed; the file is renamed into place only when the
transfer is complete (the server's Content-Length and the declared size both
match) and the checksum matches.  Any failure -- a dropped connection, a
truncated body, a checksum mismatch, Ctrl-C -- deletes the temporary file, so
the cache never holds a partial or wrong file.  Without network the error
says which URL to download, where to put the file and its checksum.  A process
killed with -9 cannot delete its temporary file: each one is held under an
exclusive ``flock`` while it is written (:func:`kopt.files.atomic.lock`), and the
next fetch or import into that folder removes every ``.NAME.*.part``/``.member``
no live process holds (:func:`remove_stale_parts`).

A file is identified by the SHA-256 of its bytes (``Remote.sha256``, or one of
``also_sha256`` for known recompressed copies) or by the SHA-256 of its
*decompressed* content (``content_sha256``): a gzip/bzip2/xz copy of the same
text verifies whatever compressor wrote it.  ``KOPT_OFFLINE=1`` forbids every
download.
"""
from __future__ import annotations

import contextlib
import hashlib
import http.client
import os
import shutil
import socket
import tarfile
import tempfile
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import DataError
from ..files.atomic import abandoned, follow_umask, lock
from . import space
from .progress import ByteProgress, human_bytes

CHUNK = 1 << 20


@dataclass(frozen=True)
class Source:
    """One place a file can be downloaded from.

    ``sha256``/``size`` describe the bytes at ``url`` (None: the result is
    checked against the Remote's content checksum instead); with ``member``
    the URL is a tar archive (any compression) and the file is that member.
    """

    url: str
    sha256: str | None = None
    size: int | None = None
    member: str | None = None


@dataclass(frozen=True)
class Remote:
    """A downloadable file: where it lives and what it must be.

    ``filename`` is its name in the data folder.  ``sha256`` and ``size`` are
    those of the bytes at ``url`` (either may be None); ``content_sha256`` is the
    SHA-256 of the decompressed content, so a recompressed copy verifies;
    ``also_sha256`` lists other accepted files byte for byte.  ``mirrors`` are
    tried in order when ``url`` cannot be reached: a URL string (the same bytes
    as ``url``) or a :class:`Source`.  ``aliases`` are other names the file goes
    by (``kopt data import`` and ``KOPT_DATA_MIRROR`` look for them); ``member``
    makes ``url`` a tar archive holding the file; ``provenance`` says where the
    URLs and checksums come from.
    """

    url: str
    filename: str
    sha256: str | None = None
    size: int | None = None
    mirrors: tuple = field(default_factory=tuple)
    provenance: str = ""
    content_sha256: str | None = None
    also_sha256: tuple = field(default_factory=tuple)
    aliases: tuple = field(default_factory=tuple)
    member: str | None = None

    @property
    def sources(self) -> tuple:
        first = Source(self.url, self.sha256, self.size, self.member)
        rest = tuple(m if isinstance(m, Source) else Source(m, self.sha256, self.size, self.member)
                     for m in self.mirrors)
        return (first, *rest)

    @property
    def urls(self):
        return tuple(s.url for s in self.sources)

    @property
    def checksum_text(self) -> str:
        """The checksums a file must match, for messages."""
        parts = []
        if self.sha256:
            parts.append(f"sha256 {self.sha256}" + (f" of the archive holding {self.member}" if self.member else ""))
        if self.content_sha256:
            parts.append(f"sha256 {self.content_sha256} of its decompressed content")
        return " or ".join(parts) if parts else "no checksum declared"


class _Unreachable(Exception):
    """The URL could not be reached at all (no byte was received): try the next one."""


def offline() -> bool:
    """Whether ``KOPT_OFFLINE`` forbids downloads."""
    return os.environ.get("KOPT_OFFLINE", "").strip().lower() not in ("", "0", "false", "no")


def how_to_get(remote: Remote, dest) -> str:
    """The manual instructions of an offline error: URL, size, checksum, destination."""
    size = f"{human_bytes(remote.size)}, " if remote.size else ""
    what = f"download {remote.url} ({size}{remote.checksum_text})"
    if remote.member:
        what += f", extract {remote.member} from it"
    return (f"{what} and put it at {dest} -- or run `kopt data import DIR` on a folder holding a copy "
            "(any of gzip/bzip2/xz), or point data.train at a copy you already have")


def fetch(remote: Remote, dest=None, *, progress=None, timeout=60.0) -> Path:
    """Download ``remote`` to ``dest`` (default ``$KOPT_DATA/<filename>``) and verify it.

    Returns the destination path.  Raises DataError on a failed or corrupt
    transfer (nothing is left behind) and when no URL can be reached or
    ``KOPT_OFFLINE`` is set (the message says what to download and where to put it).
    """
    from .cache import default_data_dir

    dest = Path(dest) if dest is not None else default_data_dir() / remote.filename
    if offline():
        raise DataError(f"{dest}: not present, and KOPT_OFFLINE forbids downloads; " + how_to_get(remote, dest))
    try:
        dest.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise DataError(f"cannot create the data directory {dest.parent}: {exc}") from None
    remove_stale_parts(dest)
    if remote.size:  # the file, a member extracted beside its archive, and the .verified record
        space.require(dest.parent, remote.size * (2 if remote.member else 1) + space.META_BYTES,
                      f"downloading {remote.filename}")
    reasons = []
    for source in remote.sources:
        try:
            _download(source, dest, remote, progress, timeout)
            return dest
        except _Unreachable as exc:
            reasons.append(f"{source.url}: {exc}")
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


def temp_beside(dest: Path, suffix=".part"):
    """A temporary file beside ``dest``, held under an exclusive lock until it is closed."""
    fd, tmp = tempfile.mkstemp(prefix=f".{dest.name}.", suffix=suffix, dir=dest.parent)
    follow_umask(fd)
    lock(fd)
    return fd, tmp


def remove_stale_parts(dest: Path) -> list:
    """Delete the temporary files of ``dest`` (``.NAME.*.part``, ``.member``) left by killed processes:
    those no process holds a lock on.  Returns the paths removed."""
    removed = []
    for suffix in (".part", ".member"):
        for path in Path(dest).parent.glob(f".{Path(dest).name}.*{suffix}"):
            if abandoned(path):  # not a live download or copy
                with contextlib.suppress(OSError):
                    os.unlink(path)
                    removed.append(path)
    return removed


def _download(source: Source, dest: Path, remote: Remote, progress, timeout):
    resp = _open(source.url, timeout)
    length = resp.headers.get("Content-Length")
    length = int(length) if length and length.isdigit() else None
    size = length or source.size or remote.size
    need = (size or 0) * (2 if source.member else 1) + space.META_BYTES
    what = f"downloading {remote.filename}" + ("" if size else " (the server gave no size; counted: what came before the disk filled)")
    try:
        space.require(dest.parent, need, what)
        fd, tmp = temp_beside(dest)
    except BaseException:
        resp.close()
        raise
    extracted = None
    if not size:  # the bytes received before the disk filled, at least, when the server gave no length
        need = _at_least(need, tmp)
    try:
        with space.full_disk(dest.parent, need, what), resp, os.fdopen(fd, "wb") as out:
            label = os.path.basename(source.url.rstrip("/")) or dest.name
            digest, got = _copy(resp, out, length or source.size, label, progress, source.url)
            out.flush()
            os.fsync(out.fileno())
        _verify_transfer(source, remote, length, got, digest)
        if source.member:
            with space.full_disk(dest.parent, need, what):
                extracted = _extract_member(tmp, source, dest)
            os.unlink(tmp)
            tmp = extracted
        if not source.sha256 and identify(tmp, remote) is None:
            raise DataError(f"{source.url}: the downloaded {remote.filename} matches none of the declared checksums "
                            f"({remote.checksum_text}); the file on the server differs from the one kopt knows, "
                            "nothing was saved")
        os.replace(tmp, dest)
    except BaseException:
        for path in (tmp, extracted):
            if path:
                try:
                    os.unlink(path)
                except OSError:
                    pass
        raise


def _at_least(need, path):
    def bytes_needed():
        try:
            return need + os.path.getsize(path)
        except OSError:
            return need
    return bytes_needed


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


def _verify_transfer(source: Source, remote: Remote, length, got, digest):
    url = source.url
    if length is not None and got != length:
        raise DataError(f"download of {url} was cut off: {got:,} of {length:,} bytes; nothing was saved, try again")
    if source.size is not None and got != source.size:
        raise DataError(f"{url}: received {got:,} bytes, but {remote.filename} is {source.size:,} bytes; "
                        "the file on the server differs from the one kopt knows, nothing was saved")
    if source.sha256 is not None and digest != source.sha256.lower():
        raise DataError(f"{url}: checksum mismatch for {remote.filename}: sha256 {digest}, expected "
                        f"{source.sha256}; the download was discarded")


def _extract_member(archive, source: Source, dest: Path) -> str:
    """Copy ``source.member`` out of a verified tar archive into a temporary file beside ``dest``."""
    fd, tmp = temp_beside(dest, ".member")
    try:
        with tarfile.open(archive, "r:*") as tar, os.fdopen(fd, "wb") as out:
            try:
                info = tar.getmember(source.member)
            except KeyError:
                raise DataError(f"{source.url}: the archive holds no {source.member}") from None
            if not info.isfile():
                raise DataError(f"{source.url}: {source.member} is not a regular file in the archive")
            shutil.copyfileobj(tar.extractfile(info), out, CHUNK)
    except (tarfile.TarError, OSError, EOFError) as exc:
        os.unlink(tmp)
        if space.no_room(exc):
            raise  # the caller says the disk is full
        raise DataError(f"{source.url}: cannot read the archive ({exc}); nothing was saved") from None
    except BaseException:
        os.unlink(tmp)
        raise
    return tmp


def sha256_of(path, progress=None) -> str:
    """SHA-256 of a file's bytes, streamed."""
    h = hashlib.sha256()
    size = os.path.getsize(path)
    with open(path, "rb") as fh, ByteProgress(size, f"checking {os.path.basename(path)}", enabled=progress) as bar:
        done = 0
        for buf in iter(lambda: fh.read(CHUNK * 4), b""):
            h.update(buf)
            done += len(buf)
            bar.update(done)
    return h.hexdigest()


def content_sha256_of(path) -> str:
    """SHA-256 of a file's decompressed content (gzip/bzip2/xz recognised by their magic bytes)."""
    from .stream import open_binary

    h = hashlib.sha256()
    raw, stream = open_binary(path)
    try:
        for buf in iter(lambda: stream.read(CHUNK * 4), b""):
            h.update(buf)
    except (OSError, EOFError, ValueError) as exc:  # a corrupt compressed stream
        raise DataError(f"{path}: cannot decompress ({exc})") from None
    finally:
        stream.close()
        raw.close()
    return h.hexdigest()


def identify(path, remote: Remote, progress=None) -> str | None:
    """How ``path`` matches ``remote``: ``"sha256"`` (its bytes), ``"content sha256"``
    (its decompressed content), or None when it matches neither."""
    digest = sha256_of(path, progress)
    known = {s.lower() for s in (remote.sha256, *remote.also_sha256) if s}
    if remote.member and remote.sha256:
        known.discard(remote.sha256.lower())  # that checksum is the archive's, not the member's
    if digest in known:
        return "sha256"
    if remote.content_sha256 and content_sha256_of(path) == remote.content_sha256.lower():
        return "content sha256"
    return None


def ensure(remote: Remote, dest, *, allow_fetch=True, progress=None) -> Path:
    """``dest`` if it exists; else download it (fetch-on-first-use) or explain how to get it."""
    dest = Path(dest)
    if dest.is_file():
        return dest
    if not allow_fetch:
        raise DataError(f"{dest}: file not found and data.fetch is false; " + how_to_get(remote, dest)
                        + " (or run: kopt data fetch, or set data.fetch: true)")
    return fetch(remote, dest, progress=progress)
