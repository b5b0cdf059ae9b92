"""``kopt data fetch NAME`` and ``kopt data info FILE``."""
from __future__ import annotations

import os
import sys

import numpy as np

from ..errors import DataError
from .progress import _human

_STEP = 1 << 16


def fetch(args) -> int:
    """Download a preset's file into ``$KOPT_DATA`` (or check the copy already there)."""
    from ..plugins import registry
    from .cache import default_data_dir
    from .download import fetch as download
    from .download import sha256_of

    reg = registry()
    if args.name not in reg.names("dataset"):
        raise DataError(f"unknown dataset {args.name!r}; registered presets: {', '.join(reg.names('dataset'))}")
    cls = reg.get("dataset", args.name)
    remote = getattr(cls, "remote", None)
    if remote is None:
        raise DataError(f"dataset preset {args.name!r} has nothing to download ({cls.supports() or cls.summary})")
    dest = default_data_dir() / remote.filename
    progress = False if args.quiet else None
    if dest.is_file():
        size = dest.stat().st_size
        if remote.size is not None and size != remote.size:
            raise DataError(f"{dest}: {size:,} bytes, but {remote.filename} is {remote.size:,} bytes "
                            "(a partial or different file); delete it and run kopt data fetch again")
        if remote.sha256 is not None and sha256_of(dest, progress) != remote.sha256:
            raise DataError(f"{dest}: sha256 differs from {remote.sha256} (corrupt or a different file); "
                            "delete it and run kopt data fetch again")
        if not args.quiet:
            print(f"{dest}: already present ({_human(size)}" + (", sha256 verified)" if remote.sha256 else ")"))
        return 0
    download(remote, dest, progress=progress)
    if not args.quiet:
        checks = [c for c, v in (("size", remote.size), ("sha256", remote.sha256)) if v is not None]
        print(f"{dest}: downloaded ({_human(dest.stat().st_size)}"
              + (f", {' and '.join(checks)} verified)" if checks else ", no checksum declared)"))
    return 0


def _label_arg(text):
    if text is None:
        return None
    if text.lower() in ("none", "false", "no"):
        return False
    try:
        return int(text)
    except ValueError:
        return text


def info(args) -> int:
    """Print rows, columns, label distribution, missing values and the in-memory size of a file."""
    from .readers import read_table
    from .stream import compression_of

    path = args.file
    X, y, meta = read_table(path, {"format": args.format, "label": _label_arg(args.label), "progress": None})
    comp = compression_of(path)
    on_disk = f"{_human(os.path.getsize(path))} on disk" + (f", {comp}-compressed" if comp else "")
    lines = [("file", f"{path} ({meta['format']}, {on_disk})"), ("rows", f"{X.shape[0]:,}"),
             ("columns", _columns(X, y, meta))]
    lines.append(("labels", _labels(y) if y is not None else "none (no label column)"))
    lines.extend(_nonfinite(X, y, meta))
    lines.append(("memory", _memory(X, y)))
    width = max(len(k) for k, _ in lines)
    sys.stdout.write("".join(f"{k.ljust(width)}  {v}\n" for k, v in lines))
    return 0


def _columns(X, y, meta):
    d = X.shape[1]
    text = f"{d:,} features"
    if hasattr(X, "tocsr"):
        text += f" (sparse: {X.nnz:,} stored values, {X.nnz / max(1, X.shape[0] * d):.2%} non-zero)"
    if meta.get("header"):
        names = [n for j, n in enumerate(meta["header"]) if j != meta.get("label_column")]
        text += f"; named {', '.join(names[:8])}" + (", ..." if len(names) > 8 else "")
    if y is not None and meta.get("label_column") is not None:
        li = meta["label_column"]
        name = f" {meta['header'][li]!r}" if meta.get("header") else ""
        text += f" + label (file column {li + 1}{name})"
    elif y is not None and meta.get("labels_file"):
        text += f" + labels from {meta['labels_file']}"
    elif y is not None:
        text += " + label"
    return text


def _labels(y):
    y = np.asarray(y)
    finite = y[np.isfinite(y)]
    values, counts = np.unique(finite, return_counts=True)
    if values.size <= 20:
        parts = [f"{_fmt(v)}: {c:,} ({c / max(1, y.size):.1%})" for v, c in zip(values, counts)]
        kind = "two values" if values.size == 2 else f"{values.size} distinct values"
        return f"{kind}; " + ", ".join(parts)
    q = np.percentile(finite, [0, 50, 100]) if finite.size else [np.nan] * 3
    return (f"{values.size:,} distinct values (real-valued): min {q[0]:.6g}, median {q[1]:.6g}, "
            f"mean {finite.mean():.6g}, max {q[2]:.6g}")


def _fmt(v):
    return str(int(v)) if float(v).is_integer() else f"{v:.6g}"


def _nonfinite(X, y, meta):
    data = X.data if hasattr(X, "tocsr") else X
    nan_cols = np.zeros(1 if data.ndim == 1 else data.shape[1], dtype=np.int64)
    n_inf = n_nan = rows = 0
    for i in range(0, data.shape[0], _STEP):
        blk = np.asarray(data[i : i + _STEP])
        isnan = np.isnan(blk)
        n_nan += int(isnan.sum())
        n_inf += int(np.isinf(blk).sum())
        if blk.ndim == 2:
            nan_cols += isnan.sum(axis=0)
            rows += int((~np.isfinite(blk)).any(axis=1).sum())
    y_bad = 0 if y is None else int((~np.isfinite(np.asarray(y))).sum())
    missing = "none" if not n_nan else f"{n_nan:,} NaN or empty cells"
    if n_nan and data.ndim == 2:
        top = np.argsort(-nan_cols)[:5]
        names = meta.get("header")
        li = meta.get("label_column")
        cols = [n for j, n in enumerate(names) if j != li] if names else [str(j + 1) for j in range(len(nan_cols))]
        missing += f" in {rows:,} rows; most in " + ", ".join(f"{cols[j]} ({nan_cols[j]:,})" for j in top if nan_cols[j])
    if y_bad:
        missing += f"; {y_bad:,} missing labels"
    out = [("missing", missing), ("infinite", "none" if not n_inf else f"{n_inf:,} cells")]
    if meta.get("first_nonfinite"):
        line, col = meta["first_nonfinite"]
        out.append(("first bad", f"line {line}, column {col}"))
    return out


def _memory(X, y):
    if hasattr(X, "tocsr"):
        nbytes = X.data.nbytes + X.indices.nbytes + X.indptr.nbytes
        text = f"X {_human(nbytes)} as CSR float32 ({_human(4 * X.shape[0] * X.shape[1])} dense)"
    else:
        text = f"X {_human(X.nbytes)} float32"
    if y is not None:
        text += f", y {_human(np.asarray(y).nbytes)} float64"
    return text
