"""Everything one ``gp`` run holds: the fits, the operator, their sizing, the test evaluation, the model.

The solver (:mod:`kopt_plugins.gp.solver`) builds one :class:`GPState` per run and the skeleton
(:mod:`kopt.contract.iterative`) passes it back to every call; no run state lives on the solver.
"""
from __future__ import annotations

from statistics import NormalDist

import numpy as np

from kopt.errors import DataError, KoptError
from kopt.numerics import rows as _rows
from kopt.numerics.backend import to_numpy

from .averaging import averaging_start
from .exact import exact_posterior, gp_lambda, rel_error
from .fits import DSGFits
from .operator import VarianceOperator
from .options import operator_bytes
from .predictor import GPPosterior

_OMEGA_TAG = 0x67705F77  # "gp_w": the ω map's seed is derived from the feature seed and this tag


def omega_seed(seed: int) -> int:
    """Seed of the ω map, independent of the ω' map's ``seed``."""
    return int(np.random.SeedSequence([int(seed), _OMEGA_TAG]).generate_state(1, dtype=np.uint32)[0])


class GPState:
    """The state of one run: built from the solver's options and the problem, checked before any step.

    Parameters
    ----------
    options : the ``gp`` solver's typed options.
    problem : kopt.contract.problem.Problem
    threads : int
        Worker threads of the two feature maps.

    Raises
    ------
    DataError
        Sparse training data; ``variance: test_points`` or ``compare_exact`` without a test split;
        ``compare_exact`` above ``exact_max_rows``.
    KoptError
        The fits and the operator would need more than ``max_memory_mb``.
    """

    def __init__(self, options, problem, threads):
        if _rows.is_sparse(problem.X):
            raise DataError("solver 'gp' needs dense features; the training data is sparse (LIBSVM): convert it, "
                            "or use solver dsg for the mean alone")
        o = self.o = options
        self.problem, self.xp = problem, problem.xp
        self.n, self.T, self.B = problem.n, int(o.iterations), int(o.batch_size)
        self.sigma2 = float(o.noise_variance)
        self.lam = gp_lambda(self.sigma2, self.n)
        self.kind = o.variance
        self.F, self.seed = int(problem.features.block_size), int(problem.features.seed)
        self.X_test = problem.X_test
        if self.kind == "test_points" and self.X_test is None:
            raise DataError("variance: test_points needs the data's test split (data.test or data.test_fraction); "
                            "there is none. Add one, or use solver.variance: operator")
        m = 0 if self.X_test is None else int(self.X_test.shape[0])
        if o.evaluation == "auto":
            self.mode = "track" if (self.kind == "test_points" or 2 * self.n <= self.T * self.B) else "regenerate"
        else:
            self.mode = o.evaluation
        self.memory_mb = self._check_memory(m)
        avg_start = averaging_start(o.averaging, self.T)
        # the two maps differ only in their seed: ω' (the spec's) and ω (derived from it)
        self.fp = problem.feature_map(count=False, threads=threads)
        xp = self.xp
        self.fits = DSGFits(self.fp, problem.X, xp.asarray(problem.y, dtype=np.float64), self.lam, self.T, self.mode,
                            problem.kernel, xp, avg_start,
                            points=self.X_test if self.kind == "test_points" else None,
                            monitor=self.X_test)
        self.op = None
        if self.kind == "operator":
            fo = problem.feature_map(count=False, seed=omega_seed(self.seed), threads=threads)
            self.op = VarianceOperator(self.fp, fo, self.T, self.B, self.lam, xp, problem.d, avg_start)
        self.exact = self._exact() if o.compare_exact else None
        self.last = {}  # the latest test evaluation (RMSE and the rest, coverage, errors): the result's test_*
        self._mean = (None, None)  # (t, the test-split mean at iteration t)

    # -- sizing ---------------------------------------------------------------
    def _check_memory(self, m):
        """MiB of the fits (and operator); a KoptError naming the options to change above ``max_memory_mb``."""
        n, T, F = self.n, self.T, self.F
        C = 1 + (m if self.kind == "test_points" else 0)
        if self.mode == "track":
            need = 8 * (n * C + m + T * F)
        else:
            need = 8 * T * F * C
        parts = [f"fits ({self.mode}) {need / 2**20:,.0f} MiB"]
        if self.kind == "operator":
            b = operator_bytes(T, self.B, F)
            parts.append(f"variance operator {b / 2**20:,.0f} MiB")
            need += b
        if need > self.o.max_memory_mb * 2**20:
            raise KoptError(
                f"solver 'gp' would need {need / 2**20:,.0f} MiB ({', '.join(parts)}) for n = {n}, m = {m} test "
                f"points, T = {T} iterations, B = {self.B}, F = {F}; solver.max_memory_mb is {self.o.max_memory_mb:g}. "
                "Lower solver.iterations, solver.batch_size or the test split, set solver.evaluation "
                "(track: O(n·m), regenerate: O(T·F·m)), or raise solver.max_memory_mb"
            )
        return need / 2**20

    def _exact(self):
        p = self.problem
        if self.X_test is None:
            raise DataError("compare_exact needs the data's test split (data.test or data.test_fraction)")
        if self.n > self.o.exact_max_rows:
            raise DataError(f"compare_exact forms the {self.n} x {self.n} kernel matrix; n = {self.n} exceeds "
                            f"solver.exact_max_rows = {self.o.exact_max_rows}. Subsample (data.max_rows) or raise it")
        return exact_posterior(p.kernel, p.X, p.y, self.X_test, self.sigma2, variance=self.kind != "none")

    # -- checkpoints ----------------------------------------------------------
    def save(self) -> dict:
        st = {"t": self.fits.t, **self.fits.state()}
        if self.op is not None:
            st.update(self.op.state())
        return st

    def restore(self, saved: dict):
        t = int(saved["t"])
        self.fits.restore(saved, t)
        if self.op is not None:
            self.op.restore(saved, t)

    # -- evaluation -----------------------------------------------------------
    def mean_at(self, X):
        """The (averaged) posterior mean at standardized rows ``X``."""
        if self.fits.t == 0:
            return self.xp.zeros(X.shape[0])
        return self.fp.predict(X, self.fits.mean_coef(), blocks=range(self.fits.t))

    def test_mean(self):
        """The (averaged) mean on the test split: tracked in track mode, else evaluated (once per iteration)."""
        t, mean = self._mean
        if t != self.fits.t:
            mean = self.fits.mean_at_monitor()
            if mean is None:
                mean = self.mean_at(self.X_test)
            self._mean = (self.fits.t, mean)
        return mean

    def test_variance(self):
        xp = self.xp
        prior = xp.asarray(self.problem.kernel.diag(self.X_test), dtype=np.float64)
        if self.kind == "test_points":
            return prior - self.fits.point_values()
        if self.kind == "operator":
            return prior - self.op.diag(self.X_test)
        return None

    def evaluate(self) -> dict:
        """The test metrics the holdout cannot compute from scores: interval coverage, errors vs the closed form.

        Also records, in :attr:`last`, those with the holdout metrics of the mean on every test row
        (the result's ``test_*`` facts).
        """
        if self.X_test is None:
            return {}
        p, xp = self.problem, self.xp
        mean = self.test_mean()
        extra = {}
        var = self.test_variance()
        if var is not None and p.y_test_raw is not None:
            spread = xp.maximum(var, 0.0) + (self.sigma2 if self.o.interval == "observation" else 0.0)
            z = NormalDist().inv_cdf(0.5 + 0.5 * self.o.interval_level)
            pre = p.preprocessor
            center = pre.decode(to_numpy(mean))
            half = z * np.sqrt(to_numpy(spread)) * pre.y_scale
            extra["coverage"] = float(np.mean(np.abs(np.asarray(p.y_test_raw, dtype=np.float64) - center) <= half))
        if self.exact is not None:
            extra["mean_rel_err"] = rel_error(mean, self.exact[0])
            if var is not None:
                extra["var_rel_err"] = rel_error(var, self.exact[1])
        self.last = {**p.holdout_metrics(mean), **extra}
        return extra

    # -- the model ------------------------------------------------------------
    def predictor(self):
        t, f, o = self.fits.t, self.problem.features, self.o
        arrays = {"coef": to_numpy(self.fits.mean_coef()), "blocks": np.arange(t, dtype=np.int64)}
        meta = {"seed": self.seed, "block_size": self.F, "dtype": f.dtype, "variance": self.kind,
                "noise_variance": self.sigma2, "interval": o.interval,
                "interval_level": o.interval_level, "unknown_points": o.unknown_points,
                "lambda": self.lam, "n_train": self.n, "averaging": o.averaging}
        if self.kind == "operator":
            st = self.op.state()
            arrays["op_beta"], arrays["op_rows"] = to_numpy(st["op_beta"]), to_numpy(st["op_rows"])
            arrays["op_weights"] = np.asarray(self.op.weights(), dtype=np.float64)
            meta["omega_seed"] = omega_seed(self.seed)
        elif self.kind == "test_points":
            arrays["points"] = to_numpy(self.X_test)
            arrays["point_variance"] = to_numpy(self.test_variance())
        return GPPosterior(arrays, meta)

    def info(self) -> dict:
        out = {"lambda": self.lam, "noise_variance": self.sigma2, "variance": self.kind, "evaluation": self.mode,
               "memory_mb": round(self.memory_mb, 3)}
        out.update({f"test_{k}": v for k, v in self.last.items()})
        return out
