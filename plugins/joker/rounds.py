"""Joker's features mode on a Dask cluster: CoCoA+ rounds of DBCD-TR blocks (docs/scale.md).

The dual variables of partition ``k`` (rows P_k) live on the worker that holds the partition; the
client holds θ̃ = Σ_i α_i φ(x_i) (M × C).  One iteration of the skeleton is one round:

1. the client sends θ̃ to every partition (one M-vector per output);
2. worker ``k`` minimises its CoCoA+ local subproblem (Ma et al. 2015, "adding" with γ = 1 and the
   safe σ' = K, the number of partitions)

       G_k(Δα) = Σ_{i∈P_k} f_i(α_i + Δα_i) + Δαᵀ Φ_k θ̃ / M + (σ'/2M) ‖Φ_kᵀ Δα‖²

   by ``local_epochs`` passes of DBCD-TR blocks (:class:`.blocks.DualBlocks` with the
   :class:`LocalEngine`: gradients from its copy θ̃ + σ' Δθ̃_k, the model's K_BB scaled by σ'), and
   returns Δθ̃_k = Φ_kᵀ Δα (one M-vector per output);
3. the client adds θ̃ ← θ̃ + Σ_k Δθ̃_k (in partition order), which keeps θ̃ = Σ_i α_i φ(x_i).

With σ' = K the sum of the local decreases is a lower bound of the decrease of J, so every round
decreases the dual (CoCoA+ Lemma 3).  The certificate is exact: kopt's dual
D = −λ (½‖θ̃‖²/M + Σ_i f_i(α_i)) and primal P = λ/2 ‖θ̃‖²/M + (1/n) Σ_i ℓ(y_i, φ(x_i)θ̃/M) are sums of
per-row terms computed next to the rows plus the global norm, so the gap P − D is the one of the
single-machine problem, and it stops the run (``tol``).

Every random choice on worker ``k`` (the fixed block partition, the block drawn at each step) comes
from ``problem.rng`` of its :class:`kopt.distributed.partitions.PartitionProblem`, keyed by the spec's
seed and ``k``; the step counter of round ``r`` is ``r·H + h`` (H blocks per round), so a round
recomputed after a lost worker repeats itself exactly.  A round's task sets the worker's α and θ̃
from its inputs before it starts, so running it twice gives the same result.
"""
from __future__ import annotations

import math
import time

import numpy as np

from kopt.contract.iterative import Check, Step
from kopt.distributed.partitions import Held, local_problem, worker_template
from kopt.models.predictors import FeatureExpansion

from .blocks import DualBlocks
from .engines import FeatureEngine


class LocalEngine(FeatureEngine):
    """Worker k's feature engine in a round: ``theta`` accumulates Δθ̃_k; the gradients read θ̃ + σ'Δθ̃_k."""

    def __init__(self, problem, n_out, sigma, block_memory_mb, model_kernel):
        super().__init__(problem, n_out, block_memory_mb, 1, model_kernel)
        self.sigma = float(sigma)
        self.base = self.theta

    def begin(self, theta):
        """Start a round from the broadcast θ̃."""
        self.base = theta
        self.theta = np.zeros_like(theta)

    def prepare(self, idx):
        delta = self.theta
        self.theta = self.base + self.sigma * delta
        try:
            K, g = super().prepare(idx)
        finally:
            self.theta = delta
        return self.sigma * K, g

    def true_kernel(self, s):
        return self.sigma * super().true_kernel(s)


class _Worker(Held):
    """What a partition's worker keeps between rounds: its problem, labels and DBCD-TR state (rebuilt from the
    partition wherever it lands: its α and θ̃ come with every task)."""

    def __init__(self, part, k, template, options, sigma, labels):
        self.hold(part, k, template, options, sigma, labels)
        problem = local_problem(template, part, k)
        Y = labels(problem)
        engine = LocalEngine(problem, Y.shape[1], sigma, options.block_memory_mb, options.model_kernel)
        self.blocks = DualBlocks(problem, Y, template.lam * template.n, options, "features", 1, engine=engine)
        self.per_round = max(1, math.ceil(options.local_epochs * self.blocks.nblocks))


def _start(part, k, template, options, sigma, labels):
    return _Worker(part, k, template, options, sigma, labels)


def _zeros(worker):
    return np.zeros_like(worker.blocks.alpha)


def _round(worker, alpha, theta, r):
    """Round ``r`` on one partition: ``(α_k after the round, Δθ̃_k)``; the same inputs give the same outputs."""
    st = worker.blocks
    st.alpha = alpha.copy()
    st.engine.begin(theta)
    H = worker.per_round
    for h in range(H):
        st.step(r * H + h + 1)
    return st.alpha, st.engine.theta


def _pick(pair, i):
    return pair[i]


def _certificate(worker, alpha, theta):
    """The partition's per-row sums for the gap, per output: Σ ℓ(y_i, f_i), Σ f_i(α_i), and for the dual
    point of the primal iterate, α'_i = −ℓ'(y_i, f_i)/λ_J (in the box), Σ f_i(α'_i) and Φ_kᵀα'."""
    st = worker.blocks
    st.engine.theta = theta
    scores = st.engine.scores(None)
    loss, conj, conj_alt = [], [], []
    alt = np.empty_like(alpha)
    for c, term in enumerate(st.terms):
        u, y = scores[:, c], st.Y[:, c]
        loss.append(float(st.problem.loss.value(u, y).sum()))
        conj.append(term.value(alpha[:, c], st.everything))
        alt[:, c] = term.project(-st.problem.loss.grad(u, y) / term.lam_j, st.everything)
        conj_alt.append(term.value(alt[:, c], st.everything))
    theta_alt = st.engine.fmap.adjoint(st.problem.X, alt).reshape(theta.shape)
    return np.array(loss), np.array(conj), np.array(conj_alt), theta_alt, alt


