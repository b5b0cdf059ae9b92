"""What every kopt estimator shares: the parameter table, spec building and validation, fitting,
warm starts, pickling and ``to_spec`` (:class:`KoptEstimator`).  scikit-learn is imported here first,
so a missing one is reported once, by name."""
from __future__ import annotations

import copy
import numbers
import os
import warnings

import numpy as np

try:
    import sklearn  # noqa: F401
    from sklearn.base import BaseEstimator
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.utils import check_random_state
    from sklearn.utils.validation import check_is_fitted, validate_data
except ImportError as exc:  # pragma: no cover - exercised only without scikit-learn
    raise ImportError("kopt.sklearn needs scikit-learn >= 1.6: pip install 'kopt[sklearn]'") from exc

from .. import errors
from ..api import solve
from ..contract.registry import registry
from ..errors import SpecError
from ..running.logs import verbose_progress
from ..spec import load_spec

#: estimator parameter -> the spec key it sets (``*``: every key of the dict given), e.g. ``PARAMETERS["lam"]`` is
#: ``"model.regularizer.lambda"``.
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
    "class_weight": "data.class_weight (KernelClassifier)",
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
    ("$.data.standardize", "standardize"), ("$.data.class_weight", "class_weight"),
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
    if not isinstance(random_state, np.random.RandomState):
        raise ValueError(f"random_state={random_state!r}: expected None, an int >= 0, a numpy RandomState or a "
                         "numpy Generator")
    return int(check_random_state(random_state).randint(np.iinfo(np.int32).max))


def component(kind, name):
    entry = registry().components[kind].get(name) if isinstance(name, str) else None
    return None if entry is None else entry.cls



def loss_targets(name):
    """The targets a registered loss can take (its class target, or the values of its ``target`` parameter)."""
    cls = registry().get("loss", name)
    p = cls.params.get("target")
    return set(p.get("enum", ())) if p else {cls.target}


