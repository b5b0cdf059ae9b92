"""The solvers ``adsg``, ``mrbcd`` and ``svrg``: one outer loop on the solver skeleton, three inner loops.

Problem (Shen et al. 2017, eq. 1): min_x (1/n) Σ ℓ(y_i, a_iᵀx) + P(x) with a smooth
loss and the spec's block-separable regularizer P (l2 with ``lambda`` = μ:
kopt's λ/2‖f‖² + mean ℓ).  One iteration of the skeleton (:mod:`kopt.contract.iterative`)
is one epoch: m inner steps from the snapshot x̃ (about one pass in evaluated
partial gradients), then the full-gradient snapshot at the new x̃ (one pass),
which gives the objective F(x̃) + P(x̃) and the stopping criterion
‖G(x̃)‖/‖G(x₀)‖ (G the proximal gradient mapping) for free and is the next
epoch's snapshot.  The run's state is a :class:`_State`; the solvers hold only
their options.
"""
from __future__ import annotations

import math
import warnings

import numpy as np

from kopt.contract.iterative import Check, Diverged, IterativeSolver, Step, common_options
from kopt.errors import DataError, SpecWarning
from kopt.numerics import rows as _rows
from kopt.numerics.backend import to_numpy

from . import coords, epochs, schedule

_NULLABLE_INT = {"type": ["integer", "null"], "minimum": 1, "default": None}


def _shared_options():
    o = common_options(iterations=100, batch_size=16, tol=1e-6)
    o["batch_size"] = {**o["batch_size"], "description": "mini-batch size b of an inner step (an epoch takes "
                                                         "inner_steps of them)"}
    return o


COMMON = {
    **_shared_options(),
    "inner_steps": {**_NULLABLE_INT, "description": "inner steps m per epoch (default B·n/b: one pass of partial gradients)"},
    "feature_memory_mb": {"type": "number", "exclusiveMinimum": 0, "default": 512,
                          "description": "random features: materialise the n × M matrix when it takes at most this many MiB, "
                                         "else regenerate each mini-batch's features from the seed"},
}
BLOCKS = {"blocks": {**_NULLABLE_INT, "description": "coordinate blocks B (input features: default min(D, 8); "
                                                    "random features: the feature blocks, count/block_size)"}}
STEP = {"step_size": {"type": ["number", "null"], "exclusiveMinimum": 0, "default": None,
                      "description": "step η (default 1/(L/b + L_B))"}}


class _State:
    """One run: the design, its constants, the iterates (x, z, x̃), the snapshot at x̃ and the counters.

    ``consts`` holds the solver's per-run constants (:meth:`_VarianceReduced.prepare`); ``info`` the
    facts the result reports.
    """

    def __init__(self, solver, problem):
        o = solver.options
        self.problem = problem
        self.design, self.fmap = coords.build_design(
            problem, blocks=solver.coordinate_blocks(), single_block=solver.single_block,
            feature_memory_mb=o.feature_memory_mb, threads=solver.n_threads)
        design = self.design
        self.xp = xp = design.xp
        self.y = xp.asarray(to_numpy(problem.y) if xp is np else problem.y, dtype=np.float64)
        n, b = design.n, o.batch_size
        if b > n:
            raise DataError(f"solver.batch_size = {b} is larger than the {n} training rows")
        self.B, self.b = len(design.edges) - 1, b
        self.m = o.inner_steps or solver.default_inner_steps(self.B, n, b)
        self.L, self.L_B = coords.smoothness_constants(design, problem.loss, problem.rng(solver.name + "-power"))
        self.consts = solver.prepare(self)
        self.info = {"coordinates": design.kind, "dimension": design.dim, "blocks": self.B, "batch_size": b,
                     "inner_steps": self.m, "L": self.L, "L_B": self.L_B, **self.consts}
        self.it = self.snap = None
        self.F = self.rel = self.f0 = self.g0 = None
        self.passes = 0.0

    def start(self, it, passes=0.0, f0=None, g0=None):
        """Set the iterates (fresh: zeros; resumed: the checkpoint's) and take the snapshot at x̃."""
        self.it, self.passes = it, float(passes)
        gmap = self.take_snapshot()
        self.f0, self.g0 = (self.F, gmap) if f0 is None else (float(f0), float(g0))
        self.info["initial_objective"] = self.f0
        self.rel = self.relative(gmap)

    def take_snapshot(self):
        """The snapshot pass at x̃: sets ``snap`` and the objective ``F``; returns ‖G(x̃)‖."""
        loss, reg = self.problem.loss, self.problem.regularizer
        self.snap = epochs.snapshot(self.design, loss, self.y, self.it.x_tilde)
        self.F = float(self.snap.loss_mean + reg.value(self.it.x_tilde))
        if not math.isfinite(self.F):
            return math.nan
        return _grad_map(self.xp, reg, self.snap, self.L)

    def relative(self, gmap):
        return gmap / self.g0 if self.g0 > 0 else 0.0


