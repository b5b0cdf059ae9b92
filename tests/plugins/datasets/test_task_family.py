"""The generated task family (``data.source: task-family``): seeded draws over the stated ranges, rows that do not
depend on how many are asked for, labels of the drawn kind, and relevant columns that carry the signal."""
import numpy as np
import pytest

from kopt.data import load_data
from kopt_plugins.datasets import task_family as tf


@pytest.fixture
def data_home(tmp_path, monkeypatch):
    monkeypatch.setenv("KOPT_DATA", str(tmp_path))
    return tmp_path


def _load(index, rows, family=3, test_rows=500):
    return load_data({"source": "task-family", "options": {"family": family, "index": index, "rows": rows,
                                                           "test_rows": test_rows}})


def test_the_draws_cover_the_stated_ranges_and_follow_the_seed():
    draws = [tf.draw(11, i) for i in range(300)]
    assert draws == [tf.draw(11, i) for i in range(300)]  # seeded
    assert draws != [tf.draw(12, i) for i in range(300)]
    assert all(4 <= t.d <= 60 and 1 <= t.relevant <= t.d and 0 <= t.noise <= 0.2 for t in draws)
    assert all(10_000 <= t.rows <= 1_000_000 for t in draws)
    assert {t.kind for t in draws} == set(tf.KINDS)
    assert {t.classes for t in draws if t.kind == "multiclass"} <= set(range(3, 9))
    shares = [t.relevant / t.d for t in draws]
    assert min(shares) < 0.2 and max(shares) == 1.0


def test_rows_are_the_same_whatever_count_is_asked_for(data_home, monkeypatch):
    monkeypatch.setattr(tf, "CHUNK_ROWS", 700)  # several chunks
    small, large = _load(0, 1000), _load(0, 3000)
    np.testing.assert_array_equal(large.X[:1000], small.X)
    np.testing.assert_array_equal(large.y[:1000], small.y)
    np.testing.assert_array_equal(large.X_test, small.X_test)
    assert small.info["task"]["rows"] == 1000 and small.X.dtype == np.float32


@pytest.mark.parametrize("kind", tf.KINDS)
def test_each_kind_has_its_labels_and_the_relevant_columns_carry_the_signal(data_home, kind):
    index = next(i for i in range(100) if tf.draw(3, i).kind == kind and tf.draw(3, i).relevant < tf.draw(3, i).d)
    task = tf.draw(3, index)
    ds = _load(index, 4000)
    y = np.asarray(ds.y)
    if kind == "binary":
        assert set(np.unique(y)) == {0.0, 1.0} and 0.3 < y.mean() < 0.7
    elif kind == "multiclass":
        assert set(np.unique(y)) <= set(range(task.classes)) and len(np.unique(y)) >= 2
    shape = tf._Shape(task)
    Z = (np.asarray(ds.X, np.float64) - shape.shift) / shape.scale  # the latent columns
    noise = np.setdiff1d(np.arange(task.d), shape.which)
    # a least-squares fit on the relevant columns' features explains more than one on the noise columns alone
    def explained(cols):
        A = np.column_stack([np.tanh(Z[:, cols] @ w) for w in np.random.default_rng(0).normal(size=(64, len(cols)))])
        A = np.column_stack([A, np.ones(len(A))])
        resid = y - A @ np.linalg.lstsq(A, y, rcond=None)[0]
        return 1.0 - resid.var() / y.var()
    assert explained(shape.which) > explained(noise) + 0.05
