"""``kopt predict``: a data file scored in blocks of rows, the predictions written as they come.

Memory is one block of parsed rows (a few MiB of text) and the model's work on
it, plus the labels and scores kept for the metrics: flat in the number of rows
beyond the output.  The file is parsed once and nothing goes into the parse
cache.  CSV/TSV and ``.npy`` files stream; LIBSVM, IDX and ``.npz`` files are
read whole (uncached) and scored in blocks.  Every feature cell must be
finite: a NaN, inf or missing cell is an error naming the file and line.
"""
from __future__ import annotations

import contextlib
import sys

import numpy as np

from .data.csvstream import NonFinite, iter_parsed, label_index, sniff
from .data.ranges import first_out_of_range, out_of_range_message
from .data.readers import parse_options, read_table
from .errors import DataError
from .fileio import atomic_open
from .metrics import evaluate

ROWS = 2048  # rows scored at a time: bounds the predictor's work arrays (a 2048 x n_train kernel block)


def predict_file(model, path, opts, out=None, model_name="the model"):
    """Score ``path`` with ``model``; write CSV predictions to ``out`` (None: stdout).

    Returns ``(rows, metrics)``; ``metrics`` is None when the file has no label column.
    """
    rows, y, scores = score_file(model, path, opts, out, model_name)
    if y is None:
        return rows, None
    return rows, evaluate(model.preprocessor.target, y, scores, model.preprocessor)


def score_file(model, path, opts, out=None, model_name="the model"):
    """Score ``path`` block by block, writing predictions to ``out`` (None: stdout) as they come.

    Returns ``(rows, labels, scores)``; labels and scores are None when the file has no label column.
    """
    fmt = parse_options(path, opts)["format"]
    d = model.n_features_in
    if fmt in ("csv", "tsv"):
        blocks = _csv_blocks(path, fmt, opts, d, model_name)
    elif fmt == "npy":
        blocks = _npy_blocks(path, opts, d, model_name)
    else:
        blocks = _table_blocks(path, opts, d, model_name)
    ys, scores, rows = [], [], 0
    with _output(out) as fh:
        for X, y in blocks:
            s = model.decision_function(X)
            _write(fh, _columns(model, X, s), header=rows == 0)
            rows += X.shape[0]
            if y is not None:
                ys.append(y)
                scores.append(s)
    if rows == 0:
        raise DataError(f"{path}: the file holds no data rows")
    if not ys:
        return rows, None, None
    return rows, np.concatenate(ys), np.concatenate(scores)


def _columns(model, X, scores):
    columns = {"prediction": model.preprocessor.decode(scores)}
    if scores.ndim == 1:
        columns["decision"] = scores
    columns.update(model.predict_extra(X))
    return columns


@contextlib.contextmanager
def _output(out):
    if out:
        with atomic_open(out, "w") as fh:
            yield fh
    else:
        yield sys.stdout


def _write(fh, columns, header):
    names = list(columns)
    data = np.column_stack([np.asarray(columns[k], dtype=np.float64) for k in names])
    np.savetxt(fh, data, delimiter=",", header=",".join(names) if header else "", comments="", fmt="%.10g")


def _label_of(ncols, d, label, path, model_name):
    """The label option for a file of ``ncols`` columns scored by a model of ``d`` features."""
    if ncols == d:
        return False
    if ncols == d + 1:
        return 0 if label is None else label
    raise DataError(f"{path}: {ncols} columns; {model_name} was trained on {d} features (give {d} feature "
                    f"columns, or {d + 1} with the label column)")


def _csv_blocks(path, fmt, opts, d, model_name):
    layout = sniff(path, fmt, opts.get("header", "auto"))
    delim, names, ncols, skip = layout
    label = _label_of(ncols, d, opts.get("label"), path, model_name)
    li = label_index(label, names, ncols, path)
    keep = np.array([j for j in range(ncols) if j != li], dtype=np.intp)
    columns = names or [str(j + 1) for j in range(ncols)]
    for A, lines, first, _ in iter_parsed(path, layout):
        bad = NonFinite()
        bad.scan(A, lines, first, columns)
        if bad.line is not None:
            raise DataError(f"{path}:{bad.line}: a NaN, inf or missing cell in column {bad.column}; kopt predict "
                            "needs every cell finite")
        for i in range(0, A.shape[0], ROWS):
            part = A[i : i + ROWS]
            yield part[:, keep].astype(np.float32), None if li is None else part[:, li].copy()  # no view of A


def _npy_blocks(path, opts, d, model_name):
    try:
        A = np.load(path, mmap_mode="r", allow_pickle=False)
    except Exception as exc:
        raise DataError(f"{path}: cannot read NumPy file: {exc}") from None
    if not isinstance(A, np.ndarray) or A.ndim != 2 or A.dtype.kind not in "biuf":
        raise DataError(f"{path}: expected a 2-D numeric array (rows x columns), got {np.shape(A)} {A.dtype}")
    li = label_index(_label_of(A.shape[1], d, opts.get("label"), path, model_name), None, A.shape[1], path)
    keep = [j for j in range(A.shape[1]) if j != li]
    for i in range(0, A.shape[0], ROWS):
        part = np.asarray(A[i : i + ROWS], dtype=np.float64)
        _check_cells(path, part, i)
        yield part[:, keep].astype(np.float32), None if li is None else part[:, li].copy()


def _table_blocks(path, opts, d, model_name):
    X, y, meta = read_table(path, {**opts, "cache": False})
    if meta.get("nonfinite"):
        where = meta.get("first_nonfinite")
        at = f":{where[0]}" if where else ""
        raise DataError(f"{path}{at}: {meta['nonfinite']} NaN, inf or missing cells; kopt predict needs every "
                        "cell finite")
    if X.shape[1] != d:
        raise DataError(f"{path}: {X.shape[1]} features; {model_name} was trained on {d}")
    for i in range(0, X.shape[0], ROWS):
        yield X[i : i + ROWS], None if y is None else y[i : i + ROWS]


def _check_cells(path, A, offset):
    ok = np.isfinite(A)
    if not ok.all():
        r, c = np.argwhere(~ok)[0]
        raise DataError(f"{path}: row {offset + r + 1}, column {c + 1}: a NaN or inf cell; kopt predict needs "
                        "every cell finite")
    at = first_out_of_range(A)
    if at is not None:
        raise DataError(f"{path}: row {offset + at[0] + 1}, column {at[1] + 1}: {out_of_range_message(A[at])}")
