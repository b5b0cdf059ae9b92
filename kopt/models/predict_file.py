"""``kopt predict``: a data file scored in blocks of rows, the predictions written as they come.

Memory is one block of parsed rows (a few MiB of text) and the model's work on
it, plus the labels and scores kept for the metrics: flat in the number of rows
beyond the output.  The file is parsed once and nothing goes into the parse
cache.  CSV/TSV and ``.npy`` files stream; LIBSVM, IDX and ``.npz`` files are
read whole (uncached) and scored in blocks.  Every feature cell must be
finite: a NaN, inf or missing cell is an error naming the file and line.

Which columns are features and which is the label (:func:`plan_columns`): a
header is detected as ``kopt solve`` detects it, a pandas row-index column
(empty first header name) is skipped, and a model trained on named columns
takes its features by name.  Otherwise columns count by position, and
``labels`` says whether a label column is there: ``first``, ``last``,
``none``, or ``auto`` (from the column count, refusing a count that only
fits because a column is missing).  The rule applied is reported in one line.
A model trained on class names reads the label column as text and writes its
predictions in those names.
"""
from __future__ import annotations

import contextlib
import csv
import logging
import sys
from dataclasses import dataclass

import numpy as np

from ..data.csvstream import NonFinite, index_column, iter_parsed, label_index, sniff
from ..data.ranges import first_out_of_range, out_of_range_message
from ..data.readers import numpy_load_error, parse_options, read_table
from ..errors import DataError
from ..files.atomic import atomic_open
from ..numerics.metrics import evaluate

LABELS = ("auto", "first", "last", "none")  # kopt predict --labels
ROWS = 2048  # rows scored at a time: bounds the predictor's work arrays (a 2048 x n_train kernel block)


def predict_file(model, path, opts, out=None, model_name="the model", labels="auto", say=None, proba=False):
    """Score ``path`` with ``model``; write CSV predictions to ``out`` (None: stdout).

    ``labels``: one of :data:`LABELS` (see the module docstring); ``say`` receives the one line that
    says how the columns were read (default: the ``kopt`` logger at INFO).
    Returns ``(rows, metrics)``; ``metrics`` is None when the file has no label column.
    """
    rows, y, scores = score_file(model, path, opts, out, model_name, labels=labels, say=say, proba=proba)
    if y is None:
        return rows, None
    return rows, evaluate(model.preprocessor.target, y, scores, model.preprocessor)


def score_file(model, path, opts, out=None, model_name="the model", labels="auto", say=None, proba=False):
    """Score ``path`` block by block, writing predictions to ``out`` (None: stdout) as they come; ``proba``: one
    more column per class, headed by the class's name, its probability (:meth:`kopt.Model.predict_proba`).

    Returns ``(rows, labels, scores)``; labels and scores are None when the file has no label column.
    """
    if labels not in LABELS:
        raise DataError(f"labels={labels!r}: expected one of {', '.join(LABELS)}")
    say = say or logging.getLogger("kopt").info
    if proba and model.proba_refusal():
        raise DataError(f"{model_name}: --proba: {model.proba_refusal()}")
    fmt = parse_options(path, opts)["format"]
    if fmt in ("csv", "tsv"):
        blocks = _csv_blocks(path, fmt, opts, model, model_name, labels, say)
    elif fmt == "npy":
        blocks = _npy_blocks(path, opts, model, model_name, labels, say)
    else:
        blocks = _table_blocks(path, fmt, opts, model.n_features_in, model_name, labels)
    ys, scores, rows = [], [], 0
    with _output(out) as fh:
        for X, y in blocks:
            s = model.decision_function(X)
            _write(fh, _columns(model, X, s, proba), header=rows == 0)
            rows += X.shape[0]
            if y is not None:
                ys.append(y)
                scores.append(s)
    if rows == 0:
        raise DataError(f"{path}: the file holds no data rows")
    if not ys:
        return rows, None, None
    return rows, np.concatenate(ys), np.concatenate(scores)


def _columns(model, X, scores, proba=False):
    columns = {"prediction": model.preprocessor.decode(scores)}
    if scores.ndim == 1:
        columns["decision"] = scores
    columns.update(model.predict_extra(X))
    if proba:
        P = np.exp(model.log_proba_of(scores))
        for j, name in enumerate(proba_headers(model.preprocessor.classes, columns)):
            columns[name] = P[:, j]
    return columns


