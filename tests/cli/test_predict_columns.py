"""``kopt predict`` reads a file's columns by the rules ``kopt solve`` uses (issue 28 item 1, issue 26 item 7):
a header is detected, pandas' row-index column is skipped, a model trained on named columns takes its
features by name, and a labelled file one column short is refused under ``--labels auto``."""
from __future__ import annotations

import numpy as np
import pytest

from kopt.cli import main
from kopt.data.readers import read_table

pd = pytest.importorskip("pandas")

NAMES = ["a", "b", "c"]


def _spec(train, classify):
    loss, solver = ("logistic", "{name: joker, iterations: 30}") if classify else ("square", "{name: krr_exact}")
    form = "dual" if classify else "primal"
    return f"""\
name: cols
data: {{train: {train}, label: 0}}
model:
  loss: {{name: {loss}}}
  kernel: {{name: gaussian, bandwidth: 2.0}}
  features: {{count: 64}}
  form: {form}
  regularizer: {{name: l2, lambda: 0.01}}
solver: {solver}
backend: numpy
output: {{dir: out}}
"""


def _rows(n, seed, classify):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 3)).round(3)
    y = X[:, 0] - 0.5 * X[:, 1] + 0.1 * rng.standard_normal(n)
    return X, (np.sign(y) if classify else y.round(3))


def _train(tmp_path, monkeypatch, capsys, *, header, classify=False):
    monkeypatch.chdir(tmp_path)
    X, y = _rows(120, 0, classify)
    df = pd.DataFrame(X, columns=NAMES)
    df.insert(0, "y", y)
    df.to_csv("train.csv", index=False, header=header)
    (tmp_path / "spec.yaml").write_text(_spec("train.csv", classify))
    assert main(["solve", "spec.yaml", "--quiet"]) == 0
    capsys.readouterr()


def _predict(capsys, *args):
    code = main(["predict", "out/model.json", *args])
    out = capsys.readouterr()
    return code, out.out, out.err


def _scores(text):
    return np.loadtxt(text.splitlines()[1:], delimiter=",")


def test_pandas_to_csv_predicts_like_a_plain_file(tmp_path, monkeypatch, capsys):
    """What DataFrame.to_csv writes (header + index column) scores exactly like the bare numbers."""
    _train(tmp_path, monkeypatch, capsys, header=False)
    X, y = _rows(30, 1, False)
    np.savetxt("plain.csv", np.column_stack([y, X]), delimiter=",", fmt="%.3f")
    df = pd.DataFrame(X, columns=NAMES)
    df.insert(0, "y", y)
    df.to_csv("pandas.csv")  # header ",y,a,b,c" and an index column 0..29
    code, plain, _ = _predict(capsys, "plain.csv")
    assert code == 0
    code, frame, err = _predict(capsys, "pandas.csv")
    assert code == 0, err
    assert "column 1 is a pandas row index (skipped)" in err and "label column 2 'y'" in err
    np.testing.assert_allclose(_scores(frame), _scores(plain))
    assert "(30 rows)" in err  # metrics: the label column was found


def test_solve_skips_the_pandas_index_column(tmp_path):
    df = pd.DataFrame(np.arange(12.0).reshape(4, 3), columns=["y", "a", "b"])
    df.to_csv(tmp_path / "f.csv")
    X, y, meta = read_table(str(tmp_path / "f.csv"), {"cache": False})
    assert meta["index_column"] == 0 and meta["feature_names"] == ["a", "b"] and meta["label_name"] == "y"
    np.testing.assert_array_equal(y, [0, 3, 6, 9])
    np.testing.assert_array_equal(X, [[1, 2], [4, 5], [7, 8], [10, 11]])


def test_named_model_matches_columns_by_name(tmp_path, monkeypatch, capsys):
    _train(tmp_path, monkeypatch, capsys, header=True)
    X, y = _rows(25, 2, False)
    df = pd.DataFrame(X, columns=NAMES)
    df.insert(0, "y", y)
    df.to_csv("ordered.csv", index=False)
    df[["c", "y", "a", "b"]].to_csv("shuffled.csv")  # other order, label elsewhere, index column
    df[["b", "c", "a"]].to_csv("unlabelled.csv", index=False)
    code, ordered, err = _predict(capsys, "ordered.csv")
    assert code == 0 and "matched by name" in err
    code, shuffled, err = _predict(capsys, "shuffled.csv")
    assert code == 0 and "label column 3 'y'" in err, err
    np.testing.assert_allclose(_scores(shuffled), _scores(ordered))
    code, unlabelled, err = _predict(capsys, "unlabelled.csv")
    assert code == 0 and "no label column" in err and "rows)" not in err
    np.testing.assert_allclose(_scores(unlabelled), _scores(ordered))


def test_named_model_refuses_missing_and_unknown_columns(tmp_path, monkeypatch, capsys):
    _train(tmp_path, monkeypatch, capsys, header=True)
    X, y = _rows(10, 3, False)
    pd.DataFrame(X[:, :2], columns=["a", "b"]).to_csv("missing.csv", index=False)
    code, _, err = _predict(capsys, "missing.csv")
    assert code == 2 and "no column named 'c'" in err and "Traceback" not in err
    df = pd.DataFrame(X, columns=NAMES)
    df["id"] = np.arange(10)
    df.to_csv("extra.csv", index=False)
    code, _, err = _predict(capsys, "extra.csv")
    assert code == 2 and "column 'id' is not one of the 3 features" in err


