"""Trained models and their files: ``NAME.json`` (metadata) + ``NAME.npz`` (arrays).

No pickle anywhere: arrays are loaded with ``allow_pickle=False``.  The two files are committed
as one set (:mod:`kopt.files.sets`): the JSON records the npz's SHA-256 and a checksum of its own
fields, so a corrupt, edited, swapped or foreign file is refused, and a crash while saving leaves
the previous model or the new one.  ``model_sha256`` (:func:`content_hash`) identifies what the
model computes, whatever the run's timestamps: ``kopt model-hash`` prints it.
"""
from __future__ import annotations

import hashlib
import io
import json
import os
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numpy.typing import ArrayLike

from ..contract.components import Kernel, Loss, Predictor
from ..data.preprocess import Preprocessor
from ..errors import KoptError, ModelFileError
from ..files import sets as fileset
from ..files.npz import BadArrayFile, read_npz
from ..numerics.backend import Backend, resolve, to_numpy
from . import checks as model_checks

FORMAT = "kopt-model"
FORMAT_VERSION = 2  # 2: the JSON carries its own checksum and model_sha256
#: losses whose scores are log-odds: their probabilities need no calibration
OWN_PROBABILITIES = ("logistic", "softmax")


@dataclass
class PredictContext:
    """What a predictor needs besides its arrays."""

    kernel: object
    loss: object
    backend: Backend
    #: the model's :class:`kopt.data.Preprocessor` (target units for ``predict_extra``); None if unknown
    preprocessor: object = None

    @property
    def xp(self):
        return self.backend.xp


