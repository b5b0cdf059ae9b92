"""``kopt.datasets.load`` (issue 28 item 2): every preset from Python, by the CLI's cache, checksum and offline rules."""
from __future__ import annotations

import os
import sys

import numpy as np
import pytest

import kopt
from kopt.data import load_data
from kopt.plugins import registry

NAMES = kopt.datasets.names()


def _here(name):
    """Whether every file of the preset is packaged or in the (seeded) data folder."""
    preset = registry().get("dataset", name)()
    return not hasattr(preset, "status") or all(where != "missing" for _, where, _ in preset.status())


def _same(a, b):
    if a is None or b is None:
        assert a is None and b is None
        return
    if hasattr(a, "tocsr"):
        assert hasattr(b, "tocsr") and (a != b).nnz == 0 and a.shape == b.shape
    else:
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_every_preset_is_listed():
    assert {"higgs-12k", "ijcnn1", "a9a", "cal_housing", "higgs", "dai_synthetic"} <= set(NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_load_round_trips_every_preset_offline(name):
    """The arrays kopt solve trains on for ``data: {source: NAME}``; a preset whose files are not here is an
    offline error that names the URL (KOPT_OFFLINE=1 in the tests), never a download."""
    assert os.environ.get("KOPT_OFFLINE") == "1"
    if not _here(name):
        with pytest.raises(kopt.DataError, match="KOPT_OFFLINE forbids downloads; download https?://"):
            kopt.datasets.load(name)
        return
    ds = kopt.datasets.load(name)
    ref = load_data({"source": name})
    for key in ("X", "y", "X_test", "y_test"):
        _same(ds[key], getattr(ref, key))
    assert ds.X is ds["X"] and ds.name == name and ds.DESCR
    assert ds.y is None or ds.y.shape == (ds.X.shape[0],)
    X, y = kopt.datasets.load(name, return_X_y=True)
    _same(X, ds.X)
    _same(y, ds.y)


def test_options_pass_to_the_preset():
    full = kopt.datasets.load("higgs-12k")
    ds = kopt.datasets.load("higgs-12k", test_set=False)
    assert ds.X_test is None and ds.y_test is None
    _same(ds.X, full.X)
    with pytest.raises(kopt.SpecError, match="test_set: 'maybe' is not of type 'boolean'"):
        kopt.datasets.load("higgs-12k", test_set="maybe")


def test_second_load_is_served_by_the_parse_cache():
    if not _here("ijcnn1"):
        pytest.skip("ijcnn1 is not in the data folder (seeded from ../shared/data)")
    kopt.datasets.load("ijcnn1")
    assert kopt.datasets.load("ijcnn1").info["cached"] is True


def test_unknown_name_lists_the_presets():
    with pytest.raises(kopt.UnknownComponentError, match="higgs-12k"):
        kopt.datasets.load("higgs12k")


def test_as_frame_dense_and_sparse():
    pd = pytest.importorskip("pandas")
    ds = kopt.datasets.load("higgs-12k", as_frame=True)
    assert isinstance(ds.X, pd.DataFrame) and list(ds.X.columns[:2]) == ["x0", "x1"]
    assert isinstance(ds.y_test, pd.Series) and ds.y_test.name == "target"
    np.testing.assert_array_equal(ds.X.to_numpy(), kopt.datasets.load("higgs-12k").X)
    if _here("a9a"):
        sp = kopt.datasets.load("a9a", as_frame=True)
        assert sp.X.shape == (32561, 123) and isinstance(sp.X.dtypes.iloc[0], pd.SparseDtype)


def test_as_frame_without_pandas_says_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "pandas", None)  # import pandas raises ImportError
    with pytest.raises(kopt.KoptError, match="needs pandas: pip install pandas"):
        kopt.datasets.load("higgs-12k", as_frame=True)
