"""The ``gp`` solver: GP regression posterior by doubly stochastic gradients (papers/001 Sec. 4, App. D).

Iteration t draws B rows uniformly (``problem.rng("gp_batch", t)``) and block t−1 of two
independent feature maps: ω' (seed ``model.features.seed``) for the mean, the test-point
fits and the second argument of Â; ω (a seed derived from it) for the first argument of Â.
The mean and the test-point fits take one multi-output DSG step (:mod:`kopt_plugins.gp.fits`); the
operator Â gets its new column (:mod:`kopt_plugins.gp.operator`).  λ = σ²/n throughout.
"""
from __future__ import annotations

from statistics import NormalDist

import numpy as np

from kopt.backend import to_numpy
from kopt.components import Solver
from kopt.errors import DataError, KoptError
from kopt.features import FeatureMap
from kopt.threads import blas_threads
from kopt.result import SolverOutput

from .averaging import averaging_start
from .exact import exact_posterior, gp_lambda, rel_error
from .fits import DSGFits
from .operator import VarianceOperator
from .options import PARAMS, check, gamma, operator_bytes
from .predictor import GPPosterior

_OMEGA_TAG = 0x67705F77  # "gp_w": the ω map's seed is derived from the feature seed and this tag


def omega_seed(seed: int) -> int:
    """Seed of the ω map, independent of the ω' map's ``seed``."""
    return int(np.random.SeedSequence([int(seed), _OMEGA_TAG]).generate_state(1, dtype=np.uint32)[0])


class GPSolver(Solver):
    """Posterior mean (KRR with λ = σ²/n) and variance (operator Â or one fit per test point)."""

    name = "gp"
    summary = "GP regression posterior mean and variance by doubly stochastic gradients (papers/001 Sec. 4)"
    forms = ("gp",)
    targets = ("real",)
    kernel_mode = "features"
    params = PARAMS

    def check_spec(self, spec):
        yield from check(spec)

    def run(self, problem, run):
        # the steps are many small and medium GEMMs: OpenBLAS's threads cost more than they give there
        # (3-15x slower on the shared 2-core machine), so BLAS is held to one thread for the whole run
        with blas_threads(1):
            return _Run(self.options, problem, run).run()


