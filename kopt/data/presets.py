"""File presets: a named dataset made of downloadable, checksummed files and a standard split.

A :class:`FilePreset` declares its files (:class:`kopt.data.download.Remote`,
by role: ``train`` -- one or several files read as one table --, ``test``, and
``extra`` companions such as MNIST's label files), how to read them (``read``:
format, label column, ``n_features`` ...) and its standard train/test split.
``data: {source: NAME}`` then gives the set's standard split; the
spec may ask for another one (``test``, ``test_fraction`` or ``test_rows``), or
for none (``options: {test_set: false}``), and may point ``data.train`` at its
own copy of the training file(s).  Files are found or fetched by
:func:`kopt.data.store.obtain`.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import ClassVar

from ..contract.components import DatasetPreset
from ..errors import DataError
from .store import Located, check, names_of, obtain, preset_dir

SPLIT_KEYS = ("test", "test_fraction", "test_rows")

TEST_SET_PARAM = {
    "test_set": {"type": "boolean", "default": True,
                 "description": "use the preset's standard test set (false: train on the training data only, "
                                "unless the spec sets data.test, test_fraction or test_rows)"},
}


def _as_list(value):
    if value is None:
        return []
    return list(value) if isinstance(value, (list, tuple)) else [value]


class FilePreset(DatasetPreset):
    """A preset whose data are files: found packaged, in ``$KOPT_DATA/<name>/``, or downloaded."""

    #: role -> Remote or list of Remotes: "train", "test" (optional), "extra" (companion files)
    files: ClassVar[dict] = {}
    #: parse options of the files, always applied (they describe the files' layout)
    read: ClassVar[dict] = {}
    #: the standard split without a test file: {"test_fraction": f} or {"test_rows": k}
    split: ClassVar[dict] = {}
    #: a folder holding packaged copies of the files, searched first
    bundled: ClassVar[str | None] = None
    #: a sentence for ``kopt data list``: where the files come from and under which terms
    origin: ClassVar[str] = ""
    params = dict(TEST_SET_PARAM)

    def option(self, key, default=None):
        """An option's value (``options`` is a dict or a typed options object, whichever the core builds)."""
        o = self.options
        value = o.get(key, default) if isinstance(o, dict) else getattr(o, key, default)
        return default if value is None else value

    def layout(self) -> dict:
        """The files with the preset's current options (override when options choose files)."""
        return self.files

    def remotes(self) -> list:
        """Every file the preset needs with its current options."""
        lay = self.layout()
        return [r for role in ("train", "test", "extra") for r in _as_list(lay.get(role))]

    def standard_split(self) -> dict:
        return dict(self.split)

    def obtain(self, remote, *, allow_fetch=True, progress=None) -> Located:
        return obtain(remote, self.name, bundled=self.bundled, allow_fetch=allow_fetch, progress=progress)

    def resolve(self, data_spec):
        spec = dict(data_spec)
        lay = self.layout()
        allow = spec.get("fetch", True)

        def local(remote):
            return str(self.obtain(remote, allow_fetch=allow).path)

        if spec.get("train"):
            for path in _as_list(spec["train"]):
                if not os.path.isfile(path):
                    raise DataError(f"{path}: file not found (data.train of the {self.name} preset)")
                self.verify_copy(path, _as_list(lay["train"]))
            train = spec["train"]
        else:
            paths = [local(r) for r in _as_list(lay["train"])]
            train = paths[0] if len(paths) == 1 else paths
        for remote in _as_list(lay.get("extra")):
            local(remote)
        spec.update(self.read)
        spec["train"] = train
        if not any(spec.get(k) for k in SPLIT_KEYS) and self.option("test_set", True):
            if lay.get("test") is not None:
                spec["test"] = local(lay["test"])
            else:
                spec.update(self.standard_split())
        return spec

    def verify_copy(self, path, remotes):
        """A ``data.train`` file named like one of the preset's files must be that file (its checksum,
        checked once per size and mtime); a file under another name is the user's own data."""
        name = os.path.basename(path).lower()
        for remote in remotes:
            if name in (n.lower() for n in names_of(remote)):
                if check(Path(path), remote) is None:
                    raise DataError(f"{path}: named like the {self.name} preset's {remote.filename} but matches none "
                                    f"of its checksums ({remote.checksum_text}): a corrupt or different file. Get "
                                    f"the real one (kopt data fetch {self.name}), or to train on this file rename "
                                    "it, or drop data.source and read it as a plain data file")
                return

    @classmethod
    def supports(cls):
        return "files" + (", packaged" if cls.bundled else "") + (", " + cls.task if getattr(cls, "task", "") else "")

    def status(self) -> list:
        """``[(remote, where, path)]`` without hashing: ``packaged``, ``cached`` or ``missing``."""
        out = []
        for remote in self.remotes():
            where, path = "missing", None
            if self.bundled and any(os.path.isfile(os.path.join(self.bundled, n)) for n in names_of(remote)):
                where = "packaged"
            else:
                for n in names_of(remote):
                    p = preset_dir(self.name) / n
                    if p.is_file():
                        where, path = "cached", p
                        break
            out.append((remote, where, path))
        return out
