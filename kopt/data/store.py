"""The data folder: where a preset's files are found, verified, imported and fetched.

Each preset keeps its files in ``$KOPT_DATA/<preset>/`` (``KOPT_DATA`` defaults
to the user cache directory).  A file may sit there under its canonical name or
with another compression (``a9a`` or ``a9a.xz``): it is identified by checksum,
not by its bytes' compression (:func:`kopt.data.download.identify`).  The first
time kopt meets a file it checks its SHA-256 and writes a small record beside it
(``.NAME.verified``, a mismatch too); later runs compare size and modification
time with the record and do not hash again.

:func:`obtain` finds a preset's file, in order: a copy shipped inside the
package (the HIGGS sample), the data folder, a folder named by
``KOPT_DATA_MIRROR`` (copied in after verification), the download URLs (unless
``data.fetch: false`` or ``KOPT_OFFLINE=1``).  :func:`import_folder` fills the
data folder from a folder of files downloaded by hand or by another machine
(``kopt data import DIR``).
"""
from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from ..errors import DataError
from . import space
from .cache import default_data_dir
from .download import Remote, fetch, how_to_get, identify, remove_stale_parts, temp_beside
from .stream import strip_compression_suffix

_SUFFIX = {"gzip": ".gz", "bzip2": ".bz2", "xz": ".xz", None: ""}
_COMPRESSIONS = ("", ".gz", ".bz2", ".xz")


def preset_dir(preset: str) -> Path:
    """``$KOPT_DATA/<preset>``."""
    return default_data_dir() / preset


def mirror_dirs() -> list:
    """The folders named by ``KOPT_DATA_MIRROR`` (``os.pathsep``-separated)."""
    value = os.environ.get("KOPT_DATA_MIRROR", "")
    return [Path(p).expanduser() for p in value.split(os.pathsep) if p.strip()]


def names_of(remote: Remote) -> list:
    """Every file name ``remote`` may go by: canonical and aliases, each with any compression suffix."""
    out = []
    for name in (remote.filename, *remote.aliases):
        base = strip_compression_suffix(name)
        for n in (name, *(base + s for s in _COMPRESSIONS)):
            if n not in out:
                out.append(n)
    return out


def _record_path(path: Path) -> Path:
    return path.with_name(f".{path.name}.verified")


def _stat_key(path: Path):
    st = path.stat()
    return [st.st_size, st.st_mtime_ns]


def _read_record(path: Path):
    try:
        with open(_record_path(path), encoding="utf-8") as fh:
            return json.load(fh)
    except (OSError, ValueError):
        return None


def _write_record(path: Path, remote: Remote, how: str):
    from ..files.atomic import write_json

    try:
        write_json(_record_path(path), {"file": path.name, "stat": _stat_key(path), "verified_by": how,
                                        "checksums": remote.checksum_text})
    except OSError:
        pass  # a read-only folder: the file is checked again next time


def check(path: Path, remote: Remote, progress=None) -> str | None:
    """How ``path`` matches ``remote``, or None.  The answer (a mismatch too) is recorded beside the
    file and reused while its size and mtime are unchanged: a file is hashed once, not every run."""
    rec = _read_record(path)
    if rec and rec.get("stat") == _stat_key(path) and rec.get("checksums") == remote.checksum_text:
        return rec.get("verified_by")
    how = identify(path, remote, progress)
    _write_record(path, remote, how)
    return how


def _mismatch(path, remote):
    return DataError(f"{path}: this file matches none of the checksums of {remote.filename} ({remote.checksum_text}); "
                     "it is corrupt or a different file: delete it, then run `kopt data fetch` or `kopt data import`")


def in_folder(remote: Remote, folder: Path, progress=None) -> Path | None:
    """The verified file of ``remote`` in the data folder ``folder``, or None; a wrong file there is an error."""
    base = strip_compression_suffix(remote.filename)
    for name in dict.fromkeys([remote.filename, *(base + s for s in _COMPRESSIONS)]):
        path = folder / name
        if path.is_file():
            if check(path, remote, progress) is None:
                raise _mismatch(path, remote)
            return path
    return None


def find_copy(remote: Remote, directory: Path, index=None):
    """``(path, how)`` of a file in ``directory`` (searched three levels deep) named like ``remote``
    and matching its checksums; ``(path, None)`` if one is named like it but differs; ``(None, None)``."""
    index = index if index is not None else index_folder(directory)
    wrong = None
    for name in names_of(remote):
        for path in index.get(name.lower(), ()):
            how = identify(path, remote)
            if how:
                return path, how
            wrong = wrong or path
    return wrong, None