def _grad_map(xp, reg, snap, L):
    """‖G(x̃)‖ with G = L (x̃ − prox_{P/L}(x̃ − ∇F(x̃)/L)), the composite optimality measure."""
    step = 1.0 / L
    G = (snap.x - reg.prox(snap.x - step * snap.g, step)) / step
    return float(xp.sqrt((G * G).sum()))


class _VarianceReduced(IterativeSolver):
    """Shared spec checks and the epoch loop on the skeleton; subclasses define the inner loop."""

    forms = ("primal",)
    targets = ("real", "binary")
    needs_smooth_loss = True
    kernel_mode = "either"
    stopping = "criterion"
    criterion_name = "relative prox-gradient norm"
    iteration_unit = "one epoch: inner_steps mini-batch steps from the snapshot, then the full-gradient snapshot"
    # inner steps are small vector operations and the feature engine runs its own threads
    blas = "single"
    divergence_hint = "lower solver.step_size"
    #: one block of all coordinates (plain SVRG)
    single_block = False
    memory_hint = "or lower solver.feature_memory_mb (the random features are then regenerated per mini-batch)"

    def memory_plan(self, sizes):
        """Random features: the n x M features (:func:`.coords.build_design`) where they fit ``feature_memory_mb``,
        else the rows of the smoothness estimate's subsample as features (float64); the feature parameters.  Every
        design: the snapshot's vectors over the rows (the labels, r = A x, d = ℓ'(r), the loss values and a
        product's float64 copy, float64 each, and its copy in the features' dtype) and the iterates and gradients
        over the D coordinates."""
        return adsg_plan(self, sizes)

    def check_spec(self, spec):
        loss, kernel = spec.loss, spec.kernel_class
        if loss.smoothness() is None:
            yield ("model", "loss", "name"), (f"solver {self.name!r} needs the loss's curvature bound "
                                              f"(Loss.smoothness()); {loss.name!r} does not give one")
        if not coords.uses_input_features(kernel) and not kernel.has_features:
            yield ("model", "kernel", "name"), (f"solver {self.name!r} uses the input features (kernel "
                                                f"'linear') or random features; kernel {kernel.name!r} has no sampler")

    # -- subclass hooks -----------------------------------------------------
    def default_inner_steps(self, B, n, b):
        """Inner steps m of an epoch when ``inner_steps`` is unset: B·n/b (one pass of partial gradients)."""
        return math.ceil(B * n / b)

    def coordinate_blocks(self):
        """Blocks of input features asked for (None: the default)."""
        return None

    def prepare(self, st) -> dict:
        """Per-run constants from the design and L, L_B (kept in ``st.consts`` and reported in ``info``)."""
        return {}

    def inner(self, st, s, draws) -> epochs.Iterates:
        """Epoch ``s`` (0-based) from ``st.it`` and ``st.snap``, on the ``(I, l)`` ``draws``."""
        raise NotImplementedError

    # -- the skeleton's contract --------------------------------------------
    def init(self, problem):
        st = _State(self, problem)
        zeros = st.xp.zeros(st.design.dim)
        st.start(epochs.Iterates(zeros, zeros.copy(), zeros.copy()))
        return st

    def load(self, problem, saved):
        st = _State(self, problem)
        it = epochs.Iterates(*(st.xp.asarray(saved[k], dtype=np.float64) for k in ("x", "z", "x_tilde")))
        st.start(it, saved["passes"], saved["f0"], saved["g0"])
        return st

    def save(self, st):
        it = st.it
        return {"x": to_numpy(it.x), "z": to_numpy(it.z), "x_tilde": to_numpy(it.x_tilde), "passes": st.passes,
                "f0": st.f0, "g0": st.g0}

    def step(self, st, t):
        s = t - 1
        sizes = np.diff(st.design.edges)
        drawn = [0]

        def draws():  # the epoch's (I, l); ``drawn`` accumulates the block sizes (for ``passes``)
            gen = schedule.steps(lambda c: st.problem.rng(self.name, s, c), st.m, st.design.n, st.b, st.B)
            for I, l in gen:
                drawn[0] += int(sizes[l])
                yield I, l

        st.it = self.inner(st, s, draws())
        gmap = st.take_snapshot()
        st.passes += 1.0 + st.b * drawn[0] / (st.design.n * st.design.dim)
        if not math.isfinite(st.F):
            raise Diverged(f"the objective is {st.F}")
        st.rel = st.relative(gmap)
        return Step(rows=st.design.n + st.m * st.b, objective=st.F, extra={"passes": st.passes, "grad_map": st.rel})

    def check(self, st, rows):
        """F(x̃) + P(x̃) and ‖G(x̃)‖/‖G(x₀)‖ at the snapshot (exact, from the epoch's snapshot pass)."""
        return Check(objective=st.F, criterion=st.rel)

    def decision_function(self, st, X):
        return coords.scores(X, st.fmap, st.it.x_tilde, st.xp)

    def finish(self, st):
        predictor = coords.predictor(st.problem, st.design, st.fmap, st.it.x_tilde)
        return predictor, {**st.info, "passes": st.passes, "grad_map": st.rel}


