"""``kopt data fetch|list|import|info``."""
from __future__ import annotations

import os
import sys

import numpy as np

from ..data.nonfinite import missing_labels
from ..data.progress import human_bytes
from ..errors import DataError

_STEP = 1 << 16


def _file_presets(names=None):
    """``[(name, preset instance)]`` of the registered file presets (all, or ``names`` in order)."""
    from ..contract.registry import registry
    from ..data.presets import FilePreset

    reg = registry()
    known = reg.names("dataset")
    out = []
    for name in names or known:
        if name not in known:
            raise DataError(f"unknown dataset {name!r}; registered presets: {', '.join(known)}")
        cls = reg.get("dataset", name)
        if names and not issubclass(cls, FilePreset):
            raise DataError(f"dataset preset {name!r} has no files ({cls.supports() or cls.summary})")
        if issubclass(cls, FilePreset):
            out.append((name, cls()))
    return out


def _all_remotes(preset):
    """Every file of a preset, whatever its options choose (MNIST's full set included)."""
    seen = []
    for opts in getattr(preset, "option_sets", lambda: [{}])():
        for r in type(preset)(**opts).remotes():
            if r not in seen:
                seen.append(r)
    for r in preset.remotes():
        if r not in seen:
            seen.append(r)
    return seen


def fetch(args) -> int:
    """Make every file of the named presets present and verified in ``$KOPT_DATA`` (download if needed)."""
    progress = False if args.quiet else None
    for name, preset in _file_presets(args.names):
        for remote in preset.remotes():
            got = preset.obtain(remote, progress=progress)
            if not args.quiet:
                verb = {"packaged": "packaged with kopt", "cached": "already present, verified",
                        "mirror": "copied from KOPT_DATA_MIRROR, verified",
                        "downloaded": "downloaded, verified"}[got.origin]
                print(f"{name}: {got.path} ({human_bytes(got.path.stat().st_size)}, {verb})")
    return 0


def list_presets(args) -> int:
    """Every dataset preset: its files, whether they are here, and how much a download is."""
    from ..contract.registry import registry
    from ..data.presets import FilePreset
    from ..data.store import preset_dir

    reg = registry()
    from ..data.cache import default_data_dir

    print(f"data folder: {default_data_dir()}  (set KOPT_DATA to move it)")
    for name in reg.names("dataset"):
        cls = reg.get("dataset", name)
        print(f"\n{name}: {cls.summary}")
        if not issubclass(cls, FilePreset):
            print("  generated (no files)")
            continue
        preset = cls()
        for remote, where, path in preset.status():
            size = f", {human_bytes(remote.size)} download" if remote.size and where == "missing" else ""
            place = {"packaged": "packaged with kopt", "cached": str(path),
                     "missing": f"not here{size}; fetched on first use into {preset_dir(name)}"}[where]
            print(f"  {remote.filename:28s} {place}")
    return 0


def import_(args) -> int:
    """Copy the preset files found in a folder into ``$KOPT_DATA`` after checking their checksums."""
    from ..data.store import import_folder

    presets = [(name, _all_remotes(p)) for name, p in _file_presets(args.names or None)
               if not (p.bundled and all(where == "packaged" for _, where, _ in p.status()))]
    counts = {"imported": 0, "present": 0, "missing": 0, "mismatch": 0}

    def log(row):
        name, remote, status, path = row
        counts[status] += 1
        if args.quiet and status != "mismatch":
            return
        text = {"imported": f"imported from {path}", "present": f"already present ({path})",
                "missing": "not in the folder", "mismatch": f"{path} differs from every known checksum; skipped"}
        out = sys.stderr if status == "mismatch" else sys.stdout
        print(f"{name}: {remote.filename}: {text[status]}", file=out)

    import_folder(args.folder, presets, log=log)
    if not args.quiet:
        print(f"{counts['imported']} imported, {counts['present']} already present, {counts['missing']} not found, "
              f"{counts['mismatch']} rejected")
    return 2 if counts["mismatch"] else 0


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
    from ..data.readers import read_table
    from ..data.stream import compression_of

    path = args.file
    X, y, meta = read_table(path, {"format": args.format, "label": _label_arg(args.label), "progress": None})
    comp = compression_of(path)
    on_disk = f"{human_bytes(os.path.getsize(path))} on disk" + (f", {comp}-compressed" if comp else "")
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
    if meta.get("index_column") is not None:
        text += f"; file column {meta['index_column'] + 1} is a pandas row index (skipped)"
    if meta.get("feature_names"):
        names = meta["feature_names"]
        text += f"; named {', '.join(names[:8])}" + (", ..." if len(names) > 8 else "")
    if y is not None and meta.get("label_column") is not None:
        li = meta["label_column"]
        name = f" {meta['header'][li]!r}" if meta.get("header") else ""
        found = ", found by its header name" if meta.get("label_from") == "header" else ""
        text += f" + label (file column {li + 1}{name}{found})"
    elif y is not None and meta.get("labels_file"):
        text += f" + labels from {meta['labels_file']}"
    elif y is not None:
        text += " + label"
    return text


def _labels(y):
    y = np.asarray(y)
    if y.dtype.kind in "US":  # class names
        values, counts = np.unique(y[y != ""], return_counts=True)
        parts = [f"{v}: {c:,} ({c / max(1, y.size):.1%})" for v, c in zip(values[:20], counts[:20])]
        more = f", ... ({values.size:,} in all)" if values.size > 20 else ""
        return f"{values.size:,} class names; " + ", ".join(parts) + more
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
    y_bad = 0 if y is None else int(missing_labels(y).sum())
    missing = "none" if not n_nan else f"{n_nan:,} NaN or empty cells"
    if n_nan and data.ndim == 2:
        top = np.argsort(-nan_cols)[:5]
        cols = meta.get("feature_names") or [str(j + 1) for j in range(len(nan_cols))]
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
        text = f"X {human_bytes(nbytes)} as CSR float32 ({human_bytes(4 * X.shape[0] * X.shape[1])} dense)"
    else:
        text = f"X {human_bytes(X.nbytes)} float32"
    if y is not None:
        y = np.asarray(y)
        text += f", y {human_bytes(y.nbytes)} " + ("text" if y.dtype.kind in "US" else "float64")
    return text