def _sums(out):
    return out[:4]


class DistributedBlocks:
    """Joker's features mode over the partitions of ``problem.partitions`` (the client's side)."""

    name = "features"

    def __init__(self, problem, options, labels):
        self.problem = problem
        self.parts = problem.partitions
        self.lam = problem.lam
        self.lam_j = problem.lam * problem.n
        self.fmap = problem.feature_map()
        self.M = self.fmap.n_blocks * self.fmap.block_size
        self.K = len(self.parts.rows)
        template = worker_template(problem)
        self.workers = self.parts.map_indexed(_start, template, options, self.K, labels)
        self.alpha = [self.parts.submit(k, _zeros, w) for k, w in enumerate(self.workers)]
        self.C = self.parts.gather([self.parts.submit(0, _n_out, self.workers[0])])[0]
        self.theta = np.zeros((self.fmap.n_blocks, self.fmap.block_size, self.C))
        self.rounds = 0
        self.pending = None

    def cadence(self):
        return 1, 0

    def step(self, t):
        if self.pending is not None:
            # the last check found D(α') > D(α): restart the dual from α' (and θ̃ = Φᵀα'), so the dual rises
            # monotonically; deferred to here so the model and the last certificate always match
            self.alpha, self.theta = self.pending
            self.pending = None
        parts = self.parts
        t0 = time.perf_counter()
        outs = [parts.submit(k, _round, w, a, self.theta, t - 1) for k, (w, a) in enumerate(zip(self.workers, self.alpha))]
        self.alpha = [parts.submit(k, _pick, o, 0) for k, o in enumerate(outs)]
        deltas = parts.gather([parts.submit(k, _pick, o, 1) for k, o in enumerate(outs)])
        for d in deltas:
            self.theta = self.theta + d
        self.rounds = t
        sent = 2 * self.K * self.theta.nbytes  # θ̃ to each partition, Δθ̃ back
        return Step(rows=self.problem.n, extra={"bytes_per_round": sent, "round_s": time.perf_counter() - t0})

    def check(self, rows=None):
        """P and D over every row (``check_rows`` is not used: the sums are distributed and exact).

        D is the larger of two lower bounds of the dual optimum: D(α) of the iterate, and D(α') of the
        dual point of the primal iterate, α'_i = −ℓ'(y_i, f_i)/λ_J (projected into the box), whose
        θ̃' = Σ_k Φ_kᵀα' costs one more M-vector per partition.  CoCoA+'s σ' = K damps the steps of α
        along directions that do not move θ̃, so D(α) can lag far behind a converged primal; α'
        certifies that primal (P − D(α') → 0 as θ̃ → θ̃*), and when D(α') > D(α) the next round starts
        from α', which reaches a small gap in far fewer rounds (docs/design/joker-iteration.md).
        """
        parts = self.parts
        t0 = time.perf_counter()
        outs = [parts.submit(k, _certificate, w, a, self.theta) for k, (w, a) in enumerate(zip(self.workers, self.alpha))]
        pieces = parts.gather([parts.submit(k, _sums, o) for k, o in enumerate(outs)])
        loss = sum(p[0] for p in pieces)
        theta_alt = sum(p[3] for p in pieces)
        D_iterate = self._dual(self.theta, sum(p[1] for p in pieces))
        D_primal = self._dual(theta_alt, sum(p[2] for p in pieces))
        if D_primal > D_iterate:  # the next round starts from the better dual point (see step)
            self.pending = ([parts.submit(k, _pick, o, 4) for k, o in enumerate(outs)], theta_alt)
        norm = (self.theta * self.theta).sum(axis=(0, 1)) / self.M
        P = float(0.5 * self.lam * norm.sum() + (loss / self.problem.n).sum())
        return Check(objective=P, dual=max(D_iterate, D_primal),
                     extra={"dual_iterate": D_iterate, "check_s": time.perf_counter() - t0})

    def _dual(self, theta, conj):
        """kopt's dual −λ(½‖θ̃‖²/M + Σ f_i(α_i)) from θ̃ = Σ α_i φ(x_i) and the separable sums."""
        norm = (theta * theta).sum(axis=(0, 1)) / self.M
        return float((-self.lam * (0.5 * norm + conj)).sum())

    def decision_function(self, X):
        return self.fmap.predict(X, self.theta) / self.M

    def state(self):
        alpha = np.concatenate(self.parts.gather(self.alpha), axis=0)
        return {"alpha": alpha, "theta": self.theta}

    def restore(self, saved):
        self.theta = np.asarray(saved["theta"], dtype=np.float64)
        pieces = self.parts.split(np.asarray(saved["alpha"], dtype=np.float64))
        # inside tasks next to each partition (not scattered): a lost worker's α is made again from them
        self.alpha = [self.parts.put(k, p) for k, p in enumerate(pieces)]

    def predictor(self):
        coef = self.theta[:, :, 0] if self.C == 1 else self.theta
        meta = {"scale": 1.0 / self.M, "seed": self.fmap.seed, "block_size": self.fmap.block_size,
                "dtype": self.fmap.dtype.name}
        info = {"n_features": self.M, "partitions": self.K, "rounds": self.rounds, "sigma": self.K}
        return FeatureExpansion({"coef": coef, "blocks": np.arange(self.fmap.n_blocks)}, meta), info


def _n_out(worker):
    return worker.blocks.C
