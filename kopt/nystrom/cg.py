"""The whitened Nyström normal equations solved by preconditioned conjugate gradients, one pass a step.

With R = K_CC = UᵀU and v = U w, kernel ridge regression on centers C solves (T + λ I) v = b with
T = U⁻ᵀ (A/n) U⁻¹, b = U⁻ᵀ B/n, A = Σ_i w_i k_i k_iᵀ, B = Σ_i w_i k_i y_iᵀ (:mod:`kopt.nystrom.system`).
T is never formed: T p is one pass of kernel blocks (:class:`.passes.RowPass`).

The preconditioner is the centers' own estimate of T: the centers are a uniform sample of the rows, so
A/n ≈ w̄ K_CC K_CC / M and T ≈ (w̄/M) U Uᵀ; P = (w̄/M) U Uᵀ + λ I = L Lᵀ.  U and L share one M × M float64 buffer
(:mod:`.factors`): U its upper triangle, L its strict lower one and a vector, so ``U`` is read through its upper
triangle only (the triangular solves, :func:`.factors.upper_times`).  Its eigenvalues match T + λI's
where T is well estimated by M rows, so CG's step count hardly depends on λ or n (the preconditioner of
Rudi, Carratino & Rosasco 2017, "FALKON", in kopt's whitened coordinates).  Each output column runs its own CG
(its own step sizes) on the same passes.
"""
from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from kopt.contract.components import Kernel, Loss
from kopt.contract.iterative import Check
from kopt.errors import KoptError

from ..numerics import rows as _rows
from ..numerics.backend import get_namespace
from ..numerics.threads import blas_threads, resolve_threads
from .centers import COMPACT_SHARE, center_basis
from .factors import CenterFactors, drawn_gram, upper_times
from .passes import RowPass
from .system import CHUNK_ENTRIES, kept_centers

#: a carried certificate is confirmed by a refreshed pass (float64 products) at most once in this many steps: near the
#: float32 products' floor (a relative gap of about 1e-7) the carried gap meets a tight tol step after step while the
#: refreshed one does not
REFRESH_EVERY = 5
#: a confirmation also runs where CG's carried preconditioned residual has fallen this many times since the last one
#: (at most once in :data:`REFRESH_EVERY` steps), and CG continues from its residual
#: (:meth:`NystromCG.replace_residual`): the float32 products' rounding is a fixed share of each step, so once the
#: carried residual has fallen far below the rounding it carries, the true one no longer follows it
#: (docs/design/krr-pcg-certificate.md, "Residual replacement")
REPLACE_FALL = 10.0


def center_factors(kernel: Kernel, C: np.ndarray, threads: int = 1,
                   estimate: np.ndarray | None = None) -> tuple[np.ndarray, CenterFactors]:
    """The kept centers' dense rows and their :class:`CenterFactors`.

    The kept centers are :func:`center_basis`'s pivoted basis of the drawn centers ``C``.  Where the basis kept far
    fewer centers than were drawn, the preconditioner estimates T from every drawn center (:func:`drawn_gram`), not
    from the kept ones alone, which the pivoting chose far apart.

    Parameters
    ----------
    kernel : Kernel
        The kernel, its bandwidth a number.
    C : array of shape (m, d)
        The drawn centers, dense.
    threads : int, optional
        kopt's worker threads for the drawn centers' product (the same bits on any count).
    estimate : array of shape (D, d), optional
        Dense rows of a uniform sample of the training rows, which the preconditioner estimates T from where the
        centers are not a uniform sample (randomly pivoted Cholesky's, ``kopt.nystrom.centers.rpcholesky_order``;
        docs/design/auto-centers.md).

    Returns
    -------
    kept : array of shape (M, d)
        The kept centers' rows, in Fortran order.
    factors : CenterFactors
        Their factor U, and the drawn centers' Gram where it is used.

    Examples
    --------
    >>> import numpy as np
    >>> from kopt.contract.registry import registry
    >>> kernel = registry().get("kernel", "gaussian")(bandwidth=1.0)
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(200, 2))
    >>> Y = np.sin(X[:, :1])
    >>> from kopt.nystrom import center_factors
    >>> kept, factors = center_factors(kernel, X[:20])
    >>> kept.shape, factors.U.shape
    ((20, 2), (20, 20))
    """
    with blas_threads(1):  # as krr_nystrom factors R: the same kept centers and bits of U
        kept, U = center_basis(kernel, C)
    Ck = kept_centers(C, kept)
    M, drawn = Ck.shape[0], C.shape[0]
    if estimate is not None:
        gram = drawn_gram(kernel, Ck, estimate, U, threads=threads)
    else:
        gram = drawn_gram(kernel, Ck, C, U, threads=threads) if M * M <= COMPACT_SHARE * drawn * drawn else None
    return Ck, CenterFactors(U, gram=gram, source=(kernel, Ck, C if estimate is None else estimate, kept))