class KoptEstimator(BaseEstimator):
    """What every kopt estimator shares: spec building, validation, fitting, pickling, ``to_spec``."""

    # -- the spec ----------------------------------------------------------------------------------
    def _options(self, param) -> dict:
        """A ``*_options`` parameter as the spec keys it adds (None: none); anything but a mapping is refused,
        naming the parameter."""
        value = getattr(self, param)
        if value is None:
            return {}
        if not isinstance(value, dict):
            from ..spec.messages import show, type_of

            raise SpecError(f"expected a mapping of spec keys (a dict), got {show(value)} ({type_of(value)})",
                            source=type(self).__name__, path=param)
        return value

    def _model_section(self) -> dict:
        reg_name = self.regularizer
        model = {
            "loss": {"name": self.loss, **self._options("loss_options")},
            "kernel": self._kernel_section(),
            "regularizer": {"name": reg_name, "lambda": self.lam, **self._options("regularizer_options")},
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
        cls = component("kernel", self.kernel)
        # a rule ("auto", the default) applies to every kernel with a bandwidth; a kernel without one (linear,
        # polynomial...) leaves it out, while a number given for such a kernel is passed on and refused
        if self.bandwidth is not None and not (self.bandwidth in ("median", "scale", "auto") and cls is not None
                                               and "bandwidth" not in cls.params):
            kernel["bandwidth"] = self.bandwidth
        kernel.update(self._options("kernel_options"))
        return kernel

    def _features_section(self):
        f = self.features
        if f is None:
            return None
        if isinstance(f, (numbers.Integral, np.integer)) and not isinstance(f, bool):
            return {"count": int(f)}
        return dict(f) if isinstance(f, dict) else f  # anything else: the schema says what is expected

    def _default_form(self):
        cls = component("solver", getattr(self, "solver", None))
        return None if cls is None else cls.forms[0]

    def _solver_section(self) -> dict:
        return {"name": self.solver, **self._options("solver_options")}

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
        """The estimator's spec, validated by the spec engine: the CLI's messages, in the estimator's words (a
        message about ``$.data.class_weight[0]`` names ``KernelClassifier: class_weight[0]``)."""
        return load_spec(self._spec_dict(output=dict(_NO_FILES)), check_files=False, faces=self._faces())

    def _faces(self):
        """Which spec keys each of this estimator's parameters sets (:class:`kopt.spec.loader.Face`)."""
        from ..spec.loader import Face

        faces = []
        for prefix, param in _PATH_PARAMS:
            if param not in self.get_params(deep=False):
                continue
            path = tuple(prefix[2:].split("."))
            if param == "features" and self._features_section() is not None and not isinstance(self.features, dict):
                path = ("model", "features", "count")  # features=N sets the count
            faces.append(Face(path, type(self).__name__, param))
        return faces

    def to_spec(self, path: str | os.PathLike | None = None, *, data: dict | None = None,
                name: str | None = None) -> str:
        """The equivalent YAML spec, and given ``path``, written there.

        ``kopt solve`` on the written spec, with the same rows, gives the model ``fit`` gives.

        Parameters
        ----------
        path : str or path, optional
            Where to write the spec.
        data : dict, optional
            The spec's ``data`` section (e.g. ``{"train": "train.csv", "test_fraction": 0.2}``); the estimator
            itself sets only ``standardize`` and ``standardize_target``.
        name : str, optional
            The spec's ``name``.

        Returns
        -------
        str
            The spec as YAML.

        Raises
        ------
        kopt.SpecError
            The parameters do not make a valid spec.
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
            from ..running.assemble import check_sample_weight, check_solver_weights

            check_sample_weight(sample_weight, X.shape[0])  # the weights themselves first, then the solver
            check_solver_weights(spec)  # its message names the estimator's solver= (the spec's faces)
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
        self.timings_ = dict(result.timings)  # seconds: fit_s, auto_s (the search), calibration_s, ...
        self._set_choices(result)
        self._warm = None
        if keep and result.snapshot is not None:
            import joblib

            self._warm = (result.snapshot, joblib.hash((X, y, sample_weight)))
        return self

    def _set_choices(self, result):
        """``route_``, ``loss_``, ``lam_``, ``bandwidth_``, ``n_features_`` and ``auto_`` from what was solved."""
        solved = result.report["spec"]
        self.loss_ = solved["model"]["loss"]["name"]  # the loss solved (``loss="auto"``: the one solver auto chose)
        solver = solved["solver"]
        mode = result.info.get("mode") or solver.get("mode")
        self.route_ = solver["name"] + (f" ({mode})" if mode else "")
        self.lam_ = solved["model"]["regularizer"].get("lambda")
        self.bandwidth_ = result.report["kernel"].get("bandwidth")
        exact = mode == "exact" or component("solver", solver["name"]).kernel_mode == "exact"
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
        from ..errors import CheckpointError
        from ..running.checkpoint import check_continuation

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
        kernel = component("kernel", self.kernel)
        tags.input_tags.positive_only = kernel is not None and kernel.input_domain == "nonnegative"
        return tags

    # -- pickling: the fitted model travels as its model-file content ------------------------------
    def __getstate__(self):
        state = dict(super().__getstate__())  # object.__getstate__ hands out the live __dict__
        model = state.get("model_")
        if model is not None:
            state["model_"] = PickledModel(model.to_meta(), model.to_arrays(), model.backend.name)
        return state

    def __setstate__(self, state):
        model = state.get("model_")
        if isinstance(model, PickledModel):
            state = dict(state)
            state["model_"] = model.load()
        super().__setstate__(state)


class PickledModel:
    """A fitted model inside a pickled estimator: the model file's JSON metadata and NumPy arrays."""

    def __init__(self, meta, arrays, backend):
        self.meta, self.arrays, self.backend = meta, arrays, backend

    def load(self):
        from ..models.model import model_from
        from ..numerics.backend import resolve

        try:
            backend = resolve(self.backend)
        except errors.KoptError:  # pickled on a GPU machine, unpickled without one
            backend = resolve("numpy")
        return model_from(self.meta, self.arrays, backend, source="<pickled estimator>")


class _Unchanged:
    def __repr__(self):
        return "<unchanged>"


_UNCHANGED = _Unchanged()
