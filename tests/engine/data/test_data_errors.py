"""Bad data -> DataError naming the file and line; nonfinite policies; labels against the loss."""
from __future__ import annotations

import numpy as np
import pytest

from kopt.data import Preprocessor, as_dataset, load_data, read_table
from kopt.errors import DataError


@pytest.fixture(autouse=True)
def _data_home(tmp_path, monkeypatch):
    monkeypatch.setenv("KOPT_DATA", str(tmp_path / "home"))


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return str(path)


@pytest.mark.parametrize(
    "name, text, pattern",
    [
        ("ragged.csv", "1,2,3\n4,5,6\n\n7,8\n", r"ragged\.csv:4: expected 3 columns, found 2 \(ragged row\)"),
        ("cell.csv", "y,a,b\n1,2,3\n0,2,abc\n", r"cell\.csv:3: column 3: non-numeric cell 'abc'"),
        ("empty.csv", "", r"empty\.csv: the file is empty"),
        ("blank.csv", "\n  \n", r"blank\.csv: the file is empty"),
        ("header.csv", "y,a,b\n", r"header\.csv: the file holds no data rows \(only a header\)"),
        ("bad.libsvm", "1 1:2 3:4\n-1 2:x\n", r"bad\.libsvm:2: bad token '2:x'"),
        ("nolabel.libsvm", "1 1:2\n3:4 5:6\n", r"nolabel\.libsvm:2: label '3:4' is not a number"),
        ("colon.libsvm", "1 1:2\n1 7\n", r"colon\.libsvm:2: bad token '7'"),
        ("empty.libsvm", "# only a comment\n", r"empty\.libsvm: the file holds no data rows"),
    ],
)
def test_bad_files_name_file_and_line(tmp_path, name, text, pattern):
    with pytest.raises(DataError, match=pattern):
        read_table(write(tmp_path, name, text), {"cache": False})


def test_label_column_errors(tmp_path):
    path = write(tmp_path, "h.csv", "a,b\n1,2\n")
    with pytest.raises(DataError, match=r"label column 'c' not found; columns: a, b"):
        read_table(path, {"label": "c"})
    with pytest.raises(DataError, match="label column 5 is out of range for 2 columns"):
        read_table(path, {"label": 5})


def test_libsvm_index_errors_give_the_line(tmp_path):
    path = write(tmp_path, "i.libsvm", "1 1:1\n\n-1 2:1 9:1\n")
    with pytest.raises(DataError, match=r"i\.libsvm:3: feature index 9 exceeds n_features=4"):
        read_table(path, {"n_features": 4, "cache": False})
    zero = write(tmp_path, "z.libsvm", "1 1:1\n-1 0:1\n")
    with pytest.raises(DataError, match=r"z\.libsvm:2: feature index 0 in a file read as 1-based"):
        read_table(zero, {"zero_based": False, "cache": False})


NAN_FILE = "y,a,b\n1,1,2\n0,nan,4\n1,5,inf\n0,7,8\n"


def test_nonfinite_is_an_error_with_file_and_line(tmp_path):
    path = write(tmp_path, "n.csv", NAN_FILE)
    with pytest.raises(DataError, match=r"n\.csv:3: a NaN, inf or missing cell in column a \(2 non-finite cells"):
        load_data({"train": path})


def test_nonfinite_policies(tmp_path):
    path = write(tmp_path, "n.csv", NAN_FILE)
    ds = load_data({"train": path, "nonfinite": "drop"})
    np.testing.assert_array_equal(ds.X, [[1, 2], [7, 8]])
    np.testing.assert_array_equal(ds.y, [1, 0])
    ds = load_data({"train": path, "nonfinite": "zero"})
    np.testing.assert_array_equal(ds.X, [[1, 2], [0, 4], [5, 0], [7, 8]])
    ds = load_data({"train": path, "nonfinite": "mean"})
    np.testing.assert_allclose(ds.X, [[1, 2], [13 / 3, 4], [5, 14 / 3], [7, 8]], rtol=1e-6)


def test_mean_fill_of_the_test_set_uses_training_means(tmp_path):
    train = write(tmp_path, "tr.csv", "1,1\n0,3\n1,nan\n")
    test = write(tmp_path, "te.csv", "1,nan\n0,10\n")
    ds = load_data({"train": train, "test": test, "nonfinite": "mean"})
    np.testing.assert_array_equal(ds.X_test.ravel(), [2, 10])  # 2 = mean of the finite training cells


def test_missing_label_can_only_be_dropped(tmp_path):
    path = write(tmp_path, "l.csv", "1,1\n,2\n0,3\n")
    with pytest.raises(DataError, match="a label cannot be filled"):
        load_data({"train": path, "nonfinite": "zero"})
    assert load_data({"train": path, "nonfinite": "drop"}).y.tolist() == [1, 0]


