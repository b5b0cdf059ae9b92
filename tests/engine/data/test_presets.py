"""Dataset presets: the standard splits, the data folder, import, mirrors, offline errors, checksums."""
from __future__ import annotations

import gzip
import hashlib
import io
import lzma
import os
import stat
import tarfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest

from kopt.cli import main
from kopt.contract.registry import registry
from kopt.data import load_data
from kopt.data.download import Remote, Source, fetch, identify
from kopt.data.store import import_folder, obtain
from kopt.errors import DataError


def _same(a, b):
    for f in ("X", "y", "X_test", "y_test"):
        u, v = getattr(a, f), getattr(b, f)
        assert (u is None) == (v is None), f
        if hasattr(u, "tocsr"):
            assert hasattr(v, "tocsr") and u.shape == v.shape and (u != v).nnz == 0, f
        elif u is not None:
            np.testing.assert_array_equal(np.asarray(u), np.asarray(v), err_msg=f)


# The data sections the specs had before they named presets (files of ../shared/data): a preset must
# give exactly the same arrays.
EXPLICIT = {
    "higgs-12k": ({}, lambda S: {"train": [S / "higgs_lightgbm_train.tsv.xz", S / "higgs_lightgbm_test.tsv.xz"],
                                 "test": S / "higgs_h2o_test_5k.csv.xz", "label": 0}),
    "a9a": ({}, lambda S: {"train": S / "a9a.xz", "test": S / "a9a.t.xz", "format": "libsvm", "n_features": 123}),
    "w8a": ({}, lambda S: {"train": S / "w8a.xz", "format": "libsvm", "n_features": 300}),
    "cal_housing": ({"split_seed": 0}, lambda S: {"train": S / "cal_housing.data.xz", "label": -1,
                                                  "test_fraction": 0.2, "split_seed": 0}),
    "reuters": ({}, lambda S: {"train": S / "reuters_lasvm_train.libsvm.bz2",
                               "test": S / "reuters_lasvm_test.libsvm.bz2", "n_features": 8315}),
    "mnist": ({}, lambda S: {"train": S / "mnist" / "t10k-images-idx3-ubyte.gz", "test_rows": 2000}),
    "ijcnn1": ({}, lambda S: {"train": S / "ijcnn1_trval.libsvm.bz2", "test": S / "ijcnn1_test.libsvm.bz2",
                              "n_features": 22}),
}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(EXPLICIT))
def test_preset_reads_what_the_explicit_files_read(name, seeded_data, shared_data):
    extra, explicit = EXPLICIT[name]
    spec = explicit(shared_data)
    spec = {k: ([str(p) for p in v] if isinstance(v, list) else str(v) if hasattr(v, "parts") else v)
            for k, v in spec.items()}
    _same(load_data({"source": name, **extra}), load_data(spec))


def test_standard_splits_shapes(seeded_data):
    shapes = {"a9a": ((32561, 123), (16281, 123)), "cal_housing": ((16512, 8), (4128, 8)),
              "reuters": ((7770, 8315), (3299, 8315)), "mnist": ((8000, 784), (2000, 784)),
              "w8a": ((49749, 300), None), "higgs-12k": ((7500, 28), (5000, 28))}
    for name, (train, test) in shapes.items():
        ds = load_data({"source": name})
        assert ds.X.shape == train, name
        assert (None if ds.X_test is None else ds.X_test.shape) == test, name
    ds = load_data({"source": "a9a", "options": {"test_set": False}})
    assert ds.X_test is None
    ds = load_data({"source": "a9a", "test_fraction": 0.25})  # an explicit split replaces the test file
    assert ds.X.shape[0] + ds.X_test.shape[0] == 32561


def test_packaged_sample_needs_no_data_folder_and_no_network(tmp_path, monkeypatch):
    monkeypatch.setenv("KOPT_DATA", str(tmp_path / "empty"))
    monkeypatch.setenv("KOPT_OFFLINE", "1")
    ds = load_data({"source": "higgs-12k", "cache": False})
    assert ds.X.shape == (7500, 28) and ds.X_test.shape == (5000, 28)
    assert set(np.unique(ds.y)) == {0.0, 1.0}
    assert "kopt_plugins" in ds.info["train"] or "plugins" in ds.info["train"]
    assert not (tmp_path / "empty" / "higgs-12k").exists()


