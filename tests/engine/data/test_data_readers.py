"""Readers against the real files of ../shared/data (counts from its SOURCES.md) and round trips."""
from __future__ import annotations

import bz2
import gzip
import io
import lzma

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kopt.data import detect_format, read_table
from kopt.data.libsvm import read_libsvm


@pytest.fixture(autouse=True)
def _data_home(tmp_path_factory, monkeypatch):
    """One KOPT_DATA per test run: real files are parsed once, then served from the cache."""
    monkeypatch.setenv("KOPT_DATA", str(tmp_path_factory.getbasetemp() / "kopt_data_home"))


def labels_of(y):
    values, counts = np.unique(y, return_counts=True)
    return dict(zip(values.tolist(), counts.tolist()))


# file, options, rows, features, {label: count}, nnz (sparse files)
REAL = [
    ("higgs_lightgbm_train.tsv.xz", {}, 7000, 28, {0.0: 3284, 1.0: 3716}, None),
    ("higgs_lightgbm_test.tsv.xz", {}, 500, 28, {0.0: 228, 1.0: 272}, None),
    ("higgs_h2o_test_5k.csv.xz", {}, 5000, 28, {0.0: 2315, 1.0: 2685}, None),
    ("a9a.xz", {"n_features": 123}, 32561, 123, {-1.0: 24720, 1.0: 7841}, None),
    ("a9a.t.xz", {"n_features": 123}, 16281, 123, {-1.0: 12435, 1.0: 3846}, None),
    ("ijcnn1_trval.libsvm.bz2", {}, 49990, 22, {-1.0: 45137, 1.0: 4853}, None),
    ("w8a.xz", {}, 49749, 300, {-1.0: 48270, 1.0: 1479}, None),
    ("reuters_lasvm_test.libsvm.bz2", {"n_features": 8315}, 3299, 8315, {-1.0: 3120, 1.0: 179}, 136821),
]


@pytest.mark.slow
@pytest.mark.parametrize("name, opts, rows, cols, labels, nnz", REAL, ids=[r[0] for r in REAL])
def test_real_files_match_sources_md(shared_data, name, opts, rows, cols, labels, nnz):
    X, y, meta = read_table(shared_data / name, opts)
    assert X.shape == (rows, cols)
    assert X.dtype == np.float32 and y.dtype == np.float64
    assert labels_of(y) == labels
    if nnz is not None:
        assert hasattr(X, "tocsr") and X.nnz == nnz
    assert meta["nonfinite"] == 0


def test_cal_housing_target_last_matches_numpy(shared_data):
    X, y, meta = read_table(shared_data / "cal_housing.data.xz", {"label": -1})
    with lzma.open(shared_data / "cal_housing.data.xz", "rt") as fh:
        ref = np.loadtxt(fh, delimiter=",")
    assert X.shape == (20640, 8) and meta["header"] is None
    np.testing.assert_array_equal(X, ref[:, :8].astype(np.float32))
    np.testing.assert_array_equal(y, ref[:, 8])
    assert y.min() == 14999 and y.max() == 500001


def test_libsvm_equals_sklearn(shared_data):
    from sklearn.datasets import load_svmlight_file

    with lzma.open(shared_data / "a9a.t.xz", "rb") as fh:
        Xs, ys = load_svmlight_file(fh, n_features=123, dtype=np.float32)
    X, y, meta = read_table(shared_data / "a9a.t.xz", {"n_features": 123})
    assert hasattr(X, "tocsr") and not meta["zero_based"]
    assert (X != Xs).nnz == 0
    np.testing.assert_array_equal(y, ys)


@pytest.mark.slow
def test_sparse_auto_dense_and_on_request(shared_data):
    X, _, meta = read_table(shared_data / "ijcnn1_trval.libsvm.bz2", {})
    assert isinstance(X, np.ndarray) and meta["sparse"] is False  # about 59% non-zero: dense
    Xs, _, meta_s = read_table(shared_data / "a9a.t.xz", {"n_features": 123})
    assert hasattr(Xs, "tocsr") and meta_s["sparse"] is True  # about 11% non-zero: CSR
    Xd, _, meta_d = read_table(shared_data / "a9a.t.xz", {"n_features": 123, "sparse": False})
    assert isinstance(Xd, np.ndarray) and meta_d["sparse"] is False
    np.testing.assert_array_equal(Xs.toarray(), Xd)