def test_feature_count_differs_between_train_and_test(tmp_path):
    train = write(tmp_path, "tr.csv", "1,1,2\n0,3,4\n")
    test = write(tmp_path, "te.csv", "1,1,2,3\n")
    with pytest.raises(DataError, match=r"te\.csv: 3 features, but the training data \(.*tr\.csv\) has 2"):
        load_data({"train": train, "test": test})
    other = write(tmp_path, "tr2.csv", "1,1\n")
    with pytest.raises(DataError, match=r"tr2\.csv: 1 features, but .*tr\.csv has 2"):
        load_data({"train": [train, other]})


def test_only_one_way_to_make_a_test_set(tmp_path):
    train = write(tmp_path, "tr.csv", "1,1\n0,3\n")
    with pytest.raises(DataError, match="data.test and data.test_fraction"):
        load_data({"train": train, "test": train, "test_fraction": 0.5})


def test_three_classes_for_a_binary_loss_names_the_file(tmp_path):
    path = write(tmp_path, "three.csv", "0,1\n1,2\n2,3\n")
    ds = load_data({"train": path})
    with pytest.raises(DataError, match=r"three\.csv: a binary loss needs exactly two label values, found 3 "
                                        r"\(0\.0, 1\.0, 2\.0\); use a multiclass loss"):
        Preprocessor.fit(ds.X, ds.y, "binary", source=ds.info["train"])


def test_labels_checked_against_the_loss_through_assemble(tmp_path):
    from kopt.running.assemble import assemble
    from kopt.spec import load_spec

    path = write(tmp_path, "three.csv", "0,1\n1,2\n2,3\n0,4\n")
    # dsg has no one-vs-rest (joker would train one binary problem per class instead)
    spec = load_spec({"data": {"train": path}, "model": {"loss": {"name": "hinge"}, "kernel": {"name": "gaussian", "bandwidth": "median"}},
                      "solver": {"name": "dsg"}, "backend": "numpy"})
    with pytest.raises(DataError, match=r"three\.csv: a binary loss needs exactly two label values, found 3"):
        assemble(spec)


def test_multiclass_needs_integer_labels():
    X = np.zeros((4, 1))
    with pytest.raises(DataError, match="integer class labels, found 0.5"):
        Preprocessor.fit(X, np.array([0.0, 0.5, 1.0, 2.0]), "multiclass", source="f.csv")


def test_model_and_predict_data_feature_counts_differ():
    from kopt.api import solve

    rng = np.random.default_rng(0)
    X, y = rng.standard_normal((60, 3)), rng.standard_normal(60)
    spec = {"model": {"loss": {"name": "square"}, "kernel": {"name": "gaussian", "bandwidth": "median"}, "form": "dual"},
            "solver": {"name": "krr_exact"}, "backend": "numpy", "output": {"dir": "unused"}}
    model = solve(spec, data=(X, y)).model
    assert model.predict(X).shape == (60,)
    with pytest.raises(DataError, match="X has 4 features; this model was trained on 3"):
        model.predict(np.zeros((2, 4)))


def test_api_arrays_are_checked():
    with pytest.raises(DataError, match=r"y has shape \(3,\); expected \(2,\)"):
        as_dataset((np.zeros((2, 2)), np.zeros(3)))
    with pytest.raises(DataError, match=r"X, y \(arrays\): 1 rows hold NaN/inf values \(first: data row 2\)"):
        as_dataset((np.array([[1.0], [np.nan]]), np.zeros(2)))
    with pytest.raises(DataError, match="X_test has 3 features, X has 2"):
        as_dataset((np.zeros((2, 2)), np.zeros(2), np.zeros((1, 3)), np.zeros(1)))
    with pytest.raises(DataError, match="unknown keys: Z"):
        as_dataset({"X": np.zeros((1, 1)), "Z": 1})


def test_test_labels_must_be_known_to_the_training_data(tmp_path):
    from kopt.running.assemble import assemble
    from kopt.spec import load_spec

    train = write(tmp_path, "tr.csv", "0,1\n1,2\n0,3\n")
    test = write(tmp_path, "te.csv", "-1,1\n1,2\n")
    spec = load_spec({"data": {"train": train, "test": test},
                      "model": {"loss": {"name": "hinge"}, "kernel": {"name": "gaussian", "bandwidth": "median"}, "form": "dual"},
                      "solver": {"name": "joker"}, "backend": "numpy"})
    with pytest.raises(DataError, match=r"te\.csv: label -1\.0 was not seen in training \(classes: 0\.0, 1\.0\)"):
        assemble(spec)