def test_missing_file_offline_is_exit_2_with_url_path_and_checksum(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("KOPT_DATA", str(tmp_path / "d"))
    monkeypatch.setenv("KOPT_OFFLINE", "1")
    monkeypatch.delenv("KOPT_DATA_MIRROR", raising=False)
    monkeypatch.chdir(tmp_path)
    assert main(["solve", "joker_huber_a9a", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "https://www.csie.ntu.edu.tw/~cjlin/libsvmtools/datasets/binary/a9a" in err
    assert str(tmp_path / "d" / "a9a" / "a9a") in err
    assert "f5d5ffd8d865ff41328e7ee043e4b020816914ff6843ff15b98905ddbedce906" in err
    assert "kopt data import" in err and "Traceback" not in err


def test_import_copies_verifies_and_is_idempotent(tmp_path, monkeypatch, shared_data):
    monkeypatch.setenv("KOPT_DATA", str(tmp_path / "d"))
    reg = registry()
    presets = [(n, reg.get("dataset", n)().remotes()) for n in ("a9a", "mnist")]
    rows = import_folder(shared_data, presets)
    assert [r[2] for r in rows] == ["imported"] * 4
    a9a = tmp_path / "d" / "a9a" / "a9a.xz"
    assert a9a.read_bytes() == (shared_data / "a9a.xz").read_bytes()
    assert stat.S_IMODE(a9a.stat().st_mode) == 0o666 & ~_umask()
    assert (tmp_path / "d" / "a9a" / ".a9a.xz.verified").is_file()
    assert [r[2] for r in import_folder(shared_data, presets)] == ["present"] * 4
    assert sorted(p.name for p in (tmp_path / "d" / "a9a").iterdir() if not p.name.startswith(".")) == \
        ["a9a.t.xz", "a9a.xz"]


def _umask():
    m = os.umask(0o022)
    os.umask(m)
    return m


@pytest.mark.slow
def test_import_checks_content_not_name_or_compression(tmp_path, monkeypatch, shared_data, capsys):
    """A gzip copy of a9a.t verifies by its decompressed content; a file with a9a's name and other bytes
    is rejected (exit 2) and nothing is copied."""
    monkeypatch.setenv("KOPT_DATA", str(tmp_path / "d"))
    src = tmp_path / "downloads"
    src.mkdir()
    (src / "a9a.t.gz").write_bytes(gzip.compress(lzma.decompress((shared_data / "a9a.t.xz").read_bytes())))
    (src / "a9a").write_bytes(b"-1 3:1 11:1\n")
    assert main(["data", "import", str(src), "a9a"]) == 2
    out, err = capsys.readouterr()
    assert "a9a.t: imported" in out and "differs from every known checksum" in err
    assert sorted(p.name for p in (tmp_path / "d" / "a9a").iterdir() if not p.name.startswith(".")) == ["a9a.t.gz"]


def test_a_wrong_file_in_the_data_folder_is_an_error_not_data(tmp_path, monkeypatch):
    monkeypatch.setenv("KOPT_DATA", str(tmp_path / "d"))
    (tmp_path / "d" / "w8a").mkdir(parents=True)
    (tmp_path / "d" / "w8a" / "w8a").write_text("+1 1:1\n")
    with pytest.raises(DataError, match="matches none of the checksums.*delete it"):
        load_data({"source": "w8a"})


@pytest.mark.slow
def test_mirror_folder_fills_the_data_folder_on_demand(tmp_path, monkeypatch, shared_data):
    monkeypatch.setenv("KOPT_DATA", str(tmp_path / "d"))
    monkeypatch.setenv("KOPT_DATA_MIRROR", str(shared_data))
    monkeypatch.setenv("KOPT_OFFLINE", "1")
    ds = load_data({"source": "reuters"})
    assert ds.X.shape == (7770, 8315)
    assert (tmp_path / "d" / "reuters" / "reuters.trn.bz2").is_file()


def test_data_list_and_fetch_of_a_packaged_preset(capsys):
    assert main(["data", "list"]) == 0
    out = capsys.readouterr().out
    for name in ("higgs", "higgs-12k", "ijcnn1", "a9a", "w8a", "cal_housing", "reuters", "mnist"):
        assert f"\n{name}: " in out
    assert "packaged with kopt" in out and "2.8 GB download" in out
    assert main(["data", "fetch", "higgs-12k"]) == 0
    assert "packaged with kopt" in capsys.readouterr().out
    assert main(["data", "fetch", "dai_synthetic"]) == 2


# -- downloads verified by content checksum and from archives (local HTTP server) ------------------------


class _Handler(BaseHTTPRequestHandler):
    files: dict = {}

    def do_GET(self):  # noqa: N802
        body = self.files.get(self.path)
        if body is None:
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture()
def server(tmp_path, monkeypatch):
    monkeypatch.setenv("KOPT_DATA", str(tmp_path / "d"))
    monkeypatch.delenv("KOPT_OFFLINE", raising=False)
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


TEXT = b"".join(b"%d 1:%d.5 2:%d\n" % (i % 2 * 2 - 1, i, i * 7) for i in range(5000))


@pytest.mark.slow
def test_download_verified_by_content_checksum(server, tmp_path):
    _Handler.files["/data.bz2"] = __import__("bz2").compress(TEXT)
    _Handler.files["/other.bz2"] = __import__("bz2").compress(TEXT + b"1 1:1\n")
    good = Remote(url=server + "/data.bz2", filename="data.bz2", content_sha256=hashlib.sha256(TEXT).hexdigest())
    path = fetch(good, tmp_path / "d" / "data.bz2", progress=False)
    assert identify(path, good) == "content sha256"
    bad = Remote(url=server + "/other.bz2", filename="other.bz2", content_sha256=good.content_sha256)
    with pytest.raises(DataError, match="matches none of the declared checksums"):
        fetch(bad, tmp_path / "d" / "other.bz2", progress=False)
    assert sorted(p.name for p in (tmp_path / "d").iterdir()) == ["data.bz2"]


@pytest.mark.slow
def test_archive_member_download_and_mirror_of_another_kind(server, tmp_path):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        info = tarfile.TarInfo("Dir/table.data")
        info.size = len(TEXT)
        tar.addfile(info, io.BytesIO(TEXT))
    archive = buf.getvalue()
    _Handler.files["/a.tgz"] = archive
    _Handler.files["/plain.data"] = TEXT
    remote = Remote(url=server + "/a.tgz", filename="table.data", sha256=hashlib.sha256(archive).hexdigest(),
                    size=len(archive), member="Dir/table.data", content_sha256=hashlib.sha256(TEXT).hexdigest())
    got = obtain(remote, "p1")
    assert got.origin == "downloaded" and got.path.read_bytes() == TEXT
    assert obtain(remote, "p1").origin == "cached"
    mirrored = Remote(url=server + "/gone.tgz", filename="table.data", sha256=remote.sha256, member=remote.member,
                      content_sha256=remote.content_sha256,
                      mirrors=(Source(server + "/plain.data", sha256=hashlib.sha256(TEXT).hexdigest()),))
    assert obtain(mirrored, "p2").path.read_bytes() == TEXT
