"""Assembling the problem: data, preprocessing, labels, the kernel with its bandwidth, on one machine.

The layer below the API (:mod:`kopt.api`) and the Dask engine (:mod:`kopt.distributed.assemble`):
both build a :class:`kopt.contract.problem.Problem` with the rules kept here -- which target the labels are
for (:func:`one_vs_rest`), the kernel and its bandwidth rule (:func:`build_kernel`), the sample
weights (:func:`check_sample_weight`) -- and the preprocessing rules of :mod:`kopt.data.preprocess`.
"""
from __future__ import annotations

import numpy as np

from ..contract.bandwidth import resolve_bandwidth
from ..contract.problem import FeatureSpec, Problem
from ..contract.registry import registry
from ..data import Dataset, Preprocessor, as_dataset, load_data
from ..errors import DataError, SpecError
from ..numerics import rows as _rows
from ..numerics.backend import resolve
from ..spec import Spec, component_params
from .validation import make_splits


def build_kernel(spec: Spec, X):
    """Instantiate the spec's kernel with a numeric bandwidth (a rule such as ``median`` resolved)."""
    params = component_params(spec["model"]["kernel"])
    cls = registry().get("kernel", spec["model"]["kernel"]["name"])
    kernel = cls(**resolve_bandwidth(cls, params, X, spec["seed"]))
    kernel.check_input(X)  # e.g. χ²-type kernels need nonnegative inputs: fail before the solve
    return kernel


def one_vs_rest(spec: Spec) -> bool:
    """Whether the spec's solver trains binary losses one-vs-rest on multiclass labels."""
    return registry().get("solver", spec["solver"]["name"]).one_vs_rest


def check_sample_weight(sample_weight, n):
    """Validate per-row weights for ``n`` training rows; returns them as float64.

    Raises :class:`DataError` for weights that are not a finite, nonnegative vector of length n with
    a positive sum.  How :func:`assemble` uses them: kopt's weighted objective is
    λ/2‖f‖² + Σ w_i ℓ_i / Σ w_i.  Rows of weight 0 are dropped before anything is fitted on the data
    (standardisation, the median bandwidth, the solve), and the rest are normalised to mean 1
    (``problem.sample_weight``), so scaling every weight changes nothing and a zero weight equals
    leaving the row out; the standardisation statistics are weighted means, so an integer weight
    equals repeating the row wherever the solver is deterministic and the bandwidth is a number.
    """
    w = np.asarray(sample_weight)
    if w.dtype == object or not (np.issubdtype(w.dtype, np.number) or w.dtype == bool) \
            or np.issubdtype(w.dtype, np.complexfloating):
        raise DataError(f"sample_weight must be numbers, got dtype {w.dtype}")
    w = w.astype(np.float64)
    if w.ndim != 1 or w.shape[0] != n:
        raise DataError(f"sample_weight has shape {w.shape}; it needs one weight per training row, shape ({n},)")
    bad = ~np.isfinite(w)
    if bad.any():
        raise DataError(f"sample_weight has {int(bad.sum())} non-finite values (first at row {int(np.argmax(bad))})")
    if (w < 0).any():
        i = int(np.argmax(w < 0))
        raise DataError(f"sample_weight must be >= 0; row {i} has {float(w[i])!r}")
    if not w.sum() > 0:
        raise DataError("sample_weight is zero for every row; at least one row needs a positive weight")
    return w


def class_row_weights(spec: Spec, y):
    """Each training row's weight under ``data.class_weight`` (None where it is null): ``balanced`` gives class c
    n / (C · n_c), scikit-learn's rule; a ``{label: weight}`` mapping its weights (labels as written in the
    spec's YAML or JSON, matched to the data's labels by their text), 1 for a class it does not name."""
    given = (spec.data.get("data") or {}).get("class_weight")
    if given is None:
        return None
    where = ("data", "class_weight")
    if y is None:
        raise spec.error(where, "class weights weigh the classes of labelled rows, and the training data has no labels")
    if spec.loss.target not in ("binary", "multiclass"):
        raise spec.error(where, "class weights need a classification loss; this spec's loss "
                                f"{spec['model']['loss']['name']!r} is not one")
    try:
        check_solver_weights(spec)
    except SpecError as exc:
        raise spec.error(where, f"class weights weigh the rows, and {exc.detail}") from None
    y = np.asarray(y)
    values, index, counts = np.unique(y, return_inverse=True, return_counts=True)
    if given == "balanced":
        per_class = y.shape[0] / (len(values) * counts.astype(np.float64))
    else:
        per_class = np.ones(len(values))
        texts = [_label_text(v) for v in values]
        unknown = []
        for key, weight in given.items():
            hits = [i for i, t in enumerate(texts) if t == _label_text(key)]
            if not hits:
                unknown.append(str(key))
            for i in hits:
                per_class[i] = float(weight)
        if unknown:
            raise spec.error(where, f"{', '.join(map(repr, unknown))} is not a label of the training rows (their "
                                    f"labels: {', '.join(texts[:20])})")
    w = per_class[index.ravel()]
    if not w.sum() > 0:
        raise spec.error(where, "the class weights give every training row weight 0")
    return w


