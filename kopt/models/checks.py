"""A model file's contents checked whole before they are used (:func:`kopt.models.model.load_model`).

The JSON and the npz are inputs like any other: a hand-edited or foreign file
must end in a :class:`~kopt.errors.ModelFileError` naming the file and the
field, never in an internal error or a prediction made of NaN.  Checked, each
field on its own and against the others:

* the keys and types of the metadata, the spec's feature dtype and the data
  options ``kopt predict`` reads new files with (:func:`check_meta`);
* every array numeric and finite, the preprocessing arrays of length
  ``n_features`` (:func:`check_arrays`);
* the target against the classes (two for a binary target, at least two,
  sorted and distinct, for a multiclass one, none for a regression), the
  calibration's sigmoids against the classes, the training column names
  against ``n_features``, the loss and kernel against the spec's
  (:func:`check_fields`);
* one zero row through every prediction path -- the scores, whose columns must
  match the classes, the labels decoded from them, the probabilities where the
  model has them, the predictor's extra outputs (:func:`check_predicts`);
* ``model_sha256`` recomputed from the content (:func:`check_hash`): a file
  whose arrays or model-shaping fields were changed after it was written, and
  its checksums made consistent again, is refused.
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
    _check_data_options(meta["spec"].get("data"), source)
    info = meta.get("info", {})
    if not isinstance(info, dict):
        raise ModelFileError(f"{source}: field 'info' is not a mapping")
    if "model_sha256" in meta and not (isinstance(meta["model_sha256"], str) and len(meta["model_sha256"]) == 64):
        raise ModelFileError(f"{source}: field 'model_sha256' is not a SHA-256 (64 hexadecimal digits)")


def _check_data_options(data, source):
    """``spec.data``: the options ``kopt predict`` reads new files with, each of the type and range the spec
    schema allows (a key a later kopt no longer knows is left alone: it is not read)."""
    import jsonschema

    from ..data.schema import DATA_SCHEMA

    if data is None:
        return
    if not isinstance(data, dict):
        raise ModelFileError(f"{source}: field spec.data is not a mapping")
    schema = {**DATA_SCHEMA, "additionalProperties": True}
    for error in jsonschema.Draft202012Validator(schema).iter_errors(data):
        where = ".".join(str(p) for p in ["spec", "data", *error.absolute_path])
        raise ModelFileError(f"{source}: field {where} holds {_short(error.instance)}, which no spec allows")


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


#: the targets a model file's preprocessor may have, and how many classes each holds (None: no classes)
TARGET_CLASSES = {"binary": 2, "two_sample": 2, "multiclass": "2+", "real": None, "unlabeled": None}


def check_fields(meta: dict, arrays: dict, source):
    """The fields against one another: the target and its classes, the calibration and the classes, the
    training column names and ``n_features`` (before the model is built from them)."""
    pre = meta["preprocessor"]
    target = pre["target"]
    if target not in TARGET_CLASSES:
        raise ModelFileError(f"{source}: field preprocessor.target is {target!r}; expected one of "
                             f"{', '.join(TARGET_CLASSES)}")
    if not pre["y_scale"] > 0:
        raise ModelFileError(f"{source}: field preprocessor.y_scale must be > 0, got {pre['y_scale']}")
    classes = arrays.get("pre_classes")
    want = TARGET_CLASSES[target]
    if want is None and classes is not None:
        raise ModelFileError(f"{source}: array 'pre_classes' holds {classes.size} classes, and a {target} target has "
                             "none")
    if want is not None:
        if classes is None or classes.ndim != 1:
            raise ModelFileError(f"{source}: a {target} model needs its classes (a 1-D array 'pre_classes'); "
                                 f"{'it is missing' if classes is None else f'it has shape {classes.shape}'}")
        if want == 2 and classes.size != 2 or want == "2+" and classes.size < 2:
            raise ModelFileError(f"{source}: array 'pre_classes' holds {classes.size} classes; a {target} target has "
                                 f"{'exactly 2' if want == 2 else 'at least 2'}")
        if classes.size > 1 and not np.all(classes[1:] > classes[:-1]):
            raise ModelFileError(f"{source}: array 'pre_classes' is not sorted and distinct, as kopt writes it")
    _check_calibration_fields(meta.get("calibration"), target, classes, source)
    _check_columns(meta.get("info", {}).get("columns"), pre["n_features"], source)
    for kind in ("loss", "kernel"):
        given = meta["spec"].get("model", {}).get(kind) if isinstance(meta["spec"].get("model"), dict) else None
        name = given.get("name") if isinstance(given, dict) else None
        if name not in (None, "auto") and name != meta[kind].get("name"):
            raise ModelFileError(f"{source}: field {kind}.name is {meta[kind].get('name')!r} and the spec's "
                                 f"model.{kind}.name {name!r}: they must be the same")


def _check_calibration_fields(calibration, target, classes, source):
    """A calibration has one sigmoid for two classes, one per class for more, and belongs to a classifier."""
    if calibration is None:
        return
    from . import calibration as _calibration

    _calibration.check(calibration, source)  # its own shape: method, as many finite a as b
    if target not in ("binary", "multiclass"):
        raise ModelFileError(f"{source}: field 'calibration' gives class probabilities, and this model has a {target} "
                             "target, not classes")
    n_classes = classes.size
    sigmoids = len(calibration["a"])
    want = 1 if target == "binary" else n_classes
    if sigmoids != want:
        raise ModelFileError(f"{source}: field 'calibration' has {sigmoids} sigmoid(s) and the model {n_classes} "
                             f"classes; a {target} model's calibration has {want}")
    given = calibration.get("n_classes")
    if given is not None and given != n_classes:
        raise ModelFileError(f"{source}: field calibration.n_classes is {given!r} and the model has {n_classes} "
                             "classes")


def _check_columns(columns, n_features, source):
    """``info.columns``: the training file's column names, one feature name per feature."""
    if columns is None:
        return
    ok = (isinstance(columns, dict) and isinstance(columns.get("features"), list)
          and all(isinstance(f, str) for f in columns["features"])
          and isinstance(columns.get("label"), (str, type(None))))
    if not ok:
        raise ModelFileError(f"{source}: field info.columns must be {{features: [names], label: name or null}}")
    if len(columns["features"]) != n_features:
        raise ModelFileError(f"{source}: field info.columns names {len(columns['features'])} features and "
                             f"preprocessor.n_features is {n_features}")


