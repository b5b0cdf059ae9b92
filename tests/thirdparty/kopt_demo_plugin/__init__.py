"""A third-party kopt plugin, as an outside author would write it (used by the tests).

It registers a loss (``demo_logcosh``), a solver (``demo_gd``: mini-batch
gradient descent on a fixed random-feature map) and the predictor its models are
made of (``demo_expansion``) through the public hooks only.  It is installed in a
temporary directory with its own entry-point metadata.
"""
from __future__ import annotations

import math
import time

import numpy as np

from kopt.contract.components import Loss, Solver
from kopt.contract.hookspecs import hookimpl
from kopt.contract.result import SolverOutput
from kopt.models.predictors import FeatureExpansion
from kopt.numerics.backend import get_namespace


class LogCosh(Loss):
    """ℓ(y, u) = log cosh(u − y): smooth, robust regression."""

    name = "demo_logcosh"
    summary = "log-cosh regression (demo plugin)"
    target = "real"
    smooth = True
    params = {"scale": {"type": "number", "exclusiveMinimum": 0, "default": 1.0}}

    def value(self, u, y):
        xp = get_namespace(u)
        y = xp.asarray(y, dtype=u.dtype)
        r = (u - y) / self.options.scale
        return xp.logaddexp(r, -r) - math.log(2.0)  # a Python float keeps the dtype (NEP 50)

    def grad(self, u, y):
        xp = get_namespace(u)
        s = self.options.scale
        y = xp.asarray(y, dtype=u.dtype)
        return xp.tanh((u - y) / s) / s

    def curvature(self, u, y):
        xp = get_namespace(u)
        s = self.options.scale
        y = xp.asarray(y, dtype=u.dtype)
        return (1.0 - xp.tanh((u - y) / s) ** 2) / s**2


class DemoExpansion(FeatureExpansion):
    """demo_gd's model: a random-feature expansion stored under the plugin's own predictor name."""

    name = "demo_expansion"
    summary = "random-feature expansion of demo_gd (demo plugin)"


class DemoGD(Solver):
    """Mini-batch gradient descent on θ for f(x) = ψ(x)ᵀθ / √M."""

    name = "demo_gd"
    summary = "mini-batch gradient descent on random features (demo plugin)"
    forms = ("primal",)
    targets = ("real", "binary")
    needs_smooth_loss = True
    kernel_mode = "features"
    params = {
        "iterations": {"type": "integer", "minimum": 1, "default": 50},
        "step": {"type": "number", "exclusiveMinimum": 0, "default": 0.5},
        "batch_size": {"type": "integer", "minimum": 1, "default": 256},
        "sleep": {"type": "number", "minimum": 0, "default": 0.0},
    }

    def check_spec(self, spec):
        if self.options.batch_size > 100000:
            yield ("solver", "batch_size"), "demo_gd takes batches of at most 100000 rows"

    def run(self, problem, run):
        xp = problem.xp
        fmap = problem.feature_map()
        nb, F = fmap.n_blocks, fmap.block_size
        scale = 1.0 / np.sqrt(nb * F)
        theta = xp.zeros((nb, F))
        if run.resume_state is not None:
            theta = xp.asarray(run.resume_state["theta"])
        n, B = problem.n, min(self.options.batch_size, problem.n)
        T = self.options.iterations
        t = run.start_iteration
        objective = None
        for t in range(run.start_iteration + 1, T + 1):
            idx = xp.asarray(problem.rng("batch", t).choice(n, size=B, replace=False))
            Xb, yb = problem.X[idx], problem.y[idx]
            u = scale * fmap.predict(Xb, theta)
            g = scale * fmap.adjoint(Xb, problem.loss.grad(u, yb)) / B + problem.lam * theta
            theta = theta - self.options.step * g
            objective = float(problem.loss.value(u, yb).mean() + 0.5 * problem.lam * float((theta**2).sum()))
            if self.options.sleep:
                time.sleep(self.options.sleep)
            snapshot = theta.copy()
            if not run.report(t, objective=objective, rows=B, state=lambda s=snapshot: {"theta": s}):
                break
        pred = DemoExpansion(
            {"coef": problem.backend.to_numpy(theta) * scale, "blocks": np.arange(nb)},
            {"scale": 1.0, "seed": fmap.seed, "block_size": F, "dtype": str(fmap.dtype)},
        )
        return SolverOutput(pred, n_iter=t, objective=objective, info={"n_blocks": int(nb)})


@hookimpl
def kopt_register_losses(register):
    register(LogCosh)


@hookimpl
def kopt_register_solvers(register):
    register(DemoGD)


@hookimpl
def kopt_register_predictors(register):
    register(DemoExpansion)
