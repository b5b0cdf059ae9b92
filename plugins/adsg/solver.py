"""The solvers ``adsg``, ``mrbcd`` and ``svrg``: one outer loop, three inner loops.

Problem (papers/003 eq. 1): min_x (1/n) Σ ℓ(y_i, a_iᵀx) + P(x) with a smooth
loss and the spec's block-separable regularizer P (l2 with ``lambda`` = μ:
kopt's λ/2‖f‖² + mean ℓ).  Each epoch takes a full-gradient snapshot (one
pass), then m inner steps (about one more pass in evaluated partial
gradients); the objective F(x̃) at the new snapshot is reported once per epoch.
"""
from __future__ import annotations

import math

import numpy as np

from kopt.backend import to_numpy
from kopt.components import Solver
from kopt.errors import DataError
from kopt.plugins import registry
from kopt.result import SolverOutput

from . import coords, epochs, schedule

_NULLABLE_INT = {"type": ["integer", "null"], "minimum": 1, "default": None}

COMMON = {
    "iterations": {"type": "integer", "minimum": 1, "default": 100,
                   "description": "epochs (outer loops); each costs about two passes over the data"},
    "batch_size": {"type": "integer", "minimum": 1, "default": 16, "description": "mini-batch size b"},
    "inner_steps": {**_NULLABLE_INT, "description": "inner steps m per epoch (default B·n/b: one pass of partial gradients)"},
    "tol": {"type": "number", "minimum": 0, "default": 1e-6,
            "description": "stop when ‖G(x̃)‖/‖G(x₀)‖ <= tol, G the proximal gradient mapping (0: run all epochs)"},
    "feature_memory_mb": {"type": "number", "exclusiveMinimum": 0, "default": 512,
                          "description": "random features: materialise the n × M matrix when it takes at most this many MiB, "
                                         "else regenerate each mini-batch's features from the seed"},
}
BLOCKS = {"blocks": {**_NULLABLE_INT, "description": "coordinate blocks B (input features: default min(D, 8); "
                                                    "random features: the feature blocks, count/block_size)"}}
STEP = {"step_size": {"type": ["number", "null"], "exclusiveMinimum": 0, "default": None,
                      "description": "step η (default 1/(L/b + L_B))"}}


def _component(spec, kind, path):
    section = dict(spec["model"][path])
    return registry().get(kind, section.pop("name"))(**section)


