"""A disk without room for a write of the data layer: a generated set, a cache entry, an imported file, a download.

Each counts every byte it will write (training rows, test rows, labels, metadata) before the first one, and a
disk that fills anyway (ENOSPC) ends in a DataError (exit status 2) that names the space needed and the folder,
with nothing partial left behind.  The free-space figure is monkeypatched; the writes that fill the disk either
raise ENOSPC by a monkeypatch or, where this process may mount one (root), fill a real 1 MB tmpfs.
"""
from __future__ import annotations

import errno
import os
import shutil
import subprocess
from collections import namedtuple

import numpy as np
import pytest

from kopt.cli import main
from kopt.data import load_data
from kopt.errors import DataError

Usage = namedtuple("Usage", "total used free")
HIGGS_TEST = 2000


@pytest.fixture
def data_home(tmp_path, monkeypatch):
    home = tmp_path / "data"
    home.mkdir()
    monkeypatch.setenv("KOPT_DATA", str(home))
    return home


def _free(monkeypatch, free):
    """The disk reports ``free`` bytes free (every folder)."""
    monkeypatch.setattr(shutil, "disk_usage", lambda path: Usage(1 << 40, (1 << 40) - free, free))


def _enospc(*args, **kwargs):
    raise OSError(errno.ENOSPC, "No space left on device")


def _higgs(rows):
    return {"source": "higgs-shaped", "options": {"rows": rows, "test_rows": HIGGS_TEST}}


def _leftovers(folder):
    return sorted(p.name for p in folder.rglob("*") if p.is_file() and not p.name.endswith(".lock"))


def _tmpfs(where):
    """Mount a 1 MB tmpfs at ``where`` (None where this process may not)."""
    if not hasattr(os, "geteuid") or os.geteuid() != 0 or not shutil.which("mount"):
        return None
    where.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(where)], capture_output=True)
    return where if done.returncode == 0 else None


@pytest.fixture
def small_disk(tmp_path, monkeypatch):
    """``$KOPT_DATA`` on a real 1 MB disk (tmpfs), unmounted afterwards; skipped where it cannot be mounted."""
    where = _tmpfs(tmp_path / "small")
    if where is None:
        pytest.skip("cannot mount a tmpfs here (not root)")
    monkeypatch.setenv("KOPT_DATA", str(where))
    yield where
    subprocess.run(["umount", str(where)], check=False)


# -- generated sets -----------------------------------------------------------------------------------
def test_generated_set_counts_its_test_rows_before_writing(data_home, monkeypatch):
    """Room for the training rows but not for the test rows too: refused before a byte is written (the old
    check counted only the training rows, wrote the test rows first and met ENOSPC: an internal error)."""
    rows = 1000
    train = rows * (28 * 4 + 8)
    _free(monkeypatch, train + 1000)  # the training rows fit, the 2,000 test rows (240 kB) do not
    monkeypatch.setattr(np, "save", _enospc)  # the disk is as full as it says
    with pytest.raises(DataError) as err:
        load_data(_higgs(rows))
    text = str(err.value)
    assert "higgs-shaped with 1,000 rows needs 425.5 kB" in text, text
    assert str(data_home / "generated") in text and "121.0 kB are free" in text
    assert _leftovers(data_home) == []