def test_labelled_file_one_column_short_is_refused(tmp_path, monkeypatch, capsys):
    """Issue 26 item 7: label + 2 features for a 3-feature classifier used to score the label as a feature."""
    _train(tmp_path, monkeypatch, capsys, header=False, classify=True)
    X, y = _rows(20, 4, True)
    np.savetxt("short.csv", np.column_stack([y, X[:, :2]]), delimiter=",", fmt="%.3f")
    code, _, err = _predict(capsys, "short.csv")
    assert code == 2 and "may be a labelled file one feature short" in err and "--labels none" in err
    code, _, err = _predict(capsys, "short.csv", "--labels", "first")
    assert code == 2 and "2 feature columns with --labels first" in err
    code, out, err = _predict(capsys, "short.csv", "--labels", "none")
    assert code == 0 and "no label column" in err and len(out.splitlines()) == 21


def test_unlabelled_file_says_what_was_assumed(tmp_path, monkeypatch, capsys):
    _train(tmp_path, monkeypatch, capsys, header=False, classify=True)
    X, _ = _rows(20, 5, True)
    np.savetxt("features.csv", X, delimiter=",", fmt="%.3f")  # real-valued first column: not label values
    code, out, err = _predict(capsys, "features.csv")
    assert code == 0 and "no label column" in err and "--labels auto" in err
    code, out_none, _ = _predict(capsys, "features.csv", "--labels", "none")
    assert code == 0 and out_none == out
    np.savetxt("labelled_last.csv", np.column_stack([X, np.sign(X[:, 0])]), delimiter=",", fmt="%.3f")
    code, _, err = _predict(capsys, "labelled_last.csv", "--labels", "last")
    assert code == 0 and "label column 4" in err and "(20 rows)" in err


def test_labels_flag_is_refused_for_libsvm(tmp_path, monkeypatch, capsys):
    _train(tmp_path, monkeypatch, capsys, header=False)
    (tmp_path / "rows.svm").write_text("1 1:0.5 2:0.1 3:0.2\n-1 1:0.3\n")
    code, _, err = _predict(capsys, "rows.svm", "--labels", "none")
    assert code == 2 and "--labels none applies to CSV, TSV and .npy files" in err


def test_text_labels_are_never_mistaken_for_a_numeric_column(tmp_path, monkeypatch, capsys):
    """A model fitted on string classes (scikit-learn) scores a d-column file as unlabelled, no refusal."""
    pytest.importorskip("sklearn")
    from kopt.sklearn import KernelClassifier

    monkeypatch.chdir(tmp_path)
    X, y = _rows(60, 6, True)
    est = KernelClassifier(loss="logistic", solver="joker", features=32, lam=1e-2, backend="numpy",
                           solver_options={"iterations": 20})
    est.fit(X, np.where(y > 0, "yes", "no"))
    est.model_.save(str(tmp_path / "out" / "model"))
    np.savetxt("binary_first.csv", np.column_stack([X[:, 0] > 0, X[:, 1:]]), delimiter=",", fmt="%.3f")
    code, out, err = _predict(capsys, "binary_first.csv")
    assert code == 0 and "no label column" in err, err
    lines = out.splitlines()
    assert lines[0] == "prediction,decision" and len(lines) == 61
    assert {ln.split(",")[0] for ln in lines[1:]} <= {"yes", "no"}


def test_predict_proba_writes_one_column_per_class_named_by_the_class(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    X, y = _rows(200, 0, True)
    labels = np.where(y > 0, "yes", "no")
    df = pd.DataFrame(X, columns=NAMES)
    df.insert(0, "y", labels)
    df.to_csv("train.csv", index=False)
    (tmp_path / "spec.yaml").write_text(
        "name: p\ndata: {train: train.csv, label: 0}\nmodel: {loss: {name: square, target: binary}, kernel: {name: gaussian}}\n"
        "backend: numpy\noutput: {dir: out}\n")
    assert main(["solve", "spec.yaml", "--quiet"]) == 0
    capsys.readouterr()
    df.iloc[:40].to_csv("new.csv", index=False)
    code, out, err = _predict(capsys, "new.csv", "--proba")
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].split(",") == ["prediction", "decision", "no", "yes"]
    P = np.loadtxt(lines[1:], delimiter=",", usecols=(2, 3))
    assert np.allclose(P.sum(axis=1), 1.0, atol=1e-9)
    pred = np.array([line.split(",")[0] for line in lines[1:]])
    assert np.mean(pred == labels[:40]) > 0.8
    import kopt

    model = kopt.load_model("out/model.json")
    np.testing.assert_allclose(P[:, 1], model.predict_proba(X[:40])[:, 1], rtol=1e-8)


def test_predict_proba_of_a_regression_model_is_a_user_error(tmp_path, monkeypatch, capsys):
    _train(tmp_path, monkeypatch, capsys, header=True)
    X, y = _rows(10, 1, False)
    pd.DataFrame(np.column_stack([y, X]), columns=["y", *NAMES]).to_csv("new.csv", index=False)
    code, _, err = _predict(capsys, "new.csv", "--proba")
    assert code == 2 and "--proba" in err and "real target" in err