def adsg_plan(solver, sizes):
    """:meth:`_VarianceReduced.memory_plan`."""
    from kopt.numerics.memory import matrices

    n, d, problem = sizes.n, sizes.d, sizes.problem
    linear = problem is not None and coords.uses_input_features(problem.kernel)
    plan = []
    if linear:
        D = d
        if _rows.is_sparse(problem.X):  # SparseDesign: int64 indices and float64 values, the smoothness's COO
            nnz = int(problem.X.nnz)
            plan.append(("the sparse rows' int64 indices and float64 values, and their block index arrays",
                         nnz * (8 + 8 + 3 * 8 + 2 * 8) + 8 * (n + 1)))
    else:
        F = int(problem.features.block_size) if problem is not None else 512
        D = -(-sizes.count // F) * F
        if n * D * sizes.itemsize <= solver.options.feature_memory_mb * 2**20:
            plan.append(matrices(1, n, D, sizes.dtype, "the random features, materialised"))
            # DenseDesign.row_norms_sq: 4,096 rows at a time in float64, and their square
            plan.append(matrices(2, min(n, 4096), D, "float64", "a chunk of rows' features in float64, squared"))
        else:
            # FeatureDesign: the smoothness estimate's subsample as float64 features, or before it the row norms'
            # chunk of 2,048 rows (the features, their float64 copy, scaled, squared), whichever is larger
            sub = min(n, coords.SMOOTHNESS_ROWS) * D * 8
            chunk = min(n, 2048) * D * (sizes.itemsize + 3 * 8)
            plan.append(("the smoothness estimate's rows as float64 features, or the row norms' chunk of features",
                         max(sub, chunk)))
        plan.append(matrices(1, D, d + 1, sizes.dtype, "the feature parameters"))
    return plan + [matrices(5, n, 1, "float64", "the labels, the snapshot's r, d, loss values and a product"),
                   matrices(1, n, 1, sizes.dtype, "a product's vector in the features' dtype"),
                   matrices(12, D, 1, "float64", "the iterates, snapshot and gradients")]


class _Blocked(_VarianceReduced):
    """Solvers with the ``blocks`` option (coordinate blocks of input features)."""

    def coordinate_blocks(self):
        return self.options.blocks

    def check_spec(self, spec):
        yield from super().check_spec(spec)
        blocks, kernel = self.options.blocks, spec.kernel_class
        if blocks is None:
            return
        if not coords.uses_input_features(kernel):
            feats = spec["model"]["features"]
            nb = math.ceil(feats["count"] / feats["block_size"])
            if blocks != nb:
                yield ("solver", "blocks"), (f"with random features the coordinate blocks are the feature blocks "
                                             f"(count / block_size = {nb}); leave blocks unset and choose "
                                             "model.features.block_size instead")
        else:
            d = spec.get("data", "n_features")
            if d is not None and blocks > d:
                yield ("solver", "blocks"), f"{blocks} blocks is more than the {d} input features (data.n_features)"


#: why: docs/design/adsg-ridge.md (docs/benchmarks/adsg_tuned.py)
RIDGE_ADVICE = (
    "solver adsg on ridge regression is measured slower than katyusha, its full-vector accelerated peer: with "
    "its step tuned katyusha needed fewer passes and fewer seconds on the ill-conditioned ridge benchmarks of "
    "docs/design/adsg-ridge.md; consider solver: katyusha"
)


class ADSG(_Blocked):
    """Accelerated doubly stochastic gradient (Shen et al. 2017, Alg. 1–2)."""

    name = "adsg"
    summary = "accelerated doubly stochastic gradient (three momenta), block-separable regularized ERM"
    divergence_hint = ("its steps come from the estimated smoothness constants L and L_B: check the data's scale "
                       "(data.standardize) and the loss's curvature bound")
    params = {
        **COMMON,
        **BLOCKS,
        "setting": {"enum": ["auto", *schedule.SETTINGS], "default": "auto",
                    "description": "parameters of Shen et al. (2017) Thm. 1 (strongly_convex), 2 (general_convex) or "
                                   "3 (unregularized, P ≡ 0); auto picks by μ and P"},
        "strong_convexity": {"type": ["number", "null"], "minimum": 0, "default": None,
                             "description": "μ (default: the regularizer's strong convexity, λ for l2)"},
        "variant": {"enum": ["efficient", "reference"], "default": "efficient",
                    "description": "ADSG II (O(Ω + nnz(a_i)) per step) or ADSG I (O(D) per step, the reference)"},
        "snapshot": {"enum": ["random", "last"], "default": "random",
                     "description": "next snapshot: the iterate at σ with P(σ) ∝ θ^(σ−1) (Alg. 1), or the last one"},
        "advice": {"type": "boolean", "default": True,
                   "description": "warn when another solver was measured faster on this problem (ridge: katyusha); "
                                  "false when a spec keeps adsg on purpose, saying why in its comment"},
    }

    def check_spec(self, spec):
        yield from super().check_spec(spec)
        reg, o = spec.regularizer, self.options
        mu = reg.strong_convexity() if o.strong_convexity is None else o.strong_convexity
        if o.setting == "strongly_convex" and mu <= 0:
            yield ("solver", "setting"), (f"the strongly convex setting (Thm. 1) needs μ > 0; regularizer "
                                          f"{reg.name!r} has strong convexity 0: set solver.strong_convexity, "
                                          "use l2 or elastic_net, or setting general_convex")
        if o.setting == "unregularized" and spec.lambda_auto:
            yield ("model", "regularizer", "lambda"), ("setting unregularized (Thm. 3) assumes P ≡ 0, and lambda: auto "
                                                       "picks λ > 0; set lambda: 0, or use general_convex or "
                                                       "strongly_convex")
        elif o.setting == "unregularized" and reg.lam != 0:
            yield ("solver", "setting"), (f"setting unregularized (Thm. 3) assumes P ≡ 0, and regularizer "
                                          f"{reg.name!r} has lambda {reg.lam:g}; use general_convex or strongly_convex")
        if o.setting in ("general_convex", "unregularized") and o.strong_convexity:
            yield ("solver", "strong_convexity"), f"setting {o.setting} uses μ = 0; strong_convexity would be ignored"
        if o.advice and spec.loss.name == "square" and reg.name == "l2" and reg.lam > 0:
            warnings.warn(str(spec.error(("solver", "name"), RIDGE_ADVICE)), SpecWarning, stacklevel=2)

    def prepare(self, st):
        reg, o = st.problem.regularizer, self.options
        mu = reg.strong_convexity() if o.strong_convexity is None else float(o.strong_convexity)
        setting = schedule.resolve_setting(o.setting, mu, reg.lam == 0)
        if setting != "strongly_convex":
            mu = 0.0
        # mini-batch extension (Shen et al. (2017) analyses b = 1): b rows drawn with replacement divide the
        # variance bound, so L enters the parameters as L/b; b = 1 is the paper's setting exactly
        L_batch = st.L / o.batch_size
        kappa = (L_batch + st.L_B) / mu if mu > 0 else math.inf
        p0 = schedule.epoch_params(setting, 0, B=st.B, L=L_batch, L_B=st.L_B, mu=mu, n=st.design.n)
        return {"setting": setting, "mu": mu, "kappa": kappa, "L_batch": L_batch, "eta_0": p0.eta,
                "variant": o.variant, "snapshot": o.snapshot}

    def inner(self, st, s, draws):
        c, o = st.consts, self.options
        p = schedule.epoch_params(c["setting"], s, B=st.B, L=c["L_batch"], L_B=st.L_B, mu=c["mu"], n=st.design.n)
        if o.snapshot == "last":
            sigma = st.m
        else:
            sigma = schedule.sample_sigma(st.problem.rng(self.name + "-sigma", s), p.theta, st.m)
        kernel = epochs.adsg2_epoch if o.variant == "efficient" else epochs.adsg1_epoch
        return kernel(st.design, st.problem.loss, st.y, st.problem.regularizer, st.it, st.snap, p, draws, sigma)


class _Plain(_VarianceReduced):
    """The loop without momenta: a proximal SVRG step per mini-batch (one block, or all coordinates)."""

    def prepare(self, st):
        # the mini-batch estimator's variance scales with L/b; F itself is L_B-smooth along a block
        return {"eta": self.options.step_size or 1.0 / (st.L / self.options.batch_size + st.L_B)}

    def inner(self, st, s, draws):
        return epochs.plain_epoch(st.design, st.problem.loss, st.y, st.problem.regularizer, st.it, st.snap,
                                  st.consts["eta"], draws)


class MRBCD(_Blocked, _Plain):
    """The ADSG loop without momenta: proximal SVRG on one random block per step."""

    name = "mrbcd"
    summary = "mini-batch randomized block coordinate descent with variance reduction (ADSG without momenta)"
    params = {**COMMON, **BLOCKS, **STEP}


class SVRG(_Plain):
    """Proximal SVRG: every step updates all coordinates (one block)."""

    name = "svrg"
    summary = "proximal stochastic variance-reduced gradient (full-vector steps)"
    params = {**COMMON, **STEP}
    single_block = True