class Model:
    """A trained kernel machine: the preprocessing, the predictor and the spec that made it.

    :func:`kopt.solve` returns one as ``result.model``; :func:`kopt.load_model` reads one from its files.  A model
    predicts in the user's units: labels as the training labels were coded (class names included), values in the
    target's units.

    Parameters
    ----------
    predictor : Predictor
        What evaluates the scores (:class:`kopt.contract.components.Predictor`).
    preprocessor : Preprocessor
        The column scaling and the label coding of the training data.
    spec : dict
        The resolved spec that trained the model.
    kernel : Kernel
        The kernel, its bandwidth resolved.
    loss : Loss
        The loss it was trained with.
    backend : Backend, optional
        The array backend it predicts on (NumPy by default).
    info : dict, optional
        Run information stored with the model.
    calibration : dict, optional
        A margin classifier's probability calibration.

    Attributes
    ----------
    predictor, preprocessor, spec, kernel, loss, backend, info, calibration
        As given.
    n_features_in : int
        The number of columns the model takes.

    Examples
    --------
    >>> import numpy as np
    >>> import kopt
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(80, 2))
    >>> y = np.sign(X[:, 0] + 0.3 * rng.normal(size=80))
    >>> spec = {"model": {"loss": {"name": "square", "target": "binary"},
    ...                   "kernel": {"name": "gaussian", "bandwidth": 1.0},
    ...                   "regularizer": {"name": "l2", "lambda": 1e-3}},
    ...         "solver": {"name": "krr_exact"}}
    >>> model = kopt.solve(spec, data=(X, y)).model
    >>> model.n_features_in
    2
    >>> model.predict(X[:3])
    array([ 1.,  1., -1.])
    >>> model.predict_proba(X[:3]).shape
    (3, 2)
    """

    def __init__(self, predictor: Predictor, preprocessor: Preprocessor, *, spec: dict, kernel: Kernel, loss: Loss,
                 backend: Backend | None = None, info: dict | None = None, calibration: dict | None = None) -> None:
        self.predictor = predictor
        self.preprocessor = preprocessor
        self.spec = spec  # resolved spec (dict)
        self.kernel = kernel
        self.loss = loss
        self.backend = backend or resolve("numpy")
        self.info = dict(info or {})
        #: a margin classifier's probability calibration (``kopt.models.calibration``), or None
        self.calibration = calibration

    @property
    def n_features_in(self) -> int:
        """The number of columns the model takes."""
        return self.preprocessor.n_features

    def _context(self):
        return PredictContext(self.kernel, self.loss, self.backend, self.preprocessor)

    def _prepare(self, X):
        from ..errors import DataError

        if not hasattr(X, "shape") or len(X.shape) != 2:
            X = np.asarray(X)
            if X.ndim != 2:
                raise DataError(f"X must be 2-D (rows x features), got shape {X.shape}")
        if X.shape[1] != self.n_features_in:
            raise DataError(f"X has {X.shape[1]} features; this model was trained on {self.n_features_in}")
        Z = self.preprocessor.transform(X, dtype=np.dtype(self.spec["model"]["features"]["dtype"]))
        if not hasattr(Z, "tocsr"):
            Z = self.backend.xp.asarray(Z)
        return Z

    def decision_function(self, X: ArrayLike) -> np.ndarray:
        """The raw scores of the rows of ``X``, as a NumPy array.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n, d)
            Rows in the training data's units (the model applies its preprocessing).

        Returns
        -------
        ndarray of shape (n,) or (n, C)
            The scores: a margin for a binary target, one column per class for a multiclass one.

        Raises
        ------
        kopt.DataError
            ``X`` is not 2-D, or has another number of columns than the model was trained on.
        kopt.errors.OutOfMemoryError
            The scores do not fit in the memory available.

        Examples
        --------
        >>> import numpy as np
        >>> import kopt
        >>> rng = np.random.default_rng(0)
        >>> X = rng.normal(size=(80, 2))
        >>> y = np.where(X[:, 0] + 0.3 * rng.normal(size=80) > 0, "yes", "no")
        >>> spec = {"model": {"loss": {"name": "square", "target": "binary"},
        ...                   "kernel": {"name": "gaussian", "bandwidth": 1.0},
        ...                   "regularizer": {"name": "l2", "lambda": 1e-3}},
        ...         "solver": {"name": "krr_exact"}}
        >>> model = kopt.solve(spec, data=(X, y)).model
        >>> model.decision_function(X[:3]).round(3)
        array([ 0.107,  0.871, -1.054])
        """
        from ..numerics.memory import out_of_memory

        rows = f"{X.shape[0]:,} row{'' if X.shape[0] == 1 else 's'}" if hasattr(X, "shape") else "rows"
        with out_of_memory(f"scoring {rows} with the model"):
            return to_numpy(self.predictor.decision_function(self._prepare(X), self._context()))

    def predict(self, X: ArrayLike) -> np.ndarray:
        """Labels in the user's coding, or values in the target's units.

        Classification gives the training labels' values, class names included; regression the target's units.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n, d)
            Rows in the training data's units.

        Returns
        -------
        ndarray of shape (n,)
            The predictions.

        Raises
        ------
        kopt.DataError
            ``X`` does not have the model's columns (:meth:`decision_function`).

        Examples
        --------
        >>> import numpy as np
        >>> import kopt
        >>> rng = np.random.default_rng(0)
        >>> X = rng.normal(size=(80, 2))
        >>> y = np.where(X[:, 0] + 0.3 * rng.normal(size=80) > 0, "yes", "no")
        >>> spec = {"model": {"loss": {"name": "square", "target": "binary"},
        ...                   "kernel": {"name": "gaussian", "bandwidth": 1.0},
        ...                   "regularizer": {"name": "l2", "lambda": 1e-3}},
        ...         "solver": {"name": "krr_exact"}}
        >>> model = kopt.solve(spec, data=(X, y)).model
        >>> model.predict(X[:3])
        array(['yes', 'yes', 'no'], dtype='<U3')
        """
        return self.preprocessor.decode(self.decision_function(X))

    def has_proba(self) -> bool:
        """Whether :meth:`predict_proba` can answer: a logistic or softmax loss, or a calibrated margin classifier.

        Returns
        -------
        bool
            True where class probabilities are available.

        Examples
        --------
        >>> import numpy as np
        >>> import kopt
        >>> rng = np.random.default_rng(0)
        >>> X = rng.normal(size=(80, 2))
        >>> y = np.where(X[:, 0] + 0.3 * rng.normal(size=80) > 0, "yes", "no")
        >>> spec = {"model": {"loss": {"name": "square", "target": "binary"},
        ...                   "kernel": {"name": "gaussian", "bandwidth": 1.0},
        ...                   "regularizer": {"name": "l2", "lambda": 1e-3}},
        ...         "solver": {"name": "krr_exact"}}
        >>> model = kopt.solve(spec, data=(X, y)).model
        >>> model.has_proba()  # the square loss on classes: its probabilities are calibrated
        True
        """
        if self.preprocessor.target not in ("binary", "multiclass"):
            return False
        return self.loss.name in OWN_PROBABILITIES or self.calibration is not None

    def proba_refusal(self) -> str | None:
        """Why :meth:`predict_proba` cannot answer, in words for the user; None where it can.

        Returns
        -------
        str or None
            The reason.

        Examples
        --------
        >>> import numpy as np
        >>> import kopt
        >>> rng = np.random.default_rng(0)
        >>> X = rng.normal(size=(80, 2))
        >>> y = np.where(X[:, 0] + 0.3 * rng.normal(size=80) > 0, "yes", "no")
        >>> spec = {"model": {"loss": {"name": "square", "target": "binary"},
        ...                   "kernel": {"name": "gaussian", "bandwidth": 1.0},
        ...                   "regularizer": {"name": "l2", "lambda": 1e-3}},
        ...         "solver": {"name": "krr_exact"}}
        >>> model = kopt.solve(spec, data=(X, y)).model
        >>> model.proba_refusal() is None
        True
        >>> regression = kopt.solve({**spec, "model": {**spec["model"], "loss": {"name": "square"}}},
        ...                         data=(X, X[:, 0])).model
        >>> regression.proba_refusal()
        'this model has a real target, not classes: it has no class probabilities'
        """
        if self.has_proba():
            return None
        if self.preprocessor.target not in ("binary", "multiclass"):
            return f"this model has a {self.preprocessor.target} target, not classes: it has no class probabilities"
        why = self.info.get("no_calibration")  # recorded since the reason is; a file without it is older
        if not isinstance(why, str):
            why = ("it was written by a kopt before calibrations were saved, or solved on a Dask cluster (no "
                   "calibration there yet); solve its spec again here")
        return f"this model (loss {self.loss.name!r}) has no probability calibration: {why}"

    def predict_log_proba(self, X: ArrayLike) -> np.ndarray:
        """Log class probabilities, columns in ``preprocessor.classes`` order.

        The logistic loss's σ(f) (one-vs-rest columns normalized), softmax's, or a margin loss's calibration
        (``kopt.models.calibration``).

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n, d)
            Rows in the training data's units.

        Returns
        -------
        ndarray of shape (n, n_classes)
            log P(class | x).

        Raises
        ------
        kopt.KoptError
            The model has no class probabilities (:meth:`proba_refusal` says why).
        kopt.DataError
            ``X`` does not have the model's columns.

        Examples
        --------
        >>> import numpy as np
        >>> import kopt
        >>> rng = np.random.default_rng(0)
        >>> X = rng.normal(size=(80, 2))
        >>> y = np.where(X[:, 0] + 0.3 * rng.normal(size=80) > 0, "yes", "no")
        >>> spec = {"model": {"loss": {"name": "square", "target": "binary"},
        ...                   "kernel": {"name": "gaussian", "bandwidth": 1.0},
        ...                   "regularizer": {"name": "l2", "lambda": 1e-3}},
        ...         "solver": {"name": "krr_exact"}}
        >>> model = kopt.solve(spec, data=(X, y)).model
        >>> bool(np.allclose(np.exp(model.predict_log_proba(X[:3])).sum(axis=1), 1.0))
        True
        """
        reason = self.proba_refusal()
        if reason:
            raise KoptError(reason)
        return self.log_proba_of(self.decision_function(X))

    def log_proba_of(self, scores: ArrayLike) -> np.ndarray:
        """:meth:`predict_log_proba` of scores this model computed (:meth:`decision_function`'s), without scoring the
        rows again.

        Parameters
        ----------
        scores : array-like of shape (n,) or (n, C)
            The model's scores.

        Returns
        -------
        ndarray of shape (n, n_classes)
            log P(class | x).

        Examples
        --------
        >>> import numpy as np
        >>> import kopt
        >>> rng = np.random.default_rng(0)
        >>> X = rng.normal(size=(80, 2))
        >>> y = np.where(X[:, 0] + 0.3 * rng.normal(size=80) > 0, "yes", "no")
        >>> spec = {"model": {"loss": {"name": "square", "target": "binary"},
        ...                   "kernel": {"name": "gaussian", "bandwidth": 1.0},
        ...                   "regularizer": {"name": "l2", "lambda": 1e-3}},
        ...         "solver": {"name": "krr_exact"}}
        >>> model = kopt.solve(spec, data=(X, y)).model
        >>> scores = model.decision_function(X[:3])
        >>> bool(np.allclose(model.log_proba_of(scores), model.predict_log_proba(X[:3])))
        True
        """
        from scipy.special import log_expit, log_softmax

        from . import calibration as _calibration

        f = np.asarray(scores, dtype=np.float64)
        if f.ndim == 1:
            f = f[:, None]
        if self.loss.name == "softmax":
            return log_softmax(f, axis=1)
        if self.loss.name == "logistic":
            if f.shape[1] == 1:
                return np.column_stack([log_expit(-f[:, 0]), log_expit(f[:, 0])])
            logp = log_expit(f)  # one-vs-rest: each column's own σ(f_c), normalised over the classes
            return logp - np.logaddexp.reduce(logp, axis=1, keepdims=True)
        return _calibration.log_proba(self.calibration, f)

    def predict_proba(self, X: ArrayLike) -> np.ndarray:
        """Class probabilities, columns in ``preprocessor.classes`` order (:meth:`predict_log_proba`).

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n, d)
            Rows in the training data's units.

        Returns
        -------
        ndarray of shape (n, n_classes)
            P(class | x).

        Raises
        ------
        kopt.KoptError
            The model has no class probabilities (:meth:`proba_refusal` says why).

        Examples
        --------
        >>> import numpy as np
        >>> import kopt
        >>> rng = np.random.default_rng(0)
        >>> X = rng.normal(size=(80, 2))
        >>> y = np.where(X[:, 0] + 0.3 * rng.normal(size=80) > 0, "yes", "no")
        >>> spec = {"model": {"loss": {"name": "square", "target": "binary"},
        ...                   "kernel": {"name": "gaussian", "bandwidth": 1.0},
        ...                   "regularizer": {"name": "l2", "lambda": 1e-3}},
        ...         "solver": {"name": "krr_exact"}}
        >>> model = kopt.solve(spec, data=(X, y)).model
        >>> model.preprocessor.classes.tolist(), model.predict_proba(X[:3]).round(3)
        (['no', 'yes'], array([[0.618, 0.382],
               [0.228, 0.772],
               [0.955, 0.045]]))
        """
        return np.exp(self.predict_log_proba(X))

    def predict_extra(self, X: ArrayLike) -> dict:
        """The predictor's named extra outputs, e.g. a Gaussian process's ``variance``, ``lower`` and ``upper``.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n, d)
            Rows in the training data's units.

        Returns
        -------
        dict
            Name to NumPy array; empty for a predictor without extra outputs.

        Examples
        --------
        >>> import numpy as np
        >>> import kopt
        >>> rng = np.random.default_rng(0)
        >>> X = rng.normal(size=(80, 2))
        >>> y = np.where(X[:, 0] + 0.3 * rng.normal(size=80) > 0, "yes", "no")
        >>> spec = {"model": {"loss": {"name": "square", "target": "binary"},
        ...                   "kernel": {"name": "gaussian", "bandwidth": 1.0},
        ...                   "regularizer": {"name": "l2", "lambda": 1e-3}},
        ...         "solver": {"name": "krr_exact"}}
        >>> model = kopt.solve(spec, data=(X, y)).model
        >>> model.predict_extra(X[:2])
        {}
        >>> gp = kopt.solve({"model": {"form": "gp", "loss": {"name": "square"},
        ...                            "kernel": {"name": "gaussian", "bandwidth": 1.0},
        ...                            "regularizer": {"name": "l2", "lambda": 1e-2}},
        ...                  "solver": {"name": "gp", "iterations": 20, "variance": "operator"}},
        ...                 data=(X, X[:, 0])).model
        >>> sorted(gp.predict_extra(X[:2]))
        ['lower', 'upper', 'variance']
        """
        extra = self.predictor.predict_extra(self._prepare(X), self._context())
        return {k: to_numpy(v) for k, v in extra.items()}

    # -- files ---------------------------------------------------------------
    def to_arrays(self) -> dict:
        """The model's arrays, as its ``.npz`` holds them: the predictor's (``p_``) and the preprocessor's (``pre_``).

        Returns
        -------
        dict
            Name to numeric host array.

        Raises
        ------
        TypeError
            An array has dtype object: model files hold numeric arrays only.

        Examples
        --------
        >>> import numpy as np
        >>> import kopt
        >>> rng = np.random.default_rng(0)
        >>> X = rng.normal(size=(80, 2))
        >>> y = np.where(X[:, 0] + 0.3 * rng.normal(size=80) > 0, "yes", "no")
        >>> spec = {"model": {"loss": {"name": "square", "target": "binary"},
        ...                   "kernel": {"name": "gaussian", "bandwidth": 1.0},
        ...                   "regularizer": {"name": "l2", "lambda": 1e-3}},
        ...         "solver": {"name": "krr_exact"}}
        >>> model = kopt.solve(spec, data=(X, y)).model
        >>> sorted(model.to_arrays())
        ['p_coef', 'p_support', 'pre_classes', 'pre_mean', 'pre_scale']
        """
        arrays = {f"p_{k}": to_numpy(v) for k, v in self.predictor.arrays.items()}
        arrays.update(self.preprocessor.to_arrays())
        for k, v in arrays.items():
            if v.dtype == object:
                raise TypeError(f"model array {k!r} has dtype object; model files hold numeric arrays only")
        return arrays

    def to_meta(self) -> dict:
        """The model's JSON metadata, without the file fields (``arrays``, ``arrays_sha256``, ``created``).

        Returns
        -------
        dict
            The format, the versions, the predictor, the preprocessing, the kernel, the loss, the spec, the seeds and
            the run's info.

        Examples
        --------
        >>> import numpy as np
        >>> import kopt
        >>> rng = np.random.default_rng(0)
        >>> X = rng.normal(size=(80, 2))
        >>> y = np.where(X[:, 0] + 0.3 * rng.normal(size=80) > 0, "yes", "no")
        >>> spec = {"model": {"loss": {"name": "square", "target": "binary"},
        ...                   "kernel": {"name": "gaussian", "bandwidth": 1.0},
        ...                   "regularizer": {"name": "l2", "lambda": 1e-3}},
        ...         "solver": {"name": "krr_exact"}}
        >>> model = kopt.solve(spec, data=(X, y)).model
        >>> meta = model.to_meta()
        >>> meta["predictor"], meta["loss"]["name"]
        ('kernel_expansion', 'square')
        """
        from ..contract.version import __version__

        return {
            "format": FORMAT,
            "format_version": FORMAT_VERSION,
            "kopt_version": __version__,
            "predictor": self.predictor.name,
            "predictor_meta": self.predictor.meta,
            "preprocessor": self.preprocessor.to_meta(),
            "kernel": {"name": self.kernel.name, **self.kernel.options.as_dict()},
            "loss": {"name": self.loss.name, **self.loss.options.as_dict()},
            "spec": self.spec,
            "seeds": {"seed": self.spec.get("seed"), "features": self.spec["model"]["features"].get("seed")},
            "info": self.info,
            **({"calibration": self.calibration} if self.calibration is not None else {}),
        }

    def content_hash(self) -> str:
        """The SHA-256 of the model's content (:func:`content_hash`): what ``model.json`` records as
        ``model_sha256``.

        Two runs of one spec and seed give the same hash; the timestamp, kopt's version, timings and the output folder
        do not enter it.

        Returns
        -------
        str
            64 hexadecimal digits.

        Examples
        --------
        >>> import numpy as np
        >>> import kopt
        >>> rng = np.random.default_rng(0)
        >>> X = rng.normal(size=(80, 2))
        >>> y = np.where(X[:, 0] + 0.3 * rng.normal(size=80) > 0, "yes", "no")
        >>> spec = {"model": {"loss": {"name": "square", "target": "binary"},
        ...                   "kernel": {"name": "gaussian", "bandwidth": 1.0},
        ...                   "regularizer": {"name": "l2", "lambda": 1e-3}},
        ...         "solver": {"name": "krr_exact"}}
        >>> model = kopt.solve(spec, data=(X, y)).model
        >>> again = kopt.solve(spec, data=(X, y)).model
        >>> model.content_hash() == again.content_hash(), len(model.content_hash())
        (True, 64)
        """
        return content_hash(json.loads(fileset.canonical(self.to_meta())), self.to_arrays())

    def save(self, path: str | os.PathLike) -> str:
        """Write ``<stem>.npz`` (the arrays) and ``<stem>.json`` (the metadata) as one set.

        The pair is written atomically: a reader sees the old pair or the new one, never a mix.  The files hold no
        pickle; :func:`kopt.load_model` reads them back.

        Parameters
        ----------
        path : str or path
            The stem, or a ``.json`` or ``.npz`` path whose stem is taken.

        Returns
        -------
        str
            The JSON file's path.

        Examples
        --------
        >>> import numpy as np
        >>> import kopt
        >>> rng = np.random.default_rng(0)
        >>> X = rng.normal(size=(80, 2))
        >>> y = np.where(X[:, 0] + 0.3 * rng.normal(size=80) > 0, "yes", "no")
        >>> spec = {"model": {"loss": {"name": "square", "target": "binary"},
        ...                   "kernel": {"name": "gaussian", "bandwidth": 1.0},
        ...                   "regularizer": {"name": "l2", "lambda": 1e-3}},
        ...         "solver": {"name": "krr_exact"}}
        >>> model = kopt.solve(spec, data=(X, y)).model
        >>> model.save("model.npz")  # the stem is what counts
        'model.json'
        """
        json_path, npz_path = model_paths(path)
        arrays = self.to_arrays()
        buf = io.BytesIO()
        np.savez(buf, **arrays)
        meta = self.to_meta()
        meta.update({"created": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "arrays": os.path.basename(npz_path),
                     "model_sha256": content_hash(json.loads(fileset.canonical(meta)), arrays)})
        fileset.commit(npz_path, buf.getvalue(), json_path, meta)
        return json_path

    def __repr__(self):
        return f"Model(predictor={self.predictor.name!r}, kernel={self.kernel!r}, loss={self.loss.name!r})"


