"""The assembled problem a solver receives: arrays, components, seeds, metrics."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..numerics.backend import Backend, to_numpy
from ..numerics.features import FeatureMap
from ..numerics.metrics import evaluate


@dataclass(frozen=True)
class FeatureSpec:
    """The spec's ``model.features`` section: the random-feature map solvers build."""

    count: int
    block_size: int
    dtype: str
    seed: int
    cache_blocks: int = 0
    kind: str = "random"
    #: how Nyström centers are drawn: ``uniform`` or ``rpcholesky`` (:func:`kopt.nystrom.choose_centers`)
    centers: str = "uniform"

_STREAMS = {}


@dataclass
class Problem:
    """Everything a solver needs; it never reads files or YAML.

    Attributes
    ----------
    X, y : training data on the backend (standardized; labels encoded for the
        loss: {-1,+1} binary, class ids multiclass, {0,1} two-sample, reals).
        ``X`` is a dense backend array, or a scipy CSR matrix for sparse input.
    X_test, y_test_raw : holdout features (standardized, same kind as ``X``) and the
        user's labels of them (None without a labelled test split).
    loss, kernel, regularizer : component instances (the kernel's bandwidth resolved).
    form : "primal", "dual" or "gp".
    backend : :class:`kopt.numerics.backend.Backend` (``xp`` is its array module).
    preprocessor : :class:`kopt.data.Preprocessor` (standardisation, label coding).
    seed : the spec's seed; draw randomness from :meth:`rng`.
    features : :class:`FeatureSpec`; build the map with :meth:`feature_map`.
    n_classes : classes of a classification target (1 otherwise).
    sample_weight : per-row weights of the training rows on the backend (float64, normalised to mean 1),
        or None.  Only solvers declaring ``Solver.sample_weight`` get them; the objective is then
        λ/2‖f‖² + (1/n) Σ w_i ℓ(y_i, f(x_i)).
    lam : λ of the kopt convention, λ/2‖f‖² + (1/n) Σ ℓ.
    partitions : on a Dask cluster (``execution.engine: dask``), the training and test rows held by the
        workers (:class:`kopt.distributed.partitions.Partitions`); ``X``, ``y`` and ``X_test`` are then
        None and only solvers declaring ``Solver.distributed`` get the problem.
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
    features: FeatureSpec
    X_test: object = None
    y_test_raw: object = None
    n_classes: int = 1
    sample_weight: object = None
    info: dict = field(default_factory=dict)
    partitions: object = None

    @property
    def xp(self):
        return self.backend.xp

    @property
    def n(self):
        return self.partitions.n if self.X is None and self.partitions is not None else self.X.shape[0]

    @property
    def d(self):
        return self.partitions.d if self.X is None and self.partitions is not None else self.X.shape[1]

    @property
    def lam(self):
        return self.regularizer.lam

    @property
    def n_outputs(self):
        return self.loss.n_outputs(self.n_classes)

    @property
    def dtype(self):
        return np.dtype(self.features.dtype)

    def label_matrix(self):
        """The labels as an ``(n, C)`` float64 matrix: one column, or ±1 one-vs-rest columns when a
        binary loss is trained on multiclass ids (solvers with ``one_vs_rest``)."""
        xp = self.xp
        if self.preprocessor.target == "multiclass" and self.loss.target == "binary":
            ids = self.y.astype(np.int64)
            return xp.where(ids[:, None] == xp.arange(self.n_classes)[None, :], 1.0, -1.0)
        return xp.asarray(self.y, dtype=np.float64)[:, None]

    def feature_map(self, count=None, *, seed=None, cache_blocks=None, threads=None) -> FeatureMap:
        """The spec's random-feature map: the one way solvers build one.

        ``count``: M (default ``model.features.count``; ``False``: no fixed count -- every
        call names its blocks, as DSG's growing expansion does); ``seed``: another feature
        seed (GP's second map); ``cache_blocks``: blocks of parameters kept (default
        ``model.features.cache_blocks``; ``"all"``: every block of the map).
        """
        f = self.features
        count = f.count if count is None else (None if count is False else count)
        fmap = FeatureMap(self.kernel, self.d, seed=f.seed if seed is None else seed, block_size=f.block_size,
                          count=count, dtype=f.dtype, xp=self.xp, threads=threads,
                          cache_blocks=f.cache_blocks if cache_blocks in (None, "all") else cache_blocks)
        if cache_blocks == "all":
            fmap.cache_blocks = fmap.n_blocks
            for j in range(fmap.n_blocks):
                fmap.block_params(j)
        return fmap

    def rng(self, stream: str, *counters) -> np.random.Generator:
        """A host generator keyed by (spec seed, stream name, counters): resumable and order-free."""
        key = _STREAMS.setdefault(stream, int.from_bytes(stream.encode()[:8].ljust(8, b"\0"), "little"))
        return np.random.default_rng([self.seed, key, *map(int, counters)])

    def holdout_metrics(self, scores, rows=None) -> dict:
        """Metrics of decision values on ``X_test`` -- or on its rows ``rows`` -- (empty without labels)."""
        if self.y_test_raw is None:
            return {}
        y = np.asarray(self.y_test_raw) if rows is None else np.asarray(self.y_test_raw)[to_numpy(rows)]
        scores = to_numpy(scores)
        if scores.ndim == 2 and scores.shape[1] == 1:
            scores = scores[:, 0]
        return evaluate(self.preprocessor.target, y, scores, self.preprocessor)