def proba_headers(classes, taken=()):
    """The probability columns' headers: each class's name (``proba_NAME`` where another column has that name)."""
    names = [str(c.item() if hasattr(c, "item") else c) for c in classes]
    return [f"proba_{n}" if n in taken else n for n in names]


@contextlib.contextmanager
def _output(out):
    if out:
        with atomic_open(out, "w") as fh:
            yield fh
    else:
        yield sys.stdout


def _write(fh, columns, header):
    """CSV rows: numbers as ``%.10g``; text (the classes of a model fitted on string labels) quoted as needed."""
    names = list(columns)
    cells = []
    for k in names:
        v = np.asarray(columns[k])
        cells.append(np.char.mod("%.10g", v.astype(np.float64)) if v.dtype.kind in "biuf" else v.astype(str))
    out = csv.writer(fh, lineterminator="\n")
    if header:
        out.writerow(names)
    out.writerows(zip(*cells))


@dataclass(frozen=True)
class Plan:
    """Which file columns a model scores: ``features`` in the model's order, ``label`` (or None), a skipped
    pandas row ``index`` (or None); ``ambiguous``: the column that, under ``--labels auto``, must not look
    like the training labels (None: nothing to check); ``how``: the rule applied, in words."""

    features: list
    label: object
    index: object
    how: str
    ambiguous: object = None


def plan_columns(model, path, names, ncols, labels="auto", label_opt=None, model_name="the model"):
    """The :class:`Plan` of a file with header ``names`` (None: no header) and ``ncols`` columns."""
    index = index_column(names)
    rest = [j for j in range(ncols) if j != index]
    skipped = "" if index is None else f"column {index + 1} is a pandas row index (skipped); "
    trained = model.info.get("columns") or {}
    if names is not None and trained.get("features"):
        plan = _by_name(path, names, rest, trained, labels, model_name)
    else:
        plan = _by_position(path, names, rest, model.n_features_in, labels, label_opt, model_name)
    return Plan(plan.features, plan.label, index, f"{path}: {skipped}{plan.how}", plan.ambiguous)


def _named(names, j):
    return f"column {j + 1}" + (f" {names[j]!r}" if names else "")


def _by_name(path, names, rest, trained, labels, model_name):
    features, label_name = list(trained["features"]), trained.get("label")
    where = {}
    for j in rest:
        where.setdefault(names[j], j)
    missing = [f for f in features if f not in where]
    if missing:
        raise DataError(f"{path}: no column named {', '.join(map(repr, missing[:5]))}"
                        + (f" (and {len(missing) - 5} more)" if len(missing) > 5 else "")
                        + f"; {model_name} was trained on the named columns {_preview(features)}")
    li = where.get(label_name) if labels == "auto" else _given_label(labels, rest)
    cols = [where[f] for f in features]
    if li is not None and li in cols:
        raise DataError(f"{path}: --labels {labels} makes {_named(names, li)} the label, but {model_name} takes it "
                        "as a feature")
    extra = [names[j] for j in rest if j != li and j not in cols]
    if extra:
        hint = "" if labels != "auto" else " (if one of them is the label, say so with --labels first or last)"
        raise DataError(f"{path}: column {', '.join(map(repr, extra[:5]))} is not one of the "
                        f"{len(features)} features {model_name} was trained on{hint}; drop it from the file")
    label = "no label column" if li is None else f"label {_named(names, li)}"
    return Plan(cols, li, None, f"{label}; {len(cols)} features matched by name")


def _given_label(labels, rest):
    """The file column ``--labels first|last|none`` names among the columns ``rest`` (None: no label)."""
    return {"first": rest[0], "last": rest[-1], "none": None}[labels]


def _by_position(path, names, rest, d, labels, label_opt, model_name):
    n = len(rest)
    rest_names = None if names is None else [names[j] for j in rest]
    ambiguous = None
    if labels == "auto":
        if n == d + 1:
            li = rest[label_index(label_opt, rest_names, n, path)]
            why = f"{n} columns = {d} features + the label (--labels auto)"
        elif n == d:
            li = None
            if d > 1:  # where the label would be, were this a labelled file one feature short
                ambiguous = rest[label_index(label_opt if isinstance(label_opt, int) else 0, None, n, path)]
            why = f"{n} columns = the model's {d} features, no label column (--labels auto; say --labels first " \
                  "if the file is labelled)"
        else:
            raise DataError(f"{path}: {n} columns; {model_name} was trained on {d} features (give {d} feature "
                            f"columns, or {d + 1} with the label column)")
    else:
        li = _given_label(labels, rest)
        why = f"--labels {labels}"
    features = [j for j in rest if j != li]
    if len(features) != d:
        raise DataError(f"{path}: {len(features)} feature columns with {why}; {model_name} was trained on {d}")
    label = "no label column" if li is None else f"label {_named(names, li)}"
    return Plan(features, li, None, f"{label}, {len(features)} features by position ({why})", ambiguous)


