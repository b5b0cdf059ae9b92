"""The assembled problem a solver receives: arrays, components, seeds, metrics."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .backend import Backend
from .features import FeatureMap
from .metrics import evaluate

_STREAMS = {}


@dataclass
class Problem:
    """Everything a solver needs; it never reads files or YAML.

    Attributes
    ----------
    X, y : training data on the backend (standardized; labels encoded for the
        loss: {-1,+1} binary, class ids multiclass, {0,1} two-sample, reals).
        ``X`` is a dense backend array, or a scipy CSR matrix for sparse input.
    X_test, y_test_raw : holdout features (standardized) and the user's labels.
    loss, kernel, regularizer : component instances (bandwidth resolved).
    lam : λ of the kopt convention, λ/2‖f‖² + (1/n) Σ ℓ.
    """

    spec: object
    X: object
    y: object
    loss: object
    kernel: object
    regularizer: object
    form: str
    backend: Backend
    preprocessor: object
    seed: int
    features: dict
    X_test: object = None
    y_test_raw: object = None
    n_classes: int = 1
    info: dict = field(default_factory=dict)

    @property
    def xp(self):
        return self.backend.xp

    @property
    def n(self):
        return self.X.shape[0]

    @property
    def d(self):
        return self.X.shape[1]

    @property
    def lam(self):
        return self.regularizer.lam

    @property
    def n_outputs(self):
        return self.loss.n_outputs(self.n_classes)

    @property
    def dtype(self):
        return np.dtype(self.features["dtype"])

    def feature_map(self, count=None, *, block_size=None, seed=None) -> FeatureMap:
        """The spec's random-feature map (``count`` defaults to ``model.features.count``)."""
        f = self.features
        return FeatureMap(
            self.kernel,
            self.d,
            seed=f["seed"] if seed is None else seed,
            block_size=block_size or f["block_size"],
            count=f["count"] if count is None else count,
            dtype=f["dtype"],
            xp=self.xp,
            cache_blocks=f.get("cache_blocks", 0),
        )

    def rng(self, stream: str, *counters) -> np.random.Generator:
        """A host generator keyed by (spec seed, stream name, counters): resumable and order-free."""
        key = _STREAMS.setdefault(stream, int.from_bytes(stream.encode()[:8].ljust(8, b"\0"), "little"))
        return np.random.default_rng([self.seed, key, *map(int, counters)])

    def holdout_metrics(self, scores) -> dict:
        """Metrics of decision values on ``X_test`` (empty without a labelled holdout)."""
        if self.y_test_raw is None:
            return {}
        from .backend import to_numpy

        return evaluate(self.preprocessor.target, self.y_test_raw, to_numpy(scores), self.preprocessor)