def held_out_rows(spec: Spec, n, y=None):
    """The training rows ``data.held_out`` leaves out of the fit (sorted positions among the ``n`` rows, after any
    zero-weight rows are dropped), or None: the held-out side of :func:`kopt.running.validation.make_splits`
    ``(n, seed)``, so they are the rows ``solver: auto`` held out with the same count and seed.  Refused where
    they leave fewer than :data:`MIN_FIT_ROWS` rows to fit, or (``y``: the training labels) a classifier rows of
    one class only."""
    given = (spec.data.get("data") or {}).get("held_out")
    if given is None:
        return None
    where = ("data", "held_out")
    reg = registry()
    cls = spec.solver_class
    takes = [n for n in reg.names("solver") if reg.get("solver", n).sample_weight and not reg.get("solver", n).plans]
    if cls.plans:
        raise spec.error(where, f"solver {cls.name!r} holds out its own validation rows to choose the spec; "
                                f"data.held_out is for a solver that takes row weights: {', '.join(takes) or '(none)'}")
    if not cls.sample_weight:
        raise spec.error(where, f"data.held_out gives its rows weight 0, and solver {cls.name!r} takes no row weights; "
                                f"solvers that take data.held_out: {', '.join(takes) or '(none)'}")
    m = int(given["rows"])
    if n - m < MIN_FIT_ROWS:
        raise spec.error(where, f"data.held_out holds out {m} of the {n} training rows and leaves {max(n - m, 0)} to "
                                f"fit; at least {MIN_FIT_ROWS} must be left: hold out at most {n - MIN_FIT_ROWS}")
    (_, held), = make_splits(n, int(given.get("seed", spec["seed"])), validation=m / n)
    if y is not None and spec.loss.target in ("binary", "multiclass"):
        fit = np.ones(n, dtype=bool)
        fit[held] = False
        left = np.unique(np.asarray(y)[fit])
        if left.size < 2:
            raise spec.error(where, f"data.held_out holds out {m} of the {n} training rows, and the {n - m} left to "
                                    f"fit all have label {left[0].item()!r}; a classifier is fitted on rows of at least two "
                                    "classes: hold out fewer rows (or another seed)")
    return held


#: the fewest training rows ``data.held_out`` may leave to fit (and, for a classifier, they must hold two classes)
MIN_FIT_ROWS = 2


def _label_text(value):
    """A label as the text a class_weight key is matched by: 1, 1.0 and "1" are one label."""
    if isinstance(value, (bytes, np.bytes_)):
        value = value.decode()
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            return value
    if isinstance(value, (bool, np.bool_)):
        return str(bool(value))
    try:
        f = float(value)
    except (TypeError, ValueError):
        return str(value)
    return repr(int(f)) if f.is_integer() else repr(f)


def check_solver_weights(spec: Spec):
    """Raise a SpecError (at ``solver.name``) unless the spec's solver accepts sample weights."""
    reg = registry()
    cls = reg.get("solver", spec["solver"]["name"])
    if not cls.sample_weight:
        ok = [n for n in reg.names("solver") if reg.get("solver", n).sample_weight]
        raise spec.error(("solver", "name"), f"solver {cls.name!r} does not accept sample weights; solvers that do: "
                                             f"{', '.join(ok) or '(none)'}")


def check_weights_given(spec: Spec, data, sample_weight):
    """Weights need a solver that takes them and rows given as arrays (a spec's files have no weights to match)."""
    if sample_weight is None:
        return
    check_solver_weights(spec)
    if data is None:
        raise DataError("sample_weight weighs the rows of arrays given as data=(X, y, ...); a spec's data files "
                        "are read, split and filtered by kopt, so their rows have no weights to match")


