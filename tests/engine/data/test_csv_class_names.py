"""CSV files as pandas writes them (issue 40): class names as labels, the label column found by its header name,
predictions in the user's own class names, ``-o`` for ``--out``, auto's CuPy fall-back said only where it helps."""
from __future__ import annotations

import json
import logging

import numpy as np
import pytest

pd = pytest.importorskip("pandas")

import kopt.numerics.backend  # noqa: E402
from kopt.cli import build_parser, main, summary  # noqa: E402
from kopt.data import load_data  # noqa: E402
from kopt.data.readers import read_table  # noqa: E402
from kopt.errors import DataError  # noqa: E402
from kopt.models.model import load_model  # noqa: E402

SPEC = """\
name: mine
data: {{train: {train}{extra}}}
model:
  loss: {{name: {loss}}}
  kernel: {{name: gaussian}}
output: {{dir: out}}
"""


def frame(n=400, seed=0, classes=("no", "yes"), label="label"):
    """Five features f0..f4 and a last column of class names, decided by the first two features."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 5))
    if len(classes) == 2:
        y = np.where(X[:, 0] + X[:, 1] > 0, classes[1], classes[0])
    else:
        y = np.asarray(classes)[np.digitize(X[:, 0] + X[:, 1], [-0.6, 0.6])]
    df = pd.DataFrame(X, columns=[f"f{i}" for i in range(5)])
    df[label] = y
    return df


def write(df, path, index):
    df.to_csv(path, index=index)
    return str(path)


def solve_cli(tmp_path, monkeypatch, train, loss="logistic", extra=", test_fraction: 0.25", argv=()):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "spec.yaml").write_text(SPEC.format(train=train, extra=extra, loss=loss))
    return main(["solve", "spec.yaml", *argv])


# -- reading ---------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("index", [True, False])
def test_class_names_read_as_strings_from_pandas_files(tmp_path, index):
    df = frame()
    X, y, meta = read_table(write(df, tmp_path / "t.csv", index), {"cache": False})
    assert y.dtype.kind == "U" and list(y) == list(df["label"])
    np.testing.assert_allclose(X, df[[f"f{i}" for i in range(5)]].to_numpy(), rtol=1e-6)
    assert meta["label_name"] == "label" and meta["label_from"] == "header"
    assert meta["feature_names"] == [f"f{i}" for i in range(5)]
    assert meta["label_text"][1] == df["label"].iloc[0]


def test_quoted_and_spaced_class_names(tmp_path):
    path = tmp_path / "q.csv"
    path.write_text('a,b,species\n1.5,2,"Iris setosa"\n3,4, "Iris virginica" \n5,6,Iris setosa\n')
    X, y, _ = read_table(str(path), {"cache": False, "label": "species"})
    assert list(y) == ["Iris setosa", "Iris virginica", "Iris setosa"]
    np.testing.assert_array_equal(X, [[1.5, 2], [3, 4], [5, 6]])


def test_headerless_file_with_class_names_is_not_read_as_a_header(tmp_path):
    path = tmp_path / "magic.data"
    path.write_text("28.7,16.0,g\n31.6,11.7,h\n162.0,136.0,g\n")
    X, y, meta = read_table(str(path), {"cache": False, "label": -1})
    assert meta["header"] is None and X.shape == (3, 2) and list(y) == ["g", "h", "g"]


@pytest.mark.parametrize("bad, message", [("5,6,7,no", "expected 3 columns, found 4"),
                                          ("5,no", "expected 3 columns, found 2"),
                                          ("5,x,no", "column 2: non-numeric cell 'x'")])
def test_bad_rows_among_class_names_name_their_line(tmp_path, bad, message):
    path = tmp_path / "r.csv"
    path.write_text("a,b,label\n1,2,yes\n3,4,no\n" + bad + "\n")
    with pytest.raises(DataError, match=f"r.csv:4: {message}"):
        read_table(str(path), {"cache": False})


def test_missing_feature_cells_among_class_names_read_as_nan(tmp_path):
    path = tmp_path / "m.csv"
    path.write_text("a,b,label\n1,NA,yes\n3,4,no\n5,,no\n")
    X, y, meta = read_table(str(path), {"cache": False})
    assert np.isnan(X[0, 1]) and np.isnan(X[2, 1]) and list(y) == ["yes", "no", "no"]
    assert meta["nonfinite"] == 2 and meta["first_nonfinite"] == [2, "b"]


def test_whitespace_delimited_class_names(tmp_path):
    path = tmp_path / "w.data"
    path.write_text("1.0 2.0 g\n3.0 4.0 h\n")
    X, y, _ = read_table(str(path), {"cache": False, "label": -1})
    assert list(y) == ["g", "h"] and X.tolist() == [[1.0, 2.0], [3.0, 4.0]]


@pytest.mark.parametrize("index", [True, False])
def test_frame_of_an_array_with_class_names_keeps_its_header(tmp_path, index):
    df = pd.DataFrame(np.arange(12.0).reshape(4, 3) + 0.5)  # pandas names the columns 0, 1, 2
    df["species"] = ["a", "b", "a", "b"]
    X, y, meta = read_table(write(df, tmp_path / "t.csv", index), {"cache": False, "label": "species"})
    assert meta["header"][-4:] == ["0", "1", "2", "species"] and list(y) == ["a", "b", "a", "b"]
    np.testing.assert_array_equal(X, df[[0, 1, 2]].to_numpy())


def test_headerless_rows_of_small_integers_stay_data(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("0,1,yes\n1,1,no\n")
    X, y, meta = read_table(str(path), {"cache": False, "label": -1})
    assert meta["header"] is None and X.tolist() == [[0, 1], [1, 1]] and list(y) == ["yes", "no"]


def test_headerless_row_with_label_like_text_is_a_header(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("a1,a2,label\n1,2,yes\n")  # a header, whatever the rule of its columns
    assert read_table(str(path), {"cache": False})[2]["header"] == ["a1", "a2", "label"]
    path.write_text("1.5,2.5,label\n3.5,4.5,yes\n")  # column 3 is text on both lines; 'label' names a column
    X, y, meta = read_table(str(path), {"cache": False})
    assert meta["header"] == ["1.5", "2.5", "label"] and list(y) == ["yes"] and X.tolist() == [[3.5, 4.5]]


@pytest.mark.parametrize("name", ["label", "Target", "CLASS", "y"])
def test_label_column_found_by_its_header_name(tmp_path, name):
    df = frame(label=name)
    df[name] = (df[name] == "yes").astype(int)  # numeric labels too
    X, y, meta = read_table(write(df, tmp_path / "t.csv", True), {"cache": False})
    assert meta["label_column"] == 6 and meta["label_from"] == "header" and X.shape == (400, 5)
    np.testing.assert_array_equal(y, df[name].to_numpy())


def test_two_label_like_names_keep_the_first_column(tmp_path):
    df = frame()
    df["target"] = (df["label"] == "yes").astype(int)
    df["label"] = 1 - df["target"]
    X, y, meta = read_table(write(df[["label", "f0", "f1", "target"]], tmp_path / "t.csv", False), {"cache": False})
    assert meta["label_from"] == "default" and meta["label_name"] == "label" and X.shape == (400, 3)
    np.testing.assert_array_equal(y, df["label"].to_numpy())
    df["target"] = np.where(df["target"] == 1, "yes", "no")
    write(df[["label", "f0", "f1", "target"]], tmp_path / "t.csv", False)
    with pytest.raises(DataError, match=r"column 4 'target' holds text .*set data\.label: target"):
        read_table(str(tmp_path / "t.csv"), {"cache": False})


def test_the_label_taken_by_name_is_said(tmp_path, caplog):
    path = write(frame(), tmp_path / "t.csv", False)
    with caplog.at_level(logging.INFO, logger="kopt.data"):
        ds = load_data({"train": path, "cache": False})
    assert "the label is column 6 'label', found by its header name" in caplog.text
    assert ds.info["label_from"] == "header" and ds.y.dtype.kind == "U"


def test_given_label_wins_over_the_header_name(tmp_path):
    df = frame()
    df["label"] = (df["label"] == "yes").astype(int)
    X, y, meta = read_table(write(df, tmp_path / "t.csv", False), {"cache": False, "label": "f0"})
    assert meta["label_from"] == "given" and "label" in meta["feature_names"]
    np.testing.assert_allclose(y, df["f0"].to_numpy())


@pytest.mark.parametrize("index", [True, False])
def test_default_first_column_with_text_elsewhere_names_the_column_and_key(tmp_path, index):
    df = frame(label="outcome")
    path = write(df, tmp_path / "t.csv", index)
    with pytest.raises(DataError) as err:
        read_table(path, {"cache": False})
    text = str(err.value)
    assert "'outcome' holds text ('no')" in text or "'outcome' holds text ('yes')" in text
    assert "data.label: outcome" in text and "'f0'" in text and "t.csv:2" in text


def test_default_first_column_of_features_names_the_label_like_column(tmp_path, monkeypatch, capsys):
    df = frame(label="outcome")
    df["outcome"] = (df["outcome"] == "yes").astype(int)
    write(df, tmp_path / "t.csv", True)
    assert solve_cli(tmp_path, monkeypatch, "t.csv", argv=["-q"]) == 2
    err = capsys.readouterr().err
    assert "a multiclass loss needs integer class labels" in err  # auto: one-vs-rest on 400 "classes"
    assert "first column ('f0')" in err and "column 'outcome' looks like the label: set data.label: outcome" in err


def test_regression_on_class_names_is_an_error_naming_the_cell(tmp_path, monkeypatch, capsys):
    df = frame()
    df["label"] = df["f2"].round(3).astype(str)
    df.loc[7, "label"] = "n.a."  # one typo in a column of numbers
    write(df, tmp_path / "t.csv", False)
    assert solve_cli(tmp_path, monkeypatch, "t.csv", loss="square", argv=["-q"]) == 2
    err = capsys.readouterr().err
    assert "t.csv:9: label column 'label': non-numeric cell 'n.a.'" in err and "regression loss needs numbers" in err


def test_missing_class_name_is_a_missing_label(tmp_path):
    df = frame()
    df.loc[3, "label"] = np.nan  # pandas writes an empty cell
    path = write(df, tmp_path / "t.csv", True)
    with pytest.raises(DataError, match=r"t\.csv:5: a NaN, inf or missing cell in the label"):
        load_data({"train": path, "cache": False})
    ds = load_data({"train": path, "cache": False, "nonfinite": "drop"})
    assert ds.X.shape[0] == 399 and "" not in set(ds.y)


def test_test_file_of_names_that_look_like_numbers_reads_as_names(tmp_path):
    df = frame(classes=("3", "x"))
    train = write(df, tmp_path / "train.csv", False)
    test = write(df[df["label"] == "3"], tmp_path / "test.csv", False)  # alone, "3" reads as a number
    assert read_table(test, {"cache": False})[1].dtype.kind == "f"
    ds = load_data({"train": train, "test": test, "cache": False})
    assert ds.y_test.dtype.kind == "U" and set(ds.y_test) == {"3"}


def test_training_files_must_label_alike(tmp_path):
    df = frame()
    a = write(df, tmp_path / "a.csv", False)
    df["label"] = (df["label"] == "yes").astype(int)
    b = write(df, tmp_path / "b.csv", False)
    with pytest.raises(DataError, match="b.csv: its label column holds numbers, but .*a.csv has class names"):
        load_data({"train": [a, b], "cache": False})


@pytest.mark.slow
def test_class_names_survive_the_parse_cache(tmp_path):
    df = frame(n=14000)  # 70,000 values: cached
    path = write(df, tmp_path / "big.csv", True)
    X1, y1, m1 = read_table(path, {})
    X2, y2, m2 = read_table(path, {})
    assert not m1["cached"] and m2["cached"]
    np.testing.assert_array_equal(y1, y2)
    assert y2.dtype.kind == "U" and m2["label_from"] == "header"


def test_a_numeric_file_still_reads_as_float64_labels(tmp_path):
    df = frame()
    df["label"] = (df["label"] == "yes").astype(int)
    _, y, meta = read_table(write(df, tmp_path / "t.csv", False), {"cache": False})
    assert y.dtype == np.float64 and meta["label_text"] is None


def test_data_info_counts_class_names(tmp_path, capsys):
    path = write(frame(), tmp_path / "t.csv", True)
    assert main(["data", "info", path]) == 0
    out = capsys.readouterr().out
    assert "2 class names; no: " in out and "found by its header name" in out and "text" in out


# -- solve, model file, predict -----------------------------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.parametrize("index", [True, False])
def test_binary_class_names_end_to_end(tmp_path, monkeypatch, capsys, index):
    df = frame()
    write(df, tmp_path / "train.csv", index)
    assert solve_cli(tmp_path, monkeypatch, "train.csv") == 0
    out, err = capsys.readouterr()
    assert "the label is column" in err and "'label', found by its header name" in err
    assert "classes 'no', 'yes' (auc: positive class 'yes')" in out and "test recall by class: no " in out
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert report["data"]["classes"] == ["no", "yes"] and report["data"]["positive_class"] == "yes"
    assert report["data"]["label"] == "label" and set(report["metrics_by_class"]) == {"no", "yes"}
    assert sum(m["rows"] for m in report["metrics_by_class"].values()) == 100
    model = load_model(tmp_path / "out" / "model.json")
    assert list(model.preprocessor.classes) == ["no", "yes"]
    feats = df[[f"f{i}" for i in range(5)]].to_numpy()
    pred = model.predict(feats)
    assert pred.dtype.kind == "U" and set(pred) <= {"no", "yes"} and np.mean(pred == df["label"]) > 0.85

    new = df.drop(columns="label")
    new.to_csv(tmp_path / "new.csv", index=index)
    assert main(["predict", "out/model.json", "new.csv", "-o", "pred.csv"]) == 0
    written = pd.read_csv(tmp_path / "pred.csv")
    assert list(written["prediction"]) == list(pred)

    assert main(["predict", "out/model.json", "train.csv", "-o", "scored.csv"]) == 0  # labelled: metrics
    err = capsys.readouterr().err
    acc = float(err.split("accuracy ")[1].split(",")[0])
    assert abs(acc - np.mean(pred == df["label"])) < 1e-9


@pytest.mark.slow
def test_multiclass_class_names_end_to_end(tmp_path, monkeypatch, capsys):
    df = frame(n=600, classes=("setosa", "versicolor", "virginica"), label="species")
    write(df, tmp_path / "train.csv", True)
    extra = ", label: species, test_fraction: 0.25"
    assert solve_cli(tmp_path, monkeypatch, "train.csv", loss="logistic", extra=extra) == 0  # one-vs-rest
    out = capsys.readouterr().out
    assert "classes 'setosa', 'versicolor', 'virginica'" in out and "positive class" not in out
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert report["data"]["classes"] == ["setosa", "versicolor", "virginica"]
    assert report["data"]["label"] == "species" and "positive_class" not in report["data"]
    model = load_model(tmp_path / "out" / "model.json")
    pred = model.predict(df[[f"f{i}" for i in range(5)]].to_numpy())
    assert set(pred) == {"setosa", "versicolor", "virginica"} and np.mean(pred == df["species"]) > 0.8


# -- the command line ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("argv", [["solve", "s.yaml", "-o", "D"], ["tune", "s.yaml", "-o", "D"],
                                  ["predict", "m.json", "x.csv", "-o", "D"]])
def test_o_is_the_short_form_of_out(argv):
    assert build_parser().parse_args(argv).out == "D"


def test_o_on_the_device_benchmark(monkeypatch):
    import importlib.util
    import sys
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "gpu" / "device_bench.py"
    spec = importlib.util.spec_from_file_location("device_bench", path)
    device = importlib.util.module_from_spec(spec)
    # registered before it runs, as an import does (its dataclasses look their module up), its folder on the path:
    # run alone, without tests/gpu's own tests imported first, this test failed
    monkeypatch.setitem(sys.modules, "device_bench", device)
    monkeypatch.syspath_prepend(str(path.parent))  # its sibling device_rates
    spec.loader.exec_module(device)
    assert device.build_parser().parse_args(["compare", "-o", "D"]).out == "D"


class _Result:
    def __init__(self, backend, note):
        self.timings = {"fit_s": 1.0}
        self.n_iter, self.success, self.message = 3, True, ""
        self.objective = self.gap = self.auto = self.lambda_auto = None
        self.info, self.metrics = {}, {}
        self.report = {"backend": backend, "backend_note": note, "memory": {"peak_rss_mb": 10.0}, "data": {}}


SPEC_STUB = {"name": "s", "solver": {"name": "x"}, "output": {"dir": "out", "report": False}}
FELL_BACK = "auto fell back to numpy: CuPy is not installed (ModuleNotFoundError)"


@pytest.mark.parametrize("gpu, verbose, shown", [(False, False, False), (True, False, True), (False, True, True)])
def test_cupy_fall_back_said_only_where_a_gpu_is_or_with_v(monkeypatch, gpu, verbose, shown):
    monkeypatch.setattr(kopt.numerics.backend, "nvidia_gpu", lambda: gpu)
    text = summary(_Result("numpy", FELL_BACK), SPEC_STUB, verbose=verbose)
    assert (FELL_BACK in text) is shown


def test_numeric_classes_in_the_summary():
    result = _Result("numpy", "")
    result.report["data"] = {"classes": [-1.0, 1.0], "positive_class": 1.0}
    assert "classes -1, 1 (auc: positive class 1)" in summary(result, SPEC_STUB)


def test_auto_choosing_cupy_is_said(monkeypatch):
    monkeypatch.setattr(kopt.numerics.backend, "nvidia_gpu", lambda: True)
    assert "auto chose cupy" in summary(_Result("cupy", "auto chose cupy: CuPy 13, 1 device(s)"), SPEC_STUB)


def test_v_names_the_backend_even_when_given(monkeypatch):
    monkeypatch.setattr(kopt.numerics.backend, "nvidia_gpu", lambda: False)
    assert "backend: numpy" in summary(_Result("numpy", ""), SPEC_STUB, verbose=True)
    assert "backend" not in summary(_Result("numpy", ""), SPEC_STUB)


def test_nvidia_gpu_without_nvidia_smi(monkeypatch):
    import shutil

    kopt.numerics.backend.nvidia_gpu.cache_clear()
    monkeypatch.setattr(shutil, "which", lambda name: None)
    try:
        assert kopt.numerics.backend.nvidia_gpu() is False
    finally:
        kopt.numerics.backend.nvidia_gpu.cache_clear()
