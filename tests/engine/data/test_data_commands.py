"""``kopt data info`` on real and hand-made files."""
from __future__ import annotations

import pytest

from kopt.cli import main


@pytest.fixture(autouse=True)
def _data_home(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("KOPT_DATA", str(tmp_path_factory.getbasetemp() / "kopt_data_home"))


def info(capsys, *args):
    rc = main(["data", "info", *map(str, args)])
    out = capsys.readouterr()
    return rc, dict(line.split(None, 1) for line in out.out.splitlines() if line.strip()), out.err


@pytest.mark.slow
def test_info_sparse_libsvm(shared_data, capsys):
    rc, rows, _ = info(capsys, shared_data / "a9a.xz")
    assert rc == 0
    assert rows["rows"] == "32,561"
    assert rows["columns"].startswith("123 features (sparse: 451,592 stored values, 11.28% non-zero)")
    assert rows["labels"] == "two values; -1: 24,720 (75.9%), 1: 7,841 (24.1%)"
    assert rows["missing"] == "none" and rows["infinite"] == "none"
    assert rows["memory"].startswith("X 3.7 MB as CSR float32 (16.0 MB dense)")


def test_info_regression_target_by_index(shared_data, capsys):
    rc, rows, _ = info(capsys, shared_data / "cal_housing.data.xz", "--label", "-1")
    assert rc == 0 and rows["rows"] == "20,640"
    assert rows["columns"] == "8 features + label (file column 9)"
    assert "(real-valued): min 14999, median" in rows["labels"] and rows["labels"].endswith("max 500001")
    assert rows["memory"] == "X 660.5 kB float32, y 165.1 kB float64"


def test_info_header_missing_and_infinite(tmp_path, capsys):
    path = tmp_path / "m.csv"
    path.write_text("a,b,label\n1,,0\n2,inf,1\nNA,3,1\n4,5,\n")
    rc, rows, _ = info(capsys, path, "--label", "label")
    assert rc == 0
    assert rows["columns"] == "2 features; named a, b + label (file column 3 'label')"
    assert rows["missing"] == "2 NaN or empty cells in 3 rows; most in a (1), b (1); 1 missing labels"
    assert rows["infinite"] == "1 cells"
    assert rows["first"] == "bad  line 2, column b"


def test_info_of_a_broken_file_is_a_clean_error(tmp_path, capsys):
    path = tmp_path / "r.csv"
    path.write_text("1,2\n3\n")
    rc, _, err = info(capsys, path)
    assert rc == 2 and f"{path}:2: expected 2 columns, found 1 (ragged row)" in err
