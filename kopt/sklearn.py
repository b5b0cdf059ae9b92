"""scikit-learn estimators: every kopt model in Pipeline, GridSearchCV and cross_val_score.

* :class:`KernelClassifier` -- any classification loss (hinge, squared_hinge, logistic, softmax,
  square/huber with ``target: binary``) with any kernel, regularizer and solver; string or numeric
  labels, two classes or more (one-vs-rest for the solvers that train binary losses so, e.g. joker;
  a multiclass loss such as softmax with dsg).
* :class:`KernelRegressor` -- any regression loss (square, huber, absolute, epsilon_insensitive, lp,
  quantile).
* :class:`GPRegressor` -- GP regression (``model.form: gp``, solver ``gp``) with
  ``predict(X, return_std=True)``.

The constructor arguments map one to one onto spec keys (the table is :data:`PARAMETERS` and
docs/sklearn.md); ``fit`` builds the spec dict and validates it with :func:`kopt.load_spec`, so a
bad value gets exactly the :class:`kopt.SpecError` the CLI prints (with a note naming the
estimator parameter).  Training is :func:`kopt.solve` on the arrays; ``estimator.to_spec()`` is the
equivalent YAML spec and :func:`from_spec` builds the estimator from one -- the CLI and the
estimators are the same thing seen two ways.

scikit-learn is an optional dependency (``pip install 'kopt[sklearn]'``); ``import kopt`` never
imports this module.  The estimators write no files: the spec they solve has ``output: {model:
false, report: false, checkpoint_every: 0}`` and the run keeps everything in memory.  They pickle
(the fitted model travels as its model-file metadata and arrays, rebuilt on unpickling exactly as
:func:`kopt.load_model` rebuilds a model file), while kopt's own model files stay pickle-free.
"""
from __future__ import annotations

import copy
import numbers
import warnings

import numpy as np

try:
    import sklearn  # noqa: F401
    from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.utils import check_random_state
    from sklearn.utils.multiclass import check_classification_targets
    from sklearn.utils.validation import check_is_fitted, validate_data
except ImportError as exc:  # pragma: no cover - exercised only without scikit-learn
    raise ImportError("kopt.sklearn needs scikit-learn >= 1.6: pip install 'kopt[sklearn]'") from exc

from . import errors
from .api import solve
from .backend import to_numpy
from .components import BANDWIDTH_PARAMS
from .data.schema import DATA_SCHEMA
from .errors import SpecError
from .logs import verbose_progress
from .plugins import registry
from .spec import load_spec

__all__ = ["KernelClassifier", "KernelRegressor", "GPRegressor", "from_spec", "expected_failed_checks", "PARAMETERS"]

#: estimator parameter -> the spec key it sets (``*`` : every key of the dict given).
PARAMETERS = {
    "loss": "model.loss.name",
    "loss_options": "model.loss.*",
    "kernel": "model.kernel.name",
    "bandwidth": "model.kernel.bandwidth",
    "kernel_options": "model.kernel.*",
    "lam": "model.regularizer.lambda",
    "regularizer": "model.regularizer.name",
    "regularizer_options": "model.regularizer.*",
    "form": "model.form",
    "features": "model.features (an int: model.features.count)",
    "solver": "solver.name",
    "solver_options": "solver.*",
    "noise_variance": "solver.noise_variance (GPRegressor)",
    "variance": "solver.variance (GPRegressor)",
    "iterations": "solver.iterations (GPRegressor)",
    "batch_size": "solver.batch_size (GPRegressor)",
    "standardize": "data.standardize",
    "standardize_target": "data.standardize_target",
    "backend": "backend",
    "random_state": "seed",
}

#: spec key path prefix -> the estimator parameter a SpecError there is about (longest prefix first)
_PATH_PARAMS = [
    ("$.model.regularizer.lambda", "lam"), ("$.model.regularizer.name", "regularizer"),
    ("$.model.regularizer", "regularizer_options"), ("$.model.loss.name", "loss"), ("$.model.loss", "loss_options"),
    ("$.model.kernel.bandwidth", "bandwidth"), ("$.model.kernel.name", "kernel"), ("$.model.kernel", "kernel_options"),
    ("$.model.features", "features"), ("$.model.form", "form"), ("$.solver.name", "solver"),
    ("$.solver.noise_variance", "noise_variance"), ("$.solver.variance", "variance"),
    ("$.solver.iterations", "iterations"), ("$.solver.batch_size", "batch_size"), ("$.solver", "solver_options"),
    ("$.seed", "random_state"), ("$.backend", "backend"), ("$.data.standardize_target", "standardize_target"),
    ("$.data.standardize", "standardize"),
]

#: what the estimators' own spec says about files: none
_NO_FILES = {"model": False, "report": False, "plot": False, "checkpoint_every": 0}


