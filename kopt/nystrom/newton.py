"""The squared hinge on Nyström centers by active-set Newton: each step one M × M solve on the rows inside the margin.

The model is f(x) = k(x, C) w + b with ‖f‖² = wᵀRw (R = K_CC = UᵀU, v = Uw), and the objective kopt's

    J(v, b) = λ/2 ‖v‖² + (1/n) Σ_i w_i ½ max(0, 1 − y_i f_i)²         (y_i = ±1, w_i the row weights)

is a least-squares problem on the rows S = {y_i f_i < 1}: there ½ max(0, 1 − y f)² = ½ (f − y)².  Its
Hessian is therefore the Nyström system of the rows in S, T_S + λI in the whitened coordinates (T_S =
(1/n) Σ_S w_i z_i z_iᵀ, z_i = U⁻ᵀ k_i), bordered by the bias: e_S = (1/n) Σ_S w_i z_i and s_S = (1/n) Σ_S w_i.
Newton's method on J is the finite Newton method of the L2-SVM (Keerthi & DeCoste, JMLR 2005; Chapelle,
Neural Computation 2007): a step solves the square loss on the rows of S, and the method ends when a step
leaves S as it found it (then the step was exact).

What one step costs (:meth:`HingeNewton.step`):

* one pass over every row: the scores f = k(X, C) w + b, and Kᵀ r with r_i = w_i (f_i − y_i) on S (the
  gradient), in row chunks on kopt's worker threads (:func:`margin_pass`) -- no n × M array is held;
* T_S is kept, not rebuilt: the rows that crossed the margin go in or out by a rank-k update of their whitened
  features (:meth:`NystromSystem.update_whitened`, rows · M² flops) when the next factor is made; where more rows
  changed than S holds, T_S is made again from S's rows alone;
* the Cholesky factor of T_S + λI (M³/3 flops) is made in T_S's own buffer and held from step to step
  (:meth:`NystromSystem.hold_factor`).  While λ is the same and at most :data:`STALE_SHARE` of M rows crossed the
  margin since it was made, a step solves with it by Woodbury's identity (:meth:`HingeNewton._woodbury`: the crossed
  rows' features through L⁻¹, 2 M² flops a row, and a k × k system) instead of a new factor; after the first steps
  of a λ few rows cross (docs/design/squared-hinge-newton.md).  Two solves give the bias's border.

The step is the gradient form d = H⁻¹ g (g from the float64 pass, H from the accumulated T_S), so the rounding
of T_S's updates only slows the convergence, never moves the point it converges to -- while that rounding (a
kernel value's, eps/2 relative: the same row's value differs in another chunk of rows) stays below λ; ``solver:
auto`` tries no smaller λ for the hinge (``kopt_plugins.auto.planner``).  Where the full step
raises J (early, when many rows cross), the exact minimiser of J on the segment is found from the two passes'
scores (J is convex and piecewise quadratic in the step length: bisection on its derivative, no pass per
trial), and one more pass scores that point.  A solve ends with :meth:`HingeNewton.polish`: one direct solve of the
square loss on the final margin rows, their system made from nothing, whose bits depend on those rows alone.
"""
from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from ..numerics import rows as _rows
from ..numerics import threads as _threads_mod
from ..numerics.backend import get_namespace, to_numpy
from ..numerics.linalg import cho_solve, solve_triangular
from .system import (
    CHUNK_ENTRIES,
    SCORE_ENTRIES,
    NystromSystem,
    blas_held,
    kernel_chunks,
    row_chunks,
    solve_upper_transposed,
)

#: Newton steps of one class at most: far more than the finite Newton method of the L2-SVM takes to converge
#: (docs/design/squared-hinge-newton.md)
MAX_STEPS = 50
#: a full step whose objective rose by more than this share of it is cut back by the line search (smaller rises are the
#: passes' rounding near the minimiser)
RISE = 1e-12
#: a Newton solve holds its rows' kernel values (in the problem's dtype) from its first pass on where they take at most
#: this many bytes: its later passes and its T_S updates then read them instead of computing k(X, C) again (the
#: search's smaller sizes: docs/design/squared-hinge-newton.md).  Above it every pass computes them.
CACHE_BYTES = 64 << 20
#: bisection steps of the exact line search (the step length to 2⁻⁴⁰)
LINE_SEARCH_STEPS = 40
#: a Newton step solves with an earlier step's factor (Woodbury's identity: :meth:`HingeNewton._solve`) while the rows
#: that crossed the margin since it was made are at most this share of the centers: L⁻¹ of their whitened features is
#: then held in one M x M/8 float64 buffer (an eighth of T's size), and the identity's own work (2 M² flops a row, M k²
#: for WᵀW) stays below the M³/3 of a new factor
STALE_SHARE = 1 / 8


