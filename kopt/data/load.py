"""``data`` spec section -> :class:`Dataset`: files or a preset, splits, non-finite cells."""
from __future__ import annotations

import logging
from dataclasses import dataclass, field

import numpy as np

from ..errors import DataError
from .nonfinite import apply_nonfinite, check_arrays
from .readers import read_table

LOG = logging.getLogger("kopt.data")
READ_KEYS = ("format", "label", "header", "n_features", "zero_based", "sparse", "cache", "progress")
SPLIT_KEYS = ("test", "test_fraction", "test_rows")


@dataclass
class Dataset:
    """Raw (not yet standardized) training and optional test arrays.

    ``info`` records where they came from: ``train``/``test`` (file names),
    ``split`` (how the test set was made), row counts, ``header`` names,
    ``cached`` (whether the parsed-array cache served the read).
    """

    X: object
    y: object
    X_test: object = None
    y_test: object = None
    info: dict = field(default_factory=dict)


def load_data(data_spec: dict, registry=None) -> Dataset:
    """Read the files a resolved ``data`` spec section names (or build a preset's data).

    Order: preset (``source``: ``generate`` returns a Dataset, or ``resolve``
    fills in files and options and may download) -> read the training file(s)
    (``max_rows`` stops the read early) -> split (``test`` file,
    ``test_fraction`` with ``split_seed``, or the last ``test_rows`` rows) ->
    non-finite cells per ``nonfinite``.
    """
    spec = dict(data_spec)
    if spec.get("source"):
        from ..contract.registry import registry as get_registry

        reg = registry or get_registry()
        preset = reg.get("dataset", spec["source"])(**spec.get("options", {}))
        generated = preset.generate(spec)
        if generated is not None:
            return generated
        spec = preset.resolve(spec)
    given = [k for k in SPLIT_KEYS if spec.get(k)]
    if len(given) > 1:
        raise DataError(f"data: {' and '.join('data.' + k for k in given)} are set together; the test set "
                        "comes from exactly one of them")
    if not spec.get("train"):
        raise DataError("the spec has no data: set data.train (a file) or data.source (a preset)")
    train = spec["train"] if isinstance(spec["train"], list) else [spec["train"]]
    opts = {k: spec[k] for k in READ_KEYS if k in spec}
    X, y, metas = _read_many(train, opts, spec.get("max_rows"))
    name = ", ".join(map(str, train))
    info = {"train": name, "test": spec.get("test"), "header": metas[0].get("header"),
            "feature_names": metas[0].get("feature_names"), "label_name": metas[0].get("label_name"),
            "label_from": metas[0].get("label_from"), "label_text": _label_text(metas),
            "format": metas[0]["format"], "cached": all(m.get("cached") for m in metas)}
    _say_label(metas[0], name)
    X_test = y_test = None
    test_metas = []
    if spec.get("test"):
        X_test, y_test, tm = _read_test(spec["test"], opts, X, y, name)
        test_metas = [tm]
        info["split"] = "test file"
    elif spec.get("test_fraction"):
        X, y, X_test, y_test = split_fraction(X, y, spec["test_fraction"], spec.get("split_seed", 0))
        info["split"] = f"test_fraction={spec['test_fraction']}, split_seed={spec.get('split_seed', 0)}"
    elif spec.get("test_rows"):
        X, y, X_test, y_test = split_last(X, y, spec["test_rows"], name)
        info["split"] = f"last {spec['test_rows']} rows"
    policy = spec.get("nonfinite", "error")
    X, y, fill = apply_nonfinite(X, y, policy, metas, train, fill=None)
    if X_test is not None:
        sources = [spec["test"]] if spec.get("test") else train
        X_test, y_test, _ = apply_nonfinite(X_test, y_test, policy, test_metas or metas, sources, fill=fill)
    info.update(n_train=X.shape[0], n_test=None if X_test is None else X_test.shape[0], n_features=X.shape[1])
    return Dataset(X, y, X_test, y_test, info=info)


def _read_many(paths, opts, max_rows):
    """Read one or more files as one table (same columns, same label layout)."""
    parts = []
    left = max_rows
    for path in paths:
        X, y, meta = read_table(path, {**opts, "max_rows": left})
        meta = {**meta, "path": str(path), "rows": X.shape[0]}
        if parts:
            _check_compatible(parts[0], (X, y, meta))
        elif meta.get("sparse") is not None:
            opts = {**opts, "sparse": meta["sparse"]}  # later files (and the test file) get the same layout
        parts.append((X, y, meta))
        if left is not None:
            left -= X.shape[0]
            if left <= 0:
                break
    metas = [p[2] for p in parts]
    if len(parts) == 1:
        return parts[0][0], parts[0][1], metas
    d = max(p[0].shape[1] for p in parts)
    Xs = [_widen(p[0], d) for p in parts]
    if hasattr(Xs[0], "tocsr"):
        from scipy import sparse

        X = sparse.vstack(Xs, format="csr")
    else:
        X = np.concatenate(Xs, axis=0)
    if parts[0][1] is None:
        return X, None, metas
    text = [p[2]["path"] for p in parts if p[1].dtype.kind in "US"]
    if text and len(text) != len(parts):
        other = next(p[2]["path"] for p in parts if p[1].dtype.kind not in "US")
        raise DataError(f"{other}: its label column holds numbers, but {text[0]} has class names; training files "
                        "read as one must label their rows alike")
    return X, np.concatenate([p[1] for p in parts]), metas


