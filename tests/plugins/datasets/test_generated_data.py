"""Generated sets at scale (kopt/data/generated.py, the deformed-digits and higgs-shaped presets):
seeded, resumable, never torn, test rows apart from the training sources, the stated Bayes accuracy."""
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from kopt.data import load_data
from kopt.data.generated import Layout, find_entry, materialize
from kopt_plugins.datasets import digits as dg
from kopt_plugins.datasets import higgs_shaped as hs


@pytest.fixture
def data_home(tmp_path, monkeypatch):
    """An empty data folder of its own (the generated sets land in it)."""
    monkeypatch.setenv("KOPT_DATA", str(tmp_path))
    return tmp_path


@pytest.fixture
def digits_home(seeded_data, data_home):
    """An empty data folder that holds the mnist preset's files (a link to the seeded folder's)."""
    os.symlink(seeded_data / "mnist", data_home / "mnist")
    return data_home


def higgs(**options):
    return load_data({"source": "higgs-shaped", "options": {"test_rows": 2000, **options}})


# -- the store ----------------------------------------------------------------------------------------
def _layout(rows=10, chunk=3):
    return Layout("toy", {"v": 1}, rows, 2, "float32", chunk)


def _chunk(k, lo, hi):
    rows = np.arange(lo, hi, dtype=np.float32)
    return np.stack([rows, rows * 2], axis=1), rows.astype(np.float64) + k


def _test():
    return np.ones((4, 2), np.float32), np.zeros(4)


