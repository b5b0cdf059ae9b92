"""The data layer: files and presets -> train/test arrays (see docs/data.md)."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..errors import DataError
from .preprocess import Preprocessor
from .readers import read_file


@dataclass
class Dataset:
    """Raw (not yet standardized) training and optional test arrays."""

    X: object
    y: object
    X_test: object = None
    y_test: object = None
    info: dict = field(default_factory=dict)


def load_data(data_spec: dict, registry=None) -> Dataset:
    """Read the files a resolved ``data`` spec section names."""
    spec = dict(data_spec)
    if spec.get("source"):
        from ..plugins import registry as get_registry

        reg = registry or get_registry()
        preset = reg.get("dataset", spec["source"])(**spec.get("options", {}))
        generated = preset.generate(spec)
        if generated is not None:
            return generated
        spec = preset.resolve(spec)
    if not spec.get("train"):
        raise DataError("the spec has no data: set data.train (a file or a list of files) or data.source "
                        "(a preset; `kopt plugins` lists them), or pass arrays: kopt.solve(spec, data=(X, y))")
    train = spec["train"] if isinstance(spec["train"], list) else [spec["train"]]
    parts = [read_file(path, spec) for path in train]
    X = parts[0][0] if len(parts) == 1 else _stack([p[0] for p in parts])
    y = parts[0][1] if len(parts) == 1 else np.concatenate([p[1] for p in parts])
    spec["train"] = train[0] if len(train) == 1 else train
    if spec.get("max_rows"):
        X, y = X[: spec["max_rows"]], None if y is None else y[: spec["max_rows"]]
    X_test = y_test = None
    if spec.get("test"):
        X_test, y_test = read_file(spec["test"], {**spec, "n_features": spec.get("n_features") or X.shape[1]})
        if X_test.shape[1] != X.shape[1]:
            raise DataError(f"{spec['test']}: {X_test.shape[1]} features, the training file {spec['train']} has {X.shape[1]}")
    elif spec.get("test_fraction"):
        rng = np.random.default_rng(spec["split_seed"])
        perm = rng.permutation(X.shape[0])
        n_test = int(round(spec["test_fraction"] * X.shape[0]))
        te, tr = perm[:n_test], perm[n_test:]
        X_test, y_test = X[te], None if y is None else y[te]
        X, y = X[tr], None if y is None else y[tr]
    check_finite(X, spec["train"], spec.get("nonfinite", "error"))
    if X_test is not None:
        check_finite(X_test, spec.get("test") or spec["train"], spec.get("nonfinite", "error"))
    return Dataset(X, y, X_test, y_test, info={"train": spec["train"], "test": spec.get("test")})


def _stack(blocks):
    if hasattr(blocks[0], "tocsr"):
        from scipy import sparse

        n = max(b.shape[1] for b in blocks)
        return sparse.vstack([b.tocsr().__class__((b.data, b.indices, b.indptr), shape=(b.shape[0], n)) for b in blocks]).tocsr()
    return np.concatenate(blocks, axis=0)


def check_finite(X, source, policy="error"):
    data = X.data if hasattr(X, "tocsr") else X
    if np.all(np.isfinite(data)):
        return
    if policy == "error":
        rows = np.nonzero(~np.isfinite(np.asarray(X.todense() if hasattr(X, "todense") else X)).all(axis=1))[0]
        raise DataError(
            f"{source}: {int((~np.isfinite(data)).sum())} NaN/inf values (first in data row {int(rows[0]) + 1}); "
            "set data.nonfinite to drop, zero or mean to handle them"
        )


def as_dataset(data) -> Dataset:
    """Arrays from the Python API: (X, y), (X, y, X_test, y_test), a dict, or a Dataset."""
    if isinstance(data, Dataset):
        return data
    if isinstance(data, dict):
        return Dataset(data["X"], data.get("y"), data.get("X_test"), data.get("y_test"), info={"train": "<arrays>"})
    if isinstance(data, (tuple, list)) and len(data) in (2, 4):
        return Dataset(*data, info={"train": "<arrays>"})
    raise DataError("data must be (X, y), (X, y, X_test, y_test), a dict with X and y, or a kopt.data.Dataset")


__all__ = ["Dataset", "Preprocessor", "load_data", "as_dataset", "read_file"]