def _label_text(metas):
    """``[file, line, cell]`` of the first label cell that is not a number (None: numeric labels)."""
    for m in metas:
        if m.get("label_text"):
            return [m["path"], *m["label_text"]]
    return None


def _say_label(meta, name):
    """Log which column is the label when kopt chose it by its header name (``data.label`` not given)."""
    if meta.get("label_from") == "header":
        li = meta["label_column"]
        LOG.info("%s: the label is column %d %r, found by its header name (set data.label to choose another)",
                 name, li + 1, meta["label_name"])


def _widen(X, d):
    """Pad a LIBSVM block whose highest features never occur to ``d`` columns."""
    if X.shape[1] == d:
        return X
    if hasattr(X, "tocsr"):
        from scipy import sparse

        X = X.tocsr()
        return sparse.csr_matrix((X.data, X.indices, X.indptr), shape=(X.shape[0], d))
    return np.hstack([X, np.zeros((X.shape[0], d - X.shape[1]), dtype=X.dtype)])


def _check_compatible(first, other):
    (X0, y0, m0), (X1, y1, m1) = first, other
    if (y0 is None) != (y1 is None):
        which = m0["path"] if y0 is not None else m1["path"]
        raise DataError(f"{m1['path']}: the training files differ in having a label column (only {which} has one)")
    if m0["format"] != m1["format"]:
        raise DataError(f"{m1['path']}: format {m1['format']}, but {m0['path']} is {m0['format']}; "
                        "training files read as one must share a format")
    if m0["format"] != "libsvm" and X0.shape[1] != X1.shape[1]:
        raise DataError(f"{m1['path']}: {X1.shape[1]} features, but {m0['path']} has {X0.shape[1]}")


def _read_test(path, opts, X, y, train_name):
    """The test file, read with the training layout; its feature count must match."""
    topts = {**opts, "n_features": X.shape[1], "sparse": hasattr(X, "tocsr")}
    if y is not None and y.dtype.kind in "US":
        topts["text_labels"] = True  # class names, even where the test file's first rows look like numbers
    X_test, y_test, meta = read_table(path, {**topts, "max_rows": None})
    meta = {**meta, "path": str(path), "rows": X_test.shape[0]}
    if X_test.shape[1] != X.shape[1]:
        raise DataError(f"{path}: {X_test.shape[1]} features, but the training data ({train_name}) has {X.shape[1]}")
    return X_test, y_test, meta


def split_fraction(X, y, test_fraction, split_seed):
    """Seeded random split: ``perm = default_rng(split_seed).permutation(n)``,
    ``n_test = floor(test_fraction * n + 0.5)``, train ``perm[:n - n_test]``,
    test ``perm[n - n_test:]`` (rows in permutation order)."""
    n = X.shape[0]
    n_test = int(np.floor(test_fraction * n + 0.5))
    if not 1 <= n_test < n:
        raise DataError(f"data.test_fraction={test_fraction} of {n} rows leaves {n_test} test and "
                        f"{n - n_test} training rows; both need at least one")
    perm = np.random.default_rng(split_seed).permutation(n)
    tr, te = perm[: n - n_test], perm[n - n_test :]
    return X[tr], None if y is None else y[tr], X[te], None if y is None else y[te]


def split_last(X, y, test_rows, name):
    """The last ``test_rows`` rows are the test set (no shuffling; views, no copy)."""
    n = X.shape[0]
    if not 1 <= test_rows < n:
        raise DataError(f"{name}: data.test_rows={test_rows} needs more than {test_rows} rows; the data has {n}"
                        " (set data.test_fraction instead, or read more rows)")
    cut = n - test_rows
    return X[:cut], None if y is None else y[:cut], X[cut:], None if y is None else y[cut:]


def as_dataset(data, nonfinite="error") -> Dataset:
    """Arrays from the Python API: (X, y), (X, y, X_test, y_test), a dict, or a Dataset."""
    if isinstance(data, Dataset):
        return data
    if isinstance(data, dict):
        unknown = set(data) - {"X", "y", "X_test", "y_test"}
        if "X" not in data or unknown:
            raise DataError("a data dict holds X, y and optionally X_test, y_test"
                            + (f"; unknown keys: {', '.join(sorted(map(str, unknown)))}" if unknown else ""))
        parts = (data["X"], data.get("y"), data.get("X_test"), data.get("y_test"))
    elif isinstance(data, (tuple, list)) and len(data) in (2, 4):
        parts = tuple(data) + (None, None) * (len(data) == 2)
    else:
        raise DataError("data must be (X, y), (X, y, X_test, y_test), a dict with X and y, or a kopt.data.Dataset")
    X, y, X_test, y_test = check_arrays(*parts, nonfinite=nonfinite)
    info = {"train": "<arrays>", "test": None if X_test is None else "<arrays>", "split": "given",
            "n_train": X.shape[0], "n_test": None if X_test is None else X_test.shape[0], "n_features": X.shape[1]}
    return Dataset(X, y, X_test, y_test, info=info)
