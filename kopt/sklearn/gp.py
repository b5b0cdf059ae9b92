"""GPRegressor: GP regression (``model.form: gp``) with the posterior standard deviation."""
from __future__ import annotations

import numbers

import numpy as np
from numpy.typing import ArrayLike
from sklearn.base import RegressorMixin
from sklearn.utils.validation import validate_data

from .base import KoptEstimator


class GPRegressor(RegressorMixin, KoptEstimator):
    """GP regression (``model.form: gp``, solver ``gp``): the posterior mean and standard deviation.

    Like scikit-learn's ``GaussianProcessRegressor(kernel=RBF(bandwidth), alpha=noise_variance,
    normalize_y=standardize_target, optimizer=None)``, fitted by doubly stochastic gradients (:doc:`/docs/gp`).
    Sparse input is densified (the gp solver works on dense rows).

    Parameters
    ----------
    kernel : str, default "gaussian"
        The kernel (``model.kernel.name``).
    bandwidth : float or {"median", "scale"}, default "median"
        The kernel's length scale, or the rule computed on the training rows.
    kernel_options : dict, optional
        The kernel's other parameters.
    noise_variance : float, default 0.1
        The noise variance σ² (on the z-scored target when ``standardize_target``).
    variance : {"operator", "none"}, default "operator"
        ``"operator"``: the posterior variance anywhere (memory grows as (iterations · batch_size)²); ``"none"``:
        the mean only.
    iterations : int or "auto", default "auto"
        The solver's T; ``"auto"`` takes about 8 passes over the rows, ceil(8n/B), at least 50 and at most 200.
    batch_size : int, default 32
        The solver's B: rows per iteration.
    features : int or dict, optional
        The random-feature map (``model.features``).
    solver_options : dict, optional
        The gp solver's other options.
    standardize, standardize_target : bool, default True
        Z-score the features, and the target, with the training statistics.
    backend, random_state, verbose
        As for :class:`KernelClassifier`.

    Attributes
    ----------
    iterations_ : int
        The T used (``iterations="auto"`` resolved).
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
    >>> from kopt.sklearn import GPRegressor
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-2, 2, size=(150, 1))
    >>> y = np.sin(2 * X[:, 0]) + 0.1 * rng.normal(size=150)
    >>> gp = GPRegressor(random_state=0).fit(X, y)
    >>> mean, std = gp.predict(np.array([[0.0], [1.0]]), return_std=True)
    >>> mean.shape, bool((std > 0).all())
    ((2,), True)
    """

    #: ``iterations="auto"``: T = ceil(AUTO_PASSES·n/B), clipped to [AUTO_MIN, AUTO_MAX]
    AUTO_PASSES, AUTO_MIN, AUTO_MAX = 8, 50, 200

    # fixed by the model (class attributes, not parameters)
    loss = "square"
    solver = "gp"
    form = "gp"
    regularizer = "l2"

    def __init__(self, *, kernel: str = "gaussian", bandwidth: float | str = "median", kernel_options: dict | None = None,
                 noise_variance: float = 0.1, variance: str = "operator", iterations: int | str = "auto", batch_size: int = 32,
                 features: int | dict | None = None, solver_options: dict | None = None, standardize: bool = True,
                 standardize_target: bool = True, backend: str = "auto", random_state: int | None = None,
                 verbose: int | bool = False) -> None:
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
                "iterations": self._iterations(), "batch_size": self.batch_size, **self._options("solver_options")}

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
            raise spec.error(("solver", "variance"),
                             "GPRegressor predicts at any point, so it needs variance 'operator' (or 'none'); "
                             "'test_points' gives the variance only at a test split known at fit time (use "
                             "kopt solve with a spec for that)")
        return spec

    def _densify(self, X):
        return X.toarray() if hasattr(X, "tocsr") else X

    def fit(self, X: ArrayLike, y: ArrayLike, sample_weight: None = None) -> GPRegressor:
        """Fit the posterior on ``X`` and real targets ``y``.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)
            The training rows.
        y : array-like of shape (n_samples,)
            The real targets.
        sample_weight : None
            The gp solver takes no sample weights: giving any raises ``kopt.SpecError``.

        Returns
        -------
        GPRegressor
            The fitted estimator.
        """
        X, y = validate_data(self, X, y, accept_sparse="csr", dtype=(np.float64, np.float32), y_numeric=True,
                             ensure_min_samples=2, accept_large_sparse=True)
        self.iterations_ = self._iterations(X.shape[0])
        return self._fit(X, np.asarray(y, dtype=np.float64), sample_weight)

    def predict(self, X: ArrayLike, return_std: bool = False,
                return_cov: bool = False) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
        """The posterior mean in the units of ``y``; with ``return_std`` also the posterior standard deviation.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            The rows to predict.
        return_std : bool, default False
            Also return the posterior standard deviation of the latent f(x) (as scikit-learn's
            ``GaussianProcessRegressor`` without a ``WhiteKernel``).
        return_cov : bool, default False
            Not available: the variance is pointwise (raises ``NotImplementedError``).

        Returns
        -------
        mean : ndarray of shape (n_samples,)
            The posterior mean.
        std : ndarray of shape (n_samples,)
            The posterior standard deviation, with ``return_std``.

        Raises
        ------
        ValueError
            ``return_std`` on a model fitted with ``variance="none"``.
        """
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