class _VarianceReduced(Solver):
    """Shared spec checks and outer loop; subclasses define the inner loop."""

    forms = ("primal",)
    targets = ("real", "binary")
    needs_smooth_loss = True
    kernel_mode = "either"
    single_block = False

    def check_spec(self, spec):
        m = spec["model"]
        loss = _component(spec, "loss", "loss")
        if loss.smoothness() is None:
            yield ("model", "loss", "name"), (f"solver {self.name!r} needs the loss's curvature bound "
                                              f"(Loss.smoothness()); {loss.name!r} does not give one")
        kname = m["kernel"]["name"]
        if not coords.uses_input_features(kname):
            if not registry().get("kernel", kname).has_features:
                yield ("model", "kernel", "name"), (f"solver {self.name!r} uses the input features (kernel "
                                                    f"'linear') or random features; kernel {kname!r} has no sampler")
            feats = m["features"]
            nb = math.ceil(feats["count"] / feats["block_size"])
            blocks = getattr(self.options, "blocks", None)
            if blocks is not None and blocks != nb:
                yield ("solver", "blocks"), (f"with random features the coordinate blocks are the feature blocks "
                                             f"(count / block_size = {nb}); leave blocks unset and choose "
                                             "model.features.block_size instead")
        else:
            d = spec.get("data", "n_features")
            blocks = getattr(self.options, "blocks", None)
            if blocks is not None and d is not None and blocks > d:
                yield ("solver", "blocks"), f"{blocks} blocks is more than the {d} input features (data.n_features)"

    # -- subclass hooks -----------------------------------------------------
    def prepare(self, problem, design, L, L_B):
        """Per-run constants (returned dict goes into ``info``)."""
        return {}

    def inner(self, s, design, loss, y, reg, it, snap, draws, problem):
        raise NotImplementedError

    # -- the outer loop -----------------------------------------------------
    def _setup(self, problem):
        """Design, labels, B, m and the smoothness constants; fills ``self.L``, ``self.L_B``, ``self.m``, ``self.B``."""
        o = self.options
        design, fmap = coords.build_design(problem, blocks=getattr(o, "blocks", None), single_block=self.single_block,
                                           feature_memory_mb=o.feature_memory_mb)
        xp = design.xp
        y = xp.asarray(to_numpy(problem.y) if xp is np else problem.y, dtype=np.float64)
        n, B, b = design.n, len(design.edges) - 1, o.batch_size
        if b > n:
            raise DataError(f"solver.batch_size = {b} is larger than the {n} training rows")
        self.B, self.m = B, o.inner_steps or math.ceil(B * n / b)
        self.L, self.L_B = coords.smoothness_constants(design, problem.loss, problem.rng(self.name + "-power"))
        info = {"coordinates": design.kind, "dimension": design.dim, "blocks": B, "batch_size": b,
                "inner_steps": self.m, "L": self.L, "L_B": self.L_B,
                **self.prepare(problem, design, self.L, self.L_B)}
        return design, fmap, y, info

    def _epoch_draws(self, problem, s, design, counter):
        """The epoch's (I, l) draws; ``counter[0]`` accumulates the drawn block sizes (for ``passes``)."""
        sizes = np.diff(design.edges)
        gen = schedule.steps(lambda c: problem.rng(self.name, s, c), self.m, design.n, self.options.batch_size,
                             self.B)
        for I, l in gen:
            counter[0] += int(sizes[l])
            yield I, l

    def run(self, problem, run):
        o = self.options
        loss, reg = problem.loss, problem.regularizer
        design, fmap, y, info = self._setup(problem)
        xp, n, D, b, tol = design.xp, design.n, design.dim, o.batch_size, o.tol
        state = run.resume_state
        if state:
            it = epochs.Iterates(*(xp.asarray(state[k], dtype=np.float64) for k in ("x", "z", "x_tilde")))
            passes = float(state["passes"])
        else:
            it, passes = epochs.Iterates(xp.zeros(D), xp.zeros(D), xp.zeros(D)), 0.0
        snap = epochs.snapshot(design, loss, y, it.x_tilde)
        F = snap.loss_mean + reg.value(it.x_tilde)
        gmap = self._grad_map(xp, reg, snap, self.L)
        f0, g0 = (float(state["f0"]), float(state["g0"])) if state else (F, gmap)
        info["initial_objective"] = f0
        rel = gmap / g0 if g0 > 0 else 0.0
        t, success = run.start_iteration, rel <= tol
        message = "the starting point satisfies tol" if success else ""
        for s in range(run.start_iteration, run.start_iteration if success else o.iterations):
            drawn = [0]
            it = self.inner(s, design, loss, y, reg, it, snap, self._epoch_draws(problem, s, design, drawn), problem)
            snap = epochs.snapshot(design, loss, y, it.x_tilde)
            F = snap.loss_mean + reg.value(it.x_tilde)
            passes += 1.0 + b * drawn[0] / (n * D)
            t = s + 1
            if not math.isfinite(F):
                message = f"diverged: the objective is {F} after epoch {t}"
                break
            rel = self._grad_map(xp, reg, snap, self.L) / g0 if g0 > 0 else 0.0
            metrics = {}
            if problem.X_test is not None:
                metrics = problem.holdout_metrics(coords.test_scores(problem, fmap, it.x_tilde))
            keep = run.report(t, objective=F, rows=n + self.m * b, metrics=metrics, passes=passes, grad_map=rel,
                              state=lambda it=it, passes=passes: {
                                  "x": to_numpy(it.x), "z": to_numpy(it.z), "x_tilde": to_numpy(it.x_tilde),
                                  "passes": passes, "f0": f0, "g0": g0})
            if rel <= tol:
                success, message = True, f"converged: relative prox-gradient norm {rel:.3g} <= tol {tol:g}"
                break
            if not keep:
                message = f"interrupted after epoch {t}"
                break
        else:
            if not success:
                message = (f"stopped at the epoch cap ({o.iterations}) with relative prox-gradient norm "
                           f"{rel:.3g} > tol {tol:g}")
        info.update(passes=passes, grad_map=rel)
        return SolverOutput(coords.predictor(problem, design, fmap, it.x_tilde), n_iter=t, success=bool(success),
                            message=message, objective=F, info=info)

    @staticmethod
    def _grad_map(xp, reg, snap, L):
        """‖G(x̃)‖ with G = L (x̃ − prox_{P/L}(x̃ − ∇F(x̃)/L)), the composite optimality measure."""
        step = 1.0 / L
        G = (snap.x - reg.prox(snap.x - step * snap.g, step)) / step
        return float(xp.sqrt((G * G).sum()))


