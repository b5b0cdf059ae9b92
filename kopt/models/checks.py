"""A model file's contents checked before they are used (:func:`kopt.models.model.load_model`).

The JSON and the npz are inputs like any other: a hand-edited or foreign file
must end in a :class:`~kopt.errors.ModelFileError` naming the file and the
field, never in an internal error or a prediction made of NaN.  Checked:
the keys and types of the metadata, the spec's feature dtype, every array
numeric and finite, the preprocessing arrays' shapes, and one prediction of a
zero row (which catches predictor arrays of inconsistent shapes).
"""
from __future__ import annotations

import numpy as np

from ..errors import KoptError, ModelFileError
from ..files.npz import NUMERIC_KINDS

_META_TYPES = {"predictor": str, "predictor_meta": dict, "preprocessor": dict, "kernel": dict, "loss": dict,
               "spec": dict}
_PRE_TYPES = {"target": str, "y_mean": (int, float), "y_scale": (int, float), "n_features": int}
DTYPES = ("float32", "float64")


def check_meta(meta: dict, source):
    """The keys kopt reads from a model's JSON, with the right types."""
    for key, kind in _META_TYPES.items():
        if not isinstance(meta.get(key), kind):
            raise ModelFileError(f"{source}: field {key!r} is missing or not a {_name(kind)}")
    for key, kind in _PRE_TYPES.items():
        value = meta["preprocessor"].get(key)
        if not isinstance(value, kind) or isinstance(value, bool):
            raise ModelFileError(f"{source}: field preprocessor.{key} is missing or not a {_name(kind)}")
    pre = meta["preprocessor"]
    if pre["n_features"] < 1 or not (np.isfinite(pre["y_mean"]) and np.isfinite(pre["y_scale"])):
        raise ModelFileError(f"{source}: preprocessor: n_features must be >= 1 and y_mean, y_scale finite; "
                             f"got {pre['n_features']}, {pre['y_mean']}, {pre['y_scale']}")
    dtype = meta["spec"].get("model", {}).get("features", {}).get("dtype") if isinstance(
        meta["spec"].get("model"), dict) and isinstance(meta["spec"]["model"].get("features"), dict) else None
    if dtype not in DTYPES:
        raise ModelFileError(f"{source}: spec.model.features.dtype is {dtype!r}; expected one of {', '.join(DTYPES)}")


def check_arrays(arrays: dict, meta: dict, source):
    """Every array numeric and finite; the preprocessing arrays of length n_features."""
    for name, value in arrays.items():
        if value.dtype.kind not in NUMERIC_KINDS and not name.startswith("pre_classes"):
            raise ModelFileError(f"{source}: array {name!r} has dtype {value.dtype}; expected numbers")
        if value.dtype.kind == "f" and not np.isfinite(value).all():
            raise ModelFileError(f"{source}: array {name!r} holds NaN or inf values")
    d = meta["preprocessor"]["n_features"]
    for name in ("pre_mean", "pre_scale"):
        if name in arrays and arrays[name].shape != (d,):
            raise ModelFileError(f"{source}: array {name!r} has shape {arrays[name].shape}; expected ({d},) "
                                 "(preprocessor.n_features)")


def check_predicts(model, source):
    """One prediction of a zero row: a model whose arrays do not fit together is refused here."""
    try:
        scores = model.decision_function(np.zeros((1, model.n_features_in), dtype=np.float32))
    except KoptError as exc:
        raise ModelFileError(f"{source}: the model cannot predict: {exc}") from None
    except (ValueError, TypeError, IndexError, KeyError, AttributeError) as exc:
        raise ModelFileError(f"{source}: the model's arrays do not fit together ({type(exc).__name__}: {exc})") from None
    if not np.isfinite(np.asarray(scores, dtype=np.float64)).all():
        raise ModelFileError(f"{source}: the model predicts NaN or inf")


def _name(kind):
    kinds = kind if isinstance(kind, tuple) else (kind,)
    return " or ".join({"str": "string", "dict": "mapping", "int": "integer", "float": "number"}[k.__name__]
                       for k in kinds)