def model_paths(path):
    p = Path(path)
    if p.suffix in (".json", ".npz"):
        p = p.with_suffix("")
    return str(p) + ".json", str(p) + ".npz"


#: the metadata that shapes what a model computes (the rest: versions, timestamps, run info, file fields); the
#: ``calibration`` (how probabilities are read off the scores) is sealed by the JSON's checksum, not hashed: the hash
#: names the scores, and a continued run (which writes none) ends at its uninterrupted run's hash
HASHED_META = ("format", "predictor", "predictor_meta", "preprocessor", "kernel", "loss", "spec")


def content_hash(meta: dict, arrays: dict) -> str:
    """SHA-256 of a model's content: every array (name, dtype, shape, bytes) and the metadata in
    :data:`HASHED_META`, the spec without ``name`` and ``output``.  Two runs of one spec and seed
    give the same hash; the timestamp, kopt version, timings and output folder do not enter it."""
    h = hashlib.sha256()
    spec = {k: v for k, v in (meta.get("spec") or {}).items() if k not in ("name", "output")}
    h.update(fileset.canonical({**{k: meta.get(k) for k in HASHED_META}, "spec": spec}))
    for name in sorted(arrays):
        a = np.asarray(arrays[name])
        h.update(fileset.canonical([name, a.dtype.str, list(a.shape)]))
        _hash_c_order(h, a)
    return h.hexdigest()


