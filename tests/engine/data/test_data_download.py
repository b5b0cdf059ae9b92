"""Downloads against a real HTTP server on 127.0.0.1: success, truncation, checksum, offline; presets."""
from __future__ import annotations

import gzip
import hashlib
import io
import lzma
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest

from kopt.cli import main
from kopt.contract.hookspecs import hookimpl
from kopt.contract.registry import registry
from kopt.data import load_data
from kopt.data.download import Remote, ensure, fetch
from kopt.data.progress import ByteProgress
from kopt.errors import DataError

PAYLOAD = bytes(range(256)) * 4096  # 1 MiB


class _Handler(BaseHTTPRequestHandler):
    files: dict = {}
    hits: list = []

    def do_GET(self):  # noqa: N802 (http.server's name)
        self.hits.append(self.path)
        body = self.files.get(self.path.split("?")[0].replace("/cut", ""))
        if body is None:
            self.send_error(404, "no such file")
            return
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.path.startswith("/cut"):
            self.wfile.write(body[: len(body) // 3])  # then the connection closes: a truncated body
            self.wfile.flush()
            return
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def server():
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}", _Handler
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture(autouse=True)
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("KOPT_DATA", str(tmp_path / "home"))
    monkeypatch.delenv("KOPT_OFFLINE", raising=False)  # these tests download from 127.0.0.1
    monkeypatch.delenv("KOPT_DATA_MIRROR", raising=False)
    return tmp_path / "home"


def _remote(base, path, body, **kw):
    _Handler.files[path] = body
    args = {"url": base + path, "filename": "blob.bin", "sha256": hashlib.sha256(body).hexdigest(), "size": len(body)}
    return Remote(**{**args, **kw})


def _leftovers(folder):
    return sorted(p.name for p in folder.iterdir()) if folder.exists() else []


def test_fetch_verifies_and_renames(server, home):
    base, _ = server
    dest = fetch(_remote(base, "/ok.bin", PAYLOAD))
    assert dest == home / "blob.bin" and dest.read_bytes() == PAYLOAD
    assert _leftovers(home) == ["blob.bin"]  # no .part file left


def test_a_fetch_removes_the_parts_of_killed_downloads_but_not_of_live_ones(server, home):
    """Issue 17 defect 5: a download killed with -9 left its .part file forever."""
    import fcntl
    import os

    base, _ = server
    home.mkdir(parents=True)
    (home / ".blob.bin.dead1.part").write_bytes(b"half a download")
    (home / ".blob.bin.dead2.member").write_bytes(b"half an extraction")
    live = home / ".blob.bin.live.part"
    live.write_bytes(b"being written")
    fd = os.open(live, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # what a running download holds
        fetch(_remote(base, "/ok.bin", PAYLOAD))
    finally:
        os.close(fd)
    assert _leftovers(home) == [".blob.bin.live.part", "blob.bin"]


def test_truncated_transfer_leaves_nothing(server, home):
    base, _ = server
    remote = _remote(base, "/t.bin", PAYLOAD, url=base + "/cut/t.bin")
    with pytest.raises(DataError, match="cut off"):
        fetch(remote)
    assert _leftovers(home) == []


def test_checksum_mismatch_leaves_nothing(server, home):
    base, _ = server
    remote = _remote(base, "/c.bin", PAYLOAD, sha256="0" * 64)
    with pytest.raises(DataError, match="checksum mismatch") as err:
        fetch(remote)
    assert hashlib.sha256(PAYLOAD).hexdigest() in str(err.value)
    assert _leftovers(home) == []


def test_declared_size_mismatch_leaves_nothing(server, home):
    base, _ = server
    with pytest.raises(DataError, match="bytes, but blob.bin is"):
        fetch(_remote(base, "/s.bin", PAYLOAD, size=len(PAYLOAD) + 1, sha256=None))
    assert _leftovers(home) == []


def _closed_port_url():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/HIGGS.csv.gz"


def test_offline_error_says_what_and_where(home):
    url = _closed_port_url()
    remote = Remote(url=url, filename="HIGGS.csv.gz", sha256="ab" * 32, size=123)
    with pytest.raises(DataError) as err:
        fetch(remote)
    msg = str(err.value)
    assert url in msg and str(home / "HIGGS.csv.gz") in msg and "sha256 " + "ab" * 32 in msg
    assert _leftovers(home) == []


def test_mirror_used_when_first_url_fails(server, home):
    base, handler = server
    remote = _remote(base, "/m.bin", PAYLOAD, url=base + "/gone.bin", mirrors=(base + "/m.bin",))
    assert fetch(remote).read_bytes() == PAYLOAD
    assert "/gone.bin" in handler.hits


def test_ensure_without_fetch_never_connects(server, home):
    base, handler = server
    before = len(handler.hits)
    remote = _remote(base, "/e.bin", PAYLOAD)
    with pytest.raises(DataError, match="data.fetch is false") as err:
        ensure(remote, home / "blob.bin", allow_fetch=False)
    assert remote.url in str(err.value) and str(home / "blob.bin") in str(err.value)
    assert len(handler.hits) == before


def test_progress_line_only_when_enabled():
    out = io.StringIO()
    bar = ByteProgress(2_000_000, "HIGGS.csv.gz", stream=out, enabled=True, min_interval=0)
    bar.update(1_000_000, rows=5)
    bar.close()
    text = out.getvalue()
    assert "HIGGS.csv.gz" in text and "50%" in text and "1.0 MB/2.0 MB" in text and "5 rows" in text
    quiet = io.StringIO()
    ByteProgress(10, "x", stream=quiet).update(5)  # a StringIO is not a tty: nothing drawn
    assert quiet.getvalue() == ""


# -- the higgs preset and fetch-on-first-use ---------------------------------------------------


def _higgs_like(shared_data, n=None):
    """The first 7,500 UCI HIGGS rows (LightGBM copies) as a HIGGS.csv.gz-layout file."""
    text = b"".join(lzma.open(shared_data / f"higgs_lightgbm_{p}.tsv.xz").read() for p in ("train", "test"))
    body = text.replace(b"\t", b",")
    return gzip.compress(body, compresslevel=1), np.loadtxt(io.BytesIO(body), delimiter=",")


@pytest.fixture
def local_higgs(server, shared_data):
    """A preset like ``higgs`` whose remote is the local server (1,000-row UCI test split)."""
    from kopt_plugins.datasets.higgs import Higgs

    base, _ = server
    body, table = _higgs_like(shared_data)
    remote = _remote(base, "/HIGGS.csv.gz", body, filename="HIGGS.csv.gz")

    class LocalHiggs(Higgs):
        name = "higgs_local"
        uci_test_rows = 1000

    LocalHiggs.remote = remote

    class Plugin:
        @hookimpl
        def kopt_register_datasets(self, register):
            register(LocalHiggs)

    reg = registry()
    name = reg.register_plugin(Plugin(), name="test-higgs-local")
    try:
        yield reg, table
    finally:
        reg.unregister_plugin(name)


@pytest.mark.slow
def test_fetch_on_first_use_then_uci_split(local_higgs, home):
    reg, table = local_higgs
    ds = load_data({"source": "higgs_local", "options": {}}, registry=reg)
    assert (home / "higgs_local" / "HIGGS.csv.gz").is_file()
    assert ds.X.shape == (6500, 28) and ds.X_test.shape == (1000, 28)
    np.testing.assert_array_equal(ds.X_test, table[-1000:, 1:].astype(np.float32))
    np.testing.assert_array_equal(ds.y, table[:6500, 0])
    ds = load_data({"source": "higgs_local", "options": {"rows": 3000}, "test_fraction": 0.2, "split_seed": 0},
                   registry=reg)
    assert ds.X.shape == (2400, 28) and ds.X_test.shape == (600, 28)
    perm = np.random.default_rng(0).permutation(3000)
    np.testing.assert_array_equal(ds.X_test, table[perm[2400:], 1:].astype(np.float32))


def test_preset_fetch_disabled(local_higgs, home):
    reg, _ = local_higgs
    with pytest.raises(DataError, match="data.fetch is false"):
        load_data({"source": "higgs_local", "fetch": False}, registry=reg)
    assert not (home / "higgs_local" / "HIGGS.csv.gz").exists()


@pytest.mark.slow
def test_cli_fetch_then_verify_existing(local_higgs, home, capsys):
    assert main(["data", "fetch", "higgs_local", "--quiet"]) == 0
    path = home / "higgs_local" / "HIGGS.csv.gz"
    assert path.is_file() and capsys.readouterr().out == ""
    assert main(["data", "fetch", "higgs_local"]) == 0
    assert "already present" in capsys.readouterr().out
    path.write_bytes(b"not the file")
    assert main(["data", "fetch", "higgs_local"]) == 2
    assert "delete it" in capsys.readouterr().err


def test_real_higgs_preset_offline_message(home):
    with pytest.raises(DataError) as err:
        load_data({"source": "higgs", "fetch": False})
    msg = str(err.value)
    assert "https://archive.ics.uci.edu/ml/machine-learning-databases/00280/HIGGS.csv.gz" in msg
    assert str(home / "higgs" / "HIGGS.csv.gz") in msg and "2.8 GB" in msg


@pytest.mark.slow
def test_real_higgs_preset_reads_a_local_copy(shared_data, tmp_path):
    body, table = _higgs_like(shared_data)
    path = tmp_path / "higgs_rows.csv.gz"  # another name: the user's own file in the preset's layout
    path.write_bytes(body)
    spec = {"source": "higgs", "train": str(path), "options": {"rows": 7000}, "test_rows": 500}
    ds = load_data(spec)
    assert ds.X.shape == (6500, 28) and ds.X_test.shape == (500, 28)
    np.testing.assert_array_equal(ds.y_test, table[6500:7000, 0])
    with pytest.raises(DataError, match="test_rows=500000"):
        load_data({"source": "higgs", "train": str(path), "cache": False})  # 7,500 rows: no UCI test set
    with pytest.raises(DataError, match="file not found"):
        load_data({"source": "higgs", "train": str(tmp_path / "subset.csv")})


def test_a_data_train_file_named_like_the_preset_file_is_verified_once(shared_data, tmp_path, monkeypatch):
    """Issue 17 defect 5: a different file called HIGGS.csv.gz was trained on with exit 0."""
    from kopt.data import store

    body, _ = _higgs_like(shared_data)
    path = tmp_path / "HIGGS.csv.gz"
    path.write_bytes(body)
    hashed = []
    real = store.identify
    monkeypatch.setattr(store, "identify", lambda *a, **k: hashed.append(a[0]) or real(*a, **k))
    for _ in range(2):
        with pytest.raises(DataError, match="named like the higgs preset's HIGGS.csv.gz but matches none"):
            load_data({"source": "higgs", "train": str(path), "test_rows": 500})
    assert len(hashed) == 1  # the verdict is recorded beside the file (size + mtime), not re-hashed
    path.write_bytes(body + b"\n")
    with pytest.raises(DataError, match="matches none"):
        load_data({"source": "higgs", "train": str(path), "test_rows": 500})
    assert len(hashed) == 2
