"""Splits, standardisation, label coding and the median-heuristic bandwidth."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.spatial.distance import pdist

from kopt.contract.bandwidth import median_distance, subsample_rows
from kopt.data import Preprocessor, load_data, read_table, split_fraction
from kopt.data.preprocess import column_stats


@pytest.fixture(autouse=True)
def _data_home(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("KOPT_DATA", str(tmp_path_factory.getbasetemp() / "kopt_data_home"))


def test_cal_housing_split_rule_of_benchmarks_md(shared_data):
    """split_seed=0, test_fraction=0.2: train = perm[:16512], test = perm[16512:]."""
    path = str(shared_data / "cal_housing.data.xz")
    X, y, _ = read_table(path, {"label": -1})
    ds = load_data({"train": path, "label": -1, "test_fraction": 0.2, "split_seed": 0})
    perm = np.random.default_rng(0).permutation(20640)
    assert ds.X.shape == (16512, 8) and ds.X_test.shape == (4128, 8)
    np.testing.assert_array_equal(ds.X, X[perm[:16512]])
    np.testing.assert_array_equal(ds.y_test, y[perm[16512:]])
    assert ds.info["split"] == "test_fraction=0.2, split_seed=0"


@pytest.mark.slow
@settings(derandomize=True, deadline=None, max_examples=40)
@given(n=st.integers(2, 500), frac=st.floats(0.01, 0.99), seed=st.integers(0, 10**6))
def test_split_fraction_partitions_the_rows(n, frac, seed):
    X = np.arange(n, dtype=np.float32)[:, None]
    n_test = int(np.floor(frac * n + 0.5))
    if not 1 <= n_test < n:
        return
    Xtr, ytr, Xte, yte = split_fraction(X, X[:, 0].astype(np.float64), frac, seed)
    assert Xte.shape[0] == n_test
    assert sorted(np.concatenate([Xtr[:, 0], Xte[:, 0]]).tolist()) == list(range(n))
    np.testing.assert_array_equal(ytr, Xtr[:, 0])


def test_test_rows_takes_the_last_rows_without_copy(shared_data):
    ds = load_data({"train": str(shared_data / "mnist" / "t10k-images-idx3-ubyte.gz"), "test_rows": 2000})
    X, y, _ = read_table(shared_data / "mnist" / "t10k-images-idx3-ubyte.gz", {})
    assert ds.X.shape == (8000, 784) and ds.X_test.shape == (2000, 784)
    np.testing.assert_array_equal(ds.y_test, y[8000:])
    assert np.shares_memory(ds.X, ds.X_test) or ds.X.base is not None


def test_higgs_12k_standard_split(shared_data):
    ds = load_data({"train": [str(shared_data / "higgs_lightgbm_train.tsv.xz"),
                              str(shared_data / "higgs_lightgbm_test.tsv.xz")],
                    "test": str(shared_data / "higgs_h2o_test_5k.csv.xz")})
    assert ds.X.shape == (7500, 28) and ds.X_test.shape == (5000, 28)
    assert np.unique(ds.y).tolist() == [0.0, 1.0]


def test_binary_labels_map_to_pm1_and_back():
    X = np.zeros((4, 2))
    pre = Preprocessor.fit(X, np.array([3, 7, 7, 3]), "binary", source="f")
    np.testing.assert_array_equal(pre.encode([3, 7, 3]), [-1.0, 1.0, -1.0])
    np.testing.assert_array_equal(pre.decode(np.array([-0.2, 0.4, 2.0])), [3, 7, 7])
    restored = Preprocessor.from_file(pre.to_meta(), pre.to_arrays())
    np.testing.assert_array_equal(restored.decode(np.array([1.0, -1.0])), [7, 3])


def test_multiclass_ids_and_real_targets(shared_data):
    _, y, _ = read_table(shared_data / "mnist" / "t10k-images-idx3-ubyte.gz", {})
    pre = Preprocessor.fit(np.zeros((y.size, 1)), y, "multiclass", source="mnist")
    assert pre.classes.tolist() == list(range(10))
    np.testing.assert_array_equal(pre.encode(y[:5]), y[:5].astype(int))
    reg = Preprocessor.fit(np.zeros((3, 1)), np.array([1.0, 2.0, 6.0]), "real", standardize_target=True)
    z = reg.encode([1.0, 2.0, 6.0])
    assert abs(z.mean()) < 1e-12 and abs(z.std() - 1) < 1e-12
    np.testing.assert_allclose(reg.decode(z), [1.0, 2.0, 6.0])


def test_zscore_uses_training_statistics_and_never_writes_the_input(shared_data):
    ds = load_data({"train": str(shared_data / "cal_housing.data.xz"), "label": -1, "test_fraction": 0.2,
                    "split_seed": 0})
    pre = Preprocessor.fit(ds.X, ds.y, "real")
    ref = np.asarray(ds.X, np.float64)
    np.testing.assert_allclose(pre.mean, ref.mean(axis=0), rtol=1e-12)
    np.testing.assert_allclose(pre.scale, ref.std(axis=0), rtol=1e-10)
    before = ds.X_test.copy()
    Z = pre.transform(ds.X_test)
    np.testing.assert_array_equal(ds.X_test, before)
    expect = ((before - pre.mean.astype(np.float32)) / pre.scale.astype(np.float32)).astype(np.float32)
    np.testing.assert_array_equal(Z, expect)
    restored = Preprocessor.from_file(pre.to_meta(), pre.to_arrays())
    np.testing.assert_array_equal(restored.transform(ds.X_test), Z)


def test_column_stats_exact_with_large_offsets():
    rng = np.random.default_rng(1)
    X = (1e6 + rng.standard_normal((200_001, 3))).astype(np.float64)
    mean, std = column_stats(X)
    np.testing.assert_allclose(mean, X.mean(axis=0), rtol=1e-13)
    np.testing.assert_allclose(std, X.std(axis=0), rtol=1e-9)


def test_median_distance_dense_matches_pdist():
    rng = np.random.default_rng(2)
    X = rng.standard_normal((300, 5))
    assert median_distance(X, "l2", 1000) == pytest.approx(np.median(pdist(X)), rel=1e-10)
    assert median_distance(X, "l1", 1000) == pytest.approx(np.median(pdist(X, "cityblock")), rel=1e-12)
    idx = subsample_rows(300, 100, seed=4)
    assert median_distance(X, "l2", 100, seed=4) == pytest.approx(np.median(pdist(X[idx])), rel=1e-10)
    assert median_distance(X, "l2", 100, seed=4) != median_distance(X, "l2", 100, seed=5)


def test_median_distance_sparse_equals_dense(shared_data):
    X, _, _ = read_table(shared_data / "a9a.t.xz", {"n_features": 123})
    assert hasattr(X, "tocsr")
    D = X.toarray()
    for metric in ("l2", "l1"):
        assert median_distance(X, metric, 300, seed=1) == pytest.approx(median_distance(D, metric, 300, seed=1),
                                                                        rel=1e-12)
    ref = np.median([d for d in pdist(D[subsample_rows(D.shape[0], 300, 1)], "cityblock") if d > 0])
    assert median_distance(X, "l1", 300, seed=1) == pytest.approx(ref)


def test_median_heuristic_reaches_the_kernel(shared_data):
    from kopt.running.assemble import build_kernel
    from kopt.spec import load_spec

    X = np.random.default_rng(3).standard_normal((500, 4)).astype(np.float32)
    spec = load_spec({"model": {"loss": {"name": "square"},
                                "kernel": {"name": "gaussian", "bandwidth": "median", "bandwidth_factor": 0.5,
                                           "bandwidth_subsample": 200},
                                "form": "dual"},
                      "solver": {"name": "krr_exact"}, "backend": "numpy"})
    kernel = build_kernel(spec, X)
    assert kernel.bandwidth == pytest.approx(0.5 * median_distance(X, "l2", 200, seed=spec["seed"]))