def held_columns_plan(M, n):
    """The :mod:`kopt.numerics.memory` plan item of a Newton solve's held-factor columns on M centers and n rows
    (:meth:`HingeNewton._woodbury`): M x min(n, M/8) float64."""
    from ..numerics.memory import matrices

    return matrices(1, M, max(1, min(n, int(M * STALE_SHARE))), "float64",
                    "a squared-hinge Newton solve's held-factor columns (Woodbury)")


def margin_pass(kernel, C, dtype, w, b, X, y, weights=None, threads=1, inside=None, bound=None, cached=None):
    """One float64 pass over the rows X at (w, b): the scores f = k(X, C) w + b and the M × 2 sums
    [Kᵀ r, Kᵀ a] with r_i = w_i (f_i − y_i) and a_i = w_i on the rows inside the margin (y_i f_i < 1), else 0.

    The rows are cut into :data:`kopt.numerics.threads.PARTS` contiguous parts, whatever ``threads``, run on up to ``threads``
    of kopt's worker threads (BLAS held to one inside: a pass is kernel values, whose exps NumPy runs on one core)
    and summed in part order: the same bits on any thread count.  ``inside``: a boolean mask of the rows taken as
    inside the margin instead of y f < 1 (a start from a given set of rows).  ``bound``: ``kernel.bind(C)`` where the
    caller holds it: the centers' side of the kernel is made once for all parts (and passes), not per part (a
    transpose of reuters' 512 x 8,315 dense centers per part was half of its search's time).  ``cached``: the parts'
    kernel values (:func:`kernel_parts`), read instead of computed: the same bits."""
    xp = get_namespace(C)
    n = X.shape[0]
    bound = kernel.bind(C) if bound is None else bound
    parts = _threads_mod.split(n, _threads_mod.PARTS)

    def part(p):
        lo, hi = parts[p]
        Xp = _rows.take(X, slice(lo, hi))
        chunks = (kernel_chunks(kernel, C, dtype, Xp, SCORE_ENTRIES, bound) if cached is None
                  else _cached_chunks(cached[p], Xp, kernel))
        return _margin_part(C, w, b, chunks, Xp.shape[0], y[lo:hi], None if weights is None else weights[lo:hi],
                            None if inside is None else inside[lo:hi])

    done = _on_parts(part, len(parts), threads, xp)
    f = xp.concatenate([d[0] for d in done]) if done else xp.empty(0, dtype=np.float64)
    sums = xp.zeros((C.shape[0], 2), dtype=np.float64)
    for d in done:
        sums += d[1]
    return f, sums


def _margin_part(C, w, b, chunks, rows, y, weights, forced):
    xp = get_namespace(C)
    f = xp.empty(rows, dtype=np.float64)
    sums = xp.zeros((C.shape[0], 2), dtype=np.float64)
    for lo, hi, K in chunks:
        fc = K @ w + b
        f[lo:hi] = fc
        yc = y[lo:hi]
        inside = yc * fc < 1.0 if forced is None else forced[lo:hi]
        # a row outside the margin adds nothing to the sums: the product runs over the rows inside only (about a tenth
        # of them once the first steps are done: a quarter of a pass's time went to the full product)
        idx = xp.flatnonzero(inside)
        if idx.shape[0] == 0:
            continue
        a = xp.ones(idx.shape[0], dtype=np.float64) if weights is None else weights[lo:hi][idx]
        Ks = K if idx.shape[0] == K.shape[0] else K[idx]
        sums += Ks.T @ xp.stack([a * (fc[idx] - yc[idx]), a], axis=1)
    return f, sums


def kernel_parts(kernel, C, dtype, X, bound=None, threads=1):
    """The kernel values k(X, C) of :func:`margin_pass`'s parts, each an array in ``dtype`` (computed in the chunks
    a pass computes them in: :func:`margin_pass` with ``cached`` gives the same bits as without)."""
    xp = get_namespace(C)
    bound = kernel.bind(C) if bound is None else bound
    parts = _threads_mod.split(X.shape[0], _threads_mod.PARTS)

    def part(p):
        lo, hi = parts[p]
        out = xp.empty((hi - lo, C.shape[0]), dtype=dtype)
        for a, z, K in kernel_chunks(kernel, C, dtype, _rows.take(X, slice(lo, hi)), SCORE_ENTRIES, bound):
            out[a:z] = K
        return out

    return _on_parts(part, len(parts), threads, xp)