class _Run:
    def __init__(self, options, problem, run):
        self.o, self.problem, self.run_ctx = options, problem, run
        if hasattr(problem.X, "tocsr"):
            raise DataError("solver 'gp' needs dense features; the training data is sparse (LIBSVM): convert it, "
                            "or use solver dsg for the mean alone")
        o, xp = options, problem.xp
        self.xp = xp
        self.n, self.T, self.B = problem.n, int(o.iterations), int(o.batch_size)
        self.sigma2 = float(o.noise_variance)
        self.lam = gp_lambda(self.sigma2, self.n)
        self.kind = o.variance
        f = problem.features
        self.F, self.seed = int(f.block_size), int(f.seed)
        self.X_test = problem.X_test
        if self.kind == "test_points" and self.X_test is None:
            raise DataError("variance: test_points needs the data's test split (data.test or data.test_fraction); "
                            "there is none. Add one, or use solver.variance: operator")
        m = 0 if self.X_test is None else int(self.X_test.shape[0])
        if o.evaluation == "auto":
            self.mode = "track" if (self.kind == "test_points" or 2 * self.n <= self.T * self.B) else "regenerate"
        else:
            self.mode = o.evaluation
        self._check_memory(m)
        self.avg_start = averaging_start(o.averaging, self.T)
        fmap = dict(kernel=problem.kernel, n_in=problem.d, block_size=self.F, dtype=f.dtype, xp=xp,
                    cache_blocks=f.cache_blocks)
        self.fp = FeatureMap(seed=self.seed, **fmap)
        self.fits = DSGFits(self.fp, problem.X, xp.asarray(problem.y, dtype=np.float64), self.lam, self.T, self.mode,
                            problem.kernel, xp, self.avg_start,
                            points=self.X_test if self.kind == "test_points" else None,
                            monitor=self.X_test)
        self.op = None
        if self.kind == "operator":
            self.fo = FeatureMap(seed=omega_seed(self.seed), **fmap)
            self.op = VarianceOperator(self.fp, self.fo, self.T, self.B, self.lam, xp, problem.d, self.avg_start)
        self.exact = None
        if o.compare_exact:
            self.exact = self._exact()

    # -- sizing ---------------------------------------------------------------
    def _check_memory(self, m):
        o, n, T, F = self.o, self.n, self.T, self.F
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
        if need > o.max_memory_mb * 2**20:
            raise KoptError(
                f"solver 'gp' would need {need / 2**20:,.0f} MiB ({', '.join(parts)}) for n = {n}, m = {m} test "
                f"points, T = {T} iterations, B = {self.B}, F = {F}; solver.max_memory_mb is {o.max_memory_mb:g}. "
                "Lower solver.iterations, solver.batch_size or the test split, set solver.evaluation "
                "(track: O(n·m), regenerate: O(T·F·m)), or raise solver.max_memory_mb"
            )
        self.memory_mb = need / 2**20

    def _exact(self):
        p = self.problem
        if self.X_test is None:
            raise DataError("compare_exact needs the data's test split (data.test or data.test_fraction)")
        if self.n > self.o.exact_max_rows:
            raise DataError(f"compare_exact forms the {self.n} x {self.n} kernel matrix; n = {self.n} exceeds "
                            f"solver.exact_max_rows = {self.o.exact_max_rows}. Subsample (data.max_rows) or raise it")
        mean, var = exact_posterior(p.kernel, p.X, p.y, self.X_test, self.sigma2,
                                    variance=self.kind != "none")
        return mean, var

    # -- the loop -------------------------------------------------------------
    def run(self):
        p, run, xp, o = self.problem, self.run_ctx, self.xp, self.o
        t0 = run.start_iteration
        if run.resume_state is not None:
            self.fits.restore(run.resume_state, t0)
            if self.op is not None:
                self.op.restore(run.resume_state, t0)
        t = t0
        final = {}
        every = int(o.eval_every)
        for t in range(t0 + 1, self.T + 1):
            rows = xp.asarray(p.rng("gp_batch", t).integers(0, self.n, size=self.B))
            Xb = p.X[rows]
            Pb = self.fp.block(Xb, t - 1)
            g = gamma(o, t)
            R = self.fits.step(t, Xb, rows, g, Pb)
            if self.op is not None:
                self.op.step(t, Xb, g, Pb)
            extra = {"batch_mse": float((R[:, 0] ** 2).mean())}
            if not np.isfinite(extra["batch_mse"]) or not np.isfinite(float(xp.abs(R).max())):
                raise KoptError(f"solver 'gp' diverged at iteration {t} (non-finite residuals, step γ_t = {g:g}); "
                                "lower solver.step_size")
            metrics = self.evaluate() if (t == self.T or (every and t % every == 0)) else {}
            final = metrics or final
            if not run.report(t, rows=self.B, metrics=metrics, state=self.state, **extra):
                break
        n_iter = self.fits.t
        if not final and n_iter:
            final = self.evaluate()
        return SolverOutput(self.predictor(), n_iter=n_iter, success=True,
                            message=f"{n_iter} iterations (gp, variance: {self.kind}, evaluation: {self.mode})",
                            info=self.info(final))

    def state(self):
        st = dict(self.fits.state())
        if self.op is not None:
            st.update(self.op.state())
        return st

    # -- evaluation -----------------------------------------------------------
    def test_mean(self):
        if self.fits.Vmon is not None:
            return self.fits.mean_at_monitor()
        if self.fits.t == 0:
            return self.xp.zeros(self.X_test.shape[0])
        return self.fp.predict(self.X_test, self.fits.mean_coef(), blocks=range(self.fits.t))

    def test_variance(self):
        xp = self.xp
        prior = xp.asarray(self.problem.kernel.diag(self.X_test), dtype=np.float64)
        if self.kind == "test_points":
            return prior - self.fits.point_values()
        if self.kind == "operator":
            return prior - self.op.diag(self.X_test)
        return None

    def evaluate(self):
        """Test-split metrics: RMSE (target units), interval coverage, errors against the exact posterior."""
        if self.X_test is None:
            return {}
        p, xp = self.problem, self.xp
        mean = self.test_mean()
        metrics = dict(p.holdout_metrics(mean))
        var = self.test_variance()
        if var is not None and p.y_test_raw is not None:
            spread = xp.maximum(var, 0.0) + (self.sigma2 if self.o.interval == "observation" else 0.0)
            z = NormalDist().inv_cdf(0.5 + 0.5 * self.o.interval_level)
            pre = p.preprocessor
            center = pre.decode(to_numpy(mean))
            half = z * np.sqrt(to_numpy(spread)) * pre.y_scale
            metrics["coverage"] = float(np.mean(np.abs(np.asarray(p.y_test_raw, dtype=np.float64) - center) <= half))
        if self.exact is not None:
            metrics["mean_rel_err"] = rel_error(mean, self.exact[0])
            if var is not None:
                metrics["var_rel_err"] = rel_error(var, self.exact[1])
        return metrics

    # -- the model ------------------------------------------------------------
    def predictor(self):
        t, f = self.fits.t, self.problem.features
        arrays = {"coef": to_numpy(self.fits.mean_coef()), "blocks": np.arange(t, dtype=np.int64)}
        meta = {"seed": self.seed, "block_size": self.F, "dtype": f.dtype, "variance": self.kind,
                "noise_variance": self.sigma2, "interval": self.o.interval,
                "interval_level": self.o.interval_level, "unknown_points": self.o.unknown_points,
                "lambda": self.lam, "n_train": self.n, "averaging": self.o.averaging}
        if self.kind == "operator":
            st = self.op.state()
            arrays["op_beta"], arrays["op_rows"] = to_numpy(st["op_beta"]), to_numpy(st["op_rows"])
            arrays["op_weights"] = np.asarray(self.op.weights(), dtype=np.float64)
            meta["omega_seed"] = omega_seed(self.seed)
        elif self.kind == "test_points":
            arrays["points"] = to_numpy(self.X_test)
            arrays["point_variance"] = to_numpy(self.test_variance())
        return GPPosterior(arrays, meta)

    def info(self, final):
        out = {"lambda": self.lam, "noise_variance": self.sigma2, "variance": self.kind, "evaluation": self.mode,
               "memory_mb": round(self.memory_mb, 3)}
        out.update({f"test_{k}": v for k, v in final.items()})
        return out
