"""KernelClassifier: labels, one-vs-rest or multiclass losses, probabilities."""
from __future__ import annotations

from typing import Callable

import numpy as np
from numpy.typing import ArrayLike
from sklearn.base import ClassifierMixin
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from ..contract.registry import registry
from .base import KoptEstimator, component, loss_targets


class KernelClassifier(ClassifierMixin, KoptEstimator):
    """A kernel classifier: a kopt spec's ``model`` and ``solver`` sections as a scikit-learn estimator.

    With no arguments it is kopt's default: ``solver="auto"`` chooses the Nyström center count, the bandwidth and λ
    on a seeded validation split of the training rows and solves the square loss on ±1 targets (one output per
    class), within a work budget counted by formula; ``route_``, ``n_features_``, ``bandwidth_``, ``lam_`` and
    ``auto_`` say what it chose and why.  Any number given is taken as given (``GridSearchCV``).  The parameters map
    one to one onto spec keys (:data:`PARAMETERS`); ``fit`` validates the spec as ``kopt solve`` does.

    Parameters
    ----------
    loss : str, default "auto"
        A classification loss (``model.loss.name``): ``square``, ``squared_hinge``, ``hinge``, ``logistic``,
        ``softmax``, ...; a loss with a ``target`` parameter (square, huber) gets ``target: binary``.
        ``"auto"`` lets ``solver="auto"`` choose.
    loss_options : dict, optional
        The loss's other parameters (``model.loss``), e.g. ``{"delta": 1.0}`` for huber.
    kernel : str, default "gaussian"
        The kernel (``model.kernel.name``): ``gaussian``, ``laplacian``, ``matern``, ...
    bandwidth : float or {"auto", "scale", "median"}, default "auto"
        The kernel's length scale (``model.kernel.bandwidth``): a number, or a rule computed on the training rows;
        ``"auto"`` lets ``solver="auto"`` search around the ``scale`` rule.
    kernel_options : dict, optional
        The kernel's other parameters (``model.kernel``).
    lam : float or "auto", default "auto"
        λ of kopt's objective λ/2‖f‖² + mean loss (``model.regularizer.lambda``); ``"auto"`` chooses it on a
        validation split.
    regularizer : str, default "l2"
        The regularizer (``model.regularizer.name``).
    regularizer_options : dict, optional
        The regularizer's other parameters.
    form : {"primal", "dual"}, optional
        ``model.form``; None takes the solver's own.
    features : int or dict, optional
        The random-feature map or the Nyström centers (``model.features``): a dict, or an int count.
    solver : str, default "auto"
        The solver (``solver.name``); ``"auto"`` chooses the route, the number of centers, the bandwidth and λ on a
        seeded validation split.
    solver_options : dict, optional
        The solver's options (``solver``), e.g. ``{"iterations": 500, "tol": 1e-3}``.
    standardize : bool or "auto", default "auto"
        Z-score the features with the training statistics (``data.standardize``).
    class_weight : dict or "balanced", optional
        ``data.class_weight``: ``{label: weight}`` or ``"balanced"``, multiplying ``sample_weight`` in the loss, in
        the validation score ``solver="auto"`` chooses by, and in the calibration.
    backend : {"auto", "numpy", "cupy"}, default "auto"
        The array backend (``backend``).
    random_state : int, optional
        The spec's ``seed``; None is seed 0.  Every random choice comes from it.
    warm_start : bool, default False
        Continue the previous fit (more iterations, another ``tol``) instead of starting afresh.
    verbose : int, default 0
        0: quiet; 1: a progress bar; 2: every progress record of the ``kopt`` logger on stderr.

    Attributes
    ----------
    classes_ : ndarray
        The class labels, in the order of the columns of :meth:`predict_proba`.
    n_features_in_ : int
        Columns seen in ``fit``.
    feature_names_in_ : ndarray of str
        Column names of a pandas ``X`` in ``fit``.
    model_ : kopt.Model
        The trained model.
    n_iter_ : int
        Iterations the solver ran.
    objective_ : float
        The primal objective.
    dual_objective_, duality_gap_ : float or None
        The dual objective and the duality gap, where the solver certifies its answer.
    status_ : str
        How the solver stopped (``"converged"``, ``"iteration_cap"``, ``"done"``, ...).
    solver_info_ : dict
        The solver's own figures.
    fit_time_ : float
        Seconds ``fit`` took, the search of ``solver="auto"`` included.
    spec_ : dict
        The resolved spec that was solved.
    route_ : str
        The solver (and mode) that solved.
    lam_ : float
        The λ used.
    bandwidth_ : float or None
        The bandwidth used.
    n_features_ : int or None
        Centers or random features used; None for the exact kernel.
    auto_ : dict or None
        ``solver="auto"``'s record: what it tried and why it chose; None otherwise.
    calibration_ : dict or None
        A margin loss's probability calibration (Platt sigmoids fitted on held-out rows); None for the logistic and
        softmax losses, which have probabilities of their own.

    See Also
    --------
    KernelRegressor : the same for real targets.
    kopt.solve : what ``fit`` runs.

    Examples
    --------
    >>> from sklearn.datasets import make_classification
    >>> from kopt.sklearn import KernelClassifier
    >>> X, y = make_classification(n_samples=200, n_features=4, random_state=0)
    >>> clf = KernelClassifier(solver="krr_exact", lam=1e-3, bandwidth=2.0).fit(X[:150], y[:150])
    >>> clf.score(X[150:], y[150:])
    0.92
    >>> clf.predict(X[:3]), clf.predict_proba(X[:3]).shape
    (array([0, 0, 1]), (3, 2))

    The default chooses the route, the centers, the bandwidth and λ itself:

    >>> clf = KernelClassifier().fit(X[:150], y[:150])
    >>> clf.route_, clf.lam_ > 0
    ('krr_nystrom', True)
    """

    def __init__(self, loss: str = "auto", *, loss_options: dict | None = None, kernel: str = "gaussian",
                 bandwidth: float | str = "auto", kernel_options: dict | None = None, lam: float | str = "auto",
                 regularizer: str = "l2", regularizer_options: dict | None = None, form: str | None = None,
                 features: int | dict | None = None, solver: str = "auto", solver_options: dict | None = None,
                 standardize: bool | str = "auto", class_weight: dict | str | None = None, backend: str = "auto",
                 random_state: int | None = None, warm_start: bool = False, verbose: int | bool = False) -> None:
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
            model["loss"] = {**self._options("loss_options"), "name": "square"}
        cls = component("loss", model["loss"]["name"])
        if cls is not None and "target" in cls.params and "target" not in self._options("loss_options"):
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

    def fit(self, X: ArrayLike, y: ArrayLike, sample_weight: ArrayLike | None = None) -> KernelClassifier:
        """Fit on ``X`` (dense or sparse) and labels ``y`` (any hashable labels), optionally weighted.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)
            The training rows.
        y : array-like of shape (n_samples,)
            The labels: numbers or strings, two classes or more.
        sample_weight : array-like of shape (n_samples,), optional
            Weights of the rows (solvers that take them).

        Returns
        -------
        KernelClassifier
            The fitted estimator.

        Raises
        ------
        kopt.SpecError
            A parameter is not a value its spec key allows (the note names the parameter).
        ValueError
            Fewer than two classes, or more than two for a binary loss on a solver without one-vs-rest.
        """
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

    def decision_function(self, X: ArrayLike) -> np.ndarray:
        """The scores of the rows of ``X``.

        A multiclass loss (softmax) on two classes scores f_1 − f_0, the log-odds of ``classes_[1]``.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n, d)
            The rows.

        Returns
        -------
        ndarray of shape (n,) or (n, n_classes)
            ``(n,)`` for two classes (positive means ``classes_[1]``), one column per class otherwise.

        Raises
        ------
        sklearn.exceptions.NotFittedError
            The estimator is not fitted.

        Examples
        --------
        >>> import numpy as np
        >>> from kopt.sklearn import KernelClassifier
        >>> X = np.random.default_rng(0).normal(size=(100, 2))
        >>> y = np.where(X[:, 0] > 0, "spam", "ham")
        >>> clf = KernelClassifier(solver="krr_exact", lam=1e-3, bandwidth=1.0).fit(X, y)
        >>> clf.classes_, clf.decision_function(X[:3]).round(3)
        (array(['ham', 'spam'], dtype='<U4'), array([ 0.446,  1.174, -1.017]))
        """
        scores = self._decision(X)
        if scores.ndim == 2 and scores.shape[1] == 2:
            scores = scores[:, 1] - scores[:, 0]
        return scores

    def predict(self, X: ArrayLike) -> np.ndarray:
        """Labels in the coding of ``y`` (``classes_``): the sign of the score, or its largest column.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n, d)
            The rows.

        Returns
        -------
        ndarray of shape (n,)
            The labels.

        Raises
        ------
        sklearn.exceptions.NotFittedError
            The estimator is not fitted.

        Examples
        --------
        >>> import numpy as np
        >>> from kopt.sklearn import KernelClassifier
        >>> X = np.random.default_rng(0).normal(size=(100, 2))
        >>> y = np.where(X[:, 0] > 0, "spam", "ham")
        >>> clf = KernelClassifier(solver="krr_exact", lam=1e-3, bandwidth=1.0).fit(X, y)
        >>> clf.predict(X[:3])
        array(['spam', 'spam', 'ham'], dtype='<U4')
        """
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
    def predict_proba(self) -> Callable[[ArrayLike], np.ndarray]:
        """Class probabilities, ``predict_proba(X)`` of shape ``(n, n_classes)``, columns in ``classes_`` order.

        σ(f) for the logistic loss (one-vs-rest columns normalized), softmax's for softmax, and for a margin loss
        (square, squared hinge, hinge...) Platt sigmoids of the scores fitted on held-out rows at ``fit``
        (``calibration_``).  A fitted model without probabilities has no such attribute (``hasattr`` is False), and
        reading it raises ``AttributeError`` that says why.

        Examples
        --------
        >>> import numpy as np
        >>> from kopt.sklearn import KernelClassifier
        >>> X = np.random.default_rng(0).normal(size=(100, 2))
        >>> y = np.where(X[:, 0] > 0, "spam", "ham")
        >>> clf = KernelClassifier(solver="krr_exact", lam=1e-3, bandwidth=1.0).fit(X, y)
        >>> clf.predict_proba(X[:2]).round(3)
        array([[0.128, 0.872],
               [0.021, 0.979]])
        """
        return self._if_probabilities(self._predict_proba)

    @property
    def predict_log_proba(self) -> Callable[[ArrayLike], np.ndarray]:
        """The logarithm of :meth:`predict_proba`, ``predict_log_proba(X)`` of shape ``(n, n_classes)``.

        Examples
        --------
        >>> import numpy as np
        >>> from kopt.sklearn import KernelClassifier
        >>> X = np.random.default_rng(0).normal(size=(100, 2))
        >>> y = np.where(X[:, 0] > 0, "spam", "ham")
        >>> clf = KernelClassifier(solver="krr_exact", lam=1e-3, bandwidth=1.0).fit(X, y)
        >>> bool(np.allclose(np.exp(clf.predict_log_proba(X[:2])), clf.predict_proba(X[:2])))
        True
        """
        return self._if_probabilities(self._predict_log_proba)

    @property
    def calibration_(self) -> dict | None:
        """The fitted probability calibration, or None for the logistic and softmax losses (their own probabilities).

        The sigmoids ``a`` and ``b``; ``rows`` and ``source``: the held-out rows they were fitted on.  Reading it
        before ``fit`` raises ``NotFittedError``.

        Examples
        --------
        >>> import numpy as np
        >>> from kopt.sklearn import KernelClassifier
        >>> X = np.random.default_rng(0).normal(size=(100, 2))
        >>> y = np.where(X[:, 0] > 0, "spam", "ham")
        >>> clf = KernelClassifier(solver="krr_exact", lam=1e-3, bandwidth=1.0).fit(X, y)
        >>> clf.calibration_["method"], clf.calibration_["rows"]
        ('sigmoid', 20)
        """
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