def test_an_interrupted_generation_leaves_no_entry_and_resumes_where_it_stopped(data_home):
    calls = []

    def failing(k, lo, hi):
        calls.append(k)
        if k == 2:
            raise KeyboardInterrupt
        return _chunk(k, lo, hi)

    with pytest.raises(KeyboardInterrupt):
        materialize(_layout(), failing, _test, progress=False)
    assert find_entry(_layout()) is None  # nothing a reader could take for the set
    calls.clear()

    def counting(k, lo, hi):
        calls.append(k)
        return _chunk(k, lo, hi)

    X, y, Xt, yt, info = materialize(_layout(), counting, _test, progress=False)
    assert calls == [2, 3] and info["resumed_at_row"] == 6  # chunks 0 and 1 were kept
    np.testing.assert_array_equal(X[:, 0], np.arange(10))
    np.testing.assert_array_equal(y, np.arange(10) + np.arange(10) // 3)
    assert not X.flags.writeable
    calls.clear()
    materialize(_layout(), counting, _test, progress=False)
    assert calls == []  # read back, not generated again


def test_a_larger_entry_serves_fewer_rows(data_home):
    materialize(_layout(rows=10), _chunk, _test, progress=False)
    X, y, *_ , info = materialize(_layout(rows=7), lambda *a: pytest.fail("generated again"), _test, progress=False)
    assert X.shape == (7, 2) and info["rows_stored"] == 10
    np.testing.assert_array_equal(y, (np.arange(10) + np.arange(10) // 3)[:7])


@pytest.mark.slow
def test_a_broken_entry_is_generated_again(data_home):
    materialize(_layout(), _chunk, _test, progress=False)
    entry = find_entry(_layout())
    with open(entry / "meta.json", encoding="utf-8") as fh:
        meta = json.load(fh)
    meta["rows"] = 11
    with open(entry / "meta.json", "w", encoding="utf-8") as fh:
        json.dump(meta, fh)
    with pytest.warns(UserWarning, match="broken generated data set"):
        X, *_ = materialize(_layout(), _chunk, _test, progress=False)
    np.testing.assert_array_equal(X[:, 1], 2 * np.arange(10))
    os.truncate(entry / "X.npy", 200)
    with pytest.warns(UserWarning, match="broken generated data set"):
        X, *_ = materialize(_layout(), _chunk, _test, progress=False)
    np.testing.assert_array_equal(X[:, 1], 2 * np.arange(10))


@pytest.mark.slow
def test_a_killed_generation_resumes_to_the_same_bytes(data_home, tmp_path_factory):
    """kill -9 in the middle of a run: no entry; the next load resumes and gives the uninterrupted rows."""
    script = textwrap.dedent("""
        import os, signal
        from kopt_plugins.datasets import higgs_shaped as hs
        from kopt.data import load_data
        hs.CHUNK_ROWS = 1000
        make = hs.sample
        def dying(rng, n, relevant, noise):
            dying.calls += 1
            if dying.calls == 5:  # the test rows, then chunks 0-2 are written; die in chunk 3
                os.kill(os.getpid(), signal.SIGKILL)
            return make(rng, n, relevant, noise)
        dying.calls = 0
        hs.sample = dying
        load_data({"source": "higgs-shaped", "options": {"rows": 9000, "test_rows": 500}})
    """)
    proc = subprocess.run([sys.executable, "-c", script], env=dict(os.environ), capture_output=True, timeout=120)
    assert proc.returncode == -9, proc.stderr
    assert not [p for p in (data_home / "generated").iterdir() if p.name.startswith("higgs-shaped")]
    hs_chunk = hs.CHUNK_ROWS
    try:
        hs.CHUNK_ROWS = 1000
        ds = load_data({"source": "higgs-shaped", "options": {"rows": 9000, "test_rows": 500}})
        assert ds.info["generated_resumed_at_row"] == 3000
        os.environ["KOPT_DATA"] = str(tmp_path_factory.mktemp("fresh"))
        fresh = load_data({"source": "higgs-shaped", "options": {"rows": 9000, "test_rows": 500}})
    finally:
        hs.CHUNK_ROWS = hs_chunk
    np.testing.assert_array_equal(ds.X, fresh.X)
    np.testing.assert_array_equal(ds.y, fresh.y)
    np.testing.assert_array_equal(ds.X_test, fresh.X_test)


# -- higgs-shaped -------------------------------------------------------------------------------------
def test_higgs_shaped_is_seeded_and_its_test_rows_do_not_depend_on_the_size(data_home, tmp_path_factory):
    a = higgs(rows=3000)
    b = higgs(rows=3000, seed=1)
    assert a.X.shape == (3000, 28) and a.X.dtype == np.float32 and set(np.unique(a.y)) == {0.0, 1.0}
    assert not np.array_equal(a.X, b.X) and not np.array_equal(a.X_test, b.X_test)
    os.environ["KOPT_DATA"] = str(tmp_path_factory.mktemp("again"))
    again = higgs(rows=3000)
    np.testing.assert_array_equal(a.X, again.X)
    np.testing.assert_array_equal(a.y, again.y)
    bigger = higgs(rows=5000)
    np.testing.assert_array_equal(bigger.X[:3000], a.X)  # chunks depend on their index, not the row count
    np.testing.assert_array_equal(bigger.X_test, a.X_test)


def test_higgs_shaped_bayes_accuracy_is_what_the_docs_state(data_home):
    ds = load_data({"source": "higgs-shaped", "options": {"rows": 100, "test_rows": 40_000, "noise": 0.1}})
    assert ds.info["bayes_accuracy"] == 0.9
    acc = np.mean((hs.decision(ds.X_test) > 0) == (ds.y_test == 1))
    assert abs(acc - 0.9) < 4 * np.sqrt(0.9 * 0.1 / 40_000)  # the true rule scores the stated accuracy
    assert abs(ds.y_test.mean() - 0.5) < 0.02  # balanced classes
    clean = load_data({"source": "higgs-shaped", "options": {"rows": 100, "test_rows": 5000, "noise": 0.0}})
    assert np.array_equal(hs.decision(clean.X_test) > 0, clean.y_test == 1)
    # only the first `relevant` columns decide: permuting a noise column changes nothing
    X = np.array(ds.X_test[:1000])
    X[:, 10] = X[::-1, 10]
    np.testing.assert_array_equal(hs.decision(X) > 0, hs.decision(ds.X_test[:1000]) > 0)


# -- deformed digits ----------------------------------------------------------------------------------
def digits(name="deformed-digits", **options):
    return load_data({"source": name, "options": {"rows": 300, **options}})


@pytest.mark.slow
def test_deformed_digits_test_rows_are_real_held_out_digits(digits_home):
    mnist, labels = dg.mnist_digits()
    plain = digits(elastic_alpha=0, max_rotation=0, max_shift=0, rows=8100)
    # with no deformation, row i is source digit i mod 8000: the first 8,000 mnist digits, never a test one
    np.testing.assert_array_equal(plain.X[:8000], mnist[:8000])
    np.testing.assert_array_equal(plain.X[8000:], mnist[:100])
    np.testing.assert_array_equal(plain.X_test, mnist[8000:])
    np.testing.assert_array_equal(plain.y_test, labels[8000:])
    binary = digits("deformed-digits-8v6", elastic_alpha=0, max_rotation=0, max_shift=0, test_digits=3000)
    src, test = dg.split_rows(labels, 3000, [6, 8])
    assert set(np.unique(binary.y)) == {6.0, 8.0} and set(np.unique(binary.y_test)) == {6.0, 8.0}
    np.testing.assert_array_equal(binary.X, mnist[src[:300]])
    np.testing.assert_array_equal(binary.X_test, mnist[test])
    assert src.max() < 7000 <= test.min() and np.isin(labels[test], [6, 8]).all()


@pytest.mark.slow
def test_deformed_digits_are_seeded_deformations_in_the_pixel_scale(digits_home, tmp_path_factory):
    mnist, _ = dg.mnist_digits()
    a = digits()
    assert a.X.dtype == np.float32 and a.X.shape == (300, 784) and a.X_test.shape == (2000, 784)
    assert a.X.min() == 0 and a.X.max() == 255 and np.array_equal(a.X, np.rint(a.X))  # integers 0..255
    assert not np.array_equal(a.X, mnist[:300])  # deformed
    # row i is a deformation of source digit i: mostly more alike to it than to the next source digit
    def cosine(A, B):
        A, B = np.asarray(A, np.float64), np.asarray(B, np.float64)
        return (A * B).sum(1) / np.linalg.norm(A, axis=1) / np.linalg.norm(B, axis=1)

    own, other = cosine(a.X, mnist[:300]), cosine(a.X, mnist[1:301])
    assert np.mean(own > other) > 0.8 and own.mean() > 0.5  # a wrong source map gives about 0.5
    assert not np.array_equal(a.X, digits(seed=1).X)
    small = digits(dtype="uint8")
    assert small.X.dtype == np.uint8
    np.testing.assert_array_equal(small.X, a.X)  # the same pixels, stored in a quarter of the bytes
    again = tmp_path_factory.mktemp("again")
    os.symlink(os.readlink(digits_home / "mnist"), again / "mnist")
    os.environ["KOPT_DATA"] = str(again)  # a fresh folder: generated anew
    np.testing.assert_array_equal(digits().X, a.X)


def test_deform_moves_pixels_only_as_asked():
    rng = np.random.default_rng(0)
    img = np.zeros((1, 28, 28), np.float32)
    img[0, 10:14, 12:16] = 200
    same = dg.deform(img, rng, alpha=0, max_rotation=0, max_shift=0)
    np.testing.assert_array_equal(same, img)
    moved = dg.bilinear(img, *np.meshgrid(np.arange(28.0) - 1, np.arange(28.0), indexing="ij"))
    np.testing.assert_array_equal(moved[0, 11:15, 12:16], img[0, 10:14, 12:16])  # shifted down one row
    far = dg.bilinear(img, np.full((1, 28, 28), -7.5, np.float32), np.full((1, 28, 28), 40.0, np.float32))
    assert not far.any()  # outside the image is zero
    G = dg.smoothing_matrix(4.0)
    from scipy import ndimage

    v = rng.standard_normal(28)
    np.testing.assert_allclose(G @ v, ndimage.gaussian_filter1d(v, 4.0), atol=1e-5)


def test_rows_above_the_limit_are_refused(data_home):
    with pytest.raises(ValueError, match="rows: 20000000 is greater than the maximum of 10000000"):
        higgs(rows=20_000_000)