def _on_parts(fn, parts, threads, xp):
    """``[fn(p) for p in range(parts)]`` on up to ``threads`` of kopt's worker threads, BLAS held to one inside (NumPy
    only; in part order, so sums over the results have the same bits on any thread count)."""
    if threads > 1 and xp is np and parts > 1:
        with _threads_mod.blas_threads(1):
            return _threads_mod.map_parts(fn, parts, threads)
    return [fn(p) for p in range(parts)]


def _cached_chunks(K, X, kernel):
    """:func:`kernel_chunks`' chunks of a part's held kernel values K (the same rows per chunk, float64)."""
    buf = None
    for lo, hi in row_chunks(X, K.shape[1], kernel, SCORE_ENTRIES):
        if buf is None:
            buf = np.empty((hi - lo, K.shape[1]), dtype=np.float64)
        out = buf[:hi - lo]
        out[...] = K[lo:hi]
        yield lo, hi, out


def hinge_objective(lam, v, f, y, weights=None):
    """J = λ/2 ‖v‖² + mean w_i ½ max(0, 1 − y_i f_i)²."""
    xp = get_namespace(f)
    m = xp.maximum(1.0 - y * f, 0.0)
    terms = 0.5 * m * m
    if weights is not None:
        terms = terms * weights
    return float(0.5 * lam * xp.sum(v * v) + xp.mean(terms))


def line_search(lam, v, d, f0, f1, y, weights=None):
    """The step length t in [0, 1] minimising J(v + t d) with scores f0 + t (f1 − f0): J is convex and piecewise
    quadratic in t, so its derivative is increasing -- bisection on it."""
    xp = get_namespace(f0)
    df = f1 - f0
    vd, dd = float(xp.sum(v * d)), float(xp.sum(d * d))
    wy = y if weights is None else y * weights
    n = f0.shape[0]

    def slope(t):
        slack = xp.maximum(1.0 - y * (f0 + t * df), 0.0)
        return lam * (vd + t * dd) - float(xp.sum(wy * df * slack)) / n

    if slope(1.0) <= 0.0:
        return 1.0
    lo, hi = 0.0, 1.0
    for _ in range(LINE_SEARCH_STEPS):
        mid = 0.5 * (lo + hi)
        if slope(mid) > 0.0:
            hi = mid
        else:
            lo = mid
    return 0.5 * (lo + hi)