def assemble(spec: Spec, data=None, backend=None, sample_weight=None) -> Problem:
    """The :class:`Problem` of ``spec`` over a source of training rows: the one assemble path.

    ``data``: None (the spec's data section, read here), arrays ``(X, y[, X_test, y_test])`` or a
    :class:`kopt.data.Dataset` -- rows in this process (:class:`LocalRows`) -- or a row source
    of the same interface, such as the Dask engine's partitions
    (:class:`kopt.distributed.assemble.PartitionRows`).  ``sample_weight``: optional per-row weights
    of the training rows of arrays (see :func:`check_sample_weight`); the problem carries them,
    normalised to mean 1, as ``problem.sample_weight``.

    Whatever the source, the same rules: the labels' target (one-vs-rest for more than two
    classes, :func:`one_vs_rest`), the preprocessing fitted on the training rows, the labels
    checked by the loss, the kernel's bandwidth rule resolved on the source's seeded rows.
    """
    backend = backend or resolve(spec["backend"])
    rows = data if hasattr(data, "fit_preprocessor") else LocalRows.of(spec, data, sample_weight)
    loss = spec.component(("model", "loss"))
    rows.require_labels(loss)
    target = loss.target
    if target == "binary" and one_vs_rest(spec) and rows.label_values().size > 2:
        target = "multiclass"  # the solver trains one binary problem per class (one-vs-rest)
    try:
        pre = rows.fit_preprocessor(target, spec["data"])
        rows.prepare(pre, np.dtype(spec["model"]["features"]["dtype"]))
    except DataError as exc:
        raise _auto_loss_labels(spec, rows, exc) from None
    if target == loss.target:
        rows.check_labels(loss)
    kernel = build_kernel(spec, rows.bandwidth_rows(spec))
    n_classes = len(pre.classes) if pre.classes is not None else 1
    return Problem(spec=spec, loss=loss, kernel=kernel, regularizer=spec.component(("model", "regularizer")),
                   form=spec["model"]["form"], backend=backend, preprocessor=pre, seed=spec["seed"],
                   features=FeatureSpec(**spec["model"]["features"]), n_classes=n_classes, **rows.problem_fields(backend))


def _auto_loss_labels(spec: Spec, rows, exc):
    """A labels error in the words of a spec that left the loss to its solver (``model.loss.name: auto``), said at
    the key the user wrote: the solver chooses a classifier's loss, and labels of numbers that are not class ids
    (:meth:`Preprocessor.fit`'s refusal) are a real-valued target.  Other specs: ``exc`` unchanged."""
    from ..spec import AUTO_LOSS

    if ((spec.given.get("model") or {}).get("loss") or {}).get("name") != AUTO_LOSS:
        return exc
    regression = ", ".join(n for n in registry().names("loss") if registry().get("loss", n).target == "real")
    values = rows.label_values()
    real = values.dtype.kind == "f" and not np.all(values == np.round(values))
    if real:
        ds = getattr(rows, "ds", None)
        hint = default_label_hint(ds) if ds is not None else None
        return spec.error(("model", "loss", "name"),
                          f"loss 'auto' lets solver {spec['solver']['name']!r} choose a classifier's loss, and the "
                          f"labels are real values ({values.size:,} distinct: {_preview(values)}): for a real-valued "
                          f"target name a regression loss: {regression}" + (f"; note: {hint}" if hint else ""))
    return type(exc)(f"{exc} (loss 'auto' reads the labels as classes: if the target is real-valued, name a "
                     f"regression loss: {regression})")


def _preview(values, k=4):
    return ", ".join(f"{v.item():g}" if hasattr(v, "item") else str(v) for v in values[:k]) + (
        ", ..." if len(values) > k else "")


def training_columns(info):
    """The training file's column names (None without a header): kopt predict matches new files by name."""
    if not info.get("feature_names"):
        return None
    return {"features": list(info["feature_names"]), "label": info.get("label_name")}


def check_text_labels(ds: Dataset, target):
    """A regression (or two-sample) loss on a label column of text: the error names the first such cell."""
    y = ds.y
    if target not in ("real", "two_sample") or y is None or np.asarray(y).dtype.kind not in "US":
        return
    where = ds.info.get("label_text")
    kind = "a regression" if target == "real" else "a two-sample"
    if where:
        path, line, cell = where
        column = ds.info.get("label_name")
        named = f" {column!r}" if column else ""
        raise DataError(f"{path}:{line}: label column{named}: non-numeric cell {cell!r}; {kind} loss needs numbers "
                        "(class names need a classification loss)")
    raise DataError(f"{ds.info.get('train', 'the training data')}: {kind} loss needs numeric labels, got class names "
                    f"such as {np.asarray(y)[0]!r}")


#: at most this many distinct values make a numeric column look like class labels (:func:`default_label_hint`)
CLASS_LIKE_VALUES = 20


def default_label_hint(ds: Dataset):
    """When the label is the first column by default (``data.label`` unset, no header name such as ``label``):
    which key to set, naming the header column that looks like class labels (few integer values; the last such
    column); None when the label was chosen otherwise."""
    info = ds.info
    if info.get("label_from") != "default":
        return None
    names = info.get("feature_names")
    first = f" ({info['label_name']!r})" if info.get("label_name") else ""
    text = f"the label was read from the first column{first} because data.label is not set"
    X = ds.X
    if names and not hasattr(X, "tocsr") and X.shape[0]:
        sample = np.asarray(X[: 1 << 16], dtype=np.float64)
        for j in reversed(range(sample.shape[1])):
            col = sample[:, j]
            values = np.unique(col[np.isfinite(col)])
            if 2 <= values.size <= CLASS_LIKE_VALUES and np.all(values == np.round(values)):
                return f"{text}; column {names[j]!r} looks like the label: set data.label: {names[j]}"
    return f"{text}; set data.label to the label column's header name or index (docs/data.md)"


