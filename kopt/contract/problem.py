"""The assembled problem a solver receives: arrays, components, seeds, metrics."""
from __future__ import annotations

from dataclasses import dataclass, field
from types import ModuleType

import numpy as np

from ..numerics.backend import Backend, to_numpy
from ..numerics.features import FeatureMap
from ..numerics.metrics import evaluate


@dataclass(frozen=True)
class FeatureSpec:
    """The spec's ``model.features`` section: the random-feature map (or the Nyström centers) a solver builds.

    Parameters
    ----------
    count, block_size, dtype, seed, cache_blocks, kind
        The attributes below.

    Attributes
    ----------
    count : int
        The number of features M (or of Nyström centers).
    block_size : int
        Features per block: the map is drawn and evaluated a block at a time.
    dtype : str
        ``"float32"`` or ``"float64"``: the features' precision.
    seed : int
        The features' seed (independent of the spec's ``seed``).
    cache_blocks : int
        Blocks of feature parameters kept in memory (0: drawn again when needed).
    kind : str
        ``"random"`` (the kernel's sampler) or ``"nystrom"`` (centers drawn from the training rows).

    Examples
    --------
    >>> from kopt.contract.problem import FeatureSpec
    >>> FeatureSpec(count=1024, block_size=256, dtype="float32", seed=0).kind
    'random'
    """

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
    """Everything a solver needs: the arrays, the components, the seeds; it never reads files or YAML.

    The core assembles it from the spec and the data and hands it to ``Solver.run``.

    Parameters
    ----------
    spec, X, y, loss, kernel, regularizer, form, backend, preprocessor, seed, features
        The attributes below.
    X_test, y_test_raw, n_classes, sample_weight, info, partitions
        The attributes below (optional).

    Attributes
    ----------
    spec : Spec
        The resolved spec.
    X, y : array
        The training rows on the backend, standardized (a dense array, or a SciPy CSR matrix for sparse input), and
        their labels encoded for the loss: -1/+1 binary, class ids multiclass, 0/1 two-sample, reals.
    X_test, y_test_raw : array or None
        The test rows (standardized, of the same kind as ``X``) and the user's labels of them (None without a
        labelled test split).
    loss, kernel, regularizer : Component
        The component instances (the kernel's bandwidth resolved).
    form : str
        ``"primal"``, ``"dual"`` or ``"gp"``.
    backend : Backend
        The array backend; ``xp`` is its array module.
    preprocessor : Preprocessor
        The standardization and label coding.
    seed : int
        The spec's seed; draw randomness from :meth:`rng`.
    features : FeatureSpec
        The spec's ``model.features``; build the map with :meth:`feature_map`.
    n_classes : int
        Classes of a classification target (1 otherwise).
    sample_weight : array or None
        Per-row weights of the training rows (float64, normalized to mean 1); only solvers declaring
        ``Solver.sample_weight`` get them.
    info : dict
        Facts the assembly records for the report.
    partitions : Partitions or None
        On a Dask cluster, the training and test rows the workers hold; ``X``, ``y`` and ``X_test`` are then None.
    xp : module
        The backend's array module (``numpy`` or ``cupy``).
    n, d : int
        The number of training rows and of columns.
    lam : float
        λ of kopt's convention, λ/2‖f‖² + (1/n) Σ ℓ.
    n_outputs : int
        Scores per row.
    dtype : numpy.dtype
        The features' precision.

    Examples
    --------
    >>> import numpy as np
    >>> import kopt
    >>> from kopt.running.assemble import assemble
    >>> X = np.random.default_rng(0).normal(size=(30, 2))
    >>> spec = kopt.load_spec({"model": {"loss": {"name": "square"}, "kernel": {"name": "gaussian", "bandwidth": 1.0},
    ...                                  "regularizer": {"name": "l2", "lambda": 1e-3},
    ...                                  "features": {"count": 64, "block_size": 32}},
    ...                        "solver": {"name": "dsg"}})
    >>> problem = assemble(spec, (X, X[:, 0]))
    >>> problem.n, problem.d, problem.lam, problem.form
    (30, 2, 0.001, 'primal')
    >>> problem.feature_map().count
    64
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
    def xp(self) -> ModuleType:
        """The backend's array module (NumPy or CuPy).

        Examples
        --------
        >>> import numpy as np
        >>> import kopt
        >>> from kopt.api import assemble
        >>> X = np.random.default_rng(0).normal(size=(100, 3))
        >>> y = np.where(X[:, 0] > 0, "yes", "no")
        >>> spec = kopt.load_spec({"model": {"loss": {"name": "logistic"}, "kernel": {"name": "gaussian"},
        ...                                  "regularizer": {"name": "l2", "lambda": 1e-3}}, "backend": "numpy"})
        >>> problem = assemble(spec, (X[:80], y[:80], X[80:], y[80:]))
        >>> problem.xp is np
        True
        """
        return self.backend.xp

    @property
    def n(self) -> int:
        """The number of training rows."""
        return self.partitions.n if self.X is None and self.partitions is not None else self.X.shape[0]

    @property
    def d(self) -> int:
        """The number of columns."""
        return self.partitions.d if self.X is None and self.partitions is not None else self.X.shape[1]

    @property
    def lam(self) -> float:
        """λ of kopt's convention."""
        return self.regularizer.lam

    @property
    def n_outputs(self) -> int:
        """Scores per row (1, or C for a multiclass loss)."""
        return self.loss.n_outputs(self.n_classes)

    @property
    def dtype(self) -> np.dtype:
        """The features' precision."""
        return np.dtype(self.features.dtype)

    def label_matrix(self) -> np.ndarray:
        """The labels as an ``(n, C)`` float64 matrix: one column, or ±1 one-vs-rest columns where a binary loss is
        trained on multiclass ids (solvers with ``one_vs_rest``).

        Returns
        -------
        array of shape (n, C)
            The targets a solver fits, on the backend.

        Examples
        --------
        >>> import numpy as np
        >>> import kopt
        >>> from kopt.api import assemble
        >>> X = np.random.default_rng(0).normal(size=(100, 3))
        >>> y = np.where(X[:, 0] > 0, "yes", "no")
        >>> spec = kopt.load_spec({"model": {"loss": {"name": "logistic"}, "kernel": {"name": "gaussian"},
        ...                                  "regularizer": {"name": "l2", "lambda": 1e-3}}, "backend": "numpy"})
        >>> problem = assemble(spec, (X[:80], y[:80], X[80:], y[80:]))
        >>> Y = problem.label_matrix()
        >>> Y.shape, sorted(set(Y[:, 0].tolist()))
        ((80, 1), [-1.0, 1.0])
        """
        xp = self.xp
        if self.preprocessor.target == "multiclass" and self.loss.target == "binary":
            ids = self.y.astype(np.int64)
            return xp.where(ids[:, None] == xp.arange(self.n_classes)[None, :], 1.0, -1.0)
        return xp.asarray(self.y, dtype=np.float64)[:, None]

    def feature_map(self, count: int | bool | None = None, *, seed: int | None = None,
                    cache_blocks: int | str | None = None, threads: int | None = None) -> FeatureMap:
        """The spec's random-feature map: the one way solvers build one.

        Parameters
        ----------
        count : int, bool or None, optional
            M (default ``model.features.count``); False: no fixed count, every call names its blocks (as DSG's
            growing expansion does).
        seed : int, optional
            Another feature seed (the GP's second map); default ``model.features.seed``.
        cache_blocks : int or "all", optional
            Blocks of parameters kept (default ``model.features.cache_blocks``); ``"all"``: every block of the map,
            drawn now.
        threads : int, optional
            kopt's worker threads for the map's passes.

        Returns
        -------
        kopt.numerics.features.FeatureMap
            The map.

        Examples
        --------
        >>> import numpy as np
        >>> import kopt
        >>> from kopt.api import assemble
        >>> X = np.random.default_rng(0).normal(size=(100, 3))
        >>> y = np.where(X[:, 0] > 0, "yes", "no")
        >>> spec = kopt.load_spec({"model": {"loss": {"name": "logistic"}, "kernel": {"name": "gaussian"},
        ...                                  "regularizer": {"name": "l2", "lambda": 1e-3}}, "backend": "numpy"})
        >>> problem = assemble(spec, (X[:80], y[:80], X[80:], y[80:]))
        >>> fmap = problem.feature_map(512)
        >>> fmap.count
        512
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

    def rng(self, stream: str, *counters: int) -> np.random.Generator:
        """A host generator keyed by (the spec's seed, a stream name, counters): resumable and order-free.

        A solver draws iteration t's randomness from ``rng("batches", t)``: a resumed run draws the same.

        Parameters
        ----------
        stream : str
            The stream's name.
        *counters : int
            Further keys (the iteration, a block).

        Returns
        -------
        numpy.random.Generator
            The generator.

        Examples
        --------
        >>> import numpy as np
        >>> import kopt
        >>> from kopt.api import assemble
        >>> X = np.random.default_rng(0).normal(size=(100, 3))
        >>> y = np.where(X[:, 0] > 0, "yes", "no")
        >>> spec = kopt.load_spec({"model": {"loss": {"name": "logistic"}, "kernel": {"name": "gaussian"},
        ...                                  "regularizer": {"name": "l2", "lambda": 1e-3}}, "backend": "numpy"})
        >>> problem = assemble(spec, (X[:80], y[:80], X[80:], y[80:]))
        >>> a, b = problem.rng("batches", 3).integers(1000), problem.rng("batches", 3).integers(1000)
        >>> bool(a == b)
        True
        """
        key = _STREAMS.setdefault(stream, int.from_bytes(stream.encode()[:8].ljust(8, b"\0"), "little"))
        return np.random.default_rng([self.seed, key, *map(int, counters)])

    def holdout_metrics(self, scores: np.ndarray, rows: np.ndarray | None = None) -> dict:
        """The metrics of decision values on ``X_test``, or on its rows ``rows`` (empty without test labels).

        Parameters
        ----------
        scores : array of shape (m,) or (m, C)
            Decision values of the test rows (or of ``rows`` of them).
        rows : array of int, optional
            The test rows scored.

        Returns
        -------
        dict
            Metric name to value, by the labels' target (accuracy, AUC, RMSE, ...).

        Examples
        --------
        >>> import numpy as np
        >>> import kopt
        >>> from kopt.api import assemble
        >>> X = np.random.default_rng(0).normal(size=(100, 3))
        >>> y = np.where(X[:, 0] > 0, "yes", "no")
        >>> spec = kopt.load_spec({"model": {"loss": {"name": "logistic"}, "kernel": {"name": "gaussian"},
        ...                                  "regularizer": {"name": "l2", "lambda": 1e-3}}, "backend": "numpy"})
        >>> problem = assemble(spec, (X[:80], y[:80], X[80:], y[80:]))
        >>> scores = problem.X_test[:, 0]  # the labels follow the first column
        >>> problem.holdout_metrics(scores)["auc"]
        1.0
        """
        if self.y_test_raw is None:
            return {}
        y = np.asarray(self.y_test_raw) if rows is None else np.asarray(self.y_test_raw)[to_numpy(rows)]
        scores = to_numpy(scores)
        if scores.ndim == 2 and scores.shape[1] == 1:
            scores = scores[:, 0]
        return evaluate(self.preprocessor.target, y, scores, self.preprocessor)