def _plain(value):
    """Spec values as plain JSON/YAML types (GridSearchCV hands NumPy scalars and tuples)."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    return value


def _seed(random_state):
    """``random_state`` -> the spec's seed: None is kopt's default seed 0, an int is the seed, a
    RandomState/Generator draws one (scikit-learn's convention for estimators that take an int seed)."""
    if random_state is None:
        return 0
    if isinstance(random_state, (numbers.Integral, np.integer)) and not isinstance(random_state, bool):
        return int(random_state)
    if isinstance(random_state, np.random.Generator):
        return int(random_state.integers(np.iinfo(np.int32).max))
    return int(check_random_state(random_state).randint(np.iinfo(np.int32).max))


def _component(kind, name):
    entry = registry().components[kind].get(name) if isinstance(name, str) else None
    return None if entry is None else entry.cls


class _KoptEstimator(BaseEstimator):
    """What every kopt estimator shares: spec building, validation, fitting, pickling, ``to_spec``."""

    # -- the spec ----------------------------------------------------------------------------------
    def _model_section(self) -> dict:
        reg_name = self.regularizer
        model = {
            "loss": {"name": self.loss, **(self.loss_options or {})},
            "kernel": self._kernel_section(),
            "regularizer": {"name": reg_name, "lambda": self.lam, **(self.regularizer_options or {})},
        }
        form = self.form if self.form is not None else self._default_form()
        if form is not None:
            model["form"] = form
        features = self._features_section()
        if features is not None:
            model["features"] = features
        return model

    def _kernel_section(self) -> dict:
        kernel = {"name": self.kernel}
        cls = _component("kernel", self.kernel)
        # a rule ("auto", the default) applies to every kernel with a bandwidth; a kernel without one (linear,
        # polynomial...) leaves it out, while a number given for such a kernel is passed on and refused
        if self.bandwidth is not None and not (self.bandwidth in ("median", "scale", "auto") and cls is not None
                                               and "bandwidth" not in cls.params):
            kernel["bandwidth"] = self.bandwidth
        kernel.update(self.kernel_options or {})
        return kernel

    def _features_section(self):
        f = self.features
        if f is None:
            return None
        if isinstance(f, (numbers.Integral, np.integer)) and not isinstance(f, bool):
            return {"count": int(f)}
        return dict(f) if isinstance(f, dict) else f  # anything else: the schema says what is expected

    def _default_form(self):
        cls = _component("solver", getattr(self, "solver", None))
        return None if cls is None else cls.forms[0]

    def _solver_section(self) -> dict:
        return {"name": self.solver, **(self.solver_options or {})}

    def _data_section(self) -> dict:
        return {"standardize": self.standardize}

    def _spec_dict(self, *, name=None, data=None, output=None) -> dict:
        spec = {
            "name": name or type(self).__name__.lower(),
            "seed": _seed(self.random_state),
            "backend": self.backend,
            "data": {**(data or {}), **self._data_section()},
            "model": self._model_section(),
            "solver": self._solver_section(),
        }
        if output is not None:
            spec["output"] = output
        return _plain(spec)

    def _validated_spec(self):
        """The estimator's spec, validated by the spec engine (the CLI's messages)."""
        try:
            return load_spec(self._spec_dict(output=dict(_NO_FILES)), check_files=False)
        except SpecError as exc:
            param = _param_of(exc.path)
            if param:
                exc.add_note(f"{type(self).__name__} parameter {param!r} ({PARAMETERS.get(param, param)})")
            raise

    def to_spec(self, path=None, *, data=None, name=None) -> str:
        """The equivalent YAML spec (and, given ``path``, written there).

        ``data``: the spec's ``data`` section (e.g. ``{"train": "train.csv", "test_fraction": 0.2}``)
        -- the estimator itself only sets ``standardize``/``standardize_target``.  ``kopt solve`` on
        the written spec, with the same rows, gives the model ``fit`` gives.
        """
        import yaml

        self._validated_spec()  # a spec that would not load is not written
        text = yaml.safe_dump(self._spec_dict(name=name, data=data), sort_keys=False, default_flow_style=False)
        if path is not None:
            with open(path, "w", encoding="utf-8") as fh:
                fh.write(text)
        return text

    # -- fitting -----------------------------------------------------------------------------------
    def _check_X(self, X, *, reset):
        return validate_data(self, X, reset=reset, accept_sparse="csr", dtype=(np.float64, np.float32),
                             accept_large_sparse=True)

    def _densify(self, X):
        return X

    def _fit(self, X, y, sample_weight):
        spec = self._validated_spec()
        X = self._densify(X)
        if sample_weight is not None:
            from .assemble import check_sample_weight, check_solver_weights

            check_sample_weight(sample_weight, X.shape[0])  # the weights themselves first, then the solver
            try:
                check_solver_weights(spec)
            except SpecError as exc:
                exc.add_note(f"{type(self).__name__}(solver={self.solver!r}) cannot use sample_weight; choose one "
                             "of the solvers named")
                raise
        warm = self._warm_start_from(spec, X, y, sample_weight)
        if warm is _UNCHANGED:  # the earlier fit already is what this fit would give
            self.spec_ = copy.deepcopy(spec.data)
            return self
        keep = bool(getattr(self, "warm_start", False))
        with warnings.catch_warnings(), verbose_progress(getattr(self, "verbose", 0)) as progress:
            # kopt's own warning is re-issued as scikit-learn's ConvergenceWarning below
            warnings.simplefilter("ignore", errors.ConvergenceWarning)
            result = solve(spec, data=(X, y), sample_weight=sample_weight, resume=warm or False, keep_state=keep,
                           progress=progress)
        if not result.success:
            warnings.warn(f"{spec['solver']['name']}: {result.message}", ConvergenceWarning, stacklevel=3)
        self.model_ = result.model
        self.n_iter_ = int(result.n_iter)
        self.objective_ = result.objective
        self.dual_objective_ = result.dual
        self.duality_gap_ = result.gap
        self.status_ = result.status
        self.solver_info_ = dict(result.info)
        self.fit_time_ = float(result.timings["fit_s"] + result.timings.get("auto_s", 0.0)
                               + result.timings.get("lambda_auto_s", 0.0))
        self.spec_ = copy.deepcopy(result.report["spec"])
        self._set_choices(result)
        self._warm = None
        if keep and result.snapshot is not None:
            import joblib

            self._warm = (result.snapshot, joblib.hash((X, y, sample_weight)))
        return self

    def _set_choices(self, result):
        """``route_``, ``lam_``, ``bandwidth_``, ``n_features_`` and ``auto_`` from what was solved."""
        solved = result.report["spec"]
        solver = solved["solver"]
        mode = result.info.get("mode") or solver.get("mode")
        self.route_ = solver["name"] + (f" ({mode})" if mode else "")
        self.lam_ = solved["model"]["regularizer"].get("lambda")
        self.bandwidth_ = result.report["kernel"].get("bandwidth")
        exact = mode == "exact" or _component("solver", solver["name"]).kernel_mode == "exact"
        self.n_features_ = None if exact else int(solved["model"]["features"]["count"])
        self.auto_ = result.auto

    def _warm_start_from(self, spec, X, y, sample_weight):
        """The snapshot a warm start continues, :data:`_UNCHANGED` when there is nothing to do, or None."""
        if not getattr(self, "warm_start", False):
            return None
        cls = spec.solver_class
        if not cls.warm_start:
            raise ValueError(
                f"warm_start=True: solver {cls.name!r} cannot continue an earlier fit (its result depends on "
                "solver.iterations, or it solves directly); set warm_start=False. Solvers that can: "
                + ", ".join(n for n in registry().names("solver") if registry().get("solver", n).warm_start))
        previous = getattr(self, "_warm", None)
        if previous is None:
            return None  # the first fit
        snapshot, data_hash = previous
        import joblib

        if joblib.hash((X, y, sample_weight)) != data_hash:
            raise ValueError("warm_start=True continues the previous fit on the same data, and X, y or sample_weight "
                             "changed; set warm_start=False to fit the new data from scratch")
        from .checkpoint import check_continuation
        from .errors import CheckpointError

        try:
            check_continuation(snapshot, spec, cls)
        except CheckpointError as exc:
            raise ValueError(f"warm_start=True: {exc} (or set warm_start=False)") from None
        tol = spec["solver"].get("tol")
        if snapshot.status == "converged" and (tol is None or snapshot.tol is None or tol >= snapshot.tol):
            return _UNCHANGED  # the earlier fit already meets the tolerance: a fresh fit would stop there too
        if snapshot.iteration == spec["solver"].get("iterations") and snapshot.status == "iteration_cap" \
                and tol == snapshot.tol:
            return _UNCHANGED
        return snapshot

    # -- prediction --------------------------------------------------------------------------------
    def _decision(self, X):
        check_is_fitted(self, "model_")
        X = self._densify(self._check_X(X, reset=False))
        scores = self.model_.decision_function(X)
        if scores.ndim == 2 and scores.shape[1] == 1:
            scores = scores[:, 0]
        return scores

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        kernel = _component("kernel", self.kernel)
        tags.input_tags.positive_only = kernel is not None and kernel.input_domain == "nonnegative"
        return tags

    # -- pickling: the fitted model travels as its model-file content ------------------------------
    def __getstate__(self):
        state = dict(super().__getstate__())  # object.__getstate__ hands out the live __dict__
        model = state.get("model_")
        if model is not None:
            state["model_"] = _PickledModel(model.to_meta(), model.to_arrays(), model.backend.name)
        return state

    def __setstate__(self, state):
        model = state.get("model_")
        if isinstance(model, _PickledModel):
            state = dict(state)
            state["model_"] = model.load()
        super().__setstate__(state)


class _PickledModel:
    """A fitted model inside a pickled estimator: the model file's JSON metadata and NumPy arrays."""

    def __init__(self, meta, arrays, backend):
        self.meta, self.arrays, self.backend = meta, arrays, backend

    def load(self):
        from .backend import resolve
        from .model import model_from

        try:
            backend = resolve(self.backend)
        except errors.KoptError:  # pickled on a GPU machine, unpickled without one
            backend = resolve("numpy")
        return model_from(self.meta, self.arrays, backend, source="<pickled estimator>")


class _Unchanged:
    def __repr__(self):
        return "<unchanged>"


_UNCHANGED = _Unchanged()


def _param_of(path):
    if not path:
        return None
    for prefix, param in _PATH_PARAMS:
        if path == prefix or path.startswith(prefix + ".") or path.startswith(prefix + "["):
            return param
    return None


# -- the estimators --------------------------------------------------------------------------------

class KernelClassifier(ClassifierMixin, _KoptEstimator):
    """A kernel classifier from a kopt spec's ``model`` and ``solver`` sections.

    With no arguments it is kopt's default (docs/defaults.md): ``solver="auto"`` chooses the Nyström
    centre count, the bandwidth and λ on a seeded validation split of the training rows and solves
    the square loss on ±1 targets (one output per class, one factorisation for all), within
    ``solver_options={"budget": seconds}``; ``route_``, ``n_features_``, ``bandwidth_``, ``lam_`` and
    ``auto_`` say what it chose and why.  Any number given is taken as given (GridSearchCV).

    Parameters map onto spec keys (:data:`PARAMETERS`): ``loss`` (a classification loss; a loss with
    a ``target`` parameter, such as square or huber, gets ``target: binary`` unless
    ``loss_options`` says otherwise), ``kernel``, ``bandwidth`` (a number, "median", "scale" or
    "auto"), ``kernel_options``, ``lam`` (kopt's λ of λ/2‖f‖² + mean loss: SVC's C = 1/(λn); "auto"),
    ``regularizer``/``regularizer_options``, ``form`` (None: the solver's own), ``features``
    (the random-feature map: a dict, or an int count), ``solver``/``solver_options``,
    ``standardize`` (z-score the features with training statistics), ``backend``,
    ``random_state`` (the spec's seed; None is seed 0), ``warm_start`` (continue the previous fit
    with more iterations or another tol) and ``verbose`` (0: quiet; 1: the progress bar, a tqdm bar in a notebook;
    2: every progress record of the ``kopt`` logger, down to each gap check, on stderr).

    Attributes after ``fit``: ``classes_``, ``n_features_in_``, ``feature_names_in_`` (pandas
    input), ``model_`` (the :class:`kopt.Model`), ``n_iter_``, ``objective_``,
    ``dual_objective_``, ``duality_gap_``, ``status_``, ``solver_info_``, ``fit_time_`` (the search
    included), ``spec_`` (the resolved spec: what was solved), ``route_`` (the solver and mode that
    solved), ``lam_``, ``bandwidth_``, ``n_features_`` (centres or random features; None for the exact
    kernel) and ``auto_`` (``solver="auto"``'s record: what it tried and why it chose; else None).
    """

    def __init__(self, loss="square", *, loss_options=None, kernel="gaussian", bandwidth="auto",
                 kernel_options=None, lam="auto", regularizer="l2", regularizer_options=None, form=None, features=None,
                 solver="auto", solver_options=None, standardize="auto", backend="auto", random_state=None,
                 warm_start=False, verbose=False):
        self.loss = loss
        self.loss_options = loss_options
        self.kernel = kernel
        self.bandwidth = bandwidth
        self.kernel_options = kernel_options
        self.lam = lam
        self.regularizer = regularizer
        self.regularizer_options = regularizer_options
        self.form = form
        self.features = features
        self.solver = solver
        self.solver_options = solver_options
        self.standardize = standardize
        self.backend = backend
        self.random_state = random_state
        self.warm_start = warm_start
        self.verbose = verbose

    def _model_section(self):
        model = super()._model_section()
        cls = _component("loss", self.loss)
        if cls is not None and "target" in cls.params and "target" not in (self.loss_options or {}):
            model["loss"]["target"] = "binary"
        return model

    def _validated_spec(self):
        spec = super()._validated_spec()
        target = spec.loss.target
        if target not in ("binary", "multiclass"):
            regression = ", ".join(n for n in registry().names("loss")
                                   if _loss_targets(n) & {"binary", "multiclass"})
            raise SpecError(f"KernelClassifier needs a classification loss; loss {spec.loss.name!r} is a {target} "
                            f"loss (use KernelRegressor for real targets). Classification losses: {regression}",
                            source="<dict>", path="$.model.loss.name")
        return spec

    def fit(self, X, y, sample_weight=None):
        """Fit on ``X`` (dense or sparse) and labels ``y`` (any hashable labels), optionally weighted."""
        X, y = validate_data(self, X, y, accept_sparse="csr", dtype=(np.float64, np.float32), ensure_min_samples=2,
                             accept_large_sparse=True)
        check_classification_targets(y)
        y = _label_array(y)
        classes = np.unique(y)
        if classes.size < 2:
            raise ValueError(f"KernelClassifier needs at least two classes in y; it has one class ({classes[0]!r})")
        if classes.size > 2 and not self._multiclass():
            raise ValueError(f"Only binary classification is supported by solver {self.solver!r} with the binary loss "
                             f"{self.loss!r}, and y has {classes.size} classes: use a multiclass loss (softmax, with "
                             "a dsg-family solver) or a solver that trains one-vs-rest (joker)")
        if sample_weight is not None:
            w = np.asarray(sample_weight)
            if w.shape == y.shape and np.issubdtype(w.dtype, np.number):
                live = np.unique(y[w > 0])
                if live.size < 2:
                    raise ValueError("KernelClassifier needs at least two classes with positive sample_weight; "
                                     f"only class {live[0]!r} has any" if live.size else
                                     "sample_weight is zero for every row")
        self._fit(X, y, sample_weight)
        self.classes_ = self.model_.preprocessor.classes
        return self

    def decision_function(self, X):
        """Scores: ``(n,)`` for two classes (positive means ``classes_[1]``), ``(n, n_classes)`` otherwise.

        A multiclass loss (softmax) on two classes scores f_1 − f_0, the log-odds of ``classes_[1]``.
        """
        scores = self._decision(X)
        if scores.ndim == 2 and scores.shape[1] == 2:
            scores = scores[:, 1] - scores[:, 0]
        return scores

    def predict(self, X):
        """Labels in the coding of ``y`` (``classes_``): the sign of the score, or its largest column."""
        scores = self.decision_function(X)
        if scores.ndim == 1:
            return self.classes_[(scores > 0).astype(np.int64)]
        return self.classes_[np.argmax(scores, axis=1)]

    # -- probabilities ----------------------------------------------------------------------------
    def _proba_refusal(self):
        """Why ``predict_proba`` is unavailable (None when it is)."""
        if self.loss in ("logistic", "softmax"):
            return None
        return (f"{type(self).__name__}.predict_proba needs a loss whose scores are log-odds: 'logistic' (σ(f); "
                f"normalised one-vs-rest for more classes) or 'softmax'. Loss {self.loss!r} gives margins, not "
                "probabilities; use loss='logistic', or calibrate the scores with "
                "sklearn.calibration.CalibratedClassifierCV(estimator)")

    @property
    def predict_proba(self):
        """Class probabilities, ``(n, n_classes)``, columns in ``classes_`` order (logistic and softmax losses)."""
        reason = self._proba_refusal()
        if reason:
            raise AttributeError(reason)
        return self._predict_proba

    @property
    def predict_log_proba(self):
        """Logarithm of :meth:`predict_proba`."""
        reason = self._proba_refusal()
        if reason:
            raise AttributeError(reason)
        return self._predict_log_proba

    def _predict_log_proba(self, X):
        from scipy.special import log_expit, log_softmax

        f = np.asarray(self.decision_function(X), dtype=np.float64)
        if f.ndim == 1:
            return np.column_stack([log_expit(-f), log_expit(f)])
        if self.loss == "softmax":
            return log_softmax(f, axis=1)
        logp = log_expit(f)  # one-vs-rest: each column's own σ(f_c), normalised over the classes
        return logp - np.logaddexp.reduce(logp, axis=1, keepdims=True)

    def _predict_proba(self, X):
        return np.exp(self._predict_log_proba(X))

    def _multiclass(self):
        """Whether this loss and solver train on more than two classes (unknown names: assume so, fit will say)."""
        solver = _component("solver", self.solver)
        loss = _component("loss", self.loss)
        if solver is None or loss is None:
            return True
        return bool(solver.one_vs_rest or loss.target == "multiclass")

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = self._multiclass()
        return tags


class KernelRegressor(RegressorMixin, _KoptEstimator):
    """A kernel regressor from a kopt spec's ``model`` and ``solver`` sections.

    The parameters are :class:`KernelClassifier`'s (with a regression ``loss``: square -- kernel
    ridge regression, KernelRidge's alpha = λn --, huber, absolute, epsilon_insensitive -- SVR's
    C = 1/(λn) --, lp, quantile) plus ``standardize_target`` (z-score y for the solve; predictions
    come back in y's units).
    """

    def __init__(self, loss="square", *, loss_options=None, kernel="gaussian", bandwidth="auto",
                 kernel_options=None, lam="auto", regularizer="l2", regularizer_options=None, form=None, features=None,
                 solver="auto", solver_options=None, standardize="auto", standardize_target=False, backend="auto",
                 random_state=None, warm_start=False, verbose=False):
        self.loss = loss
        self.loss_options = loss_options
        self.kernel = kernel
        self.bandwidth = bandwidth
        self.kernel_options = kernel_options
        self.lam = lam
        self.regularizer = regularizer
        self.regularizer_options = regularizer_options
        self.form = form
        self.features = features
        self.solver = solver
        self.solver_options = solver_options
        self.standardize = standardize
        self.standardize_target = standardize_target
        self.backend = backend
        self.random_state = random_state
        self.warm_start = warm_start
        self.verbose = verbose

    def _data_section(self):
        return {"standardize": self.standardize, "standardize_target": self.standardize_target}

    def _validated_spec(self):
        spec = super()._validated_spec()
        if spec.loss.target != "real":
            real = ", ".join(n for n in registry().names("loss") if "real" in _loss_targets(n))
            raise SpecError(f"{type(self).__name__} needs a regression loss; loss {spec.loss.name!r} is a "
                            f"{spec.loss.target} loss (use KernelClassifier for labels). Regression losses: {real}",
                            source="<dict>", path="$.model.loss.name")
        return spec

    def fit(self, X, y, sample_weight=None):
        """Fit on ``X`` (dense or sparse) and real targets ``y``, optionally weighted."""
        X, y = validate_data(self, X, y, accept_sparse="csr", dtype=(np.float64, np.float32), y_numeric=True,
                             ensure_min_samples=2, accept_large_sparse=True)
        return self._fit(X, np.asarray(y, dtype=np.float64), sample_weight)

    def predict(self, X):
        """Predictions in the units of ``y``."""
        scores = self._decision(X)
        return self.model_.preprocessor.decode(scores)


class GPRegressor(RegressorMixin, _KoptEstimator):
    """GP regression (``model.form: gp``, solver ``gp``): posterior mean and standard deviation.

    Like scikit-learn's ``GaussianProcessRegressor(kernel=RBF(bandwidth), alpha=noise_variance,
    normalize_y=standardize_target, optimizer=None)``, fitted by doubly stochastic gradients
    (docs/gp.md).  ``noise_variance`` is σ² (on the z-scored target when ``standardize_target``);
    ``variance`` is ``"operator"`` (the variance anywhere, memory O(iterations²·batch_size²)) or
    ``"none"`` (the mean only); ``iterations`` and ``batch_size`` are the solver's T and B.
    ``iterations="auto"`` takes about 8 passes over the rows, T = ceil(8n/B), at least 50 and at most
    200 (the solver's cost grows faster than T², so a tiny input gets a small T: scikit-learn's
    ``check_estimator`` then takes seconds); the value used is ``iterations_``.
    Sparse input is densified (the gp solver works on dense rows).
    """

    #: ``iterations="auto"``: T = ceil(AUTO_PASSES·n/B), clipped to [AUTO_MIN, AUTO_MAX]
    AUTO_PASSES, AUTO_MIN, AUTO_MAX = 8, 50, 200

    # fixed by the model (class attributes, not parameters)
    loss = "square"
    solver = "gp"
    form = "gp"
    regularizer = "l2"

    def __init__(self, *, kernel="gaussian", bandwidth="median", kernel_options=None, noise_variance=0.1,
                 variance="operator", iterations="auto", batch_size=32, features=None, solver_options=None,
                 standardize=True, standardize_target=True, backend="auto", random_state=None, verbose=False):
        self.kernel = kernel
        self.bandwidth = bandwidth
        self.kernel_options = kernel_options
        self.noise_variance = noise_variance
        self.variance = variance
        self.iterations = iterations
        self.batch_size = batch_size
        self.features = features
        self.solver_options = solver_options
        self.standardize = standardize
        self.standardize_target = standardize_target
        self.backend = backend
        self.random_state = random_state
        self.verbose = verbose

    def _model_section(self):
        model = {"loss": {"name": "square"}, "kernel": self._kernel_section(), "form": "gp"}
        features = self._features_section()
        if features is not None:
            model["features"] = features
        return model

    def _solver_section(self):
        return {"name": "gp", "noise_variance": self.noise_variance, "variance": self.variance,
                "iterations": self._iterations(), "batch_size": self.batch_size, **(self.solver_options or {})}

    def _iterations(self, n=None):
        """``iterations`` with ``"auto"`` resolved for ``n`` rows (None: the fitted rows, else the cap)."""
        if not (isinstance(self.iterations, str) and self.iterations == "auto"):
            return self.iterations
        if n is None:
            return getattr(self, "iterations_", self.AUTO_MAX)
        B = self.batch_size if isinstance(self.batch_size, numbers.Integral) and self.batch_size > 0 else 32
        return int(min(self.AUTO_MAX, max(self.AUTO_MIN, -(-self.AUTO_PASSES * n // B))))

    def _data_section(self):
        return {"standardize": self.standardize, "standardize_target": self.standardize_target}

    def _validated_spec(self):
        spec = super()._validated_spec()
        if spec["solver"]["variance"] == "test_points":
            raise SpecError("GPRegressor predicts at any point, so it needs variance 'operator' (or 'none'); "
                            "'test_points' gives the variance only at a test split known at fit time (use "
                            "kopt solve with a spec for that)", source="<dict>", path="$.solver.variance")
        return spec

    def _densify(self, X):
        return X.toarray() if hasattr(X, "tocsr") else X

    def fit(self, X, y, sample_weight=None):
        """Fit the posterior on ``X`` and real targets ``y`` (the gp solver takes no sample weights)."""
        X, y = validate_data(self, X, y, accept_sparse="csr", dtype=(np.float64, np.float32), y_numeric=True,
                             ensure_min_samples=2, accept_large_sparse=True)
        self.iterations_ = self._iterations(X.shape[0])
        return self._fit(X, np.asarray(y, dtype=np.float64), sample_weight)

    def predict(self, X, return_std=False, return_cov=False):
        """Posterior mean in the units of ``y``; with ``return_std`` also the posterior standard deviation
        of the latent f(x) (as scikit-learn's GaussianProcessRegressor without a WhiteKernel)."""
        if return_cov:
            raise NotImplementedError("GPRegressor gives the posterior variance pointwise (return_std=True), "
                                      "not the covariance between points")
        scores = self._decision(X)
        mean = self.model_.preprocessor.decode(scores)
        if not return_std:
            return mean
        if self.model_.predictor.meta.get("variance") == "none":
            raise ValueError("return_std=True needs the posterior variance, and this GPRegressor was fitted with "
                             "variance='none'; refit with variance='operator'")
        Xc = self._densify(self._check_X(X, reset=False))
        var = self.model_.predict_extra(Xc)["variance"]
        return mean, np.sqrt(np.maximum(np.asarray(var, dtype=np.float64), 0.0))


def _label_array(y):
    """Labels as a NumPy array kopt's data layer takes: object arrays (scikit-learn's way of holding
    strings, or numbers) become a string or numeric array; the values are unchanged."""
    y = np.asarray(y)
    if y.dtype != object:
        return y
    if all(isinstance(v, str) for v in y):
        return y.astype(str)
    converted = np.asarray(y.tolist())
    if converted.dtype == object or converted.dtype.kind in "SU" and not all(isinstance(v, str) for v in y):
        raise ValueError("KernelClassifier labels must be all strings or all numbers; y mixes "
                         f"{sorted({type(v).__name__ for v in y})}")
    return converted


def _loss_targets(name):
    """The targets a registered loss can take (its class target, or the values of its ``target`` parameter)."""
    cls = registry().get("loss", name)
    p = cls.params.get("target")
    return set(p.get("enum", ())) if p else {cls.target}


# -- scikit-learn's estimator checks ---------------------------------------------------------------

_WEIGHT_CHECKS = ("check_sample_weights_not_an_array", "check_sample_weights_list", "check_sample_weights_pandas_series",
                  "check_sample_weights_shape",
                  "check_sample_weights_not_overwritten", "check_sample_weight_equivalence_on_dense_data",
                  "check_sample_weight_equivalence_on_sparse_data")
_EQUIVALENCE_CHECKS = _WEIGHT_CHECKS[-2:]
#: solvers whose weighted answer is a deterministic function of the weighted data (a direct solve)
_DIRECT_SOLVERS = ("krr_exact",)


def expected_failed_checks(estimator) -> dict:
    """The checks of ``sklearn.utils.estimator_checks`` this estimator is expected to fail, with the reason.

    Pass it to ``check_estimator(est, expected_failed_checks=expected_failed_checks(est))`` or
    ``parametrize_with_checks(..., expected_failed_checks=expected_failed_checks)``.  The list
    depends on the parameters:

    * a solver without sample weights (gp, adsg, mrbcd, svrg, katyusha): every check that fits with
      ``sample_weight`` -- the estimator refuses the weights with a message naming the solvers
      that take them;
    * an iterative solver with weights (dsg, udsg, cdsg, joker): fitting with an integer weight is
      the same problem as repeating the row, but not the same run -- mini-batches and blocks are
      drawn from the rows, so the iterates differ (the answers agree within the stopping rule);
    * the median-heuristic bandwidth: it is computed from the rows, not their weights, so repeating
      a row changes it (a numeric bandwidth makes ``krr_exact`` pass the equivalence checks);
    * float32 features (the default): predictions on a subset or a permutation of the rows agree with
      the full batch to float32 rounding (about 1e-7 relative), not to the checks' 1e-7 absolute+relative
      bound on every row.
    """
    reasons = {}
    solver = _component("solver", getattr(estimator, "solver", None))
    if solver is not None and not solver.sample_weight:
        takes = ", ".join(n for n in registry().names("solver") if registry().get("solver", n).sample_weight)
        for name in _WEIGHT_CHECKS:
            reasons[name] = f"solver {solver.name!r} does not accept sample weights (solvers that do: {takes})"
    elif solver is not None:
        if solver.name not in _DIRECT_SOLVERS:
            for name in _EQUIVALENCE_CHECKS:
                reasons[name] = (f"solver {solver.name!r} is iterative (mini-batches or blocks of rows): a repeated "
                                 "row is the same problem as an integer weight but not the same run -- the answers "
                                 "agree within the solver's stopping rule, not to 1e-7")
        elif getattr(estimator, "bandwidth", None) == "median":
            for name in _EQUIVALENCE_CHECKS:
                reasons[name] = ("bandwidth='median' is computed from the rows, not their weights: repeating a row "
                                 "changes it (a numeric bandwidth passes)")
    features = estimator.features if isinstance(getattr(estimator, "features", None), dict) else {}
    if features.get("dtype", "float32") == "float32":
        for name in ("check_methods_subset_invariance", "check_methods_sample_order_invariance"):
            reasons[name] = ("float32 features: predictions on a subset or a permutation of the rows agree to "
                             "float32 rounding (~1e-7 relative), not always within the check's 1e-7 bound")
    return reasons


# -- specs -> estimators ---------------------------------------------------------------------------

def from_spec(spec, overrides=()):
    """The estimator of a spec (a path, a YAML string's path, a dict or a :class:`kopt.Spec`).

    The spec is validated as ``kopt solve`` validates it; its ``model``, ``solver``, ``seed``,
    ``backend`` and ``data.standardize``/``standardize_target`` become the estimator's
    parameters (the ``data`` files and ``output`` are the CLI's business).  ``form: gp`` gives a
    :class:`GPRegressor`, a classification loss a :class:`KernelClassifier`, a regression loss a
    :class:`KernelRegressor`.
    """
    from .spec import Spec
    from .spec.loader import apply_overrides, read_spec_file

    resolved = load_spec(spec, overrides, check_files=False)
    if isinstance(spec, Spec):
        raw = copy.deepcopy(spec.data)
    elif isinstance(spec, dict):
        raw = copy.deepcopy(spec)
    else:
        raw, _ = read_spec_file(str(spec))
    apply_overrides(raw, overrides)
    model, solver = raw["model"], dict(raw.get("solver") or {"name": "auto"})
    standardize = DATA_SCHEMA["properties"]["standardize"]["default"]  # the spec's default, not the estimator's
    common = {"random_state": raw.get("seed", 0), "backend": raw.get("backend", "auto"),
              "standardize": (raw.get("data") or {}).get("standardize", standardize)}
    kernel = dict(model["kernel"])
    kernel_name = kernel.pop("name")
    bandwidth = kernel.pop("bandwidth", BANDWIDTH_PARAMS["bandwidth"]["default"])
    features = model.get("features")
    if model.get("form") == "gp":
        solver.pop("name")
        gp = {k: solver.pop(k) for k in ("noise_variance", "variance", "iterations", "batch_size") if k in solver}
        return GPRegressor(kernel=kernel_name, bandwidth=bandwidth, kernel_options=kernel or None, features=features,
                           solver_options=solver or None,
                           standardize_target=(raw.get("data") or {}).get("standardize_target", True),
                           **gp, **common)
    loss = dict(model["loss"])
    loss_name = loss.pop("name")
    reg = dict(model.get("regularizer") or {"name": "l2", "lambda": 1e-4})
    params = dict(loss=loss_name, loss_options=loss or None, kernel=kernel_name, bandwidth=bandwidth,
                  kernel_options=kernel or None, lam=reg.pop("lambda", 1e-4), regularizer=reg.pop("name"),
                  regularizer_options=reg or None, form=model.get("form"), features=features,
                  solver=solver.pop("name"), solver_options=solver or None, **common)
    target = resolved.loss.target
    if target in ("binary", "multiclass"):
        if (loss or {}).get("target") == "binary":
            params["loss_options"] = {k: v for k, v in loss.items() if k != "target"} or None
        return KernelClassifier(**params)
    if target == "real":
        return KernelRegressor(standardize_target=(raw.get("data") or {}).get("standardize_target", False), **params)
    raise SpecError(f"no scikit-learn estimator for a {target} loss ({loss_name!r}); kopt.sklearn has "
                    "KernelClassifier, KernelRegressor and GPRegressor", source=resolved.source,
                    path="$.model.loss.name")


# the plugins the estimators dispatch to are loaded with this module, as scikit-learn loads its own estimators'
# code at import: otherwise the first fit in a process paid it (0.16 s, a quarter of a higgs-12k fit)
registry()