class HingeNewton:
    """Active-set Newton for one ±1 target column of the squared hinge on a :class:`NystromSystem`.

    The objective J(v, b) = λ/2 ‖v‖² + (1/n) Σ_i w_i ½ max(0, 1 − y_i f_i)² is a least-squares problem on the rows
    inside the margin, so each step solves the square loss on those rows (the finite Newton method of the L2-SVM,
    Keerthi and DeCoste (2005)); the method ends when a step leaves the margin rows as it found it.  Each step is one
    pass over every row and one M × M solve; the factor of the margin rows' system is kept from step to step and
    updated for the rows that crossed the margin.

    Parameters
    ----------
    system : NystromSystem
        Its T made (:meth:`NystromSystem.whitened`), counted over X's rows; the solve changes it.
    X : array or sparse matrix of shape (n, d)
        The rows.
    y : array of shape (n,)
        The ±1 targets.
    lam : float
        λ.
    weights : array of shape (n,), optional
        Row weights.
    v : array of shape (M,), optional
        The whitened coefficients to start from (None: 0, where every row is inside the margin).
    b : float, optional
        The bias to start from.
    in_T : array of bool, optional
        The rows T sums over (None: every row).
    threads : int, optional
        BLAS threads for the factor.
    rtol : float, optional
        A step that lowers J by at most this share also ends the solve (0: only a step that moves no row).
    workers : int, optional
        kopt's worker threads for the passes.
    start_inside : array of bool, optional
        Rows the first step takes as the margin rows whatever the start's scores.
    cache_bytes : int, optional
        The rows' kernel values are kept from the first pass on where they take at most this many bytes.

    Attributes
    ----------
    v, b : array, float
        The whitened coefficients and the bias after the last :meth:`step`.
    w : array of shape (M,)
        The coefficients on the centers, U⁻¹ v.
    f : array of shape (n,)
        The scores of X.
    objective : float
        J.
    moved : int
        Rows that crossed the margin in the last step.
    converged : bool
        Whether the last step moved no row (or met ``rtol``).

    Raises
    ------
    ValueError
        The system counts another number of rows than ``X`` has (:meth:`NystromSystem.rescale` it first).

    Examples
    --------
    >>> import numpy as np
    >>> from kopt.contract.registry import registry
    >>> from kopt.nystrom import HingeNewton, NystromSystem
    >>> kernel = registry().get("kernel", "gaussian")(bandwidth=1.0)
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(200, 2))
    >>> y = np.where(X[:, 0] + 0.3 * rng.normal(size=200) > 0, 1.0, -1.0)
    >>> system = NystromSystem(kernel, X, y[:, None], X[:20], dtype=np.float64)
    >>> _ = system.whitened()
    >>> newton = HingeNewton(system, X, y, 1e-3)
    >>> while not newton.converged:
    ...     _ = newton.step()
    >>> float(np.mean(np.sign(newton.f) == y))
    0.95
    """

    def __init__(self, system: NystromSystem, X: ArrayLike, y: np.ndarray, lam: float,
                 weights: np.ndarray | None = None, v: np.ndarray | None = None, b: float = 0.0,
                 in_T: np.ndarray | None = None, threads: int | None = None, rtol: float = 0.0,
                 workers: int | None = None, start_inside: np.ndarray | None = None,
                 cache_bytes: int = CACHE_BYTES) -> None:
        xp = system.xp
        if system.n != X.shape[0]:
            raise ValueError(f"the system counts {system.n} rows and X has {X.shape[0]}: rescale it first")
        self.system, self.X, self.y, self.lam, self.weights, self.threads = system, X, y, float(lam), weights, threads
        self.v = xp.zeros(system.M, dtype=np.float64) if v is None else xp.asarray(v, dtype=np.float64)
        self.b = float(b)
        self.in_T = xp.ones(X.shape[0], dtype=bool) if in_T is None else in_T
        self.rtol = float(rtol)
        self._forced = start_inside
        self._bound = None  # the kernel bound to the system's centers, made at the first pass
        itemsize = np.dtype(system.dtype).itemsize
        self._cacheable = system.xp is np and X.shape[0] * system.M * itemsize <= cache_bytes
        self._cache = None  # the parts' kernel values (:func:`kernel_parts`), held where they fit cache_bytes
        self.workers = _threads_mod.resolve_threads(workers)
        self._T_rows = self.in_T  # the rows the system's T sums (it follows ``in_T`` at a new factor: ``_solve``)
        self._factor_lam = self._L = None  # the held factor of T + λI and its λ (``_solve``)
        self._stale = None  # the Woodbury steps' rows and W = L⁻¹V, in one buffer (``_woodbury``)
        self.stale_rows = int(system.M * STALE_SHARE)
        self.factors = 0  # the factors of T_S + λI made so far (a step on a held one makes none)
        self.f = self.sums = None
        self.objective = None
        self.moved, self.converged, self.steps, self.line_searches = None, False, 0, 0

    @property
    def w(self) -> np.ndarray:
        """The coefficients on the centers, U⁻¹ v.

        Examples
        --------
        >>> import numpy as np
        >>> from kopt.contract.registry import registry
        >>> from kopt.nystrom import HingeNewton, NystromSystem
        >>> X = np.random.default_rng(0).normal(size=(200, 2))
        >>> y = np.where(X[:, 0] > 0, 1.0, -1.0)
        >>> kernel = registry().get("kernel", "gaussian")(bandwidth=1.0)
        >>> system = NystromSystem(kernel, X, y[:, None], X[:20], dtype=np.float64)
        >>> _ = system.whitened()
        >>> newton = HingeNewton(system, X, y, 1e-3)
        >>> newton.w.shape
        (20,)
        """
        return self.system.coef(self.v)

    def _margin_pass(self, w, b, inside):
        """:func:`margin_pass` over X at (w, b), with the kernel bound to the centers and, where they fit, the rows'
        kernel values held (both made at the first pass)."""
        s = self.system
        if self._bound is None:
            self._bound = s.kernel.bind(s.C)
        if self._cacheable and self._cache is None:
            self._cache = kernel_parts(s.kernel, s.C, s.dtype, self.X, self._bound, self.workers)
        return margin_pass(s.kernel, s.C, s.dtype, w, b, self.X, self.y, self.weights, self.workers, inside,
                           self._bound, self._cache)

    def score(self) -> None:
        """Score the rows at (v, b): one pass sets ``f``, the pass's sums and ``objective``.

        Examples
        --------
        >>> import numpy as np
        >>> from kopt.contract.registry import registry
        >>> from kopt.nystrom import HingeNewton, NystromSystem
        >>> X = np.random.default_rng(0).normal(size=(200, 2))
        >>> y = np.where(X[:, 0] > 0, 1.0, -1.0)
        >>> kernel = registry().get("kernel", "gaussian")(bandwidth=1.0)
        >>> system = NystromSystem(kernel, X, y[:, None], X[:20], dtype=np.float64)
        >>> _ = system.whitened()
        >>> newton = HingeNewton(system, X, y, 1e-3)
        >>> newton.score()
        >>> newton.objective  # v = 0, b = 0: every row inside the margin, ½ (1 − 0)² each
        0.5
        """
        self.f, self.sums = self._margin_pass(self.w, self.b, self._forced)
        self.objective = hinge_objective(self.lam, self.v, self.f, self.y, self.weights)

    def inside(self) -> np.ndarray:
        """The rows inside the margin, y f < 1, at the current scores (the given rows before the first step).

        Returns
        -------
        array of bool, shape (n,)
            The margin rows.

        Examples
        --------
        >>> import numpy as np
        >>> from kopt.contract.registry import registry
        >>> from kopt.nystrom import HingeNewton, NystromSystem
        >>> X = np.random.default_rng(0).normal(size=(200, 2))
        >>> y = np.where(X[:, 0] > 0, 1.0, -1.0)
        >>> kernel = registry().get("kernel", "gaussian")(bandwidth=1.0)
        >>> system = NystromSystem(kernel, X, y[:, None], X[:20], dtype=np.float64)
        >>> _ = system.whitened()
        >>> newton = HingeNewton(system, X, y, 1e-3)
        >>> newton.score()
        >>> int(newton.inside().sum())
        200
        """
        return self.y * self.f < 1.0 if self._forced is None else self._forced

    def sync(self) -> int:
        """Take the rows inside the margin now as the Hessian's (``in_T``).

        T itself follows at the next solve that makes a factor.

        Returns
        -------
        int
            The rows that went in or out.

        Examples
        --------
        >>> import numpy as np
        >>> from kopt.contract.registry import registry
        >>> from kopt.nystrom import HingeNewton, NystromSystem
        >>> X = np.random.default_rng(0).normal(size=(200, 2))
        >>> y = np.where(X[:, 0] > 0, 1.0, -1.0)
        >>> kernel = registry().get("kernel", "gaussian")(bandwidth=1.0)
        >>> system = NystromSystem(kernel, X, y[:, None], X[:20], dtype=np.float64)
        >>> _ = system.whitened()
        >>> newton = HingeNewton(system, X, y, 1e-3)
        >>> newton.score()
        >>> newton.sync()  # every row starts inside, and is
        0
        """
        xp = self.system.xp
        S = self.inside()
        moved = int(xp.sum(S != self.in_T))
        self.in_T = S
        return moved

    def settle(self) -> HingeNewton:
        """Make the system's T the system of the rows ``in_T``: the end of a solve, T is the system's again.

        The held factor is given back; the rows that crossed the margin since T was last made go in or out by a
        rank-k update of their whitened features; where more rows changed than the margin holds, T is made again from
        the margin rows alone.

        Returns
        -------
        HingeNewton
            This solver.

        Examples
        --------
        >>> import numpy as np
        >>> from kopt.contract.registry import registry
        >>> from kopt.nystrom import HingeNewton, NystromSystem
        >>> X = np.random.default_rng(0).normal(size=(200, 2))
        >>> y = np.where(X[:, 0] > 0, 1.0, -1.0)
        >>> kernel = registry().get("kernel", "gaussian")(bandwidth=1.0)
        >>> system = NystromSystem(kernel, X, y[:, None], X[:20], dtype=np.float64)
        >>> _ = system.whitened()
        >>> newton = HingeNewton(system, X, y, 1e-3)
        >>> _ = newton.step().step()
        >>> rows = NystromSystem(kernel, X[newton.in_T], y[newton.in_T, None], X[:20], dtype=np.float64)
        >>> T = newton.settle().system.whitened()[0]
        >>> bool(np.allclose(T * 200, rows.whitened()[0] * rows.n))
        True
        """
        s, xp = self.system, self.system.xp
        self._stale = None
        if self._factor_lam is not None:
            self._factor_lam = self._L = None
            s.release_factor()
        changed = self.in_T != self._T_rows
        if bool(xp.any(changed)):
            if int(xp.sum(changed)) > int(xp.sum(self.in_T)):  # cheaper from nothing: the margin rows alone
                s.clear_rows()
                self._update(self.in_T, 1.0)
            else:
                self._update(changed & self.in_T, 1.0)
                self._update(changed & ~self.in_T, -1.0)
        self._T_rows = self.in_T
        return self

    def _update(self, mask, sign):
        xp = self.system.xp
        idx = xp.nonzero(mask)[0]
        if not idx.shape[0]:
            return
        self.system.update_whitened(self._whitened_rows(idx), sign)

    def _whitened_rows(self, idx):
        """The whitened features (:meth:`NystromSystem.whitened_rows`) of the rows ``idx`` (sorted), a chunk at a time:
        from the held kernel values where they are held, else computed."""
        w = None if self.weights is None else self.weights[idx]
        if self._cache is None:
            return self.system.whitened_rows(_rows.take(self.X, idx), w)
        return self.system.whitened_rows(chunks=self._held_rows(idx, w))

    def _held_rows(self, idx, w):
        """``(K, weights)`` float64 chunks of the held kernel values of the rows ``idx`` (sorted)."""
        starts = np.array([lo for lo, _ in _threads_mod.split(self.X.shape[0], _threads_mod.PARTS)])
        part = np.searchsorted(starts, idx, side="right") - 1
        step = max(1, CHUNK_ENTRIES // self.system.M)
        for lo in range(0, idx.shape[0], step):
            sel = slice(lo, lo + step)
            K = np.concatenate([self._cache[p][idx[sel][part[sel] == p] - starts[p]]
                                for p in np.unique(part[sel])]).astype(np.float64)
            yield K, None if w is None else w[sel]

    def polish(self) -> HingeNewton:
        """The minimizer of the square loss on the rows inside the margin now, by one direct solve on their system
        made from nothing.

        T_S of those rows is made again and the right-hand sides come from one pass with f = 0.  At the end of a
        solve this is J's minimizer (the rows no longer move), and its bits depend on those rows alone, not on the path
        of updates that kept T_S: a run resumed from a checkpoint ends on the same bits as the run it continues.

        Returns
        -------
        HingeNewton
            This solver, at the polished point and scored.

        Examples
        --------
        >>> import numpy as np
        >>> from kopt.contract.registry import registry
        >>> from kopt.nystrom import HingeNewton, NystromSystem
        >>> X = np.random.default_rng(0).normal(size=(200, 2))
        >>> y = np.where(X[:, 0] > 0, 1.0, -1.0)
        >>> kernel = registry().get("kernel", "gaussian")(bandwidth=1.0)
        >>> system = NystromSystem(kernel, X, y[:, None], X[:20], dtype=np.float64)
        >>> _ = system.whitened()
        >>> newton = HingeNewton(system, X, y, 1e-3)
        >>> while not newton.converged:
        ...     _ = newton.step()
        >>> J = newton.objective
        >>> bool(abs(newton.polish().objective - J) <= 1e-9 * J)
        True
        """
        s, xp = self.system, self.system.xp
        S = self.inside()
        self._factor_lam = self._stale = self._L = None
        s.release_factor()
        s.clear_rows()
        self._update(S, 1.0)
        self.in_T = self._T_rows = S
        _, sums = self._margin_pass(xp.zeros(s.M, dtype=np.float64), 0.0, S)
        z, s_b, wS = self._margin_sums(sums, S)  # z: [−U⁻ᵀ Σ_S w y k, U⁻ᵀ Σ_S w k] / n
        y_b = float(xp.sum(wS * self.y)) / float(s.n)
        self.v, self.b = self._bordered_solve(-z[:, 0], y_b, z[:, 1], s_b, self.b)
        self.score()
        return self

    def _margin_sums(self, sums, S):
        """(U⁻ᵀ sums / n, s_S = Σ_S w_i / n, the weights of the rows S) for a pass's sums over the rows S."""
        s, xp = self.system, self.system.xp
        z = solve_triangular(s.U, sums / float(s.n), lower=False, trans="T")
        wS = S.astype(np.float64) if self.weights is None else S * self.weights
        return z, float(xp.sum(wS)) / float(s.n), wS

    def _bordered_solve(self, r_v, r_b, e, s_b, b_fixed):
        """(x, β) solving [[T_S + λI, e], [eᵀ, s_b]] [x; β] = [r_v; r_b] (``_solve``); where no row is inside the
        margin the bias has no curvature: β = ``b_fixed`` and x solves the first block row."""
        xp = self.system.xp
        ac = self._solve(xp.stack([r_v, e], axis=1))
        a, c = ac[:, 0], ac[:, 1]
        schur = s_b - float(xp.sum(e * c))
        beta = (r_b - float(xp.sum(e * a))) / schur if schur > 1e-12 * max(s_b, 1e-300) else b_fixed
        return a - c * beta, beta

    def _solve(self, R):
        """(T_S + λI)⁻¹ R for the rows S = ``in_T``.

        The Cholesky factor of T_S + λI is held between steps (in T's own buffer: :meth:`NystromSystem.hold_factor`).
        While λ is the same and the rows that crossed the margin since it was made, k of them, are at most
        :data:`STALE_SHARE` of the centers, the step solves with it by Woodbury's identity (``_woodbury``: k
        rows' features and a k × k system, 2 M² flops a row instead of M³/3 for a new factor; the rows that crossed
        are not added to T until then).  Else T is made the system of S (:meth:`settle`) and factored anew."""
        s, xp = self.system, self.system.xp
        changed = self.in_T != self._T_rows
        if self._factor_lam != self.lam or int(xp.sum(changed)) > self.stale_rows:
            self.settle()  # T the system of S: no row changed since
            self._L = s.hold_factor(self.lam, self.threads, release=self.settle)
            self._factor_lam = self.lam
            self.factors += 1
        elif bool(xp.any(changed)):
            return self._woodbury(R, changed)
        with blas_held(self.threads):
            return cho_solve(self._L, R)

    def _woodbury(self, R, changed):
        """(T_S + λI)⁻¹ R from the held factor L Lᵀ = T₀ + λI of the rows T₀ sums: T_S = T₀ + V Σ Vᵀ with V the
        changed rows' whitened features over √n and Σ = ±1 (in, out), so with W = L⁻¹V and Y = L⁻¹R

            (T_S + λI)⁻¹ R = L⁻ᵀ (Y − W (Σ + WᵀW)⁻¹ Wᵀ Y).

        W's columns are kept from step to step in one M × :attr:`stale_rows` buffer: a step computes those of the rows
        that changed since (2 M² flops a row: their whitening and L⁻¹), and drops those of rows back where T₀ has
        them.  Their features are not kept: :meth:`settle` whitens them again (in fixed parts, as every row's: T's
        bits are then those of the steps without a held factor)."""
        s, xp, L = self.system, self.system.xp, self._L
        held = self._stale
        if held is None:
            held = self._stale = {"rows": xp.zeros(0, dtype=np.int64), "k": 0,
                                  "W": xp.empty((s.M, min(self.stale_rows, self.X.shape[0])), dtype=np.float64,
                                                order="F")}
        rows, W, k = held["rows"], held["W"], held["k"]
        kept = changed[rows]
        if not bool(xp.all(kept)):  # compacted in place, column by column (no second buffer)
            at = 0
            for j in to_numpy(xp.nonzero(kept)[0]).tolist():
                if j != at:
                    W[:, at] = W[:, j]
                at += 1
            rows, k = rows[kept], at
        fresh = xp.asarray(np.setdiff1d(to_numpy(xp.nonzero(changed)[0]), to_numpy(rows), assume_unique=True))
        with blas_held(self.threads):
            if fresh.shape[0]:
                at = k
                for Z in self._whitened_rows(fresh):
                    W[:, at:at + Z.shape[0]] = Z.T
                    at += Z.shape[0]
                block = W[:, k:at]
                if xp is np:  # L⁻¹ = (Lᵀ)⁻ᵀ in fixed parts of columns: the same bits on any thread count
                    solve_upper_transposed(L.T, block, side="left")
                else:  # pragma: no cover - GPU only
                    block[...] = solve_triangular(L, block, lower=True)
                block *= 1.0 / np.sqrt(s.n)
                rows, k = xp.concatenate([rows, fresh]), at
            held["rows"], held["k"] = rows, k
            Y = solve_triangular(L, R, lower=True)
            if k:
                Wk = W[:, :k]
                sign = xp.where(self.in_T[rows], 1.0, -1.0)
                with _threads_mod.blas_threads(1):  # threaded, WᵀW's and the k × k solve's bits follow the cores
                    Y = Y - Wk @ xp.linalg.solve(Wk.T @ Wk + xp.diag(sign), Wk.T @ Y)
            return solve_triangular(L, Y, lower=True, trans="T")

    def gradient(self) -> tuple[np.ndarray, float, np.ndarray, float]:
        """J's gradient in v and b at the current scores, and the bias's border of the Hessian.

        Returns
        -------
        g_v : array of shape (M,)
            The gradient in v.
        g_b : float
            The gradient in b.
        e_S : array of shape (M,)
            The border (1/n) Σ_S w_i z_i.
        s_S : float
            (1/n) Σ_S w_i.

        Examples
        --------
        >>> import numpy as np
        >>> from kopt.contract.registry import registry
        >>> from kopt.nystrom import HingeNewton, NystromSystem
        >>> X = np.random.default_rng(0).normal(size=(200, 2))
        >>> y = np.where(X[:, 0] > 0, 1.0, -1.0)
        >>> kernel = registry().get("kernel", "gaussian")(bandwidth=1.0)
        >>> system = NystromSystem(kernel, X, y[:, None], X[:20], dtype=np.float64)
        >>> _ = system.whitened()
        >>> newton = HingeNewton(system, X, y, 1e-3)
        >>> newton.score()
        >>> g_v, g_b, e, s = newton.gradient()
        >>> g_v.shape, s
        ((20,), 1.0)
        """
        S = self.inside()
        z, s_b, wS = self._margin_sums(self.sums, S)  # U⁻ᵀ [Kᵀr, Kᵀa] / n
        g_b = float(self.system.xp.sum(wS * (self.f - self.y))) / float(self.system.n)
        return self.lam * self.v + z[:, 0], g_b, z[:, 1], s_b

    def direction(self) -> tuple[np.ndarray, float]:
        """The Newton step (dv, db) = H⁻¹ g of the bordered Hessian [[T_S + λI, e_S], [e_Sᵀ, s_S]].

        Returns
        -------
        dv : array of shape (M,)
            The step in v (the solver moves to v − dv).
        db : float
            The step in b.

        Examples
        --------
        >>> import numpy as np
        >>> from kopt.contract.registry import registry
        >>> from kopt.nystrom import HingeNewton, NystromSystem
        >>> X = np.random.default_rng(0).normal(size=(200, 2))
        >>> y = np.where(X[:, 0] > 0, 1.0, -1.0)
        >>> kernel = registry().get("kernel", "gaussian")(bandwidth=1.0)
        >>> system = NystromSystem(kernel, X, y[:, None], X[:20], dtype=np.float64)
        >>> _ = system.whitened()
        >>> newton = HingeNewton(system, X, y, 1e-3)
        >>> newton.score()
        >>> _ = newton.sync()
        >>> dv, db = newton.direction()
        >>> dv.shape
        (20,)
        """
        g_v, g_b, e, s_b = self.gradient()
        return self._bordered_solve(g_v, g_b, e, s_b, 0.0)

    def step(self) -> HingeNewton:
        """One Newton step: the solve on the margin rows, one pass to score it, and a line search where it raised J.

        The first call scores the start and makes T the system of its margin rows.  Where the full step raises J, the
        minimizer of J on the segment is found from the two passes' scores (no pass per trial) and scored.  The step
        sets ``moved`` (the rows that crossed the margin) and ``converged`` (a full step that moved no row, or lowered
        J by at most ``rtol`` of it).

        Returns
        -------
        HingeNewton
            This solver, one step on.

        Examples
        --------
        >>> import numpy as np
        >>> from kopt.contract.registry import registry
        >>> from kopt.nystrom import HingeNewton, NystromSystem
        >>> X = np.random.default_rng(0).normal(size=(200, 2))
        >>> y = np.where(X[:, 0] > 0, 1.0, -1.0)
        >>> kernel = registry().get("kernel", "gaussian")(bandwidth=1.0)
        >>> system = NystromSystem(kernel, X, y[:, None], X[:20], dtype=np.float64)
        >>> _ = system.whitened()
        >>> newton = HingeNewton(system, X, y, 1e-3)
        >>> while not newton.converged:
        ...     _ = newton.step()
        >>> newton.moved, bool(newton.steps < 20)
        (0, True)
        """
        if self.f is None:
            self.score()
            self.sync()
        v0, b0, f0, J0 = self.v, self.b, self.f, self.objective
        dv, db = self.direction()
        forced = self._forced is not None
        self._forced = None  # the start's given rows served the first step; from here the scores decide
        self.v, self.b = v0 - dv, b0 - db
        self.score()
        full = True
        # a long step: the best point on the segment, from the two passes' scores (not after a given start's rows)
        if not forced and self.objective > J0 * (1.0 + RISE):
            t = line_search(self.lam, v0, -dv, f0, self.f, self.y, self.weights)
            self.v, self.b = v0 - t * dv, b0 - t * db
            self.score()
            self.line_searches += 1
            full = t == 1.0
        self.moved = self.sync()
        self.steps += 1
        # the full step of a quadratic on the rows S that left S as it was: its minimiser, J's (to rounding)
        self.converged = not forced and full and (self.moved == 0 or J0 - self.objective <= self.rtol * abs(J0))
        return self
