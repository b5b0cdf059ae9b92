"""KernelRegressor: any regression loss, predictions in the units of y."""
from __future__ import annotations

import numpy as np
from sklearn.base import RegressorMixin
from sklearn.utils.validation import validate_data

from ..contract.registry import registry
from ..spec import AUTO_LOSS
from .base import KoptEstimator, loss_targets


class KernelRegressor(RegressorMixin, KoptEstimator):
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

    def fit(self, X, y, sample_weight=None):
        """Fit on ``X`` (dense or sparse) and real targets ``y``, optionally weighted."""
        X, y = validate_data(self, X, y, accept_sparse="csr", dtype=(np.float64, np.float32), y_numeric=True,
                             ensure_min_samples=2, accept_large_sparse=True)
        return self._fit(X, np.asarray(y, dtype=np.float64), sample_weight)

    def predict(self, X):
        """Predictions in the units of ``y``."""
        scores = self._decision(X)
        return self.model_.preprocessor.decode(scores)