def check_predicts(model, source):
    """One zero row through every prediction path: the scores (their columns against the classes), the labels
    decoded from them, the probabilities where the model has them and the predictor's extra outputs.  A model
    whose arrays do not fit together, or do not fit its fields, is refused here."""
    pre = model.preprocessor
    row = np.zeros((1, model.n_features_in), dtype=np.float32)
    try:
        scores = np.asarray(model.decision_function(row), dtype=np.float64)
    except KoptError as exc:
        raise ModelFileError(f"{source}: the model cannot predict: {exc}") from None
    except (ValueError, TypeError, IndexError, KeyError, AttributeError, ArithmeticError) as exc:
        raise ModelFileError(f"{source}: the model's arrays do not fit together ({type(exc).__name__}: {exc})") from None
    if not np.isfinite(scores).all():
        raise ModelFileError(f"{source}: the model predicts NaN or inf")
    columns = 1 if scores.ndim == 1 else scores.shape[1]
    if scores.ndim > 2 or scores.shape[0] != 1:
        raise ModelFileError(f"{source}: the model scores one row as an array of shape {scores.shape}; expected (1,) "
                             "or (1, columns)")
    want = pre.classes.size if pre.target == "multiclass" else 1
    if columns != want:
        what = f"{want} classes" if pre.target == "multiclass" else f"a {pre.target} target (one score column)"
        raise ModelFileError(f"{source}: the model's coefficients give {columns} score column(s), and it has {what}")
    loss_target = getattr(model.loss, "target", None)
    if loss_target != pre.target and not (loss_target == "binary" and pre.target == "multiclass"):
        raise ModelFileError(f"{source}: the loss {model.loss.name!r} has a {loss_target} target and the model a "
                             f"{pre.target} one")
    try:
        pre.decode(scores)
        if model.has_proba():
            model.log_proba_of(scores)
        try:
            model.predict_extra(row)
        except KoptError:  # a refusal the user sees at predict time too (a GP's variance away from its points)
            pass
    except KoptError as exc:
        raise ModelFileError(f"{source}: the model cannot predict: {exc}") from None
    except (ValueError, TypeError, IndexError, KeyError, AttributeError, ArithmeticError) as exc:
        raise ModelFileError(f"{source}: the model's fields do not fit its arrays ({type(exc).__name__}: {exc})") \
            from None


def check_hash(meta: dict, computed: str, source):
    """``model_sha256``, where the file records one, against ``computed``, the content's hash computed now
    (:func:`kopt.models.model.content_hash`)."""
    recorded = meta.get("model_sha256")
    if recorded is None:  # written before the hash was recorded
        return
    if computed != recorded:
        raise ModelFileError(hash_mismatch(source, recorded, computed))


def hash_mismatch(source, recorded, computed):
    """The sentence for a model whose content is not what its ``model_sha256`` records."""
    return (f"{source}: model_sha256 mismatch: the file records {recorded[:12]}... and its content hashes to "
            f"{computed[:12]}...: its arrays or the fields that shape its predictions were changed after it was "
            "written")


def _short(value):
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _name(kind):
    kinds = kind if isinstance(kind, tuple) else (kind,)
    return " or ".join({"str": "string", "dict": "mapping", "int": "integer", "float": "number"}[k.__name__]
                       for k in kinds)
