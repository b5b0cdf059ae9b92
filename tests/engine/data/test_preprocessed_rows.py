"""The rows the preprocessor hands the solvers: ``data.column_scales`` leaves a column of scale 0 out (solver auto's
column search writes such scales, so a model of 6 informative columns of 28 evaluates its kernel on 6; model files
written before keep such columns as zeros and still score as they did), and memory-mapped rows' pages go back once
read."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

import kopt
from kopt.data import Preprocessor
from kopt.errors import DataError


def _data(n=600, d=5, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d)) * np.arange(1, d + 1) + 3.0
    y = np.sign(X[:, 0] - 3.0 + 0.5 * (X[:, 2] - 3.0) + 0.3 * rng.standard_normal(n))
    return X, y


def _spec(scales):
    return {"data": {"column_scales": scales},
            "model": {"loss": {"name": "square", "target": "binary"},
                      "kernel": {"name": "gaussian", "bandwidth": 1.5},
                      "regularizer": {"name": "l2", "lambda": 1e-3}, "features": {"kind": "nystrom", "count": 64}},
            "solver": {"name": "krr_nystrom"}, "output": {"model": False, "report": False}}


def test_zero_scaled_columns_are_left_out_and_the_model_is_the_one_of_the_kept_columns():
    X, y = _data()
    keep = [0, 2, 3]
    scales = [1.0, 0.0, 0.5, 2.0, 0.0]
    r = kopt.solve(_spec(scales), data=(X[:500], y[:500], X[500:], y[500:]))
    # the same data with those columns removed up front: the same standardized rows, so the same model, bit for bit
    narrow = kopt.solve(_spec([scales[j] for j in keep]),
                        data=(X[:500, keep], y[:500], X[500:, keep], y[500:]))
    assert r.model.predictor.arrays["support"].shape[1] == 3  # the centers hold the kept columns only
    np.testing.assert_array_equal(r.model.decision_function(X[500:]), narrow.model.decision_function(X[500:, keep]))
    assert r.report["data"]["n_features"] == 3  # the columns the kernel sees
    assert r.model.n_features_in == 5  # the model still reads the user's 5 columns


def test_the_preprocessor_leaves_them_out_of_dense_and_sparse_rows_and_old_files_keep_them():
    X, y = _data(n=50)
    pre = Preprocessor.fit(X, y, "binary", column_scales=[1.0, 0.0, 0.5, 2.0, 0.0])
    Z = pre.transform(X)
    assert Z.shape == (50, 3) and list(pre.kept_columns) == [0, 2, 3]
    full = (X - X.mean(0)) / X.std(0)
    np.testing.assert_allclose(Z, (full * [1.0, 0.0, 0.5, 2.0, 0.0])[:, [0, 2, 3]], rtol=1e-5, atol=1e-6)
    S = pre.transform(sp.csr_matrix(np.where(X > 4.0, X, 0.0)))  # sparse rows: scaled, not centered
    assert S.shape == (50, 3)
    # a file of a model that kept zero columns (written before they were left out) reads them as before
    back = Preprocessor.from_file({k: v for k, v in pre.to_meta().items() if k != "drops_zero_columns"},
                                  pre.to_arrays())
    assert back.kept_columns is None and back.transform(X).shape == (50, 5)
    again = Preprocessor.from_file(pre.to_meta(), pre.to_arrays())
    np.testing.assert_array_equal(again.transform(X), Z)


def test_scales_that_drop_every_column_are_refused_by_name():
    X, y = _data(n=50)
    with pytest.raises(DataError, match="column_scales drops every one of the 5 columns"):
        Preprocessor.fit(X, y, "binary", column_scales=[0.0] * 5)


def _mapped_rss_kb(path):
    """The resident kilobytes of this process's mappings of ``path`` (/proc/self/smaps)."""
    total, inside = 0, False
    with open("/proc/self/smaps") as fh:
        for line in fh:
            head = line.split()
            if len(head) >= 5 and "-" in head[0] and ":" in head[3]:  # a mapping's first line
                inside = len(head) >= 6 and head[5] == str(path)
            elif inside and line.startswith("Rss:"):
                total += int(head[1])
    return total


@pytest.mark.skipif(not __import__("os").path.exists("/proc/self/smaps"), reason="reads /proc/self/smaps (Linux)")
def test_the_transform_hands_the_pages_of_memory_mapped_rows_back(tmp_path):
    """Rows memory-mapped from a file (generated and cached sets) are read once by the transform, a block at a time, and
    each block's pages are handed back: the map holds at most a block's pages afterwards, not a second copy of the
    rows; the result is the in-memory transform's."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((400_000, 16)).astype(np.float32)  # 25.6 MB
    path = tmp_path / "X.npy"
    np.save(path, X)
    mapped = np.load(path, mmap_mode="r")
    pre = Preprocessor.fit(X[:1000], None, "real")
    Z = pre.transform(mapped)
    np.testing.assert_array_equal(Z, pre.transform(X))
    assert _mapped_rss_kb(path) < 4 * 1024  # 25,000 kB were resident before the pages were handed back
    del mapped
