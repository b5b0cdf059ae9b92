"""Newton's method for a smooth loss on Nyström centers, each step's system solved by the preconditioned CG.

The model is f(x) = k(x, C) w + b₀ on M centers C, with ‖f‖² = wᵀRw (R = K_CC = UᵀU) and b₀ a fixed offset per
output: the best constant of the loss (:func:`best_offset`: the labels' mean for the square loss and the squared
hinge, the log-odds of the positive rows for the logistic loss), so a row far from every center scores the constant
the labels favour.  In the whitened coordinates v = U w the objective is

    J(v) = λ/2 ‖v‖² + (1/n) Σ_i w_i ℓ(y_i, f_i + b₀),   f = K U⁻¹ v,   K = k(X, C),   w_i the row weights,

with gradient g = λ v + U⁻ᵀ Kᵀ(w ⊙ ℓ'(f + b₀)) / n and Hessian T_D + λI, T_D = U⁻ᵀ (Kᵀ diag(D) K / n) U⁻¹,
D_i = w_i ℓ''(f_i + b₀): the square loss's system on rows weighed by the curvature (where ℓ'' jumps -- the squared
hinge, Huber -- the loss's ``curvature`` is the element of its generalized Hessian: Keerthi & DeCoste 2005; Chapelle
2007).  One Newton step (:meth:`SmoothNewton.step`):

1. the Newton system (T_D + λI) d = −g by :class:`kopt.nystrom.NystromCG`'s CG from d = 0
   (:meth:`~kopt.nystrom.NystromCG.weighted_system`: b = −g needs no pass), each CG step one pass of kernel blocks
   over the rows (float32 products), until its preconditioned residual is η times the first (the forcing term,
   :func:`forcing`), at most ``cg_steps`` steps.  The preconditioner estimates T_D from the drawn centers (and, where
   asked, more seeded rows), each weighed by its curvature (Meanti, Carratino, Rosasco &
   Rudi 2020, "Kernel methods through the roof", for LogisticFalkon).  A step keeps the last step's preconditioner
   (the curvature it was weighed by, and its factor) where a new one costs a pass or more (:func:`factor_passes`),
   while the CG steps it takes stay within what a new one costs in passes of the steps taken where it was made; past
   that the next step makes its own;
2. a step length a by backtracking from 1 (Armijo) on J(v + a d), whose scores f + a K d CG carries: no pass;
3. v ← v + a d and one pass with float64 products at v: the scores f, Kᵀ(w ⊙ ℓ'), the gradient, the curvature
   of the next step and the certificate.

Each output column (one-vs-rest's classes) has its own Newton: its own CG steps sizes and forcing, its own line
search, over the same passes; a column whose certificate already meets the tolerance takes no step.  The
preconditioner is shared: its weights are the columns' mean curvature.

The certificate is :func:`kopt.nystrom.certificate`'s, for the loss with the offset: at the dual point
α_i = −w_i ℓ'(f_i + b₀)/(λn), P = J(v) and D = −(1/n) Σ w_i ℓ*(ℓ'(f_i + b₀)) + b₀ (1/n) Σ w_i ℓ'(f_i + b₀) − λ/2
αᵀK R⁻¹Kᵀα, where αᵀK R⁻¹ Kᵀα = ‖g − λv‖²/λ² (the conjugate of u ↦ ℓ(u + b₀) is ℓ* − b₀·).  Both come from the
float64 pass, whose sums over the rows are (:meth:`NewtonRows.gradient`) Σ w ℓ, Σ w ℓ*(ℓ'), Σ w ℓ' and Σ |w ℓ|:
the same four sums a Dask cluster's partitions send back.

The rows' side is an object with the methods of :class:`NewtonRows` (one machine); a Dask cluster's is the solver
plugin's own, with the same methods, each pass one round over the partitions.  Nothing here depends on the thread
count: every pass sums its parts in a fixed order, the preconditioner's estimate and factor too.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..numerics.backend import get_namespace, to_numpy

if TYPE_CHECKING:  # the annotations' names only
    from numpy.typing import ArrayLike

    from ..contract.components import Loss
    from .cg import NystromCG

#: Armijo's constant: a step length is taken where J fell by at least this share of the slope's prediction
ARMIJO = 1e-4
#: step lengths tried after a full step is refused: 2⁻¹ ... 2⁻ᴮ (one evaluation of the loss at each, no pass)
BACKTRACKS = 30
#: the forcing term's largest value: the first Newton steps solve their systems to half their residual
FORCING_MAX = 0.5
#: the forcing term's floor against the tolerance: the step that should end the solve solves its system to this
#: share of sqrt(tol / rel_gap), where the next gap is about (η · the gradient)², no further (:func:`forcing`)
FORCING_TOL = 0.3
#: the bisection and Newton steps of :func:`best_offset`, at most
OFFSET_STEPS = 100
#: the preconditioner's weights are this share of the mean curvature and the rest each row's own: a shrinkage of the
#: few estimate rows' curvature towards their mean (on few centers and nearly separable rows each row's own alone took
#: more passes than the mean; on 10⁵ higgs-shaped rows both were as good: docs/design/newton-pcg.md)
CURVATURE_SHRINK = 0.5
#: the preconditioner's estimate rows (:func:`estimate_count`): as many as make its estimate cost about this many
#: passes over the rows a Newton step, counted in flops (each estimate row 2 M² for its whitening and its product, a
#: pass n M kernel values of 2 d + 36 flops)
ESTIMATE_PASSES = 1.0


def factor_passes(n, d, M, rows):
    """What a new preconditioner costs, in passes over the ``n`` rows of ``d`` columns: its estimate of T_D (``rows``
    rows, 2 M² flops each for their whitening and product) and its factor (2 M³ / 3), against a pass's n M kernel
    values of 2 d + 36 flops (:data:`ESTIMATE_PASSES`'s count).  Where it is a pass or more, a Newton step keeps the
    last step's preconditioner while the CG steps it takes exceed those taken where it was made by no more than this
    (docs/design/newton-pcg.md).

    Parameters
    ----------
    n, d : int
        The rows and their columns.
    M : int
        The kept centers.
    rows : int
        The estimate's rows.

    Returns
    -------
    float
        The passes a new preconditioner costs.

    Examples
    --------
    >>> from kopt.nystrom.smooth import factor_passes
    >>> round(factor_passes(50_000, 14, 4096, 4096), 1), round(factor_passes(1_000_000, 14, 4096, 4096), 2)
    (14.0, 0.7)
    """
    return (2.0 * M ** 3 / 3.0 + 2.0 * rows * M * M) / (float(n) * M * (2 * d + 36))


def estimate_count(n, d, drawn, M):
    """How many rows the preconditioner estimates T_D from: the ``drawn`` centers at least, more where the rows are
    many against the ``M`` kept centers -- as many as cost :data:`ESTIMATE_PASSES` passes over the ``n`` rows of
    ``d`` columns a Newton step, by the flops each costs (a count of the sizes: the same on any machine).  More rows
    estimate T_D better and take CG steps off every Newton step: at 10⁵ higgs-shaped rows 8,192 rows took 16
    passes where the 4,096 drawn centers took 22 (docs/design/newton-pcg.md).

    Parameters
    ----------
    n, d : int
        The training rows and their columns.
    drawn, M : int
        The drawn and the kept centers.

    Returns
    -------
    int
        The estimate's rows, between ``drawn`` and ``n``.
    """
    rows = int(ESTIMATE_PASSES * n * (2 * d + 36) / (2.0 * max(1, M)))
    return int(min(n, max(drawn, rows)))


def estimate_positions(rng, n, d, centers, M, uniform=True):
    """The rows the preconditioner estimates T_D from: the drawn ``centers`` and, where ``estimate_count`` asks
    for more, rows drawn by ``rng`` from the others; sorted positions, and whether there are more than the centers.
    Centers not drawn uniformly (``uniform`` False: ``model.features.centers: rpcholesky``, which keeps them far
    apart) are no sample of the rows: the estimate's rows are then all drawn by ``rng``.

    Parameters
    ----------
    rng : numpy.random.Generator
        The seeded stream the further rows are drawn from (the solver's: ``problem.rng("newton_estimate")``).
    n, d : int
        The training rows and their columns.
    centers : ndarray of int
        The drawn centers' positions.
    M : int
        The kept centers.
    uniform : bool, optional
        Whether the centers are a uniform sample of the rows.

    Returns
    -------
    positions : ndarray of int
        The estimate's rows: ``centers`` as given where they are all, else every row's position, sorted.
    more : bool
        Whether they are more than the drawn centers (then the estimate is made from their kernel values, the dense
        rows at ``positions``).

    Examples
    --------
    >>> import numpy as np
    >>> from kopt.nystrom import estimate_positions
    >>> positions, more = estimate_positions(np.random.default_rng(0), 10_000_000, 6, np.arange(0, 4096), 2048)
    >>> more, len(positions) > 4096, bool(np.all(np.diff(positions) > 0))
    (True, True, True)
    """
    centers = np.asarray(centers, dtype=np.int64)
    count = estimate_count(n, d, len(centers), M)
    if not uniform:
        return np.sort(rng.choice(n, size=count, replace=False)), True
    if count <= len(centers):
        return centers, False
    others = rng.choice(n - len(centers), size=count - len(centers), replace=False)
    # the i-th row not a center: i plus the centers at or before it (centers sorted)
    others, ordered = np.sort(others), np.sort(centers)
    shift = np.searchsorted(ordered - np.arange(len(ordered)), others, side="right")
    return np.sort(np.concatenate([ordered, others + shift])), True


def newton_loss(loss) -> bool:
    """Whether Newton's method on Nyström centers (:class:`SmoothNewton`) solves a loss.

    A smooth loss with a conjugate (the certificate), a bounded curvature (its ``smoothness``, the Lipschitz constant
    of ℓ', is a number: the logistic loss, the squared hinge, Huber, the square loss), no offset of its own, on real or
    ±1 targets.

    Parameters
    ----------
    loss : Loss
        The loss.

    Returns
    -------
    bool
        True where :class:`SmoothNewton` solves it.

    Examples
    --------
    >>> from kopt.contract.registry import registry
    >>> from kopt.nystrom import newton_loss
    >>> [newton_loss(registry().get("loss", name)()) for name in ("logistic", "squared_hinge", "hinge", "lp")]
    [True, True, False, False]
    """
    return bool(loss.smooth and loss.has_conjugate and loss.target in ("real", "binary")
                and not getattr(loss, "has_offset", False) and loss.smoothness() is not None)


def forcing(eta, rel_gap, tol):
    """The forcing term η of one column's Newton step -- its CG stops where the preconditioned residual is η times
    the first -- from ``eta``, the column's own (:func:`next_forcing`; :data:`FORCING_MAX` at the first step), but no
    tighter than :data:`FORCING_TOL` · √(tol / gap): near the end the next gap is about η² times this one, so a
    smaller η would solve past what the stopping rule asks."""
    eta = min(FORCING_MAX, float(eta))
    if tol > 0 and rel_gap > 0:
        eta = max(eta, min(FORCING_MAX, FORCING_TOL * float(np.sqrt(tol / rel_gap))))
    return eta


def next_forcing(eta, gradient, predicted, last):
    """Eisenstat & Walker's first choice of the next forcing term (1996, "Choosing the forcing terms in an inexact
    Newton method"): η = |‖g⁺‖ − ‖g + a H d‖| / ‖g‖, how far the gradient's linear model missed the new gradient --
    near 0 where the loss is nearly quadratic on the step (the square loss's second step solves to the end), larger
    where its curvature moved -- kept at least η_last^φ (φ the golden ratio) while that is above 0.1, so that it
    falls no faster than Newton's own convergence, and at most :data:`FORCING_MAX`.  Arrays per column."""
    eta = np.asarray(eta, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        ew = np.where(last > 0, np.abs(gradient - predicted) / last, FORCING_MAX)
    safe = eta ** ((1.0 + 5.0 ** 0.5) / 2.0)
    ew = np.where(safe > 0.1, np.maximum(ew, safe), ew)
    return np.minimum(FORCING_MAX, ew)


def best_offset(loss, Y, weights=None, sums=None, span=None):
    """The best constant of a loss for each output column: the model's fixed offset b₀.

    argmin_c Σ_i w_i ℓ(y_i, c), by Newton's method on Σ w ℓ'(y, c) (increasing in c for a convex loss), kept inside
    a bracket that halves where Newton leaves it.  For the square loss and the squared hinge it is the labels' mean,
    for the logistic loss the log-odds of the positive rows.

    Parameters
    ----------
    loss : Loss
        A convex loss with ``grad`` and ``curvature``.
    Y : array of shape (n, C)
        The targets as the loss reads them (±1 for a binary loss), float64.
    weights : array of shape (n,), optional
        Row weights.
    sums : callable, optional
        ``sums(c) -> (Σ w ℓ'(y, c), Σ w ℓ''(y, c))`` per column for constants ``c`` of shape (C,), host arrays: the
        sums made elsewhere (a Dask cluster's round); None: from ``Y`` and ``weights`` here.
    span : ndarray of shape (C,), optional
        With ``sums``, in place of ``Y`` (then None): the largest absolute target of each column, where the bracket
        starts.

    Returns
    -------
    ndarray of shape (C,)
        The constant of each column, float64.

    Examples
    --------
    >>> import numpy as np
    >>> from kopt.contract.registry import registry
    >>> from kopt.nystrom import best_offset
    >>> y = np.array([1.0, 1.0, 1.0, -1.0])[:, None]
    >>> logistic = registry().get("loss", "logistic")()
    >>> round(float(best_offset(logistic, y)[0]), 6) == round(float(np.log(3.0)), 6)
    True
    >>> float(best_offset(registry().get("loss", "squared_hinge")(), y)[0])
    0.5
    """
    xp = get_namespace(Y) if Y is not None else np
    if sums is None:
        def sums(c):
            c = xp.asarray(c)[None, :] + xp.zeros_like(Y)
            g, h = loss.grad(c, Y), loss.curvature(c, Y)
            if weights is not None:
                g, h = g * weights[:, None], h * weights[:, None]
            return to_numpy(xp.sum(g, axis=0)), to_numpy(xp.sum(h, axis=0))
    if span is None:
        span = to_numpy(xp.max(xp.abs(Y), axis=0)) if Y.shape[0] else np.zeros(Y.shape[1])
    span = np.maximum(1.0, np.asarray(span, dtype=np.float64))
    lo, hi = -span.copy(), span.copy()
    for _ in range(60):  # widen the bracket until Σ w ℓ' changes sign in every column
        glo, _ = sums(lo)
        ghi, _ = sums(hi)
        open_lo, open_hi = glo > 0, ghi < 0
        if not (open_lo.any() or open_hi.any()):
            break
        lo, hi = np.where(open_lo, 2.0 * lo, lo), np.where(open_hi, 2.0 * hi, hi)
    c = 0.5 * (lo + hi)
    for _ in range(OFFSET_STEPS):
        g, h = sums(c)
        lo, hi = np.where(g > 0, lo, c), np.where(g > 0, c, hi)
        with np.errstate(divide="ignore", invalid="ignore"):
            newton = c - g / h
        inside = (h > 0) & (newton > lo) & (newton < hi)
        nxt = np.where(inside, newton, 0.5 * (lo + hi))
        if np.all((nxt == c) | (g == 0) | (hi - lo <= 1e-15 * np.maximum(1.0, np.abs(c)))):
            return np.where(g == 0, c, nxt)
        c = nxt
    return c


def certificate_of(lam, n, v, g, sums, offset):
    """``(P, D, scale)`` per column (arrays of C) at v from the gradient g and a float64 pass's ``sums``, the (4, C)
    array [Σ w ℓ, Σ w ℓ*(ℓ'), Σ w ℓ', Σ |w ℓ|] over the rows at the scores f + b₀ (``offset`` b₀, C) -- the module
    docstring's P and D, and the size of the terms P − D cancels (:func:`kopt.nystrom.certificate`'s ``scale``)."""
    xp = get_namespace(v)
    norm_p = to_numpy(xp.sum(v * v, axis=0))
    r = g - lam * v
    norm_d = to_numpy(xp.sum(r * r, axis=0)) / (lam * lam)
    loss, conj, grad, size = (np.asarray(s, dtype=np.float64) for s in sums)
    P = 0.5 * lam * norm_p + loss / n
    D = -conj / n + offset * grad / n - 0.5 * lam * norm_d
    scale = lam * (norm_p + norm_d) + 2.0 * size / n + np.abs(offset * grad) / n
    return P, D, scale


def relative_gaps(P, D):
    """The relative duality gap of each column, (P − D) / max(|P|, |D|)."""
    return (P - D) / np.maximum(np.maximum(np.abs(P), np.abs(D)), 1e-300)


class NewtonRows:
    """The rows' side of :class:`SmoothNewton` on one machine: its passes, the scores and the curvature.

    It keeps the scores F = f + b₀ and the curvature weights D = w ⊙ ℓ''(F) of the last :meth:`gradient`.  A Dask
    cluster's rows' side has the same methods, each pass one round over the partitions (``newton_pcg``'s).

    Parameters
    ----------
    cg : NystromCG
        The training rows' passes and the centers' factors, made without targets (``Y=None``).
    loss : Loss
        A smooth loss with a conjugate.
    Y : array of shape (n, C)
        The targets as the loss reads them (±1 one-vs-rest columns, or real), float64.
    offset : ndarray of shape (C,)
        The fixed offset b₀ of each column (:func:`best_offset`).
    weights : array of shape (n,), optional
        Row weights (mean 1).
    estimate : array of int, optional
        Positions of the rows the preconditioner estimates T_D from (the drawn centers, and more rows): their
        curvature comes back from every :meth:`gradient`.

    Attributes
    ----------
    F, D : array of shape (n, C) or None
        The scores with the offset and the curvature weights at the last :meth:`gradient`.
    passes : int
        Passes over the rows made so far.
    n, M : int
        The rows and the kept centers.

    Examples
    --------
    >>> import numpy as np
    >>> from kopt.contract.registry import registry
    >>> from kopt.nystrom import NystromCG, NewtonRows
    >>> kernel = registry().get("kernel", "gaussian")(bandwidth=1.0)
    >>> X = np.random.default_rng(0).normal(size=(200, 2))
    >>> Y = np.where(X[:, :1] > 0, 1.0, -1.0)
    >>> rows = NewtonRows(NystromCG(kernel, X, None, X[:20], dtype="float64"), registry().get("loss", "logistic")(),
    ...                   Y, np.zeros(1), estimate=np.arange(20))
    >>> G, sums, curvature = rows.gradient(np.zeros((rows.M, 1)))
    >>> G.shape, sums.shape, float(curvature[0, 0])
    ((20, 1), (4, 1), 0.25)
    """

    def __init__(self, cg: NystromCG, loss: Loss, Y: ArrayLike, offset: np.ndarray, weights: ArrayLike | None = None,
                 estimate: np.ndarray | None = None) -> None:
        self.cg, self.loss, self.Y, self.weights = cg, loss, Y, weights
        self.xp, self.n, self.M = cg.xp, cg.n, cg.M
        self.offset = offset
        self.estimate = estimate
        self.F = self.D = None
        self.passes = 0

    def _w(self, a, lo=None, hi=None):
        if self.weights is None:
            return a
        w = self.weights if lo is None else self.weights[lo:hi]
        return a * w[:, None]

    def gradient(self, W: ArrayLike) -> tuple:
        """One pass with float64 products at the coefficients ``W``: the gradient's product, the certificate's sums and
        the curvature at the estimate's rows.

        It keeps the scores F = K W + b₀ and the curvature weights D = w ⊙ ℓ''(F) for :meth:`system` and :meth:`line`.

        Parameters
        ----------
        W : array of shape (M, C)
            The coefficients on the kept centers.

        Returns
        -------
        G : array of shape (M, C)
            Kᵀ(w ⊙ ℓ'(F)).
        sums : ndarray of shape (4, C)
            Σ w ℓ(F), Σ w ℓ*(ℓ'(F)), Σ w ℓ'(F) and Σ abs(w ℓ(F)) over the rows (``certificate_of``'s).
        curvature : array of shape (rows, C) or None
            D at the ``estimate`` rows (None without them).

        Examples
        --------
        >>> import numpy as np
        >>> from kopt.contract.registry import registry
        >>> from kopt.nystrom import NystromCG, NewtonRows, SmoothNewton
        >>> kernel = registry().get("kernel", "gaussian")(bandwidth=1.0)
        >>> X = np.random.default_rng(0).normal(size=(200, 2))
        >>> Y = np.where(X[:, :1] > 0, 1.0, -1.0)
        >>> rows = NewtonRows(NystromCG(kernel, X, None, X[:20], dtype="float64"), registry().get("loss", "logistic")(),
        ...                   Y, np.zeros(1), estimate=np.arange(20))
        >>> G, sums, curvature = rows.gradient(np.zeros((rows.M, 1)))
        >>> G.shape, sums.shape, float(curvature[0, 0]), rows.passes
        ((20, 1), (4, 1), 0.25, 1)
        """
        xp, loss, Y, b0 = self.xp, self.loss, self.Y, xp_offset(self.xp, self.offset)
        S, G = self.cg.rows.predict_adjoint(W, lambda f, lo, hi: self._w(loss.grad(f + b0, Y[lo:hi]), lo, hi))
        self.passes += 1
        F = S
        F += b0
        lp = loss.grad(F, Y)
        values = self._w(loss.value(F, Y))
        sums = xp.stack([xp.sum(values, axis=0), xp.sum(self._w(loss.conj(lp, Y)), axis=0),
                         xp.sum(self._w(lp), axis=0), xp.sum(xp.abs(values), axis=0)])
        del values, lp
        self.F = F
        self.D = self._w(loss.curvature(F, Y).astype(np.float64, copy=False))
        at = None if self.estimate is None else self.D[xp.asarray(self.estimate)]
        return G, to_numpy(sums), at

    def system(self, b: ArrayLike, estimate_weights: ArrayLike | None,
               estimate_rows: ArrayLike | None = None) -> NystromCG:
        """The Newton system at the last :meth:`gradient`: :meth:`NystromCG.weighted_system` on its curvature weights.

        Parameters
        ----------
        b : array of shape (M, C)
            The whitened right-hand side (the negative gradient).
        estimate_weights : array or None
            The preconditioner's weights, one per estimate row.
        estimate_rows : array, optional
            The estimate's dense rows (None: the drawn centers).

        Returns
        -------
        NystromCG
            The system's CG.

        Examples
        --------
        >>> import numpy as np
        >>> from kopt.contract.registry import registry
        >>> from kopt.nystrom import NystromCG, NewtonRows, SmoothNewton
        >>> kernel = registry().get("kernel", "gaussian")(bandwidth=1.0)
        >>> X = np.random.default_rng(0).normal(size=(200, 2))
        >>> Y = np.where(X[:, :1] > 0, 1.0, -1.0)
        >>> rows = NewtonRows(NystromCG(kernel, X, None, X[:20], dtype="float64"), registry().get("loss", "logistic")(),
        ...                   Y, np.zeros(1), estimate=np.arange(20))
        >>> _ = rows.gradient(np.zeros((rows.M, 1)))
        >>> system = rows.system(np.ones((rows.M, 1)), np.full(20, 0.25))
        >>> s = system.start(1e-3)
        >>> rows.step_pass(system, s)
        >>> rows.passes
        2
        """
        return self.cg.weighted_system(self.D, b, estimate_weights, estimate_rows)

    def step_pass(self, system: NystromCG, s: dict) -> None:
        """One CG step on ``system``'s state ``s``, in place: one pass (counted).

        Parameters
        ----------
        system : NystromCG
            :meth:`system`'s CG.
        s : dict
            Its state.

        Examples
        --------
        >>> import numpy as np
        >>> from kopt.contract.registry import registry
        >>> from kopt.nystrom import NystromCG, NewtonRows, SmoothNewton
        >>> kernel = registry().get("kernel", "gaussian")(bandwidth=1.0)
        >>> X = np.random.default_rng(0).normal(size=(200, 2))
        >>> Y = np.where(X[:, :1] > 0, 1.0, -1.0)
        >>> rows = NewtonRows(NystromCG(kernel, X, None, X[:20], dtype="float64"), registry().get("loss", "logistic")(),
        ...                   Y, np.zeros(1), estimate=np.arange(20))
        >>> _ = rows.gradient(np.zeros((rows.M, 1)))
        >>> system = rows.system(np.ones((rows.M, 1)), None)
        >>> s = system.start(1e-3)
        >>> rows.step_pass(system, s)
        >>> bool(np.any(s["v"] != 0)), rows.passes
        (True, 2)
        """
        system.step(s)
        self.passes += 1

    def line(self, s: dict, A: np.ndarray) -> np.ndarray:
        """The loss along CG's direction: Σ_i w_i ℓ(y_i, F_i + a K d_i) per column for each row of step lengths.

        The direction's scores K d are CG's carried ``s["scores"]``: no pass.

        Parameters
        ----------
        s : dict
            The CG state of the Newton step.
        A : ndarray of shape (k, C)
            Step lengths, one row per trial, float64 on the host.

        Returns
        -------
        ndarray of shape (k, C)
            The sums, on the host.

        Examples
        --------
        >>> import numpy as np
        >>> from kopt.contract.registry import registry
        >>> from kopt.nystrom import NystromCG, NewtonRows, SmoothNewton
        >>> kernel = registry().get("kernel", "gaussian")(bandwidth=1.0)
        >>> X = np.random.default_rng(0).normal(size=(200, 2))
        >>> Y = np.where(X[:, :1] > 0, 1.0, -1.0)
        >>> rows = NewtonRows(NystromCG(kernel, X, None, X[:20], dtype="float64"), registry().get("loss", "logistic")(),
        ...                   Y, np.zeros(1), estimate=np.arange(20))
        >>> _ = rows.gradient(np.zeros((rows.M, 1)))
        >>> system = rows.system(np.ones((rows.M, 1)), None)
        >>> s = system.start(1e-3)
        >>> rows.step_pass(system, s)
        >>> sums = rows.line(s, np.array([[0.0], [1.0]]))
        >>> sums.shape, bool(abs(sums[0, 0] / 200 - np.log(2)) < 1e-12)
        ((2, 1), True)
        """
        xp = self.xp
        Kd = s["scores"]
        out = np.zeros(A.shape)
        for j in range(A.shape[0]):
            a = xp.asarray(A[j])
            out[j] = to_numpy(xp.sum(self._w(self.loss.value(self.F + a[None, :] * Kd, self.Y)), axis=0))
        return out

    def scores(self) -> ArrayLike | None:
        """The scores F = f + b₀ of the last :meth:`gradient`.

        Returns
        -------
        array of shape (n, C) or None
            None before the first :meth:`gradient`.

        Examples
        --------
        >>> import numpy as np
        >>> from kopt.contract.registry import registry
        >>> from kopt.nystrom import NystromCG, NewtonRows, SmoothNewton
        >>> kernel = registry().get("kernel", "gaussian")(bandwidth=1.0)
        >>> X = np.random.default_rng(0).normal(size=(200, 2))
        >>> Y = np.where(X[:, :1] > 0, 1.0, -1.0)
        >>> rows = NewtonRows(NystromCG(kernel, X, None, X[:20], dtype="float64"), registry().get("loss", "logistic")(),
        ...                   Y, np.zeros(1), estimate=np.arange(20))
        >>> rows.scores() is None
        True
        >>> _ = rows.gradient(np.zeros((rows.M, 1)))
        >>> rows.scores().shape
        (200, 1)
        """
        return self.F


def xp_offset(xp, offset):
    """The offset as a row (1 × C) on the backend."""
    return xp.asarray(np.asarray(offset, dtype=np.float64))[None, :]


class SmoothNewton:
    """Newton's method for a smooth loss on Nyström centers, each step's system solved by the preconditioned CG.

    See this module's description (``kopt.nystrom.smooth``): each :meth:`step` runs CG on the curvature-weighted
    system to its forcing term, a backtracking line search with no pass, and one float64 pass at the new point,
    whose certificate is the state's ``P`` and ``D``.

    Parameters
    ----------
    rows : NewtonRows
        The rows' side (or a cluster's, with the same methods).
    lam : float
        λ.
    tol : float, optional
        The relative duality gap each column is held to (a column that meets it takes no more steps; 0: none).
    cg_steps : int, optional
        CG steps per Newton step, at most.
    estimate_rows : array, optional
        The preconditioner's dense rows where they are more than the drawn centers (then ``rows.estimate`` are
        their positions).

    Attributes
    ----------
    rows : NewtonRows
        The rows' side.
    lam, tol : float
        λ and the tolerance.
    cg_steps : int
        The CG steps' cap.

    Notes
    -----
    The state is a dict (:meth:`start`): ``v`` (M × C), ``g`` (the gradient), ``W`` = U⁻¹v, ``P``, ``D``, ``scale``
    and ``rel`` (per column, host arrays), ``eta`` (each column's next forcing term, kept in a checkpoint),
    ``estimate`` (the curvature at the preconditioner's rows), ``preconditioner`` (the kept preconditioner's weights
    and the CG steps taken where it was made, or None: the next step makes its own; kept in a checkpoint) and the last
    step's ``cg_steps`` and ``steps`` (step lengths).

    Examples
    --------
    >>> import numpy as np
    >>> from kopt.contract.registry import registry
    >>> from kopt.nystrom import NystromCG, NewtonRows, SmoothNewton, best_offset
    >>> kernel = registry().get("kernel", "gaussian")(bandwidth=1.0)
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(300, 2))
    >>> Y = np.where(np.sin(2 * X[:, :1]) + 0.3 * rng.normal(size=(300, 1)) > 0, 1.0, -1.0)
    >>> logistic = registry().get("loss", "logistic")()
    >>> cg = NystromCG(kernel, X, None, X[:30], dtype="float64")
    >>> rows = NewtonRows(cg, logistic, Y, best_offset(logistic, Y), estimate=np.arange(30))
    >>> newton = SmoothNewton(rows, 1e-3, tol=1e-8)
    >>> state = newton.start(np.zeros((cg.M, 1)))
    >>> while not newton.done(state):
    ...     state = newton.step(state)
    >>> bool(state["rel"][0] <= 1e-8), state["W"].shape == (cg.M, 1)
    (True, True)
    """

    def __init__(self, rows: NewtonRows, lam: float, tol: float = 0.0, cg_steps: int = 50,
                 estimate_rows: ArrayLike | None = None) -> None:
        self.rows, self.lam, self.tol, self.cg_steps = rows, float(lam), float(tol), int(cg_steps)
        self.estimate_rows = estimate_rows
        self.cg = rows.cg
        self.xp = rows.xp

    def start(self, v: ArrayLike, eta: ArrayLike | None = None, preconditioner: dict | None = None) -> dict:
        """The state at v: one float64 pass (the gradient, the certificate, the curvature).

        Parameters
        ----------
        v : array of shape (M, C)
            The whitened coefficients.
        eta : array of shape (C,), optional
            The forcing terms of a run this one continues (a checkpoint's), else ``FORCING_MAX``.
        preconditioner : dict, optional
            The kept preconditioner of a run this one continues (a checkpoint's ``weights`` and ``steps``): its next
            step makes the same factor from them, so the run goes on with the same bits.

        Returns
        -------
        dict
            The state (the class's Notes).

        Examples
        --------
        >>> import numpy as np
        >>> from kopt.contract.registry import registry
        >>> from kopt.nystrom import NystromCG, NewtonRows, SmoothNewton
        >>> kernel = registry().get("kernel", "gaussian")(bandwidth=1.0)
        >>> X = np.random.default_rng(0).normal(size=(200, 2))
        >>> Y = np.where(X[:, :1] > 0, 1.0, -1.0)
        >>> rows = NewtonRows(NystromCG(kernel, X, None, X[:20], dtype="float64"), registry().get("loss", "logistic")(),
        ...                   Y, np.zeros(1), estimate=np.arange(20))
        >>> state = SmoothNewton(rows, 1e-3).start(np.zeros((rows.M, 1)))
        >>> round(float(state["P"][0]), 6) == round(float(np.log(2)), 6), state["eta"]
        (True, array([0.5]))
        """
        state = {"v": self.xp.asarray(v, dtype=np.float64)}
        self._at(state)
        C = state["v"].shape[1]
        state["eta"] = np.full(C, FORCING_MAX) if eta is None else np.asarray(eta, dtype=np.float64).reshape(C)
        state["preconditioner"] = None if preconditioner is None else {
            "weights": self.xp.asarray(preconditioner["weights"], dtype=np.float64),
            "steps": int(preconditioner["steps"])}
        return state

    def _at(self, state):
        """The float64 pass at ``state["v"]``: the gradient, the certificate and the curvature at the estimate's rows."""
        xp, lam = self.xp, self.lam
        v = state["v"]
        W = self.cg.coef(v)
        G, sums, at = self.rows.gradient(W)
        g = lam * v + self.cg.factors.whiten(G / self.rows.n)
        P, D, scale = certificate_of(lam, self.rows.n, v, g, sums, np.asarray(self.rows.offset, dtype=np.float64))
        state.update(W=W, g=g, P=P, D=D, scale=scale, rel=relative_gaps(P, D),
                     gnorm=to_numpy(xp.sqrt(xp.sum(g * g, axis=0))), estimate=at)

    def done(self, state: dict) -> bool:
        """Whether every column's certificate meets the tolerance (never, where it is 0).

        Parameters
        ----------
        state : dict
            The state.

        Returns
        -------
        bool
            True where every column's relative gap is at most ``tol``.

        Examples
        --------
        >>> import numpy as np
        >>> from kopt.contract.registry import registry
        >>> from kopt.nystrom import NystromCG, NewtonRows, SmoothNewton
        >>> kernel = registry().get("kernel", "gaussian")(bandwidth=1.0)
        >>> X = np.random.default_rng(0).normal(size=(200, 2))
        >>> Y = np.where(X[:, :1] > 0, 1.0, -1.0)
        >>> rows = NewtonRows(NystromCG(kernel, X, None, X[:20], dtype="float64"), registry().get("loss", "logistic")(),
        ...                   Y, np.zeros(1), estimate=np.arange(20))
        >>> newton = SmoothNewton(rows, 1e-3, tol=1e-6)
        >>> state = newton.start(np.zeros((rows.M, 1)))
        >>> newton.done(state)
        False
        """
        return self.tol > 0 and bool(np.all(state["rel"] <= self.tol))

    def step(self, state: dict) -> dict:
        """One Newton step of every column whose certificate does not meet the tolerance, in place.

        CG on the curvature-weighted system to each column's forcing term, a backtracking line search (no pass), one
        float64 pass at the new point.

        Parameters
        ----------
        state : dict
            The state (:meth:`start`).

        Returns
        -------
        dict
            The same state, at the new point, with the step's ``cg_steps`` and ``steps`` (step lengths).

        Examples
        --------
        >>> import numpy as np
        >>> from kopt.contract.registry import registry
        >>> from kopt.nystrom import NystromCG, NewtonRows, SmoothNewton
        >>> kernel = registry().get("kernel", "gaussian")(bandwidth=1.0)
        >>> X = np.random.default_rng(0).normal(size=(200, 2))
        >>> Y = np.where(X[:, :1] > 0, 1.0, -1.0)
        >>> rows = NewtonRows(NystromCG(kernel, X, None, X[:20], dtype="float64"), registry().get("loss", "logistic")(),
        ...                   Y, np.zeros(1), estimate=np.arange(20))
        >>> newton = SmoothNewton(rows, 1e-3, tol=1e-6)
        >>> state = newton.start(np.zeros((rows.M, 1)))
        >>> before = float(state["P"][0])
        >>> state = newton.step(state)
        >>> bool(state["P"][0] < before), state["steps"]
        (True, array([1.]))
        """
        xp, lam = self.xp, self.lam
        C = state["v"].shape[1]
        live = np.ones(C, dtype=bool) if self.tol <= 0 else state["rel"] > self.tol
        if not live.any():
            state.update(cg_steps=0, steps=np.zeros(C))
            return state
        b = -state["g"]
        if not live.all():
            b = b * xp.asarray(live.astype(np.float64))[None, :]
        weights, kept = None, state.get("preconditioner")
        if kept is not None:  # the last step's preconditioner: its factor is in the buffer (CenterFactors.holds)
            weights = kept["weights"]
        elif state["estimate"] is not None:  # the live columns' mean curvature, shrunk towards its mean
            weights = xp.mean(state["estimate"][:, xp.asarray(np.flatnonzero(live))], axis=1)
            weights = (1.0 - CURVATURE_SHRINK) * weights + CURVATURE_SHRINK * xp.mean(weights)
        system = self.rows.system(b, weights, self.estimate_rows)
        s = system.start(lam)
        eta = np.array([forcing(state["eta"][c], state["rel"][c], self.tol) for c in range(C)])
        rz0 = to_numpy(s["rz"]).copy()
        stopped = ~live | (rz0 <= 0)
        residual = s["r"].copy()  # each column's residual where its CG stopped (the forcing's model, below)
        steps = 0
        while steps < self.cg_steps:
            met = ~stopped & (to_numpy(s["rz"]) <= (eta * eta) * rz0)
            if met.any():  # a column that met its forcing stops where it is: zero residual and direction
                stop = xp.asarray(met.astype(np.float64))[None, :]
                residual = residual * (1.0 - stop) + s["r"] * stop
                s["r"], s["p"], s["rz"] = s["r"] * (1.0 - stop), s["p"] * (1.0 - stop), s["rz"] * (1.0 - stop[0])
                stopped |= met
            if stopped.all():
                break
            self.rows.step_pass(system, s)
            steps += 1
        running = xp.asarray((~stopped).astype(np.float64))[None, :]
        residual = s["r"] * running + residual * (1.0 - running)
        a = self._line_search(state, s, live)
        A = xp.asarray(a)[None, :]
        # the linear model's gradient at the step, g + a H d = (1 − a) g − a r (CG's residual r = −g − H d)
        predicted = to_numpy(xp.sqrt(xp.sum(((1.0 - A) * state["g"] - A * residual) ** 2, axis=0)))
        last = state["gnorm"]
        state["v"] = state["v"] + A * s["v"]
        state.update(cg_steps=steps, steps=a, preconditioner=self._kept(kept, weights, steps))
        del s, system
        self._at(state)
        moved = live & (a > 0)
        state["eta"] = np.where(moved, next_forcing(eta, state["gnorm"], predicted, last), state["eta"])
        return state

    def _kept(self, kept, weights, steps):
        """The preconditioner the next step keeps (module docstring, step 1), where a new one costs at least one pass
        (:func:`factor_passes`): the one this step made, with its CG ``steps``; the kept one while this step's steps
        exceed those taken where it was made by no more than a new one costs in passes.  None (the next step makes
        its own) past that, where a new one costs less than a pass, or where the preconditioner has no weights of its
        own."""
        if weights is None:
            return None
        cost = factor_passes(self.rows.n, int(self.cg.C.shape[1]), int(self.rows.M), int(weights.shape[0]))
        if cost < 1.0:
            return None
        if kept is None:
            return {"weights": weights, "steps": int(steps)}
        return kept if steps <= kept["steps"] + cost else None

    def _line_search(self, state, s, live):
        """Each column's step length: 1 where Armijo's condition holds there, else the largest of 2⁻¹ ... 2⁻ᴮ where it
        does (0 where none: the column's J no longer falls by what its rounding resolves)."""
        xp, lam, n = self.xp, self.lam, self.rows.n
        v, d, g = state["v"], s["v"], state["g"]
        vd = to_numpy(xp.sum(v * d, axis=0))
        dd = to_numpy(xp.sum(d * d, axis=0))
        vv = to_numpy(xp.sum(v * v, axis=0))
        slope = to_numpy(xp.sum(g * d, axis=0))
        J0 = state["P"]

        def J(A, sums):
            return 0.5 * lam * (vv + 2.0 * A * vd + A * A * dd) + sums / n

        def ok(A, sums):
            return J(A, sums) <= J0 + ARMIJO * A * slope

        full = np.ones((1, len(live)))
        a = np.where(live & ok(full, self.rows.line(s, full))[0], 1.0, 0.0)
        back = live & (a == 0)
        if back.any():
            A = np.repeat(0.5 ** np.arange(1, BACKTRACKS + 1)[:, None], len(live), axis=1)
            good = ok(A, self.rows.line(s, A))
            first = np.argmax(good, axis=0)
            found = good[first, np.arange(len(live))]
            a = np.where(back & found, A[first, np.arange(len(live))], a)
        return a
