"""``kopt predict`` streams (issue 17, defect 8): same answers, one parse, no cache entries, flat memory."""
from __future__ import annotations

import functools
import tracemalloc

import numpy as np
import pytest

import kopt.data.csvstream as csvstream
import kopt.data.stream as stream
from kopt.cli import main
from kopt.data.cache import cache_root
from kopt.models.model import load_model

D = 60
SPEC = f"""\
name: stream
data: {{train: train.csv, label: 0}}
model:
  loss: {{name: square}}
  kernel: {{name: gaussian, bandwidth: {np.sqrt(D):.4f}}}
  regularizer: {{name: l2, lambda: 0.01}}
solver: {{name: krr_exact}}
backend: numpy
output: {{dir: out}}
"""


pytestmark = pytest.mark.slow  # every test here: out of the fast loop, pytest -m "not slow"


def write_rows(path, n, seed, label=True):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, D)).astype(np.float32)
    y = X[:, 0] - 0.5 * X[:, 1] + 0.1 * rng.standard_normal(n)
    np.savetxt(path, np.column_stack([y, X]) if label else X, delimiter=",", fmt="%.4f")
    return np.loadtxt(path, delimiter=",", dtype=np.float64)


@pytest.fixture()
def trained(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    # small text blocks, so that a few thousand rows already span many blocks
    monkeypatch.setattr(csvstream, "iter_blocks", functools.partial(stream.iter_blocks, block_size=128 << 10))
    write_rows(tmp_path / "train.csv", 200, seed=0)
    (tmp_path / "spec.yaml").write_text(SPEC)
    assert main(["solve", "spec.yaml", "--quiet"]) == 0
    capsys.readouterr()
    return tmp_path


def _cache_entries():
    root = cache_root()
    return sorted(p.name for p in root.iterdir()) if root.is_dir() else []


def test_streamed_predictions_equal_the_in_memory_model(trained, capsys, monkeypatch):
    A = write_rows(trained / "test.csv", 5000, seed=1, label=False)
    parsed = []
    real = csvstream.parse_block

    def counting(lines, *args):
        out = real(lines, *args)
        parsed.append(out.shape[0])
        return out

    monkeypatch.setattr(csvstream, "parse_block", counting)
    before = _cache_entries()
    assert main(["predict", "out/model.json", "test.csv", "--out", "pred.csv"]) == 0
    assert sum(parsed) == 5000 and len(parsed) > 1  # parsed once, in several blocks
    # no parsed copy of the streamed file is cached (other tests running beside this one may add their own)
    assert not [name for name in set(_cache_entries()) - set(before) if name.startswith("test.csv")]
    P = np.loadtxt(trained / "pred.csv", delimiter=",", skiprows=1)
    want = load_model("out/model.json").predict(A.astype(np.float32))
    np.testing.assert_allclose(P[:, 0], want, rtol=1e-6, atol=1e-6)


def _peak_bytes(argv):
    tracemalloc.start()
    try:
        assert main(argv) == 0
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_memory_is_flat_in_the_number_of_rows(trained, capsys):
    write_rows(trained / "small.csv", 4000, seed=2)
    write_rows(trained / "large.csv", 16000, seed=3)
    small = _peak_bytes(["predict", "out/model.json", "small.csv", "--out", "p1.csv"])
    large = _peak_bytes(["predict", "out/model.json", "large.csv", "--out", "p2.csv"])
    per_row = (large - small) / 12000
    # the float32 features alone are 4 * D = 240 bytes a row; what may grow is the outputs kept for the
    # metrics (labels, scores and their concatenations: about 64 bytes a row)
    assert per_row < 2 * D, f"{per_row:.0f} bytes a row"
    assert "(16000 rows)" in capsys.readouterr().err