def test_generated_set_disk_full_mid_write_keeps_nothing_and_exits_2(data_home, monkeypatch, capsys):
    """ENOSPC while the chunks are written (the free figure lied): exit 2 naming the space and the folder, the
    .part- folder removed."""
    from kopt.data import generated

    monkeypatch.setattr(generated.os, "fsync", _enospc)  # the first sync (of a chunk or a record) meets a full disk
    import yaml

    spec = {"name": "full", "seed": 0, "data": _higgs(1000),
            "model": {"loss": {"name": "square", "target": "binary"}, "kernel": {"name": "gaussian", "bandwidth": 1.0},
                      "regularizer": {"name": "l2", "lambda": 1.0e-3}, "form": "primal",
                      "features": {"kind": "nystrom", "count": 16}},
            "solver": {"name": "krr_nystrom"}, "backend": "numpy", "output": {"dir": str(data_home.parent / "run")}}

    path = data_home.parent / "spec.yaml"
    path.write_text(yaml.safe_dump(spec))
    assert main(["solve", str(path), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "kopt: error: higgs-shaped with 1,000 rows needs 425.5 kB in" in err, err
    assert "the disk holding it is full" in err and "Nothing partial was kept" in err and "internal" not in err
    assert _leftovers(data_home) == []


def test_generated_set_on_a_real_full_disk(small_disk):
    """A real 1 MB disk: 20,000 rows (2.4 MB) are refused up front; with the free figure ignored, the write
    itself fills the disk and the partial set is removed."""
    with pytest.raises(DataError, match=r"needs 2\.7 MB in .*are free there"):
        load_data(_higgs(20000))
    assert _leftovers(small_disk) == []


def test_generated_set_on_a_real_disk_that_fills_mid_write(small_disk, monkeypatch):
    _free(monkeypatch, 1 << 40)  # the figure says there is room; the disk has 1 MB
    with pytest.raises(DataError, match=r"needs 2\.7 MB in .*the disk holding it is full"):
        load_data(_higgs(20000))
    assert _leftovers(small_disk) == []


# -- the parsed-array cache ---------------------------------------------------------------------------
def _csv(tmp_path, rows=20000):
    rng = np.random.default_rng(0)
    data = np.column_stack([rng.integers(0, 2, rows), rng.normal(size=(rows, 4))])
    path = tmp_path / "big.csv"
    np.savetxt(path, data, delimiter=",", fmt="%.6g")
    return path


def test_cache_entry_counts_its_bytes_first(data_home, tmp_path, monkeypatch):
    path = _csv(tmp_path)
    _free(monkeypatch, 100_000)  # the entry is 20,000 x 5 values: 725 kB with its record
    with pytest.raises(DataError) as err:
        load_data({"train": str(path), "test_fraction": 0.2})
    text = str(err.value)
    assert "the parsed-array cache entry of big.csv needs" in text and str(data_home / "cache") in text, text
    assert "data.cache: false" in text
    assert _leftovers(data_home) == []
    load_data({"train": str(path), "test_fraction": 0.2, "cache": False})  # the way out it names


def test_cache_entry_disk_full_mid_write_keeps_nothing(data_home, tmp_path, monkeypatch):
    path = _csv(tmp_path)
    monkeypatch.setattr(np, "save", _enospc)
    with pytest.raises(DataError, match=r"cache entry of big\.csv needs .* the disk holding it is full"):
        load_data({"train": str(path), "test_fraction": 0.2})
    assert _leftovers(data_home) == []


# -- imports and downloads ----------------------------------------------------------------------------
def _remote(path):
    import hashlib

    from kopt.data.download import Remote

    return Remote("http://127.0.0.1:9/none", path.name, sha256=hashlib.sha256(path.read_bytes()).hexdigest(),
                  size=path.stat().st_size)


def test_import_counts_the_file_and_a_full_disk_keeps_nothing(data_home, tmp_path, monkeypatch):
    from kopt.data.store import store_copy

    src = tmp_path / "ijcnn1"
    src.write_bytes(os.urandom(300_000))
    remote = _remote(src)
    folder = data_home / "ijcnn1"
    _free(monkeypatch, 200_000)
    with pytest.raises(DataError, match=r"ijcnn1 \(from .*\) needs 365\.5 kB in .*200\.0 kB are free"):
        store_copy(src, remote, folder, "sha256")
    assert _leftovers(data_home) == []
    monkeypatch.undo()
    monkeypatch.setenv("KOPT_DATA", str(data_home))
    monkeypatch.setattr(shutil, "copyfileobj", _enospc)
    with pytest.raises(DataError, match=r"needs 365\.5 kB in .*the disk holding it is full"):
        store_copy(src, remote, folder, "sha256")
    assert _leftovers(data_home) == []


def test_download_disk_full_mid_transfer_keeps_nothing(data_home, tmp_path, monkeypatch):
    """ENOSPC while the bytes are written: exit-2 DataError, no .part file left."""
    import io

    from kopt.data import download

    body = os.urandom(200_000)
    src = tmp_path / "a9a"
    src.write_bytes(body)
    remote = _remote(src)

    class Response(io.BytesIO):
        headers = {"Content-Length": str(len(body))}

    monkeypatch.setattr(download, "_open", lambda url, timeout: Response(body))
    monkeypatch.delenv("KOPT_OFFLINE", raising=False)
    class Full:  # the checksum is updated after each buffer is written: raise what that write would have raised
        def update(self, buf):
            raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(download.hashlib, "sha256", Full)
    with pytest.raises(DataError, match=r"downloading a9a needs 265\.5 kB in .*the disk holding it is full"):
        download.fetch(remote, data_home / "a9a" / "a9a")
    assert _leftovers(data_home) == []
