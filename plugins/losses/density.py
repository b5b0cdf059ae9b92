"""Primal-only losses of Dai et al. (2014) Sec. 4: novelty detection and KL density-ratio estimation.

Neither is a plain ℓ(y, u) with a label per row, so each documents what a solver does.

**novelty** (one-class SVM, target ``unlabeled``).  Dai et al. (2014) solves
min_{τ, f} E_x[max(0, τ − f(x))] + ν/2 ‖f‖² − ν τ; kopt keeps λ and ν separate:

    min_{τ ∈ R, f}  λ/2 ‖f‖² + (1/n) Σ ℓ(τ, f(x_i)),   ℓ(τ, u) = max(0, τ − u) − ν τ.

The offset τ travels in the *label slot*: ``value(u, tau)``, ``grad(u, tau)`` (in u) and
``offset_grad(u, tau)`` = ∂ℓ/∂τ = 1{u < τ} − ν.  A solver keeps one scalar τ (start 0),
calls the loss with ``y = tau`` and steps τ ← τ − γ_t · mean(offset_grad(f(x_b), τ)) next
to the f step (Dai et al.'s update: τ + γν if f(x) ≥ τ, τ − γ(1 − ν) otherwise);
for fixed f the best τ is the ν-quantile of the scores (``best_offset``).  The model's
decision function is f(x) − τ (negative = novelty); ν upper-bounds the fraction of
training points with f(x) < τ.

**kl_density_ratio** (target ``two_sample``, y = 0 for rows of sample P, 1 for sample Q).
Dai et al. (2014) eq. (8) with the KL divergence: min_f E_Q[e^f] − E_P[f] + ν/2 ‖f‖², written
with z ~ Bernoulli(½) as 2 E_z[δ₁(z) e^{f} − δ₀(z) f]; here

    ℓ(z, u) = 2 [z e^u − (1 − z) u].

Re-derived (pointwise stationarity q e^f = p): the minimiser is f = log(p/q), the log
ratio of the *label-0* density to the *label-1* density (Dai et al. (2014) writes log q/p with the
roles of its two samples swapped; tests/plugins/losses/test_losses_density.py checks our reading).  The
mean of ℓ over the rows equals the paper's objective only when both samples have the same
size.  Otherwise a solver either samples rows with probability ∝ ``balance_weights(y)``
(z ~ Bernoulli(½), then a row of that sample, as Dai et al. (2014) does) or multiplies each
row's loss and gradient by those weights; an unweighted fit estimates
log(p/q) + log(n₀/n₁).
"""
from __future__ import annotations

import numpy as np

from kopt.numerics.backend import get_namespace

from ._common import BuiltinLoss, as_float


class NoveltyLoss(BuiltinLoss):
    """ℓ(τ, u) = max(0, τ − u) − ν τ with the offset τ passed as the label (Dai et al. 2014, Sec. 4)."""

    name = "novelty"
    summary = "novelty detection max(0, τ − u) − ντ (offset τ optimised by the solver)"
    target = "unlabeled"
    smooth = False
    has_conjugate = False
    has_offset = True
    params = {"nu": {"type": "number", "exclusiveMinimum": 0, "maximum": 1, "default": 0.1,
                     "description": "ν in (0, 1]: upper bound on the fraction of training points flagged"}}

    def _tau(self, tau, like):
        return as_float(get_namespace(like), tau, like)

    def value(self, u, tau):
        xp = get_namespace(u)
        tau = self._tau(tau, u)
        return xp.maximum(tau - u, 0) - self.options.nu * tau

    def grad(self, u, tau):
        """−1 where u < τ, else 0."""
        xp = get_namespace(u)
        return -(u < self._tau(tau, u)).astype(u.dtype) * xp.ones_like(u)

    def curvature(self, u, tau):
        return get_namespace(u).zeros_like(u)

    def offset_grad(self, u, tau):
        """∂ℓ/∂τ = 1{u < τ} − ν (Dai et al. 2014, Sec. 4)."""
        return (u < self._tau(tau, u)).astype(u.dtype) - u.dtype.type(self.options.nu)

    def best_offset(self, u):
        """argmin_τ mean ℓ(τ, u) for fixed scores: the ⌈νn⌉-th smallest score."""
        xp = get_namespace(u)
        k = max(int(np.ceil(self.options.nu * u.shape[0] - 1e-9)), 1)
        return xp.sort(u.ravel())[k - 1]

    def grad_bound(self):
        return 1.0

    def prox(self, u, tau, step):
        """argmin_z max(0, τ − z) + (z − u)²/(2 step): u if u ≥ τ, u + step if u + step ≤ τ, else τ."""
        xp = get_namespace(u)
        tau = self._tau(tau, u) * xp.ones_like(u)
        return xp.where(u >= tau, u, xp.where(u + step <= tau, u + step, tau))


class KLDensityRatioLoss(BuiltinLoss):
    """ℓ(z, u) = 2[z e^u − (1 − z) u]: f estimates log p₀(x)/p₁(x) (Dai et al. 2014, eq. 8, KL)."""

    name = "kl_density_ratio"
    summary = "KL density-ratio estimation (two samples; f ≈ log p0/p1)"
    target = "two_sample"
    smooth = True
    has_conjugate = False
    has_balance_weights = True

    def _z(self, z, like):
        return as_float(get_namespace(like), z, like)

    def value(self, u, z):
        xp = get_namespace(u)
        z = self._z(z, u)
        return 2 * (z * xp.exp(u) - (1 - z) * u)

    def grad(self, u, z):
        xp = get_namespace(u)
        z = self._z(z, u)
        return 2 * (z * xp.exp(u) - (1 - z))

    def curvature(self, u, z):
        xp = get_namespace(u)
        return 2 * self._z(z, u) * xp.exp(u)

    def balance_weights(self, z):
        """Row weights n / (2 n_z): the weighted mean of ℓ is Dai et al.'s objective for any n₀, n₁."""
        xp = get_namespace(z)
        z = xp.asarray(z)
        n = z.shape[0]
        n1 = float((z == 1).sum())
        n0 = n - n1
        if n0 == 0 or n1 == 0:
            raise ValueError("kl_density_ratio needs rows of both samples (labels 0 and 1)")
        return xp.where(z == 1, n / (2 * n1), n / (2 * n0))
