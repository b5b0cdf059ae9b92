"""Issue 26 item 1: the parse cache never holds, and no run ever trains on, rows the file does not hold.

A file that another process truncates or appends to while kopt parses it is refused ("the file changed
while it was read", exit 2), and the cache entry is keyed by the file's state *before* the read, so a torn
read can be stored under no key a later run looks up.  The fault-injection loop below changes the file at
a seeded random point of the read (after a random block of the reader, or after the last one), by a
truncation at a random byte, an append of random rows, or both; every later run must return exactly the
rows the file holds then, first parsed and then from the cache.
"""
from __future__ import annotations

import io
import os

import numpy as np
import pytest

import kopt.data.csvstream as csvstream
from kopt.data import cache, read_table
from kopt.errors import DataError

ROWS, COLS = 6000, 14  # 78,000 values: over cache.MIN_VALUES, so the parse is cached


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("KOPT_DATA", str(tmp_path / "home"))
    return tmp_path / "home" / "cache"


def _rows(rng, n):
    A = rng.standard_normal((n, COLS)).round(3)
    A[:, 0] = rng.integers(0, 2, n)
    buf = io.StringIO()
    np.savetxt(buf, A, delimiter=",", fmt="%.3f")
    return buf.getvalue().encode()


def _holds(path):
    """The (X, y) the file holds now, parsed by NumPy (the reference)."""
    A = np.loadtxt(path, delimiter=",", ndmin=2)
    return A[:, 1:].astype(np.float32), A[:, 0]


def _change(path, rng, how):
    """Truncate ``path`` at a random line end, append random rows, or both (the file stays a valid table)."""
    if how in ("truncate", "both"):
        data = path.read_bytes()
        cut = data.rfind(b"\n", 0, int(rng.integers(len(data) // 10, len(data)))) + 1
        with open(path, "r+b") as fh:
            fh.truncate(cut)
    if how in ("append", "both"):
        with open(path, "ab") as fh:
            fh.write(_rows(rng, int(rng.integers(1, 800))))


def _changing_at(point, path, rng, how, original):
    """``iter_blocks`` that changes ``path`` after block ``point`` (or after the last block)."""

    def blocks(p, block_size=None, prefetch=2):
        n = 0
        for block in original(p, 8192, prefetch):
            yield block
            n += 1
            if n == point:
                _change(path, rng, how)
        if n < point:  # after the last block: between the parse and the check
            _change(path, rng, how)

    return blocks


@pytest.mark.slow
def test_a_change_during_the_read_is_refused_and_no_later_run_sees_rows_the_file_lacks(home, tmp_path,
                                                                                     monkeypatch):
    rng = np.random.default_rng(2026)
    original = csvstream.iter_blocks
    path = tmp_path / "table.csv"
    refused = 0
    for trial in range(24):
        path.write_bytes(_rows(rng, ROWS))
        how = ("truncate", "append", "both")[trial % 3]
        point = int(rng.integers(1, 40))  # the file is ~20 blocks of 8 KiB: some points fall after the last
        monkeypatch.setattr(csvstream, "iter_blocks", _changing_at(point, path, rng, how, original))
        with pytest.raises(DataError, match="changed while it was read"):
            read_table(path, {})
        refused += 1
        monkeypatch.setattr(csvstream, "iter_blocks", original)
        X_ref, y_ref = _holds(path)
        for expect_cached in (False, True):  # parsed again, then memory-mapped from the new entry
            X, y, meta = read_table(path, {})
            assert meta["cached"] is expect_cached or X.size < cache.MIN_VALUES
            np.testing.assert_array_equal(X, X_ref)
            np.testing.assert_array_equal(y, y_ref)
    assert refused == 24


def test_the_entry_is_keyed_by_the_state_before_the_read(home, tmp_path, monkeypatch):
    """The reported defect: the key was taken after the parse, so rows of the old content were stored
    under the truncated file's key and used by every later run (299,618 rows of a 200,023-row file).
    Here the file is truncated after the parse but before the check would run: nothing may be stored
    under the new state's key."""
    rng = np.random.default_rng(7)
    path = tmp_path / "t.csv"
    path.write_bytes(_rows(rng, ROWS))
    original = csvstream.iter_blocks
    monkeypatch.setattr(csvstream, "iter_blocks", _changing_at(10 ** 6, path, rng, "truncate", original))
    with pytest.raises(DataError, match=r"t\.csv: the file changed while it was read \(its size went from"):
        read_table(path, {})
    monkeypatch.setattr(csvstream, "iter_blocks", original)
    assert not home.exists() or not [p for p in home.iterdir() if not p.name.startswith(".")]
    state = cache.source_state([path])
    assert cache.load([str(path)], {"x": 1}, state) is None
    X, _, meta = read_table(path, {})
    assert not meta["cached"] and X.shape[0] == _holds(path)[0].shape[0]


def test_an_unchanged_file_is_cached_under_its_state(home, tmp_path):
    path = tmp_path / "ok.csv"
    path.write_bytes(_rows(np.random.default_rng(1), ROWS))
    _, _, first = read_table(path, {})
    _, _, second = read_table(path, {})
    assert not first["cached"] and second["cached"]
    os.utime(path, ns=(os.stat(path).st_atime_ns, os.stat(path).st_mtime_ns + 10 ** 9))  # touched: a new state
    _, _, third = read_table(path, {})
    assert not third["cached"]