class NystromCG:
    """Kernel ridge regression on Nyström centers by preconditioned conjugate gradients, one pass over the rows a step.

    The problem on rows ``X``, targets ``Y`` and centers ``C``: with R = K_CC = UᵀU and v = U w it solves
    (T + λI) v = b, T = U⁻ᵀ (A/n) U⁻¹, b = U⁻ᵀ B/n, A = Σ_i w_i k_i k_iᵀ, B = Σ_i w_i k_i y_iᵀ.  T is never formed:
    T p is one pass of kernel blocks (:class:`RowPass`), so memory is O(M²) at any number of rows.  The
    preconditioner is the centers' own estimate of T, P = (w̄/M) U Uᵀ + λI (the preconditioner of Rudi et al.
    (2017), in whitened coordinates), so the number of steps hardly depends on λ or n.  Each output column runs its
    own CG on the same passes.

    The calling order:

    1. ``cg = NystromCG(kernel, X, Y, C, dtype=...)`` makes U, and b where it is first needed (its own pass, or
       within the first warm start's: :attr:`b`), or ``cg.reweighted(X, Y, weights)`` reuses another CG's centers
       and U for other targets or weights (b likewise, no M³ work), or
       ``cg.weighted_system(weights, b)`` for rows weighed by a smooth loss's curvature and a given right-hand side
       (no pass: a Newton step's system, :class:`SmoothNewton`);
    2. ``s = cg.start(lam)`` factors the preconditioner at λ (:meth:`set_lambda`) and returns CG's state, from
       v = 0 or from a warm start ``v``;
    3. ``cg.step(s)`` advances the state in place: one pass, T p, then :meth:`precondition` on the new residual;
    4. ``cg.certificate(s, loss, Y)`` gives the square loss's ``(P, D, scale)`` from what CG carries (no pass);
       :meth:`refresh` (or :meth:`replace_residual`, which CG continues from) recomputes the scores, T v and the
       residual with float64 products, the values a certificate that stops a solve must be read from;
       :meth:`confirm` does both by the stopping rule;
    5. ``cg.coef(s["v"])`` gives the coefficients w on the kept centers ``cg.C``.

    Parameters
    ----------
    kernel : Kernel
        The problem's kernel, its bandwidth a number.
    X : array or sparse matrix of shape (n, d)
        The training rows (dense on NumPy or CuPy, or SciPy CSR).
    Y : array of shape (n, k) or None
        Float64 targets, one column per output, centered as the caller wants them; None: no b (no pass), the
        systems come from :meth:`weighted_system`.
    C : array of shape (m, d)
        The drawn centers, dense; :func:`center_factors` keeps a well-conditioned basis of them.
    dtype : dtype
        The kernel values' precision in the passes (the problem's ``dtype``); their products are float64.
    weights : array of shape (n,), optional
        Row weights (mean 1).
    threads : int, optional
        kopt's worker threads for the passes.
    estimate : array of shape (D, d), optional
        Dense rows of a uniform sample of the training rows the preconditioner estimates T from, where ``C`` is not
        a uniform sample (:func:`center_factors`).

    Attributes
    ----------
    C : array of shape (M, d)
        The kept centers, in the basis's pivoted order.
    M, n : int
        The kept centers and the rows.
    U : ndarray of shape (M, M)
        R = K_CC = UᵀU in its upper triangle and diagonal (float64, Fortran order); its strict lower triangle holds
        the preconditioner's factor, so read it with triangular routines or :func:`upper_times`, never as a dense
        matrix.
    b : array of shape (M, k)
        The whitened right-hand side.
    lam : float or None
        The λ the preconditioner is factored at.
    rows : RowPass
        The passes over the rows.
    passes : int
        Passes made so far.

    Examples
    --------
    >>> import numpy as np
    >>> from kopt.contract.registry import registry
    >>> kernel = registry().get("kernel", "gaussian")(bandwidth=1.0)
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(200, 2))
    >>> Y = np.sin(X[:, :1])
    >>> from kopt.nystrom import NystromCG
    >>> cg = NystromCG(kernel, X, Y, X[:20], dtype="float64")
    >>> s = cg.start(1e-3)
    >>> for t in range(15):
    ...     s = cg.step(s)
    >>> square = registry().get("loss", "square")()
    >>> P, D, scale = cg.certificate(cg.refresh(s), square, Y)
    >>> bool((P - D) / P < 1e-3), cg.coef(s["v"]).shape
    (True, (20, 1))
    """

    #: the preconditioner's estimate of T weighs its rows by these (one per row of ``estimate_rows``, or per drawn
    #: center), or None: the rows' mean weight (:meth:`weighted_system`)
    estimate_weights = None
    #: the dense rows the weighted estimate is made from (None: the drawn centers)
    estimate_rows = None

    def __init__(self, kernel: Kernel, X: ArrayLike, Y: np.ndarray, C: np.ndarray, *, dtype: np.dtype | type | str,
                 weights: np.ndarray | None = None, threads: int | None = None,
                 estimate: np.ndarray | None = None) -> None:
        xp = get_namespace(C)
        self.xp, self.n, self.dtype, self.kernel = xp, X.shape[0], np.dtype(dtype), kernel
        self.C, self.factors = center_factors(kernel, C, resolve_threads(threads), estimate)
        self.M = self.C.shape[0]
        self._bind(X, Y, weights, threads)

    @property
    def factor_threads(self) -> int:
        """kopt's worker threads the preconditioner's product runs on: the passes' own.

        Examples
        --------
        >>> import numpy as np
        >>> from kopt.contract.registry import registry
        >>> from kopt.nystrom import NystromCG
        >>> X = np.random.default_rng(0).normal(size=(200, 2))
        >>> Y = np.sin(X[:, :1])
        >>> kernel = registry().get("kernel", "gaussian")(bandwidth=1.0)
        >>> cg = NystromCG(kernel, X, Y, X[:20], dtype="float64")
        >>> cg.factor_threads == cg.rows.threads
        True
        """
        return self.rows.threads

    @property
    def U(self) -> np.ndarray:
        """The M × M buffer holding U (R = K_CC = UᵀU) in its upper triangle; read it with :func:`upper_times`.

        Its strict lower triangle holds the preconditioner's factor (the class docstring).

        Examples
        --------
        >>> import numpy as np
        >>> from kopt.contract.registry import registry
        >>> from kopt.nystrom import NystromCG
        >>> X = np.random.default_rng(0).normal(size=(200, 2))
        >>> Y = np.sin(X[:, :1])
        >>> kernel = registry().get("kernel", "gaussian")(bandwidth=1.0)
        >>> cg = NystromCG(kernel, X, Y, X[:20], dtype="float64")
        >>> from kopt.nystrom import upper_times
        >>> R = upper_times(cg.U, upper_times(cg.U, np.eye(cg.M)), trans=True)  # UᵀU
        >>> bool(np.allclose(R, kernel.exact(cg.C, cg.C)))
        True
        """
        return self.factors.U

    #: b's value, or None while it waits for its pass (:attr:`b`)
    _b = None
    #: whether b is still to be made from the targets and weights
    _b_pending = False

    @property
    def b(self) -> np.ndarray:
        """b = U⁻ᵀ Kᵀ(w ⊙ Y) / n, the right-hand side: made where it is first needed, by its own pass, or by the
        first :meth:`refresh`'s pass (b's kernel blocks are the refresh's: one evaluation of every block for both,
        the same bits).

        Returns
        -------
        array of shape (M, k)
            b, float64 (None for a CG made without targets until :meth:`weighted_system` gives it).

        Examples
        --------
        >>> import numpy as np
        >>> from kopt.contract.registry import registry
        >>> from kopt.nystrom import NystromCG
        >>> X = np.random.default_rng(0).normal(size=(200, 2))
        >>> kernel = registry().get("kernel", "gaussian")(bandwidth=1.0)
        >>> cg = NystromCG(kernel, X, np.sin(X[:, :1]), X[:20], dtype="float64")
        >>> cg.passes, cg.b.shape, cg.passes
        (0, (20, 1), 1)
        """
        if self._b_pending:
            self._set_b(self.rows.adjoint(self._weighted_targets()))
        return self._b

    @b.setter
    def b(self, value):
        self._b, self._b_pending = value, False

    def _weighted_targets(self):
        """w ⊙ Y, the rows b sums."""
        return self.Y if self.weights is None else self.Y * self.weights[:, None]

    def _set_b(self, adjoint):
        """b from Kᵀ(w ⊙ Y)."""
        self.b = self.factors.whiten(adjoint / self.n)

    @property
    def outputs(self) -> int:
        """The output columns (one-hot classes): CG's columns, read without making b.

        Returns
        -------
        int

        Examples
        --------
        >>> import numpy as np
        >>> from kopt.contract.registry import registry
        >>> from kopt.nystrom import NystromCG
        >>> X = np.random.default_rng(0).normal(size=(200, 2))
        >>> kernel = registry().get("kernel", "gaussian")(bandwidth=1.0)
        >>> cg = NystromCG(kernel, X, np.column_stack([X[:, 0], X[:, 1]]), X[:20], dtype="float64")
        >>> cg.outputs, cg.passes
        (2, 0)
        """
        return int(self.Y.shape[1]) if self._b_pending else int(self.b.shape[1])

    def _bind(self, X, Y, weights, threads):
        """The rows' side: the passes, b (None without targets ``Y``: :meth:`weighted_system` gives it), and the
        preconditioner's scale (w̄/M)."""
        same = Y is not None and self._same_rows(X, Y, weights)
        if not same:  # what a refreshed state's products are of (refreshed_here): these rows, targets and weights
            self.binding = object()
        self.weights, self.Y = weights, Y
        self.rows = RowPass(self.kernel, X, self.C, self.dtype, weights, threads=threads)
        if Y is None:
            self.b = None
        elif not same:  # b's pass waits for its first reader, or rides in the first refresh's pass (b)
            self._b, self._b_pending = None, True
        self.scale = self.factors.scale_for(1.0 if weights is None else float(self.xp.mean(weights)))
        self.lam = None

    def _same_rows(self, X, Y, weights):
        """Whether dense rows ``X``, targets ``Y`` and ``weights`` are bit for bit the ones b was made from (then b
        is theirs: no pass)."""
        xp, rows = self.xp, getattr(self, "rows", None)
        if rows is None or _rows.is_sparse(X) or _rows.is_sparse(rows.X) or X.shape != rows.X.shape:
            return False
        if (weights is None) != (self.weights is None) or self.Y is None or Y.shape != self.Y.shape:
            return False
        return bool(xp.array_equal(Y, self.Y) and (weights is None or xp.array_equal(weights, self.weights))
                    and (X is rows.X or xp.array_equal(X, rows.X)))

    def reweighted(self, X: ArrayLike, Y: np.ndarray, weights: np.ndarray | None,
                   threads: int | None = None) -> NystromCG:
        """The same centers and U for other targets or row weights on the same rows.

        b's pass (where b is first needed, or in the first warm start's pass: :attr:`b`) and no M³ work (``solver:
        auto`` hands its search's factors to the solve on every row this way); no pass at all where the rows, targets
        and weights are bit for bit the ones b was made from.  The two CGs share
        U's buffer, and so its preconditioner: whichever sets a λ last owns it, and :meth:`precondition` factors it
        again for the other.

        Parameters
        ----------
        X : array or sparse matrix of shape (n, d)
            The rows (the same as this CG's).
        Y : array of shape (n, k)
            The new targets.
        weights : array of shape (n,) or None
            The new row weights.
        threads : int, optional
            kopt's worker threads for the passes.

        Returns
        -------
        NystromCG
            A CG on the same centers and U.

        Examples
        --------
        >>> import numpy as np
        >>> from kopt.contract.registry import registry
        >>> from kopt.nystrom import NystromCG
        >>> X = np.random.default_rng(0).normal(size=(200, 2))
        >>> Y = np.sin(X[:, :1])
        >>> kernel = registry().get("kernel", "gaussian")(bandwidth=1.0)
        >>> cg = NystromCG(kernel, X, Y, X[:20], dtype="float64")
        >>> other = cg.reweighted(X, np.cos(X[:, :1]), None)
        >>> other.U is cg.U, other.b.shape, other.passes  # b for the new targets: one pass, where first needed
        (True, (20, 1), 1)
        """
        import copy

        out = copy.copy(self)
        out._bind(X, Y, weights, threads)
        return out

    def weighted_system(self, weights: np.ndarray, b: np.ndarray, estimate_weights: np.ndarray | None = None,
                        estimate_rows: np.ndarray | None = None) -> NystromCG:
        """The system (T_W + λI) x = ``b`` on the same centers, U and rows, the rows weighed by ``weights``.

        A Newton step of a smooth loss (:class:`SmoothNewton`): W is the row weights times the loss's curvature at the
        current scores and ``b`` the negative gradient, given, so the system costs no pass.  The preconditioner
        estimates T_W from its rows weighed by ``estimate_weights`` (:meth:`CenterFactors.factor`); without them from
        the rows' mean weight, as :meth:`reweighted`.  The view shares U's buffer (:meth:`reweighted`); its passes
        count from zero.

        Parameters
        ----------
        weights : array of shape (n,) or (n, k)
            The rows' weights, or one column per output (each output's CG on its own weights over the same passes).
        b : array of shape (M, k)
            The whitened right-hand side.
        estimate_weights : array, optional
            One weight per row of ``estimate_rows``, or per drawn center where those are None.
        estimate_rows : array of shape (m, d), optional
            The dense rows the preconditioner's estimate is made from (None: the drawn centers).

        Returns
        -------
        NystromCG
            A CG of that system on the same centers and U: :meth:`start` then :meth:`step`.

        Examples
        --------
        >>> import numpy as np
        >>> from kopt.contract.registry import registry
        >>> from kopt.nystrom import NystromCG
        >>> X = np.random.default_rng(0).normal(size=(200, 2))
        >>> kernel = registry().get("kernel", "gaussian")(bandwidth=1.0)
        >>> cg = NystromCG(kernel, X, None, X[:20], dtype="float64")
        >>> curvature = np.full((200, 1), 0.25)
        >>> system = cg.weighted_system(curvature, np.ones((cg.M, 1)), estimate_weights=np.full(20, 0.25))
        >>> s = system.start(1e-3)
        >>> for _ in range(15):
        ...     s = system.step(s)
        >>> bool(system.relative_residual(s)[0] < 1e-3), system.passes
        (True, 15)
        """
        import copy

        out = copy.copy(self)
        out.weights, out.Y, out.b, out.lam = weights, None, b, None
        out.binding = object()  # other weights and b: this CG's refreshed states are not its
        out.rows = RowPass(self.kernel, self.rows.X, self.C, self.dtype, weights, threads=self.rows.threads)
        out.estimate_weights, out.estimate_rows = estimate_weights, estimate_rows
        if estimate_weights is not None:
            out.scale = 1.0  # the weighted estimate is a mean over its rows (CenterFactors.factor)
        else:
            out.scale = self.factors.scale_for(1.0 if weights is None else float(self.xp.mean(weights)))
        return out

    @property
    def passes(self) -> int:
        """The passes over the rows made so far (:class:`RowPass`'s count: b's, every step's, every refresh's).

        Examples
        --------
        >>> import numpy as np
        >>> from kopt.contract.registry import registry
        >>> from kopt.nystrom import NystromCG
        >>> X = np.random.default_rng(0).normal(size=(200, 2))
        >>> Y = np.sin(X[:, :1])
        >>> kernel = registry().get("kernel", "gaussian")(bandwidth=1.0)
        >>> cg = NystromCG(kernel, X, Y, X[:20], dtype="float64")
        >>> s = cg.start(1e-3)
        >>> before = cg.passes
        >>> s = cg.step(s)
        >>> cg.passes - before
        1
        """
        return self.rows.passes

    def set_lambda(self, lam: float) -> None:
        """Factor the preconditioner (w̄/M) U Uᵀ + λI at ``lam``, in U's buffer (2M³/3 flops).

        Nothing is done where the preconditioner is already factored at ``lam`` for this CG, or where the buffer holds
        the factor this CG's scale, estimate weights and rows make at ``lam`` (:meth:`CenterFactors.holds`).

        Parameters
        ----------
        lam : float
            λ, positive.

        Raises
        ------
        KoptError
            The preconditioner is not positive definite at ``lam`` (λ far too small for the centers).

        Examples
        --------
        >>> import numpy as np
        >>> from kopt.contract.registry import registry
        >>> from kopt.nystrom import NystromCG
        >>> X = np.random.default_rng(0).normal(size=(200, 2))
        >>> Y = np.sin(X[:, :1])
        >>> kernel = registry().get("kernel", "gaussian")(bandwidth=1.0)
        >>> cg = NystromCG(kernel, X, Y, X[:20], dtype="float64")
        >>> cg.set_lambda(1e-3)
        >>> cg.lam
        0.001
        """
        f = self.factors
        if lam == self.lam and f.owner is self and f.factored:
            return
        if f.holds(self.scale, lam, self.estimate_weights, self.estimate_rows):
            # the buffer holds this factor already (a Newton step keeping the last one's preconditioner): not made again
            f.owner, self.lam = self, float(lam)
            return
        self.lam = None
        try:
            f.factor(self.scale, lam, threads=self.factor_threads, weights=self.estimate_weights,
                     rows=self.estimate_rows)
        except np.linalg.LinAlgError:
            raise KoptError(f"the Nystrom preconditioner is not positive definite at lambda {lam:g}; raise lambda") \
                from None
        f.owner = self
        self.lam = float(lam)

    def lambda_floor(self) -> float:
        """The smallest λ the problem's kernel values resolve: half the dtype's epsilon times trace(T).

        Every product rounds a kernel value by up to eps/2 of it, so T + λI as the passes apply it is the true one to
        within about eps/2 · trace(T); below that, λ is within the rounding and CG's answer is not the spec's.
        ``solver: auto`` tries no λ below it.

        Returns
        -------
        float
            The floor; float32 kernel values give one 2²⁹ times float64's.

        Examples
        --------
        >>> import numpy as np
        >>> from kopt.contract.registry import registry
        >>> from kopt.nystrom import NystromCG
        >>> X = np.random.default_rng(0).normal(size=(200, 2))
        >>> Y = np.sin(X[:, :1])
        >>> kernel = registry().get("kernel", "gaussian")(bandwidth=1.0)
        >>> cg = NystromCG(kernel, X, Y, X[:20], dtype="float64")
        >>> single = NystromCG(kernel, X, Y, X[:20], dtype="float32")
        >>> round(single.lambda_floor() / cg.lambda_floor())
        536870912
        """
        return 0.5 * float(np.finfo(self.dtype).eps) * self.scale * self.factors.trace()

    def release_preconditioner(self) -> None:
        """Forget the preconditioner's λ: :meth:`set_lambda` factors it again.

        The preconditioner lives in U's buffer, so there is no memory to free.

        Examples
        --------
        >>> import numpy as np
        >>> from kopt.contract.registry import registry
        >>> from kopt.nystrom import NystromCG
        >>> X = np.random.default_rng(0).normal(size=(200, 2))
        >>> Y = np.sin(X[:, :1])
        >>> kernel = registry().get("kernel", "gaussian")(bandwidth=1.0)
        >>> cg = NystromCG(kernel, X, Y, X[:20], dtype="float64")
        >>> cg.set_lambda(1e-3)
        >>> cg.release_preconditioner()
        >>> cg.lam is None
        True
        """
        self.lam = None

    def coef(self, v: np.ndarray) -> np.ndarray:
        """The coefficients on the kept centers, w = U⁻¹ v, from whitened ones.

        Parameters
        ----------
        v : array of shape (M, k)
            Whitened coefficients (CG's ``s["v"]``).

        Returns
        -------
        array of shape (M, k)
            w, so that the model is k(·, C) w on the kept centers C (the attribute ``C``).

        Examples
        --------
        >>> import numpy as np
        >>> from kopt.contract.registry import registry
        >>> from kopt.nystrom import NystromCG
        >>> X = np.random.default_rng(0).normal(size=(200, 2))
        >>> Y = np.sin(X[:, :1])
        >>> kernel = registry().get("kernel", "gaussian")(bandwidth=1.0)
        >>> cg = NystromCG(kernel, X, Y, X[:20], dtype="float64")
        >>> s = cg.start(1e-3)
        >>> for _ in range(10):
        ...     s = cg.step(s)
        >>> w = cg.coef(s["v"])
        >>> fit = kernel.exact(X, cg.C) @ w
        >>> w.shape, bool(np.allclose(fit, s["scores"]))
        ((20, 1), True)
        """
        return self.factors.coef(v)

    def projected(self, C: np.ndarray, w: np.ndarray) -> np.ndarray:
        """A start for CG from another model of the same kernel on the same columns: ``k(·, C) w`` projected on these
        centers.

        w' = R⁻¹ K(C_kept, C) w, returned as v = U w' = U⁻ᵀ K(C_kept, C) w: one triangular solve and M M' kernel values,
        no pass.  Where ``C`` are kept centers of these it is the same model; elsewhere its closest in their span.
        ``solver: auto`` starts its grown centers from the smaller model it measured first.

        Parameters
        ----------
        C : array of shape (m, d)
            The other model's centers.
        w : array of shape (m,) or (m, k)
            Its coefficients.

        Returns
        -------
        array of shape (M, k)
            Whitened coefficients to pass to :meth:`start` as ``v``.

        Examples
        --------
        >>> import numpy as np
        >>> from kopt.contract.registry import registry
        >>> from kopt.nystrom import NystromCG
        >>> X = np.random.default_rng(0).normal(size=(200, 2))
        >>> Y = np.sin(X[:, :1])
        >>> kernel = registry().get("kernel", "gaussian")(bandwidth=1.0)
        >>> cg = NystromCG(kernel, X, Y, X[:20], dtype="float64")
        >>> small = NystromCG(kernel, X, Y, X[:10], dtype="float64")
        >>> s = small.start(1e-3)
        >>> for _ in range(10):
        ...     s = small.step(s)
        >>> v = cg.projected(small.C, small.coef(s["v"]))
        >>> bool(np.allclose(kernel.exact(X, cg.C) @ cg.coef(v), s["scores"]))
        True
        """
        xp = self.xp
        w = xp.asarray(w, dtype=np.float64)
        w = w if w.ndim == 2 else w[:, None]
        other = xp.asarray(C, dtype=np.float64)
        step = max(1, CHUNK_ENTRIES // max(1, other.shape[0]))  # K(C_kept, C) a block of rows at a time, never whole
        Kw = xp.empty((self.M, w.shape[1]), dtype=np.float64)
        with blas_threads(1):  # the same bits on any thread count, as the factors' own solves
            for lo in range(0, self.M, step):
                Kw[lo:lo + step] = self.kernel.exact(xp.asarray(self.C[lo:lo + step], dtype=np.float64), other) @ w
            return self.factors.whiten(Kw)

    def apply_T(self, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The scores K w and T v for w = U⁻¹ v: one pass over the rows.

        Parameters
        ----------
        v : array of shape (M, k)
            Whitened coefficients.

        Returns
        -------
        scores : array of shape (n, k)
            K w, the model's values on the rows.
        Tv : array of shape (M, k)
            T v = U⁻ᵀ (A/n) w.

        Examples
        --------
        >>> import numpy as np
        >>> from kopt.contract.registry import registry
        >>> from kopt.nystrom import NystromCG
        >>> X = np.random.default_rng(0).normal(size=(200, 2))
        >>> Y = np.sin(X[:, :1])
        >>> kernel = registry().get("kernel", "gaussian")(bandwidth=1.0)
        >>> cg = NystromCG(kernel, X, Y, X[:20], dtype="float64")
        >>> v = np.ones((cg.M, 1))
        >>> scores, Tv = cg.apply_T(v)
        >>> scores.shape, Tv.shape
        ((200, 1), (20, 1))
        """
        S, G = self.rows.products(self.coef(v))
        return S, self.factors.whiten(G / self.n)

    def precondition(self, r: np.ndarray) -> np.ndarray:
        """P⁻¹ r with P = (w̄/M) U Uᵀ + λI = L Lᵀ at :meth:`set_lambda`'s λ: two M × M triangular solves, no pass.

        Where another CG on the same buffer (:meth:`reweighted`) factored the preconditioner since, it is factored again
        at this CG's λ first.

        Parameters
        ----------
        r : array of shape (M, k)
            A residual.

        Returns
        -------
        array of shape (M, k)
            P⁻¹ r.

        Examples
        --------
        >>> import numpy as np
        >>> from kopt.contract.registry import registry
        >>> from kopt.nystrom import NystromCG
        >>> X = np.random.default_rng(0).normal(size=(200, 2))
        >>> Y = np.sin(X[:, :1])
        >>> kernel = registry().get("kernel", "gaussian")(bandwidth=1.0)
        >>> cg = NystromCG(kernel, X, Y, X[:20], dtype="float64")
        >>> cg.set_lambda(1e-3)
        >>> from kopt.nystrom import upper_times
        >>> UUt = upper_times(cg.U, upper_times(cg.U, np.eye(cg.M), trans=True))  # U Uᵀ
        >>> P = cg.scale * UUt + 1e-3 * np.eye(cg.M)
        >>> bool(np.allclose(P @ cg.precondition(cg.b), cg.b))
        True
        """
        if self.factors.owner is not self:  # another CG on the same buffer (:meth:`reweighted`) factored it since
            lam, self.lam = self.lam, None
            self.set_lambda(lam)
        return self.factors.precondition(r)

    def start(self, lam: float, v: np.ndarray | None = None, *, direction: bool = True,
              refreshed: dict | None = None, take: bool = False) -> dict:
        """CG's state at λ from v: zero (no pass) or a warm start (one pass with float64 products).

        Factors the preconditioner at ``lam`` (:meth:`set_lambda`).  A warm start is usually near its solution, where
        float32 rounding would be most of the residual, so its T v and scores come from float64 products
        (:meth:`replace_residual`).  With ``direction=False`` a warm start's search direction, and with it the
        preconditioner's factor, is left to its first :meth:`step`: a start that may already be solved is checked
        (:meth:`confirm`, no pass) before an M x M factor is made for it.  A start from ``refreshed``, this CG's state
        at another λ refreshed and not stepped since (a λ path's last λ, solved at its confirmation), makes no pass:
        T v and the scores are v's at any λ, and only the residual is λ's (the same bits as a start from its v).

        Parameters
        ----------
        lam : float
            λ.
        v : array of shape (M, k), optional
            The whitened coefficients to start from; None starts from zero.
        direction : bool, optional
            Whether a warm start's search direction is made now (False: at its first :meth:`step`).
        refreshed : dict, optional
            Instead of ``v``: a state refreshed on this CG's rows, targets and weights and not stepped since
            (:meth:`refreshed_here`), whose ``v``, ``Tv`` and ``scores`` the start copies (the state is left as it is).
        take : bool, optional
            With ``refreshed``: its arrays are taken, not copied, and the dict is emptied (the caller hands the state
            over: no second start can read it).  The n x k scores are then held once, not twice (``krr_pcg``'s start
            from ``solver: auto``'s search: the peak of a many-class fit at 10⁶ rows).

        Returns
        -------
        dict
            The state: ``v``, ``Tv``, ``scores`` (K w), ``r`` (b − T v − λ v), ``p`` (the search direction), ``rz``
            (``p`` and ``rz`` not yet where ``direction`` is False).

        Raises
        ------
        ValueError
            ``v`` is not of shape (M, k), or ``refreshed`` is given with ``v`` or is not :meth:`refreshed_here`.
        KoptError
            The preconditioner is not positive definite at ``lam`` (:meth:`set_lambda`).

        Examples
        --------
        >>> import numpy as np
        >>> from kopt.contract.registry import registry
        >>> from kopt.nystrom import NystromCG
        >>> X = np.random.default_rng(0).normal(size=(200, 2))
        >>> Y = np.sin(X[:, :1])
        >>> kernel = registry().get("kernel", "gaussian")(bandwidth=1.0)
        >>> cg = NystromCG(kernel, X, Y, X[:20], dtype="float64")
        >>> s = cg.start(1e-3)
        >>> sorted(s), bool(np.all(s["v"] == 0))
        (['Tv', 'p', 'r', 'rz', 'scores', 'v'], True)
        >>> for _ in range(10):
        ...     s = cg.step(s)
        >>> warm = cg.start(1e-4, s["v"])  # a smaller λ from the solution at 1e-3: one float64 pass
        >>> cg.lam, warm["v"].shape
        (0.0001, (20, 1))
        >>> "p" in cg.start(1e-4, s["v"], direction=False)  # made by the first step, with the factor at 1e-4
        False
        >>> at = cg.refresh(cg.start(1e-4, s["v"]))  # refreshed, not stepped since: the next λ starts with no pass
        >>> passes = cg.passes
        >>> bool(np.all(cg.start(1e-5, refreshed=at)["v"] == s["v"])), cg.passes == passes
        (True, True)
        >>> taken = cg.start(1e-5, refreshed=at, take=True)  # the state handed over: its arrays, no copy
        >>> at
        {}
        """
        if refreshed is not None:
            if v is not None or not self.refreshed_here(refreshed):
                raise ValueError("refreshed: a state refreshed on this CG's rows, targets and weights and not stepped "
                                 "since, given without v")
            return self._start_refreshed(lam, refreshed, direction, take)
        C = self.outputs
        if v is not None:
            v = self.xp.array(v, dtype=np.float64)
            if v.shape != (self.M, C):
                raise ValueError(f"a start of shape {v.shape} for {self.M} centers and {C} outputs")
        if v is None or direction:
            self.set_lambda(lam)
        else:
            self._defer_factor(lam)
        if v is None:
            return self._zero_state()
        return self.replace_residual({"v": v}) if direction else self.refresh({"v": v})

    def _start_refreshed(self, lam, refreshed, direction, take=False):
        """:meth:`start` from a refreshed state at another λ: its T v and scores (taken where ``take``, the dict
        emptied), the residual at λ (as :meth:`refresh` makes it), no pass."""
        if direction:
            self.set_lambda(lam)
        else:
            self._defer_factor(lam)
        if take:
            s = {k: refreshed[k] for k in ("v", "Tv", "scores")}
            refreshed.clear()
        else:
            s = {k: self.xp.array(refreshed[k], copy=True) for k in ("v", "Tv", "scores")}
        s["r"] = self.b - s["Tv"] - self.lam * s["v"]
        s["precise"] = self.binding
        return self.restart(s) if direction else s

    def refreshed_here(self, s: dict) -> bool:
        """Whether state ``s`` was refreshed (:meth:`refresh`) on this CG's rows, targets and weights -- by this CG,
        or by the one it was :meth:`reweighted` from on the same ones -- and not stepped since: its T v and scores
        are then v's here, at any λ (:meth:`start`'s ``refreshed``).

        Parameters
        ----------
        s : dict
            A CG state.

        Returns
        -------
        bool

        Examples
        --------
        >>> import numpy as np
        >>> from kopt.contract.registry import registry
        >>> from kopt.nystrom import NystromCG
        >>> X = np.random.default_rng(0).normal(size=(200, 2))
        >>> Y = np.sin(X[:, :1])
        >>> kernel = registry().get("kernel", "gaussian")(bandwidth=1.0)
        >>> cg = NystromCG(kernel, X, Y, X[:20], dtype="float64")
        >>> s = cg.refresh(cg.start(1e-3))
        >>> cg.refreshed_here(s), cg.reweighted(X, Y, None).refreshed_here(s)
        (True, True)
        >>> cg.refreshed_here(cg.step(s)), cg.reweighted(X, 2 * Y, None).refreshed_here(cg.refresh(s))
        (False, False)
        """
        binding = getattr(self, "binding", None)  # None: a CG whose refresh marks no binding (a cluster's)
        return binding is not None and s.get("precise") is binding

    def _defer_factor(self, lam):
        """λ set without factoring the preconditioner: :meth:`precondition` factors it at λ where it is first
        needed, unless the buffer holds that factor (:meth:`set_lambda`)."""
        f = self.factors
        if not (lam == self.lam and f.owner is self and f.factored):
            f.owner = None  # not this λ's factor: precondition makes it (set_lambda reads CenterFactors.holds first)
        self.lam = float(lam)

    def _zero_state(self):
        """CG's state at v = 0 (no pass): r = b."""
        xp = self.xp
        v = xp.zeros_like(self.b)
        z = self.precondition(self.b)
        return {"v": v, "Tv": xp.zeros_like(v), "scores": xp.zeros((self.n, v.shape[1]), dtype=np.float64),
                "r": self.b.copy(), "p": z, "rz": xp.sum(self.b * z, axis=0)}

    def step(self, s: dict) -> dict:
        """One CG step on state ``s``, in place: one pass over the rows.

        The step applies T + λI to the search direction (one pass: :meth:`apply_T`), moves v, T v, the scores and the
        residual along it, and takes the next direction from the preconditioned residual (:meth:`precondition`).  A
        column whose residual is exactly zero stays where it is.

        Parameters
        ----------
        s : dict
            CG's state from :meth:`start` (``v``, ``Tv``, ``scores``, ``r``, and ``p``, ``rz`` where the start made its
            direction: else they are made here, :meth:`restart`).

        Returns
        -------
        dict
            ``s``, advanced one step.

        Examples
        --------
        >>> import numpy as np
        >>> from kopt.contract.registry import registry
        >>> from kopt.nystrom import NystromCG
        >>> X = np.random.default_rng(0).normal(size=(200, 2))
        >>> Y = np.sin(X[:, :1])
        >>> kernel = registry().get("kernel", "gaussian")(bandwidth=1.0)
        >>> cg = NystromCG(kernel, X, Y, X[:20], dtype="float64")
        >>> s = cg.start(1e-3)
        >>> first = float(cg.relative_residual(s)[0])
        >>> for _ in range(15):
        ...     s = cg.step(s)
        >>> first, bool(cg.relative_residual(s)[0] < 1e-3)
        (1.0, True)
        """
        xp, lam = self.xp, self.lam
        if "p" not in s:  # a start that left its direction to the first step (start(direction=False))
            self.restart(s)
        s.pop("precise", None)  # the float32 products below: the state is no longer a refreshed one
        p = s["p"]
        Kp, Tp = self.apply_T(p)
        q = Tp + lam * p
        curvature = xp.sum(p * q, axis=0)
        active = curvature > 0  # a column whose residual is exactly zero has converged: it stays where it is
        alpha = xp.where(active, s["rz"] / xp.where(active, curvature, 1.0), 0.0)
        s["v"] += alpha * p
        s["Tv"] += alpha * Tp
        self.advance_scores(s, alpha, Kp)
        s["r"] -= alpha * q
        z = self.precondition(s["r"])
        rz = xp.sum(s["r"] * z, axis=0)
        beta = xp.where(active, rz / xp.where(s["rz"] > 0, s["rz"], 1.0), 0.0)
        s["p"] = z + beta * p
        s["rz"] = rz
        return s

    def advance_scores(self, s: dict, alpha: np.ndarray, Kp: np.ndarray) -> None:
        """Move the scores along the step, f += α K p, in place.

        A CG whose rows live on a Dask cluster keeps the scores on the workers and moves them there instead.

        Parameters
        ----------
        s : dict
            CG's state.
        alpha : array of shape (k,)
            The step length of each output column.
        Kp : array of shape (n, k)
            K p, the search direction's scores (from :meth:`apply_T`).

        Examples
        --------
        >>> import numpy as np
        >>> from kopt.contract.registry import registry
        >>> from kopt.nystrom import NystromCG
        >>> X = np.random.default_rng(0).normal(size=(200, 2))
        >>> Y = np.sin(X[:, :1])
        >>> kernel = registry().get("kernel", "gaussian")(bandwidth=1.0)
        >>> cg = NystromCG(kernel, X, Y, X[:20], dtype="float64")
        >>> s = cg.start(1e-3)
        >>> Kp, _ = cg.apply_T(s["p"])
        >>> cg.advance_scores(s, np.array([0.5]), Kp)
        >>> bool(np.allclose(s["scores"], 0.5 * Kp))
        True
        """
        s["scores"] += alpha * Kp

    def refresh(self, s: dict) -> dict:
        """The scores, T v and residual at ``s["v"]`` from one pass with float64 products, in place.

        The steps' float32 products drift from the exact ones by float32 rounding, which would bound the certificate;
        the refreshed ones round as a direct solve's do.

        Parameters
        ----------
        s : dict
            CG's state (at least ``v``).

        Returns
        -------
        dict
            ``s`` with ``scores``, ``Tv`` and ``r`` recomputed, and ``precise`` set to the rows' binding (its
            certificate is a confirmed one until the next :meth:`step`: :meth:`confirm`; :meth:`refreshed_here`).

        Examples
        --------
        >>> import numpy as np
        >>> from kopt.contract.registry import registry
        >>> from kopt.nystrom import NystromCG
        >>> X = np.random.default_rng(0).normal(size=(200, 2))
        >>> Y = np.sin(X[:, :1])
        >>> kernel = registry().get("kernel", "gaussian")(bandwidth=1.0)
        >>> cg = NystromCG(kernel, X, Y, X[:20], dtype="float64")
        >>> s = cg.start(1e-3)
        >>> for _ in range(5):
        ...     s = cg.step(s)
        >>> carried = s["r"].copy()
        >>> s = cg.refresh(s)
        >>> bool(np.allclose(s["r"], carried))  # float64 rows: the carried residual was already exact
        True
        """
        if self._b_pending:  # b's pass rides in this one
            S, G, B = self.rows.products(self.coef(s["v"]), precise=True, adjoint=self._weighted_targets())
            self._set_b(B)
        else:
            S, G = self.rows.products(self.coef(s["v"]), precise=True)
        s["scores"] = S
        s["Tv"] = self.factors.whiten(G / self.n)
        s["r"] = self.b - s["Tv"] - self.lam * s["v"]
        s["precise"] = self.binding
        return s

    def replace_residual(self, s: dict) -> dict:
        """Residual replacement (van der Vorst and Ye (2000)): CG's own state refreshed in place, and its search
        direction restarted.

        Each step's float32 products add their rounding to the carried residual, and CG's recurrences drive the carried
        residual down while the true one stalls where that rounding is; continuing from the refreshed residual
        (:meth:`refresh`) lets the true one follow.  The search direction restarts from it (:meth:`restart`).

        Parameters
        ----------
        s : dict
            CG's state (at least ``v``).

        Returns
        -------
        dict
            ``s`` refreshed, with ``p`` and ``rz`` from its residual.

        Examples
        --------
        >>> import numpy as np
        >>> from kopt.contract.registry import registry
        >>> from kopt.nystrom import NystromCG
        >>> X = np.random.default_rng(0).normal(size=(200, 2))
        >>> Y = np.sin(X[:, :1])
        >>> kernel = registry().get("kernel", "gaussian")(bandwidth=1.0)
        >>> cg = NystromCG(kernel, X, Y, X[:20], dtype="float64")
        >>> s = cg.start(1e-3)
        >>> for _ in range(5):
        ...     s = cg.step(s)
        >>> s = cg.replace_residual(s)
        >>> bool(np.allclose(s["p"], cg.precondition(s["r"])))
        True
        """
        return self.restart(self.refresh(s))

    def restart(self, s: dict) -> dict:
        """CG's search direction from its residual alone, p = P⁻¹ r, in place.

        After a residual replacement the last direction is not conjugate to the new residual, and a step along it can
        raise the objective.

        Parameters
        ----------
        s : dict
            CG's state (at least ``r``).

        Returns
        -------
        dict
            ``s`` with ``p`` and ``rz`` = rᵀ P⁻¹ r.

        Examples
        --------
        >>> import numpy as np
        >>> from kopt.contract.registry import registry
        >>> from kopt.nystrom import NystromCG
        >>> X = np.random.default_rng(0).normal(size=(200, 2))
        >>> Y = np.sin(X[:, :1])
        >>> kernel = registry().get("kernel", "gaussian")(bandwidth=1.0)
        >>> cg = NystromCG(kernel, X, Y, X[:20], dtype="float64")
        >>> s = cg.restart(cg.start(1e-3))
        >>> bool(np.allclose(s["rz"], (cg.b * cg.precondition(cg.b)).sum(axis=0)))
        True
        """
        xp = self.xp
        s["p"] = self.precondition(s["r"])
        s["rz"] = xp.sum(s["r"] * s["p"], axis=0)
        return s

    def confirm(self, s: dict, t: int, tol: float, loss: Loss, Y: np.ndarray,
                final: bool = False) -> tuple[float, float | None, float, float, bool]:
        """The certificate that may stop a solve at relative gap ``tol``, at CG's state ``s`` after step ``t``.

        The carried certificate (:meth:`certificate` from what CG carries, no pass) only says when to confirm: where its
        gap meets ``tol``, or where the carried preconditioned residual has fallen tenfold since the last confirmation
        (the residual's fall at most once in five steps; the gap at once after a confirmation the residual's fall
        triggered, else at most once in five steps), or where the carried P meets ``tol`` against the best confirmed
        dual.  A confirmation is one pass with float64 products that CG continues from (:meth:`replace_residual`);
        with ``final`` (the solve's last step) it refreshes a copy instead and ``s`` is not changed.  A state refreshed
        and not stepped since (a warm start's, :meth:`refresh`) is confirmed as it is, with no pass.  ``s`` keeps
        ``best_dual``, ``refreshed_at``, ``refreshed_residual``, ``gap_triggered`` and ``replacements``, which a
        checkpoint saves.
        docs/design/krr-pcg-certificate.md gives the reasons.

        Parameters
        ----------
        s : dict
            CG's state.
        t : int
            The steps made so far.
        tol : float
            The relative gap that stops the solve (0: never met, confirm only when ``final``).
        loss : Loss
            The square loss.
        Y : array of shape (n, k)
            The targets as CG fits them.
        final : bool, optional
            Whether this is the solve's last step: the certificate is then always confirmed.

        Returns
        -------
        P : float
            The primal value (the refreshed one where ``confirmed``).
        D : float or None
            The best confirmed dual value (each is a lower bound on the optimum); None before the first confirmation.
        scale : float
            The certificate's scale (:func:`kopt.nystrom.certificate`).
        carried : float
            The carried relative gap, which bounds nothing.
        confirmed : bool
            Whether P and D are this step's refreshed ones.

        Examples
        --------
        >>> import numpy as np
        >>> from kopt.contract.registry import registry
        >>> from kopt.nystrom import NystromCG
        >>> X = np.random.default_rng(0).normal(size=(200, 2))
        >>> Y = np.sin(X[:, :1])
        >>> kernel = registry().get("kernel", "gaussian")(bandwidth=1.0)
        >>> cg = NystromCG(kernel, X, Y, X[:20], dtype="float64")
        >>> square = registry().get("loss", "square")()
        >>> s = cg.start(1e-3)
        >>> for t in range(1, 16):
        ...     s = cg.step(s)
        ...     P, D, scale, carried, confirmed = cg.confirm(s, t, 1e-6, square, Y)
        ...     if confirmed and (P - D) <= 1e-6 * abs(P):
        ...         break
        >>> confirmed, s["replacements"] >= 1
        (True, True)
        """
        P, D, scale = self.certificate(s, loss, Y)
        best = s.setdefault("best_dual", -np.inf)
        carried = Check(objective=P, dual=max(D, best)).rel_gap
        if s.get("precise"):  # refreshed and not stepped since (a warm start): this certificate is a confirmed one
            s["best_dual"] = max(D, best)
            return P, s["best_dual"], scale, carried, True
        residual = self.preconditioned_residual(s)
        since = s.setdefault("refreshed_residual", residual)  # the first check's, before any confirmation
        due = t - s.get("refreshed_at", -REFRESH_EVERY) >= REFRESH_EVERY
        # the carried gap meeting tol waits REFRESH_EVERY steps only after a confirmation it triggered itself (near the
        # float32 floor it meets a tight tol step after step while the refreshed one does not); after one the residual's
        # fall triggered, it is confirmed at once
        gap_met = tol > 0 and carried <= tol and (due or not s.get("gap_triggered", 0.0))
        met = gap_met or (due and residual * REPLACE_FALL <= since)
        confirmed_met = tol > 0 and np.isfinite(best) and Check(objective=P, dual=best).rel_gap <= tol
        if not (final or met or confirmed_met):
            return P, (best if np.isfinite(best) else None), scale, carried, False
        if met or confirmed_met:
            s["refreshed_at"], s["refreshed_residual"] = t, residual
            s["gap_triggered"] = float(gap_met or confirmed_met)
            s["replacements"] = s.get("replacements", 0) + 1
            fresh = self.replace_residual(s)
        else:  # the last step alone: the state is not changed, so a run continued with a larger cap ends as a fresh one
            fresh = self.refresh({k: s[k] for k in ("v", "p")})
        P, D, scale = self.certificate(fresh, loss, Y)
        s["best_dual"] = max(D, best)
        return P, s["best_dual"], scale, carried, True

    def Ktr(self, s: dict) -> np.ndarray:
        """Kᵀr with r_i = w_i (f_i − y_i) at state ``s``: n Uᵀ (T v − b), the certificate's product, no pass.

        Parameters
        ----------
        s : dict
            CG's state (``Tv``).

        Returns
        -------
        array of shape (M, k)
            Kᵀr over the kept centers.

        Examples
        --------
        >>> import numpy as np
        >>> from kopt.contract.registry import registry
        >>> from kopt.nystrom import NystromCG
        >>> X = np.random.default_rng(0).normal(size=(200, 2))
        >>> Y = np.sin(X[:, :1])
        >>> kernel = registry().get("kernel", "gaussian")(bandwidth=1.0)
        >>> cg = NystromCG(kernel, X, Y, X[:20], dtype="float64")
        >>> s = cg.refresh(cg.start(1e-3))
        >>> direct = kernel.exact(X, cg.C).T @ (s["scores"] - Y)
        >>> bool(np.allclose(cg.Ktr(s), direct))
        True
        """
        return self.n * upper_times(self.U, s["Tv"] - self.b, trans=True)

    def preconditioned_residual(self, s: dict) -> float:
        """‖r‖_{P⁻¹} / ‖b‖_{P⁻¹}, the largest over the output columns: CG's own measure of how far v is from the
        solution.

        With P ≈ T + λI its square is about the error's share of the solution's energy.  ‖b‖_{P⁻¹} is kept in ``s``
        (``bz``), once per solve.

        Parameters
        ----------
        s : dict
            CG's state (``r``, ``rz``).

        Returns
        -------
        float
            The ratio, 1 at v = 0.

        Examples
        --------
        >>> import numpy as np
        >>> from kopt.contract.registry import registry
        >>> from kopt.nystrom import NystromCG
        >>> X = np.random.default_rng(0).normal(size=(200, 2))
        >>> Y = np.sin(X[:, :1])
        >>> kernel = registry().get("kernel", "gaussian")(bandwidth=1.0)
        >>> cg = NystromCG(kernel, X, Y, X[:20], dtype="float64")
        >>> s = cg.start(1e-3)
        >>> cg.preconditioned_residual(s)
        1.0
        """
        xp = self.xp
        if s.get("bz") is None:  # ‖b‖²_{P⁻¹} at this λ: once per solve, not once per step
            s["bz"] = xp.sum(self.b * self.precondition(self.b), axis=0)
        return float(xp.max(xp.sqrt(xp.maximum(s["rz"], 0.0) / xp.maximum(s["bz"], 1e-300))))

    def relative_residual(self, s: dict) -> np.ndarray:
        """‖b − (T + λI) v‖ / ‖b‖ per output column, from the carried residual.

        Parameters
        ----------
        s : dict
            CG's state (``r``).

        Returns
        -------
        array of shape (k,)
            The relative residual of each column.

        Examples
        --------
        >>> import numpy as np
        >>> from kopt.contract.registry import registry
        >>> from kopt.nystrom import NystromCG
        >>> X = np.random.default_rng(0).normal(size=(200, 2))
        >>> Y = np.sin(X[:, :1])
        >>> kernel = registry().get("kernel", "gaussian")(bandwidth=1.0)
        >>> cg = NystromCG(kernel, X, Y, X[:20], dtype="float64")
        >>> cg.relative_residual(cg.start(1e-3))
        array([1.])
        """
        xp = self.xp
        return xp.sqrt(xp.sum(s["r"] ** 2, axis=0)) / xp.maximum(xp.sqrt(xp.sum(self.b ** 2, axis=0)), 1e-300)

    def scores_at(self, s: dict, rows: np.ndarray) -> np.ndarray:
        """The carried scores f = K w of training rows ``rows`` at state ``s`` (no pass).

        ``solver: auto`` reads its validation rows' scores this way: they ride in every pass with weight 0.  A CG whose
        rows live on a Dask cluster gathers them from the workers instead
        (``kopt.distributed.cg.PartitionCG.scores_at``).

        Parameters
        ----------
        s : dict
            CG's state.
        rows : array of int
            Row positions, in any order.

        Returns
        -------
        array of shape (len(rows), k)
            Their scores, without an intercept.

        Examples
        --------
        >>> import numpy as np
        >>> from kopt.contract.registry import registry
        >>> from kopt.nystrom import NystromCG
        >>> X = np.random.default_rng(0).normal(size=(200, 2))
        >>> Y = np.sin(X[:, :1])
        >>> kernel = registry().get("kernel", "gaussian")(bandwidth=1.0)
        >>> cg = NystromCG(kernel, X, Y, X[:20], dtype="float64")
        >>> s = cg.step(cg.start(1e-3))
        >>> bool(np.array_equal(cg.scores_at(s, np.array([7, 3])), s["scores"][[7, 3]]))
        True
        """
        return s["scores"][rows]

    def scores_of(self, X: ArrayLike, v: np.ndarray, kernel: Kernel, chunk: int = 1 << 21) -> np.ndarray:
        """The model's values k(X, C) w on other rows (validation rows), a block at a time.

        Parameters
        ----------
        X : array or sparse matrix of shape (m, d)
            The rows.
        v : array of shape (M, k)
            Whitened coefficients.
        kernel : Kernel
            The kernel (this CG's, or the same kernel bound to the rows).
        chunk : int, optional
            Kernel values per block.

        Returns
        -------
        array of shape (m, k)
            k(X, C) U⁻¹ v.

        Examples
        --------
        >>> import numpy as np
        >>> from kopt.contract.registry import registry
        >>> from kopt.nystrom import NystromCG
        >>> X = np.random.default_rng(0).normal(size=(200, 2))
        >>> Y = np.sin(X[:, :1])
        >>> kernel = registry().get("kernel", "gaussian")(bandwidth=1.0)
        >>> cg = NystromCG(kernel, X, Y, X[:20], dtype="float64")
        >>> s = cg.start(1e-3)
        >>> s = cg.step(s)
        >>> bool(np.allclose(cg.scores_of(X, s["v"], kernel), s["scores"]))
        True
        """
        rows = RowPass(kernel, X, self.C, self.dtype, threads=self.rows.threads, chunk_entries=chunk)
        return rows.scores_pass(self.coef(v))

    def certificate(self, s: dict, loss: Loss, Y: np.ndarray) -> tuple[float, float, float]:
        """The Nyström problem's primal and dual values at state ``s`` for targets ``Y``, summed over the output columns.

        From the carried scores and Kᵀr (:meth:`Ktr`), no pass (:func:`kopt.nystrom.certificate`); after
        :meth:`refresh` they are float64 values a stopping rule may read.

        Parameters
        ----------
        s : dict
            CG's state.
        loss : Loss
            The square loss.
        Y : array of shape (n, k)
            The targets as CG fits them.

        Returns
        -------
        P : float
            The primal objective.
        D : float
            A dual value, a lower bound on the optimum.
        scale : float
            The certificate's scale.

        Examples
        --------
        >>> import numpy as np
        >>> from kopt.contract.registry import registry
        >>> from kopt.nystrom import NystromCG
        >>> X = np.random.default_rng(0).normal(size=(200, 2))
        >>> Y = np.sin(X[:, :1])
        >>> kernel = registry().get("kernel", "gaussian")(bandwidth=1.0)
        >>> cg = NystromCG(kernel, X, Y, X[:20], dtype="float64")
        >>> square = registry().get("loss", "square")()
        >>> s = cg.start(1e-3)
        >>> for _ in range(15):
        ...     s = cg.step(s)
        >>> P, D, scale = cg.certificate(cg.refresh(s), square, Y)
        >>> bool(D <= P), bool((P - D) / P < 1e-3)
        (True, True)
        """
        from .solver import certificate

        Ktr, w = self.Ktr(s), self.coef(s["v"])
        P = D = scale = 0.0
        for c in range(Y.shape[1]):
            p, d, sc = certificate(loss, self.lam, Y[:, c], s["scores"][:, c], Ktr[:, c], w[:, c], self.U, self.weights)
            P, D, scale = P + p, D + d, scale + sc
        return P, D, scale