class LocalRows:
    """The training (and test) rows held in this process: the row source of a single-machine run."""

    def __init__(self, ds: Dataset, weights=None):
        self.ds, self.weights = ds, weights
        self.held_out = None  # data.held_out's rows (:func:`held_out_rows`): weight 0 in the fit, after preprocessing
        self.source = ds.info.get("train", "training data")
        self.X = self.y = self.X_test = None

    @classmethod
    def of(cls, spec, data, sample_weight=None):
        """The rows of ``data`` (None: read the spec's data section), zero-weight rows left out."""
        check_weights_given(spec, data, sample_weight)
        ds = as_dataset(data) if data is not None else load_data(spec["data"])
        weights = None
        if sample_weight is not None:
            weights = check_sample_weight(sample_weight, ds.X.shape[0])
        classes = class_row_weights(spec, ds.y)
        if classes is not None:  # data.class_weight: each row's class weight times its own weight
            weights = classes if weights is None else weights * classes
        if weights is not None:
            if not (weights > 0).all():  # a row of weight 0 is a row left out, for everything fitted below
                keep = np.flatnonzero(weights > 0)
                ds = Dataset(ds.X[keep], None if ds.y is None else np.asarray(ds.y)[keep], ds.X_test, ds.y_test,
                             info={**ds.info, "n_train": int(keep.size),
                                   "zero_weight_rows": int(weights.size - keep.size)})
                weights = weights[keep]
            weights = weights * (weights.size / weights.sum())
        rows = cls(ds, weights)
        rows.held_out = held_out_rows(spec, ds.X.shape[0], ds.y)
        return rows

    def require_labels(self, loss):
        if self.ds.y is None and loss.target not in ("unlabeled",):
            raise DataError(f"loss {loss.name!r} needs labels and the training data has none")

    def label_values(self):
        return np.unique(np.asarray(self.ds.y)) if self.ds.y is not None else np.empty(0)

    def fit_preprocessor(self, target, data_spec) -> Preprocessor:
        check_text_labels(self.ds, target)
        try:
            return Preprocessor.fit(self.ds.X, self.ds.y, target, standardize=data_spec["standardize"],
                                    standardize_target=data_spec["standardize_target"], source=self.source,
                                    sample_weight=self.weights, column_scales=data_spec.get("column_scales"))
        except DataError as exc:
            hint = default_label_hint(self.ds)
            if hint:
                text = str(exc)
                raise DataError(f"{text}{' ' if text.endswith('?') else '. '}{hint[0].upper()}{hint[1:]}") from None
            raise

    def prepare(self, pre, dtype):
        """Standardize the rows and encode the labels (test labels the training data never had are refused)."""
        ds = self.ds
        self.X = pre.transform(ds.X, dtype=dtype)
        self.y = pre.encode(ds.y, self.source) if ds.y is not None else None
        if ds.y_test is not None and pre.classes is not None:
            pre.encode(ds.y_test, ds.info.get("test") or self.source)
        if ds.X_test is not None:
            self.X_test = pre.transform(ds.X_test, dtype=self.X.dtype)

    def check_labels(self, loss):
        if self.y is not None:
            loss.check_labels(self.y, source=self.source)

    def bandwidth_rows(self, spec):
        return self.X  # resolve_bandwidth takes its own seeded subsample

    def problem_fields(self, backend) -> dict:
        xp = backend.xp
        weights = self.fit_weights()
        return {"X": _rows.on_backend(self.X, xp), "y": None if self.y is None else xp.asarray(self.y),
                "X_test": _rows.on_backend(self.X_test, xp), "y_test_raw": self.ds.y_test,
                "sample_weight": None if weights is None else xp.asarray(weights),
                "info": {"train": self.source, "test": self.ds.info.get("test"), "raw_X_test": self.ds.X_test,
                         "columns": training_columns(self.ds.info),
                         "held_out_rows": 0 if self.held_out is None else int(len(self.held_out))}}

    def fit_weights(self):
        """The rows' weights in the fit: the given (and class) weights, 0 on ``data.held_out``'s rows, mean 1 over
        every training row (the standardization above read the rows without the held-out zeros)."""
        if self.held_out is None:
            return self.weights
        n = self.ds.X.shape[0]
        w = np.ones(n) if self.weights is None else np.array(self.weights, dtype=np.float64)
        w[self.held_out] = 0.0
        if not w.sum() > 0:
            raise DataError("data.held_out leaves no row of positive weight to fit")
        return w * (n / w.sum())
