"""Holdout metrics, chosen by the loss's target type."""
from __future__ import annotations

import numpy as np


def accuracy(y_true, y_pred):
    return float(np.mean(np.asarray(y_true) == np.asarray(y_pred)))


def average_ranks(x):
    """1-based ranks of ``x`` with ties given their average rank (scipy.stats.rankdata's default)."""
    x = np.asarray(x, dtype=np.float64)
    order = np.argsort(x, kind="mergesort")
    sorted_x = x[order]
    starts = np.concatenate([[True], sorted_x[1:] != sorted_x[:-1]])
    group = np.cumsum(starts) - 1
    first = np.flatnonzero(starts)
    counts = np.diff(np.append(first, x.size))
    avg = first + (counts + 1) / 2.0  # average of the 1-based positions first+1 … first+count
    ranks = np.empty(x.size, dtype=np.float64)
    ranks[order] = avg[group]
    return ranks


def auc(y_pos, scores):
    """ROC AUC from ranks (ties averaged); ``y_pos`` boolean."""
    y_pos = np.asarray(y_pos, dtype=bool)
    n1 = int(y_pos.sum())
    n0 = y_pos.size - n1
    if n1 == 0 or n0 == 0:
        return float("nan")
    r = average_ranks(scores)
    return float((r[y_pos].sum() - n1 * (n1 + 1) / 2) / (n1 * n0))


def rmse(y_true, y_pred):
    d = np.asarray(y_true, dtype=np.float64) - np.asarray(y_pred, dtype=np.float64)
    return float(np.sqrt(np.mean(d * d)))


def mae(y_true, y_pred):
    return float(np.mean(np.abs(np.asarray(y_true, dtype=np.float64) - np.asarray(y_pred, dtype=np.float64))))


def r2(y_true, y_pred):
    y_true = np.asarray(y_true, dtype=np.float64)
    ss = np.sum((y_true - y_true.mean()) ** 2)
    return float(1.0 - np.sum((y_true - np.asarray(y_pred)) ** 2) / ss) if ss > 0 else float("nan")


def evaluate(target, y_true, scores, preprocessor):
    """Metrics of decision values ``scores`` against user labels ``y_true``."""
    scores = np.asarray(scores)
    if target == "binary":
        pred = preprocessor.decode(scores)
        return {"accuracy": accuracy(y_true, pred), "auc": auc(np.asarray(y_true) == preprocessor.classes[1], scores)}
    if target == "multiclass":
        return {"accuracy": accuracy(y_true, preprocessor.decode(scores))}
    if target == "real":
        pred = preprocessor.decode(scores)
        return {"rmse": rmse(y_true, pred), "mae": mae(y_true, pred), "r2": r2(y_true, pred)}
    return {}


def by_class(y_true, y_pred, classes) -> dict:
    """Per class, in the user's names: ``{name: {"rows": test rows of the class, "recall": the share of them
    predicted as the class}}`` (recall None for a class the test rows lack)."""
    y_true, y_pred = np.asarray(y_true), np.asarray(y_pred)
    out = {}
    for c in classes:
        mine = y_true == c
        n = int(np.count_nonzero(mine))
        name = c.item() if hasattr(c, "item") else c
        if isinstance(name, float) and name.is_integer():
            name = int(name)  # numeric class 1.0 is "1", as kopt data info writes it
        out[str(name)] = {"rows": n, "recall": float(np.mean(y_pred[mine] == c)) if n else None}
    return out


#: why a metric can be undefined on a test split
_UNDEFINED = {"auc": "the test labels hold one class only, so there is no pair to rank",
              "r2": "the test targets are all equal, so there is no variance to explain"}


def defined(metrics: dict, where="the test split") -> dict:
    """``metrics`` with every value that is not a finite number as None (JSON ``null``), each with a one-line
    warning saying why: reports and traces are strict JSON, which has no NaN."""
    import math
    import warnings

    out = {}
    for k, v in metrics.items():
        if isinstance(v, (int, float, np.floating)) and not math.isfinite(float(v)):
            why = _UNDEFINED.get(k, f"it came out as {float(v)}")
            warnings.warn(f"{k} on {where} is undefined ({why}); it is reported as null", UserWarning, stacklevel=2)
            v = None
        out[k] = v
    return out
