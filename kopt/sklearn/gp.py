"""GPRegressor: GP regression (``model.form: gp``) with the posterior standard deviation."""
from __future__ import annotations

import numbers

import numpy as np
from sklearn.base import RegressorMixin
from sklearn.utils.validation import validate_data

from .base import KoptEstimator


class GPRegressor(RegressorMixin, KoptEstimator):
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
            raise spec.error(("solver", "variance"),
                             "GPRegressor predicts at any point, so it needs variance 'operator' (or 'none'); "
                             "'test_points' gives the variance only at a test split known at fit time (use "
                             "kopt solve with a spec for that)")
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

