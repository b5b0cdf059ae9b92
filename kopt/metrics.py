"""Holdout metrics, chosen by the loss's target type."""
from __future__ import annotations

import numpy as np


def accuracy(y_true, y_pred):
    return float(np.mean(np.asarray(y_true) == np.asarray(y_pred)))


def auc(y_pos, scores):
    """ROC AUC from ranks (ties averaged); ``y_pos`` boolean."""
    from scipy.stats import rankdata

    y_pos = np.asarray(y_pos, dtype=bool)
    n1 = int(y_pos.sum())
    n0 = y_pos.size - n1
    if n1 == 0 or n0 == 0:
        return float("nan")
    r = rankdata(np.asarray(scores, dtype=np.float64))
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