class ADSG(_VarianceReduced):
    """Accelerated doubly stochastic gradient (papers/003 Alg. 1–2)."""

    name = "adsg"
    summary = "accelerated doubly stochastic gradient (three momenta), block-separable regularized ERM"
    params = {
        **COMMON,
        **BLOCKS,
        "setting": {"enum": ["auto", *schedule.SETTINGS], "default": "auto",
                    "description": "parameters of papers/003 Thm. 1 (strongly_convex), 2 (general_convex) or "
                                   "3 (unregularized, P ≡ 0); auto picks by μ and P"},
        "strong_convexity": {"type": ["number", "null"], "minimum": 0, "default": None,
                             "description": "μ (default: the regularizer's strong convexity, λ for l2)"},
        "variant": {"enum": ["efficient", "reference"], "default": "efficient",
                    "description": "ADSG II (O(Ω + nnz(a_i)) per step) or ADSG I (O(D) per step, the reference)"},
        "snapshot": {"enum": ["random", "last"], "default": "random",
                     "description": "next snapshot: the iterate at σ with P(σ) ∝ θ^(σ−1) (Alg. 1), or the last one"},
    }

    def check_spec(self, spec):
        yield from super().check_spec(spec)
        reg = _component(spec, "regularizer", "regularizer")
        mu = self.options.strong_convexity
        mu = reg.strong_convexity() if mu is None else mu
        setting = self.options.setting
        if setting == "strongly_convex" and mu <= 0:
            yield ("solver", "setting"), (f"the strongly convex setting (Thm. 1) needs μ > 0; regularizer "
                                          f"{reg.name!r} has strong convexity 0: set solver.strong_convexity, "
                                          "use l2 or elastic_net, or setting general_convex")
        if setting == "unregularized" and reg.lam != 0:
            yield ("solver", "setting"), (f"setting unregularized (Thm. 3) assumes P ≡ 0, and regularizer "
                                          f"{reg.name!r} has lambda {reg.lam:g}; use general_convex or strongly_convex")
        if setting in ("general_convex", "unregularized") and self.options.strong_convexity:
            yield ("solver", "strong_convexity"), f"setting {setting} uses μ = 0; strong_convexity would be ignored"

    def prepare(self, problem, design, L, L_B):
        reg = problem.regularizer
        mu = self.options.strong_convexity
        self.mu = reg.strong_convexity() if mu is None else float(mu)
        self.setting = schedule.resolve_setting(self.options.setting, self.mu, reg.lam == 0)
        if self.setting != "strongly_convex":
            self.mu = 0.0
        # mini-batch extension (papers/003 analyses b = 1): b rows drawn with replacement divide the
        # variance bound, so L enters the parameters as L/b; b = 1 is the paper's setting exactly
        self.L_batch = L / self.options.batch_size
        kappa = (self.L_batch + L_B) / self.mu if self.mu > 0 else math.inf
        p0 = schedule.epoch_params(self.setting, 0, B=len(design.edges) - 1, L=self.L_batch, L_B=L_B, mu=self.mu,
                                   n=design.n)
        return {"setting": self.setting, "mu": self.mu, "kappa": kappa, "L_batch": self.L_batch, "eta_0": p0.eta,
                "variant": self.options.variant, "snapshot": self.options.snapshot}

    def inner(self, s, design, loss, y, reg, it, snap, draws, problem):
        p = schedule.epoch_params(self.setting, s, B=self.B, L=self.L_batch, L_B=self.L_B, mu=self.mu, n=design.n)
        if self.options.snapshot == "last":
            sigma = self.m
        else:
            sigma = schedule.sample_sigma(problem.rng(self.name + "-sigma", s), p.theta, self.m)
        kernel = epochs.adsg2_epoch if self.options.variant == "efficient" else epochs.adsg1_epoch
        return kernel(design, loss, y, reg, it, snap, p, draws, sigma)


class MRBCD(_VarianceReduced):
    """The ADSG loop without momenta: proximal SVRG on one random block per step."""

    name = "mrbcd"
    summary = "mini-batch randomized block coordinate descent with variance reduction (ADSG without momenta)"
    params = {**COMMON, **BLOCKS, **STEP}

    def prepare(self, problem, design, L, L_B):
        # the mini-batch estimator's variance scales with L/b; F itself is L_B-smooth along a block
        self.eta = self.options.step_size or 1.0 / (L / self.options.batch_size + L_B)
        return {"eta": self.eta}

    def inner(self, s, design, loss, y, reg, it, snap, draws, problem):
        return epochs.plain_epoch(design, loss, y, reg, it, snap, self.eta, draws)


class SVRG(MRBCD):
    """Proximal SVRG: every step updates all coordinates (one block)."""

    name = "svrg"
    summary = "proximal stochastic variance-reduced gradient (full-vector steps)"
    params = {**COMMON, **STEP}
    single_block = True