#: bytes of an array hashed per block: the C-order bytes of a Fortran-order array are made a block of rows at a time
HASH_BLOCK_BYTES = 1 << 24


def _hash_c_order(h, a):
    """Feed ``a``'s bytes in C order to the hash ``h`` without a whole copy (a copy, and ``tobytes()``'s second one, of
    a model's Fortran-order centers set a wide sparse set's peak: docs/design/memory.md)."""
    if a.size == 0:
        return
    if a.ndim == 0 or a.flags.c_contiguous:
        h.update(memoryview(np.ascontiguousarray(a).reshape(-1)).cast("B"))
        return
    step = max(1, HASH_BLOCK_BYTES // max(1, a[:1].nbytes))
    for lo in range(0, a.shape[0], step):
        h.update(memoryview(np.ascontiguousarray(a[lo:lo + step]).reshape(-1)).cast("B"))


def load_model(path: str | os.PathLike, backend: str = "numpy") -> Model:
    """Load a model written by :meth:`Model.save` or ``kopt solve``.

    ``path`` is the .json, the .npz, their stem or the folder that holds ``model.json``.  Every field is checked on
    its own and against the others, one row goes through every prediction path and ``model_sha256`` is recomputed
    (``kopt.models.checks``): a file that fails is refused.

    Parameters
    ----------
    path : str or path
        The model's ``.json``, its ``.npz``, their common stem or the folder holding ``model.json``.
    backend : str, optional
        ``"numpy"`` (default) or ``"cupy"``: where the model predicts.

    Returns
    -------
    Model
        The model, as it was saved.

    Raises
    ------
    ModelFileError
        A file is missing, corrupt, changed since it was written, or not a kopt model.

    Examples
    --------
    >>> import numpy as np
    >>> import kopt
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(80, 2))
    >>> y = np.sign(X[:, 0] + 0.3 * rng.normal(size=80))
    >>> spec = {"model": {"loss": {"name": "square", "target": "binary"},
    ...                   "kernel": {"name": "gaussian", "bandwidth": 1.0},
    ...                   "regularizer": {"name": "l2", "lambda": 1e-3}},
    ...         "solver": {"name": "krr_exact"}}
    >>> model = kopt.solve(spec, data=(X, y)).model
    >>> path = model.save("model")
    >>> path
    'model.json'
    >>> same = kopt.load_model(path)
    >>> bool((same.predict(X) == model.predict(X)).all())
    True
    """
    meta, arrays, json_path = read_model_files(path)
    model = model_from(meta, arrays, backend, source=json_path)
    model_checks.check_predicts(model, json_path)
    if meta.get("model_sha256") is not None:
        model_checks.check_hash(meta, content_hash(meta, arrays), json_path)
    return model


def read_model_files(path):
    """``(meta, arrays, json_path)`` of a model file set, verified (format, checksums, no pickle, every field on
    its own and against the others: :mod:`kopt.models.checks`).  ``path``: the .json, the .npz, their stem, or
    the output folder that holds ``model.json``."""
    if os.path.isdir(path) and not os.path.exists(model_paths(path)[0]):
        path = os.path.join(path, "model.json")  # kopt solve's output folder
    json_path, npz_path = model_paths(path)
    if os.path.isfile(path) and Path(path).suffix not in (".json", ".npz") and not os.path.exists(json_path):
        raise ModelFileError(f"{path}: not a model file; give the model's .json (or its .npz, their stem, or the "
                             "folder that holds model.json)")
    try:
        with open(json_path, encoding="utf-8") as fh:
            meta = json.load(fh)
    except FileNotFoundError:
        raise ModelFileError(f"{json_path}: model file not found") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ModelFileError(f"{json_path}: not a kopt model (invalid JSON: {exc})") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise ModelFileError(f"{json_path}: not a kopt model file (no 'format: {FORMAT}' marker)")
    version = meta.get("format_version", 0)
    if not isinstance(version, int) or isinstance(version, bool) or version < 0:
        raise ModelFileError(f"{json_path}: field 'format_version' is {version!r}; expected a whole number")
    if version > FORMAT_VERSION:
        raise ModelFileError(f"{json_path}: written by a newer kopt (format {meta['format_version']}); upgrade kopt")
    try:
        with open(npz_path, "rb") as fh:
            payload = fh.read()
    except FileNotFoundError:
        raise ModelFileError(f"{npz_path}: the model's array file is missing") from None
    meta = fileset.matching(json_path, meta, payload)
    if meta is None:
        raise ModelFileError(f"{npz_path}: checksum mismatch: the array file is corrupt or belongs to another model")
    if ("checksum" in meta or meta.get("format_version", 0) >= 2) and not fileset.sealed(meta):  # 1: none yet
        raise ModelFileError(f"{json_path}: checksum mismatch: the metadata was edited or is damaged")
    try:
        arrays = read_npz(io.BytesIO(payload))
    except (BadArrayFile, ValueError, OSError, EOFError, zipfile.BadZipFile) as exc:
        raise ModelFileError(f"{npz_path}: cannot read arrays: {exc}") from None
    model_checks.check_meta(meta, json_path)
    model_checks.check_arrays(arrays, meta, npz_path)
    model_checks.check_fields(meta, arrays, json_path)
    return meta, arrays, json_path


def _component(reg, kind, meta, source):
    """The kernel or loss a model file's field ``kind`` (``{name, ...parameters}``) describes, or the
    :class:`ModelFileError` that says why the field describes none."""
    params = dict(meta[kind]) if isinstance(meta.get(kind), dict) else None
    name = None if params is None else params.pop("name", None)
    if not isinstance(name, str):
        raise ModelFileError(f"{source}: field {kind} must be a mapping with a 'name' (a string)")
    try:
        return reg.get(kind, name)(**params)
    except KoptError as exc:
        raise ModelFileError(f"{source}: field {kind}: {exc}") from None
    except (TypeError, ValueError) as exc:  # the component's own check of its parameters
        raise ModelFileError(f"{source}: field {kind}: {exc}") from None


def model_from(meta: dict, arrays: dict, backend="numpy", *, source="<model>") -> Model:
    """A :class:`Model` from its metadata (:meth:`Model.to_meta`) and arrays (:meth:`Model.to_arrays`).

    What :func:`load_model` does after reading the files; also how the scikit-learn estimators
    pickle a fitted model (plain dicts and arrays, no pickled kopt objects).
    """
    from ..contract.registry import registry

    reg = registry()
    name = meta.get("predictor")
    entry = reg.components["predictor"].get(name)
    if entry is None:
        raise ModelFileError(f"{source}: predictor {name!r} is not registered (is its plugin installed?); "
                             f"registered predictors: {', '.join(reg.names('predictor')) or '(none)'}")
    cls = entry.cls
    kernel, loss = _component(reg, "kernel", meta, source), _component(reg, "loss", meta, source)
    from . import calibration as _calibration

    _calibration.check(meta.get("calibration"), source)  # absent in files written before calibrations: None
    p_arrays = {k[2:]: v for k, v in arrays.items() if k.startswith("p_")}
    pre = Preprocessor.from_file(meta["preprocessor"], arrays)
    return Model(cls(p_arrays, meta["predictor_meta"]), pre, spec=meta["spec"], kernel=kernel, loss=loss,
                 backend=resolve(backend) if isinstance(backend, str) else backend, info=meta.get("info"),
                 calibration=meta.get("calibration"))