def test_mnist_idx_with_sibling_labels(shared_data):
    X, y, meta = read_table(shared_data / "mnist" / "t10k-images-idx3-ubyte.gz", {})
    assert detect_format(shared_data / "mnist" / "t10k-images-idx3-ubyte.gz") == "idx"
    assert X.shape == (10000, 784) and meta["shape"] == [28, 28]
    assert labels_of(y)[1.0] == 1135 and sorted(labels_of(y)) == list(range(10))
    assert X.min() == 0 and X.max() == 255
    with gzip.open(shared_data / "mnist" / "t10k-images-idx3-ubyte.gz") as fh:
        raw = np.frombuffer(fh.read(), np.uint8)[16:]
    np.testing.assert_array_equal(X.ravel(), raw.astype(np.float32))


def _write(path, text: str):
    data = text.encode()
    opener = {".gz": gzip.open, ".xz": lzma.open, ".bz2": bz2.open}.get(path.suffix, open)
    with opener(path, "wb") as fh:
        fh.write(data)
    return path


@pytest.mark.parametrize("suffix", ["", ".gz", ".xz", ".bz2"])
def test_csv_header_label_by_name_any_compression(tmp_path, suffix):
    path = _write(tmp_path / f"t.csv{suffix}", "x1,target,x2\n1.5,0,2\n-3,1,4e-3\n")
    X, y, meta = read_table(path, {"label": "target", "cache": False})
    assert meta["header"] == ["x1", "target", "x2"] and meta["label_column"] == 1
    np.testing.assert_array_equal(X, np.array([[1.5, 2], [-3, 4e-3]], np.float32))
    np.testing.assert_array_equal(y, [0, 1])


def test_header_declared_and_detected(tmp_path):
    path = _write(tmp_path / "t.tsv", "1\t2\t3\n4\t5\t6\n")
    X, y, _ = read_table(path, {"header": True, "cache": False})
    assert X.shape == (1, 2) and y.tolist() == [4]
    X, y, meta = read_table(path, {"cache": False})  # auto: numeric first line is data
    assert X.shape == (2, 2) and meta["header"] is None
    X, y, _ = read_table(path, {"label": False, "cache": False})
    assert X.shape == (2, 3) and y is None


def test_whitespace_semicolon_and_crlf(tmp_path):
    a = _write(tmp_path / "a.txt", "1 2  3\n4 5 6\n")
    b = _write(tmp_path / "b.csv", "1;2;3\r\n4;5;6\r\n")
    for p in (a, b):
        X, y, _ = read_table(p, {"format": "csv", "cache": False})
        np.testing.assert_array_equal(X, [[2, 3], [5, 6]])
        np.testing.assert_array_equal(y, [1, 4])


def test_missing_cells_become_nan(tmp_path):
    path = _write(tmp_path / "m.csv", "y,a,b\n1,,2\n0,NA,?\n1,3,4\n")
    X, y, meta = read_table(path, {"cache": False})
    assert np.isnan(X).sum() == 3 and meta["nonfinite"] == 3
    assert meta["first_nonfinite"] == [2, "a"]


def test_libsvm_zero_and_one_based_qid_comments(tmp_path):
    one = _write(tmp_path / "one.svm", "# a comment\n+1 qid:3 1:0.5 3:2 # tail\n-1 2:1\n")
    X, y, meta = read_table(one, {"cache": False, "sparse": True})
    assert not meta["zero_based"] and X.shape == (2, 3)
    np.testing.assert_array_equal(X.toarray(), [[0.5, 0, 2], [0, 1, 0]])
    zero = _write(tmp_path / "zero.svm", "1 0:1 2:2\n0 1:3\n")
    X, y, meta = read_table(zero, {"cache": False, "sparse": False})
    assert meta["zero_based"] and isinstance(X, np.ndarray)
    np.testing.assert_array_equal(X, [[1, 0, 2], [0, 3, 0]])
    X, _, _ = read_table(zero, {"cache": False, "n_features": 5, "sparse": True})
    assert X.shape == (2, 5)


