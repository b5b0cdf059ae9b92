"""The parsed-array cache: memory-mapped hits, invalidation by file state and options, robustness."""
from __future__ import annotations

import gzip
import io
import os
import warnings

import numpy as np
import pytest

from kopt.data import cache, read_table


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("KOPT_DATA", str(tmp_path / "home"))
    return tmp_path / "home" / "cache"


@pytest.fixture(scope="module")
def _table():
    rng = np.random.default_rng(0)
    A = rng.standard_normal((300, 301)).astype(np.float32)
    A[:, 0] = rng.integers(0, 2, 300)
    buf = io.StringIO()
    np.savetxt(buf, A, delimiter=",", fmt="%.9g")
    return A, gzip.compress(buf.getvalue().encode(), compresslevel=1)


@pytest.fixture
def big_csv(tmp_path, _table):
    """A gzip CSV large enough to be cached (300 x 301 values)."""
    A, body = _table
    path = tmp_path / "big.csv.gz"
    path.write_bytes(body)
    return path, A


def entries(home):
    return sorted(p.name for p in home.iterdir()) if home.exists() else []


def test_second_read_is_a_read_only_memory_map(home, big_csv):
    path, A = big_csv
    X1, y1, m1 = read_table(path, {})
    assert not m1["cached"] and len(entries(home)) == 1
    X2, y2, m2 = read_table(path, {})
    assert m2["cached"] and m2["cache"] == str(home / entries(home)[0])
    assert isinstance(X2.base, np.memmap) and not X2.flags.writeable
    np.testing.assert_array_equal(X2, X1)
    np.testing.assert_array_equal(X2, A[:, 1:])
    np.testing.assert_array_equal(y2, A[:, 0])


def test_options_are_part_of_the_key(home, big_csv):
    path, A = big_csv
    read_table(path, {})
    X, y, m = read_table(path, {"label": -1})
    assert not m["cached"] and len(entries(home)) == 2
    np.testing.assert_array_equal(y.astype(np.float32), A[:, -1])
    X, y, m = read_table(path, {"max_rows": 10})
    assert X.shape == (10, 300) and not m["cached"]


@pytest.mark.slow
def test_changed_file_misses_and_replaces_the_stale_entry(home, big_csv):
    path, A = big_csv
    read_table(path, {})
    old = entries(home)
    B = A.copy()
    B[:, 1] += 1
    with gzip.open(path, "wt") as fh:
        np.savetxt(fh, B, delimiter=",", fmt="%.9g")
    st = os.stat(path)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    X, _, m = read_table(path, {})
    assert not m["cached"]
    np.testing.assert_array_equal(X[:, 0], B[:, 1])
    assert len(entries(home)) == 1 and entries(home) != old


def test_cache_false_and_small_files_write_nothing(home, big_csv, tmp_path):
    path, _ = big_csv
    read_table(path, {"cache": False})
    small = tmp_path / "small.csv"
    small.write_text("1,2\n3,4\n")
    read_table(small, {})
    assert entries(home) == []


def test_broken_entry_is_discarded_and_reparsed(home, big_csv):
    path, A = big_csv
    read_table(path, {})
    (home / entries(home)[0] / "X.npy").write_bytes(b"garbage")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        X, _, m = read_table(path, {})
    assert not m["cached"] and any("broken data cache entry" in str(w.message) for w in caught)
    np.testing.assert_array_equal(X, A[:, 1:])
    assert read_table(path, {})[2]["cached"]


def test_entries_of_deleted_sources_are_pruned(home, big_csv, tmp_path):
    path, A = big_csv
    other = tmp_path / "other.csv.gz"
    other.write_bytes(path.read_bytes())
    read_table(other, {})
    os.unlink(other)
    read_table(path, {})
    assert len(entries(home)) == 1 and entries(home)[0].startswith("big.csv.gz-")


def test_sparse_entries_round_trip(home, shared_data):
    X1, y1, _ = read_table(shared_data / "a9a.t.xz", {"n_features": 123})
    X2, y2, m = read_table(shared_data / "a9a.t.xz", {"n_features": 123})
    assert m["cached"] and hasattr(X2, "tocsr")
    assert (X1 != X2).nnz == 0 and np.array_equal(y1, y2)


def test_growing_buffer_ends_at_the_exact_size(home, big_csv, monkeypatch):
    """Many small blocks: the in-place growth (estimated from the bytes read) trims to n rows."""
    import kopt.data.stream as stream

    path, A = big_csv
    monkeypatch.setattr(stream.iter_blocks, "__defaults__", (4096, 2))
    X, y, _ = read_table(path, {"cache": False})
    assert X.shape == (300, 300) and X.flags.c_contiguous and X.flags.owndata
    np.testing.assert_array_equal(X, A[:, 1:])
    state = cache.source_state([path])
    assert cache.entry_dir([path], {"a": 1}, state) != cache.entry_dir([path], {"a": 2}, state)


@pytest.mark.parametrize("what", ["value", "record"])
def test_an_altered_entry_is_detected_and_reparsed(home, big_csv, what):
    """A changed value in a cached array (same size, the header intact) or in meta.json is caught
    by the entry's checksums: one warning, then the file is parsed again."""
    path, A = big_csv
    read_table(path, {})
    entry = home / entries(home)[0]
    if what == "value":
        X = np.load(entry / "X.npy", mmap_mode="r+")
        X[5, 7] += 1.0
        X.flush()
        del X
    else:
        text = (entry / "meta.json").read_text()
        (entry / "meta.json").write_text(text.replace('"has_y": true', '"has_y": false'))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        X, y, m = read_table(path, {})
    messages = [str(w.message) for w in caught]
    assert not m["cached"] and len(messages) == 1 and "altered" in messages[0] and "\n" not in messages[0]
    np.testing.assert_array_equal(X, A[:, 1:])
    np.testing.assert_array_equal(y, A[:, 0])


def test_storing_an_entry_removes_the_folders_of_killed_writers_only(home, big_csv):
    import fcntl

    path, _ = big_csv
    (home / ".tmp-dead-x1").mkdir(parents=True)
    (home / ".tmp-dead-x1" / "X.npy").write_bytes(b"half")
    (home / ".tmp-live-x2").mkdir()
    fd = os.open(home / ".tmp-live-x2", os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # what a writer in another process holds
        read_table(path, {})
    finally:
        os.close(fd)
    names = sorted(p.name for p in home.iterdir())
    assert ".tmp-dead-x1" not in names and ".tmp-live-x2" in names and len(names) == 2
