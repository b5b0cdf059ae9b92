"""KernelClassifier: labels, one-vs-rest or multiclass losses, probabilities."""
from __future__ import annotations

import numpy as np
from sklearn.base import ClassifierMixin
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from ..contract.registry import registry
from .base import KoptEstimator, component, loss_targets


class KernelClassifier(ClassifierMixin, KoptEstimator):
    """A kernel classifier from a kopt spec's ``model`` and ``solver`` sections.

    With no arguments it is kopt's default (docs/defaults.md): ``solver="auto"`` chooses the Nyström
    center count, the bandwidth and λ on a seeded validation split of the training rows and solves
    the square loss on ±1 targets (one output per class, one factorisation for all), within
    a work budget counted by formula (``solver_options={"work": flops}``; ``{"budget": seconds}`` adds a
    wall-clock limit, which makes the choice depend on the machine where it binds); ``route_``, ``n_features_``, ``bandwidth_``, ``lam_`` and
    ``auto_`` say what it chose and why.  Any number given is taken as given (GridSearchCV).

    Parameters map onto spec keys (:data:`PARAMETERS`): ``loss`` (a classification loss; a loss with
    a ``target`` parameter, such as square or huber, gets ``target: binary`` unless
    ``loss_options`` says otherwise), ``kernel``, ``bandwidth`` (a number, "median", "scale" or
    "auto"), ``kernel_options``, ``lam`` (kopt's λ of λ/2‖f‖² + mean loss: SVC's C = 1/(λn); "auto"),
    ``regularizer``/``regularizer_options``, ``form`` (None: the solver's own), ``features``
    (the random-feature map: a dict, or an int count), ``solver``/``solver_options``,
    ``standardize`` (z-score the features with training statistics), ``class_weight`` (None, "balanced" or
    ``{label: weight}``: ``data.class_weight``, multiplying ``sample_weight`` in the loss, in the validation score
    ``solver="auto"`` chooses by -- balanced accuracy for "balanced" -- and in the calibration), ``backend``,
    ``random_state`` (the spec's seed; None is seed 0), ``warm_start`` (continue the previous fit
    with more iterations or another tol) and ``verbose`` (0: quiet; 1: the progress bar, a tqdm bar in a notebook;
    2: every progress record of the ``kopt`` logger, down to each gap check, on stderr).

    ``predict_proba`` answers for every loss: σ(f) for logistic, softmax's for softmax, and for a margin loss
    (square, squared hinge, hinge) Platt sigmoids of the scores fitted on held-out rows (``calibration_`` says
    which: ``solver="auto"``'s validation rows, or a seeded internal split; docs/sklearn.md).

    Attributes after ``fit``: ``classes_``, ``n_features_in_``, ``feature_names_in_`` (pandas
    input), ``model_`` (the :class:`kopt.Model`), ``n_iter_``, ``objective_``,
    ``dual_objective_``, ``duality_gap_``, ``status_``, ``solver_info_``, ``fit_time_`` (the search
    included), ``spec_`` (the resolved spec: what was solved), ``route_`` (the solver and mode that
    solved), ``lam_``, ``bandwidth_``, ``n_features_`` (centers or random features; None for the exact
    kernel) and ``auto_`` (``solver="auto"``'s record: what it tried and why it chose; else None).
    """

    def __init__(self, loss="auto", *, loss_options=None, kernel="gaussian", bandwidth="auto",
                 kernel_options=None, lam="auto", regularizer="l2", regularizer_options=None, form=None, features=None,
                 solver="auto", solver_options=None, standardize="auto", class_weight=None, backend="auto",
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
        self.class_weight = class_weight
        self.backend = backend
        self.random_state = random_state
        self.warm_start = warm_start
        self.verbose = verbose

    def _model_section(self):
        model = super()._model_section()
        solver = component("solver", self.solver)
        if self.loss == "auto" and solver is not None and solver.auto_loss is None:
            # a named solver that does not choose the loss solves the square loss on ±1 targets, as it always has
            model["loss"] = {**(self.loss_options or {}), "name": "square"}
        cls = component("loss", model["loss"]["name"])
        if cls is not None and "target" in cls.params and "target" not in (self.loss_options or {}):
            model["loss"]["target"] = "binary"
        return model

    def _data_section(self):
        data = super()._data_section()
        if self.class_weight is not None:
            data["class_weight"] = self.class_weight
        return data

    def _validated_spec(self):
        spec = super()._validated_spec()
        target = spec.loss.target
        if target not in ("binary", "multiclass"):
            regression = ", ".join(n for n in registry().names("loss")
                                   if loss_targets(n) & {"binary", "multiclass"})
            raise spec.error(("model", "loss", "name"),
                             f"KernelClassifier needs a classification loss; loss {spec.loss.name!r} is a {target} "
                             f"loss (use KernelRegressor for real targets). Classification losses: {regression}")
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
        """Why ``predict_proba`` is unavailable (None when it is): every classification loss has probabilities
        (a margin loss's calibrated on held-out scores, docs/sklearn.md); a fitted model without them says why."""
        model = getattr(self, "model_", None)
        return None if model is None else model.proba_refusal()

    def _if_probabilities(self, method):
        """``method``, or the AttributeError that says why this model has no probabilities (so ``hasattr`` is False)."""
        reason = self._proba_refusal()
        if reason:
            raise AttributeError(f"{type(self).__name__}.predict_proba: {reason}")
        return method

    @property
    def predict_proba(self):
        """Class probabilities, ``(n, n_classes)``, columns in ``classes_`` order: σ(f) for the logistic loss
        (one-vs-rest columns normalised), softmax's for softmax, and for a margin loss (square, squared hinge,
        hinge...) Platt sigmoids of the scores fitted on held-out rows at ``fit`` (``calibration_``)."""
        return self._if_probabilities(self._predict_proba)

    @property
    def predict_log_proba(self):
        """Logarithm of :meth:`predict_proba`."""
        return self._if_probabilities(self._predict_log_proba)

    @property
    def calibration_(self):
        """The fitted probability calibration (sigmoids ``a``, ``b``; ``rows`` and ``source``: the held-out rows
        they were fitted on), or None for the logistic and softmax losses (their own probabilities)."""
        check_is_fitted(self, "model_")
        return self.model_.calibration

    def _predict_log_proba(self, X):
        check_is_fitted(self, "model_")
        X = self._densify(self._check_X(X, reset=False))
        return self.model_.predict_log_proba(X)

    def _predict_proba(self, X):
        return np.exp(self._predict_log_proba(X))

    def _multiclass(self):
        """Whether this loss and solver train on more than two classes (unknown names: assume so, fit will say)."""
        solver = component("solver", self.solver)
        loss = component("loss", "square" if self.loss == "auto" else self.loss)
        if solver is None or loss is None:
            return True
        return bool(solver.one_vs_rest or loss.target == "multiclass")

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = self._multiclass()
        return tags



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