def test_npy_and_npz(tmp_path):
    A = np.arange(12, dtype=np.float64).reshape(4, 3)
    np.save(tmp_path / "a.npy", A)
    X, y, _ = read_table(tmp_path / "a.npy", {"label": -1})
    np.testing.assert_array_equal(X, A[:, :2]) and np.testing.assert_array_equal(y, A[:, 2])
    np.savez(tmp_path / "b.npz", X=A, y=np.arange(4))
    X, y, _ = read_table(tmp_path / "b.npz", {})
    assert X.dtype == np.float32 and X.shape == (4, 3) and y.tolist() == [0, 1, 2, 3]
    from scipy import sparse

    sparse.save_npz(tmp_path / "s.npz", sparse.csr_matrix(A))
    X, y, _ = read_table(tmp_path / "s.npz", {})
    assert hasattr(X, "tocsr") and y is None and np.array_equal(X.toarray(), A)


def test_streaming_blocks_equal_one_shot(tmp_path, monkeypatch):
    """Many tiny blocks (lines split across reads) give the same arrays as one block."""
    import kopt.data.stream as stream

    rng = np.random.default_rng(3)
    A = rng.standard_normal((500, 6)).astype(np.float32)
    buf = io.StringIO()
    np.savetxt(buf, A, delimiter=",", fmt="%.9g")
    path = _write(tmp_path / "s.csv.gz", buf.getvalue())
    ref_X, ref_y, _ = read_table(path, {"cache": False})
    monkeypatch.setattr(stream, "BLOCK_SIZE", 97)
    monkeypatch.setattr(stream.iter_blocks, "__defaults__", (97, 2))
    X, y, _ = read_table(path, {"cache": False})
    np.testing.assert_array_equal(X, ref_X)
    np.testing.assert_array_equal(y, ref_y)
    np.testing.assert_array_equal(X, A[:, 1:])
    X5, _, _ = read_table(path, {"cache": False, "max_rows": 123})
    np.testing.assert_array_equal(X5, A[:123, 1:])


@settings(derandomize=True, deadline=None, max_examples=25)
@given(
    n=st.integers(1, 40),
    d=st.integers(1, 6),
    seed=st.integers(0, 2**16),
    fmt=st.sampled_from(["%.9g", "%.18e", "%.3f"]),
    delim=st.sampled_from([",", "\t", " "]),
    blank=st.booleans(),
)
def test_csv_round_trip(tmp_path_factory, n, d, seed, fmt, delim, blank):
    rng = np.random.default_rng(seed)
    A = (rng.standard_normal((n, d + 1)) * 10.0 ** rng.integers(-3, 4)).astype(np.float32).astype(np.float64)
    lines = [delim.join(fmt % v for v in row) for row in A]
    if blank:
        lines.insert(len(lines) // 2, "")
    path = tmp_path_factory.mktemp("rt") / ("r.tsv" if delim == "\t" else "r.csv")
    path.write_text("\n".join(lines) + "\n")
    X, y, _ = read_table(path, {"cache": False, "label": -1})
    ref = np.array([[float(fmt % v) for v in row] for row in A])
    np.testing.assert_array_equal(X, ref[:, :d].astype(np.float32))
    np.testing.assert_array_equal(y, ref[:, d])


@settings(derandomize=True, deadline=None, max_examples=25)
@given(n=st.integers(1, 30), d=st.integers(1, 40), density=st.floats(0.0, 1.0), seed=st.integers(0, 2**16))
def test_libsvm_round_trip_against_sklearn(tmp_path_factory, n, d, density, seed):
    from scipy import sparse
    from sklearn.datasets import dump_svmlight_file

    rng = np.random.default_rng(seed)
    X = sparse.random(n, d, density=density, random_state=seed, format="csr", dtype=np.float64)
    X.data = np.round(X.data * 100, 3)
    y = rng.integers(0, 3, n).astype(np.float64)
    path = tmp_path_factory.mktemp("svm") / "r.libsvm"
    dump_svmlight_file(X, y, str(path), zero_based=False)
    X2, y2, _ = read_libsvm(str(path), n_features=d, zero_based=False, sparse=True)
    np.testing.assert_array_equal(X2.toarray(), X.toarray().astype(np.float32))
    np.testing.assert_array_equal(y2, y)