def _check_ambiguous(path, plan, A, model, model_name):
    """``--labels auto`` on a file whose column count fits "no label": refuse when the column a label would
    take holds only training label values, as a labelled file one feature short does."""
    classes = model.preprocessor.classes
    if plan.ambiguous is None or classes is None or A.shape[0] == 0:
        return
    if np.asarray(classes).dtype.kind not in "biuf":
        return  # text labels (a scikit-learn fit): a numeric column cannot be mistaken for them
    col = A[:, plan.ambiguous]
    if np.isin(col, np.asarray(classes, dtype=np.float64)).all():
        d = len(plan.features)
        raise DataError(f"{path}: {d} columns fit {model_name}'s {d} features without a label column, but "
                        f"column {plan.ambiguous + 1} holds only training label values ({_preview(classes)}): "
                        f"this may be a labelled file one feature short. Say which it is: --labels none (score "
                        f"all {d} columns as features) or --labels first (or last, where the label is)")


def _preview(values, k=6):
    values = [v.item() if hasattr(v, "item") else v for v in values]
    return ", ".join(map(repr, values[:k])) + (f", ... ({len(values)} in all)" if len(values) > k else "")


def _csv_blocks(path, fmt, opts, model, model_name, labels, say):
    layout = sniff(path, fmt, opts.get("header", "auto"))
    delim, names, ncols, skip = layout
    plan = plan_columns(model, path, names, ncols, labels, opts.get("label"), model_name)
    keep = np.array(plan.features, dtype=np.intp)
    li = plan.label
    text = li if li is not None and _text_classes(model) else None  # a label column of class names
    columns = names or [str(j + 1) for j in range(ncols)]
    first_block = True
    for A, T, lines, first, _ in iter_parsed(path, layout, text):
        if first_block:
            _check_ambiguous(path, plan, A, model, model_name)
        bad = NonFinite()
        bad.scan(A[:, keep], lines, first, [columns[j] for j in keep])
        if text is not None:
            bad.scan_missing(T == "", lines, first, columns[li])
        elif li is not None:
            bad.scan(A[:, [li]], lines, first, [columns[li]])
        if bad.line is not None:
            raise DataError(f"{path}:{bad.line}: a NaN, inf or missing cell in column {bad.column}; kopt predict "
                            "needs every cell finite")
        if first_block:  # said once the first block is read: an error stays the only line
            say(plan.how)
            first_block = False
        for i in range(0, A.shape[0], ROWS):
            part = A[i : i + ROWS]
            y = None if li is None else T[i : i + ROWS] if text is not None else part[:, li].copy()  # no view of A
            yield part[:, keep].astype(np.float32), y


def _text_classes(model):
    """Whether the model's classes are names (a label column of text), not numbers."""
    classes = model.preprocessor.classes
    return classes is not None and np.asarray(classes).dtype.kind in "US"


def _npy_blocks(path, opts, model, model_name, labels, say):
    try:
        A = np.load(path, mmap_mode="r", allow_pickle=False)
    except Exception as exc:
        raise numpy_load_error(path, exc) from None
    if not isinstance(A, np.ndarray) or A.ndim != 2 or A.dtype.kind not in "biuf":
        raise DataError(f"{path}: expected a 2-D numeric array (rows x columns), got {np.shape(A)} {A.dtype}")
    plan = plan_columns(model, path, None, A.shape[1], labels, opts.get("label"), model_name)
    keep, li = plan.features, plan.label
    for i in range(0, A.shape[0], ROWS):
        part = np.asarray(A[i : i + ROWS], dtype=np.float64)
        if i == 0:
            _check_ambiguous(path, plan, part, model, model_name)
        _check_cells(path, part, i)
        if i == 0:
            say(plan.how)
        yield part[:, keep].astype(np.float32), None if li is None else part[:, li].copy()


def _table_blocks(path, fmt, opts, d, model_name, labels):
    if labels != "auto":
        raise DataError(f"{path}: --labels {labels} applies to CSV, TSV and .npy files; this is a {fmt} file, "
                        "whose format says where its labels are")
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
