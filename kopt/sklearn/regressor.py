"""KernelRegressor: any regression loss, predictions in the units of y."""
from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike
from sklearn.base import RegressorMixin
from sklearn.utils.validation import validate_data

from ..contract.registry import registry
from ..spec import AUTO_LOSS
from .base import KoptEstimator, loss_targets


class KernelRegressor(RegressorMixin, KoptEstimator):
    """A kernel regressor: a kopt spec's ``model`` and ``solver`` sections as a scikit-learn estimator.

    The parameters are :class:`KernelClassifier`'s, with a regression loss and ``standardize_target``.

    Parameters
    ----------
    loss : str, default "square"
        A regression loss (``model.loss.name``): ``square`` (kernel ridge regression; scikit-learn's ``KernelRidge``
        alpha is λn), ``huber``, ``absolute``, ``epsilon_insensitive`` (SVR; its C is 1/(λn)), ``lp``, ``quantile``.
    loss_options, kernel, bandwidth, kernel_options, lam, regularizer, regularizer_options, form, features
        As for :class:`KernelClassifier`.
    solver, solver_options, standardize, backend, random_state, warm_start, verbose
        As for :class:`KernelClassifier`.
    standardize_target : bool, default False
        Z-score ``y`` for the solve (``data.standardize_target``); predictions come back in the units of ``y``.

    Attributes
    ----------
    n_features_in_ : int
        Columns seen in ``fit``.
    model_ : kopt.Model
        The trained model.
    n_iter_ : int
        Iterations the solver ran.
    objective_ : float
        The primal objective.
    dual_objective_, duality_gap_ : float or None
        The dual objective and the duality gap, where the solver certifies its answer.
    status_ : str
        How the solver stopped.
    fit_time_ : float
        Seconds ``fit`` took.
    spec_ : dict
        The resolved spec that was solved.
    route_, lam_, bandwidth_, n_features_, auto_
        What was solved and, with ``solver="auto"``, what it chose and why (as for :class:`KernelClassifier`).

    Examples
    --------
    >>> import numpy as np
    >>> from kopt.sklearn import KernelRegressor
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-2, 2, size=(200, 2))
    >>> y = np.sin(X[:, 0]) + 0.5 * X[:, 1]
    >>> reg = KernelRegressor(solver="krr_exact", lam=1e-4, bandwidth=1.0).fit(X[:150], y[:150])
    >>> round(reg.score(X[150:], y[150:]), 3)
    1.0
    >>> reg.predict(X[150:153]).shape
    (3,)
    """

    def __init__(self, loss: str = "square", *, loss_options: dict | None = None, kernel: str = "gaussian",
                 bandwidth: float | str = "auto", kernel_options: dict | None = None, lam: float | str = "auto",
                 regularizer: str = "l2", regularizer_options: dict | None = None, form: str | None = None,
                 features: int | dict | None = None, solver: str = "auto", solver_options: dict | None = None,
                 standardize: bool | str = "auto", standardize_target: bool = False, backend: str = "auto",
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
            real = ", ".join(n for n in registry().names("loss") if "real" in loss_targets(n))
            if spec.given["model"]["loss"]["name"] == AUTO_LOSS:  # the user wrote auto: the solver's choice is a class loss
                raise spec.error(("model", "loss", "name"),
                                 f"loss 'auto' lets the solver choose a classification loss (KernelClassifier's "
                                 f"default); {type(self).__name__} names its regression loss: {real} (the default: "
                                 "square)")
            raise spec.error(("model", "loss", "name"),
                             f"{type(self).__name__} needs a regression loss; loss {spec.loss.name!r} is a "
                             f"{spec.loss.target} loss (use KernelClassifier for labels). Regression losses: {real}")
        return spec

    def fit(self, X: ArrayLike, y: ArrayLike, sample_weight: ArrayLike | None = None) -> KernelRegressor:
        """Fit on ``X`` (dense or sparse) and real targets ``y``, optionally weighted.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)
            The training rows.
        y : array-like of shape (n_samples,)
            The real targets.
        sample_weight : array-like of shape (n_samples,), optional
            Weights of the rows (solvers that take them).

        Returns
        -------
        KernelRegressor
            The fitted estimator.

        Raises
        ------
        kopt.SpecError
            A parameter is not a value its spec key allows, or the loss is not a regression loss.
        """
        X, y = validate_data(self, X, y, accept_sparse="csr", dtype=(np.float64, np.float32), y_numeric=True,
                             ensure_min_samples=2, accept_large_sparse=True)
        return self._fit(X, np.asarray(y, dtype=np.float64), sample_weight)

    def predict(self, X: ArrayLike) -> np.ndarray:
        """Predictions in the units of ``y``.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n, d)
            The rows.

        Returns
        -------
        ndarray of shape (n,)
            The predictions.

        Raises
        ------
        sklearn.exceptions.NotFittedError
            The estimator is not fitted.

        Examples
        --------
        >>> import numpy as np
        >>> from kopt.sklearn import KernelRegressor
        >>> X = np.random.default_rng(0).normal(size=(100, 2))
        >>> reg = KernelRegressor(solver="krr_exact", lam=1e-3, bandwidth=1.0).fit(X, 2 * X[:, 0])
        >>> reg.predict(X[:3]).round(2), (2 * X[:3, 0]).round(2)
        (array([ 0.23,  1.27, -1.05]), array([ 0.25,  1.28, -1.07]))
        """
        scores = self._decision(X)
        return self.model_.preprocessor.decode(scores)