def index_folder(directory: Path, depth=3) -> dict:
    """Lower-cased file name -> paths, for the files up to ``depth`` levels below ``directory``."""
    index = {}
    directory = Path(directory)
    root_depth = len(directory.parts)
    for root, dirs, files in os.walk(directory):
        if len(Path(root).parts) - root_depth >= depth:
            dirs[:] = []
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        for f in files:
            if not f.startswith("."):
                index.setdefault(f.lower(), []).append(Path(root) / f)
    return index


def store_copy(src: Path, remote: Remote, folder: Path, how: str) -> Path:
    """Copy a verified file into the data folder (atomically), named ``<canonical base><its compression>``."""
    from .stream import compression_of

    base = strip_compression_suffix(remote.filename)
    dest = folder / (base + _SUFFIX[compression_of(src)])
    need = os.path.getsize(src) + space.META_BYTES  # the copy and its .verified record
    what = f"{remote.filename} (from {src})"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        remove_stale_parts(dest)
        space.require(folder, need, what)
        fd, tmp = temp_beside(dest)
    except OSError as exc:
        if space.no_room(exc):
            raise space.full_disk_error(folder, need, what, exc) from None
        raise DataError(f"cannot write to the data folder {folder}: {exc}") from None
    try:
        with space.full_disk(folder, need, what), os.fdopen(fd, "wb") as out, open(src, "rb") as inp:
            shutil.copyfileobj(inp, out, 1 << 22)
            out.flush()
            os.fsync(out.fileno())
        if identify(tmp, remote) is None:  # the copy itself is checked before it is renamed into place
            raise DataError(f"{src}: the copy in {folder} differs from the source (disk error?); nothing was saved")
        os.replace(tmp, dest)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    _write_record(dest, remote, how)
    return dest


@dataclass
class Located:
    path: Path
    origin: str  # "packaged", "cached", "mirror", "downloaded"


def obtain(remote: Remote, preset: str, *, bundled=None, allow_fetch=True, progress=None) -> Located:
    """A verified local copy of ``remote``: packaged, cached, from ``KOPT_DATA_MIRROR``, or downloaded."""
    if bundled is not None and Path(bundled).is_dir():
        found, how = find_copy(remote, Path(bundled), index_folder(Path(bundled), depth=1))
        if how:
            return Located(found, "packaged")
    folder = preset_dir(preset)
    path = in_folder(remote, folder, progress)
    if path is not None:
        return Located(path, "cached")
    for mirror in mirror_dirs():
        if mirror.is_dir():
            found, how = find_copy(remote, mirror)
            if how:
                return Located(store_copy(found, remote, folder, how), "mirror")
    dest = folder / remote.filename
    if not allow_fetch:
        raise DataError(f"{dest}: not present and data.fetch is false; " + how_to_get(remote, dest)
                        + " (or run: kopt data fetch " + preset + ")")
    fetched = fetch(remote, dest, progress=progress)
    _write_record(fetched, remote, "sha256" if remote.sha256 else "content sha256")
    return Located(fetched, "downloaded")


def import_folder(directory, presets, *, log=None) -> list:
    """Copy every file of ``presets`` (``[(name, [Remote, ...])]``) found in ``directory`` into the data
    folder after checking its checksum.  Returns ``[(preset, remote, status, path)]``: ``imported`` (path:
    the source file), ``present`` (path: the file already in the data folder), ``missing`` (None) or
    ``mismatch`` (the source file that matches no checksum)."""
    directory = Path(directory)
    if not directory.is_dir():
        raise DataError(f"{directory}: not a folder")
    index = index_folder(directory)
    out = []
    for preset, remotes in presets:
        folder = preset_dir(preset)
        for remote in remotes:
            try:
                have = in_folder(remote, folder)
            except DataError:
                have = None  # a wrong file in the data folder: replaced below if the folder has a good one
                wrong = [folder / n for n in names_of(remote) if (folder / n).is_file()]
            else:
                wrong = []
            if have is not None:
                out.append((preset, remote, "present", have))
            else:
                out.append(_import_one(remote, directory, index, folder, wrong, preset))
            if log:
                log(out[-1])
    return out


def _import_one(remote, directory, index, folder, wrong, preset):
    found, how = find_copy(remote, directory, index)
    if found is None:
        return preset, remote, "missing", None
    if how is None:
        return preset, remote, "mismatch", found
    for stale in wrong:
        if check(stale, remote) is None:
            stale.unlink(missing_ok=True)
    store_copy(found, remote, folder, how)
    return preset, remote, "imported", found
