"""The centers' factor U and the preconditioner's factor in one M × M float64 buffer.

Conjugate gradients on M centers (:mod:`kopt.nystrom.cg`) needs two triangular matrices: U (R = K_CC = UᵀU, upper)
for the whitening, and the lower Cholesky factor L of the preconditioner P = s U Uᵀ + λ I.  Each is half an
M × M matrix, so both fit in one (the layout Falkon uses): U keeps the upper triangle and the diagonal, and L is held
as L = L̃ D, L̃ unit lower triangular in the strict lower triangle, D = diag(L) a vector.  Then

    P⁻¹ r = L̃⁻ᵀ D⁻² L̃⁻¹ r,

two triangular solves that never read the diagonal (BLAS's unit-diagonal ``trsm``), and every use of U reads the
upper triangle and the diagonal only.  At M = 8,192 that is 512 MiB where U, UUᵀ and L separately were 1.5 GiB.

UUᵀ is not kept: :meth:`CenterFactors.factor` writes P's lower triangle from U a block of rows at a time (M³/3
flops, the cost of the Cholesky itself) and LAPACK factors it in place; a λ path pays that product once per λ.
Everything stays float64: a float32 P at a small λ has a backward error of about M·eps·‖P‖, far above λ.

A Newton step of a smooth loss (:mod:`kopt.nystrom.smooth`) weighs the rows by the loss's curvature, T_D = U⁻ᵀ (Σ_i D_i
k_i k_iᵀ / n) U⁻¹, and its preconditioner weighs the rows it estimates T from by the same curvature (``weights`` of
:meth:`CenterFactors.factor`; the preconditioner of Meanti, Carratino, Rosasco & Rudi 2020 for the logistic loss):
the kept centers' curvature scales U Uᵀ's columns, or -- where the basis dropped many centers, or more rows are
asked -- the weighted mean of z_j z_jᵀ over those rows is made afresh (:func:`drawn_gram`).
"""
from __future__ import annotations

import weakref

import numpy as np

from ..contract.components import Kernel
from ..numerics.backend import get_namespace
from ..numerics.linalg import parted_cholesky, released_trsm, solve_triangular
from ..numerics.threads import blas_threads, parallel_map

#: rows of P's lower triangle written per block (:meth:`CenterFactors.factor`) at most: three block × M float64
#: temporaries per worker thread (:func:`product_block`)
BLOCK = 512
#: the bytes of one worker thread's three temporaries in the product at most, binding past 2,730 centers (at 8,192
#: centers on two threads, blocks of 512 rows made 201 MB beside the 512 MB factor: docs/design/memory.md)
PRODUCT_BYTES = 32 << 20


def product_block(M: int) -> int:
    """Rows of P's lower triangle one worker thread writes at a time in the preconditioner's product, for M centers:
    :data:`BLOCK`, fewer where its three block × M float64 temporaries would pass :data:`PRODUCT_BYTES`, a multiple
    of 32 and at least 64.  A function of M alone, so the product's bits are the same on any thread count.

    Parameters
    ----------
    M : int
        The number of centers.

    Returns
    -------
    int
        The rows per block.

    Examples
    --------
    >>> from kopt.nystrom.factors import product_block
    >>> product_block(4096), product_block(8192), product_block(32768)
    (320, 160, 64)
    """
    fitting = PRODUCT_BYTES // (3 * 8 * max(1, int(M)))
    return int(min(BLOCK, max(64, fitting // 32 * 32)))


def upper_times(U: np.ndarray, x: np.ndarray, trans: bool = False, block: int = BLOCK) -> np.ndarray:
    """U x (``trans``: Uᵀ x) for an upper triangular U of which only the upper triangle and the diagonal are read.

    Its strict lower triangle may hold anything (:class:`CenterFactors` keeps the preconditioner's factor there).
    A block of columns at a time: matrix products on the blocks above the diagonal and the diagonal blocks' upper
    triangles, with a ``block`` × ``block`` temporary.

    Parameters
    ----------
    U : ndarray of shape (M, M)
        The upper triangular factor.
    x : array of shape (M,) or (M, k)
        The vector or matrix to multiply.
    trans : bool, optional
        Multiply by Uᵀ instead.
    block : int, optional
        Columns per block.

    Returns
    -------
    array
        U x or Uᵀ x, of ``x``'s shape.

    Examples
    --------
    >>> import numpy as np
    >>> from kopt.nystrom import upper_times
    >>> U = np.array([[2.0, 1.0], [99.0, 3.0]])  # the lower entry is not read
    >>> upper_times(U, np.array([1.0, 1.0])), upper_times(U, np.array([1.0, 1.0]), trans=True)
    (array([3., 3.]), array([2., 4.]))
    """
    xp = get_namespace(U)
    M = U.shape[0]
    vector = x.ndim == 1
    X = x[:, None] if vector else x
    out = xp.zeros((M, X.shape[1]), dtype=np.result_type(U.dtype, X.dtype))
    for lo in range(0, M, block):
        hi = min(M, lo + block)
        D = xp.triu(U[lo:hi, lo:hi])
        if trans:  # (Uᵀx)[J] = U[:J, J]ᵀ x[:J] + U[J, J]ᵀ x[J]
            out[lo:hi] = D.T @ X[lo:hi]
            if lo:
                out[lo:hi] += U[:lo, lo:hi].T @ X[:lo]
        else:  # (Ux)[:J] += U[:J, J] x[J]; (Ux)[J] += U[J, J] x[J]
            out[lo:hi] += D @ X[lo:hi]
            if lo:
                out[:lo] += U[:lo, lo:hi] @ X[lo:hi]
    return out[:, 0] if vector else out


class CenterFactors:
    """The centers' factor U and, in the same buffer, the preconditioner's Cholesky factor.

    R = K_CC = UᵀU (upper triangular, M × M float64, Fortran order, as :func:`center_basis` gives it); after
    :meth:`factor`, the preconditioner P = s U Uᵀ + λI = L Lᵀ is held in U's strict lower triangle and a vector, so
    the two take one M × M buffer.  Read U through its upper triangle only (:func:`upper_times`, triangular solves).

    Parameters
    ----------
    U : ndarray of shape (M, M)
        The upper factor; it is handed over: its strict lower triangle is overwritten by the preconditioner's factor.
    gram : ndarray of shape (M, M), optional
        The drawn centers' estimate of T (:func:`drawn_gram`), used instead of U Uᵀ / M where given.
    source : tuple, optional
        ``(kernel, kept rows, drawn rows, kept)``: the kernel, the kept centers' and every drawn center's dense rows
        and the kept ones' positions among the drawn, from which :meth:`factor` weighs the estimate of T
        (:func:`center_factors` gives it; without it a weighted factor is refused).

    Attributes
    ----------
    U : ndarray of shape (M, M)
        The buffer.
    factored : bool
        Whether the preconditioner is factored.
    owner : NystromCG or None
        The CG whose λ the preconditioner is factored at.

    Examples
    --------
    >>> import numpy as np
    >>> from kopt.contract.registry import registry
    >>> kernel = registry().get("kernel", "gaussian")(bandwidth=1.0)
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(200, 2))
    >>> Y = np.sin(X[:, :1])
    >>> from kopt.nystrom import CenterFactors, center_basis
    >>> kept, U = center_basis(kernel, X[:20])
    >>> factors = CenterFactors(U)
    >>> factors.factor(1.0 / 20, 1e-3)
    >>> factors.factored, factors.precondition(np.ones((20, 1))).shape
    (True, (20, 1))
    """

    def __init__(self, U: np.ndarray, gram: np.ndarray | None = None, source: tuple | None = None) -> None:
        self.xp = get_namespace(U)
        self.U = np.asfortranarray(U) if self.xp is np else U  # LAPACK factors a Fortran-order buffer in place
        self.M = U.shape[0]
        #: the preconditioner's estimate of T where it is not U Uᵀ / M: :func:`drawn_gram` (its lower triangle), or None
        self.gram = gram
        #: ``(kernel, kept rows, drawn rows, kept)``: the kernel, the kept centers' and every drawn center's dense rows
        #: and the kept ones' positions among the drawn, from which :meth:`factor` weighs the estimate of T (None: a
        #: weighted factor is refused)
        self.source = source
        self.u_diag = self.xp.diagonal(U).copy()
        self.l_diag = None  # D = diag(L) once factored
        self._trace = None  # U Uᵀ's trace, once asked (:meth:`trace`)
        self._owner = None  # a weak reference to the CG whose scale and λ the factor is (:attr:`owner`)
        self._made_with = None  # what the factor was made from: (scale, λ, weights, rows) (:meth:`holds`)

    @property
    def factored(self) -> bool:
        """Whether the preconditioner is factored (:meth:`factor`).

        Examples
        --------
        >>> import numpy as np
        >>> from kopt.contract.registry import registry
        >>> from kopt.nystrom import CenterFactors, center_basis
        >>> X = np.random.default_rng(0).normal(size=(200, 2))
        >>> kernel = registry().get("kernel", "gaussian")(bandwidth=1.0)
        >>> kept, U = center_basis(kernel, X[:20])
        >>> factors = CenterFactors(U)
        >>> factors.factored
        False
        """
        return self.l_diag is not None

    def trace(self) -> float:
        """The trace of the preconditioner's estimate of T before its scale: the drawn centers' Gram's, or U Uᵀ's.

        U Uᵀ's is ‖U‖²_F over the upper triangle, which is trace(R) = Σ k(c, c), summed a block of columns at a time
        and kept.

        Returns
        -------
        float
            The trace.

        Examples
        --------
        >>> import numpy as np
        >>> from kopt.contract.registry import registry
        >>> from kopt.nystrom import CenterFactors, center_basis
        >>> X = np.random.default_rng(0).normal(size=(200, 2))
        >>> kernel = registry().get("kernel", "gaussian")(bandwidth=1.0)
        >>> kept, U = center_basis(kernel, X[:20])
        >>> factors = CenterFactors(U)
        >>> factors.trace()  # a Gaussian kernel: k(c, c) = 1 on each of the 20 centers
        20.0
        """
        xp = self.xp
        if self.gram is not None:
            return float(xp.trace(self.gram))
        if self._trace is None:
            self._trace = float(sum(float(xp.sum(xp.triu(self.U[:hi, lo:hi], -lo) ** 2))
                                    for lo, hi in ((lo, min(self.M, lo + BLOCK)) for lo in range(0, self.M, BLOCK))))
        return self._trace

    @property
    def per_center(self) -> bool:
        """Whether the estimate of T is U Uᵀ summed over the M kept centers (scaled by 1/M), rather than the drawn
        centers' Gram (``gram``), already a mean over the drawn ones.

        Examples
        --------
        >>> import numpy as np
        >>> from kopt.contract.registry import registry
        >>> from kopt.nystrom import CenterFactors, center_basis
        >>> X = np.random.default_rng(0).normal(size=(200, 2))
        >>> kernel = registry().get("kernel", "gaussian")(bandwidth=1.0)
        >>> kept, U = center_basis(kernel, X[:20])
        >>> factors = CenterFactors(U)
        >>> factors.per_center
        True
        """
        return self.gram is None

    def scale_for(self, mean_weight: float) -> float:
        """The scale s of P = s (U Uᵀ or G) + λI for rows of mean weight w̄: w̄/M for U Uᵀ, w̄ for G (a mean already).

        Parameters
        ----------
        mean_weight : float
            The rows' mean weight w̄ (1 without weights).

        Returns
        -------
        float
            s.

        Examples
        --------
        >>> import numpy as np
        >>> from kopt.contract.registry import registry
        >>> from kopt.nystrom import CenterFactors, center_basis
        >>> X = np.random.default_rng(0).normal(size=(200, 2))
        >>> kernel = registry().get("kernel", "gaussian")(bandwidth=1.0)
        >>> kept, U = center_basis(kernel, X[:20])
        >>> factors = CenterFactors(U)
        >>> factors.scale_for(1.0)
        0.05
        """
        return mean_weight / self.M if self.per_center else mean_weight

    @property
    def owner(self) -> object | None:
        """The :class:`NystromCG` whose scale and λ the factor is (CGs on other row weights may share the buffer), or
        None.

        Held by a weak reference: the CG holds these factors, and a reference back would make a cycle that only the
        garbage collector frees, keeping the M × M buffer alive after its CG.

        Examples
        --------
        >>> import numpy as np
        >>> from kopt.contract.registry import registry
        >>> from kopt.nystrom import CenterFactors, center_basis
        >>> X = np.random.default_rng(0).normal(size=(200, 2))
        >>> kernel = registry().get("kernel", "gaussian")(bandwidth=1.0)
        >>> kept, U = center_basis(kernel, X[:20])
        >>> factors = CenterFactors(U)
        >>> factors.owner is None
        True
        """
        return None if self._owner is None else self._owner()

    @owner.setter
    def owner(self, cg: object | None) -> None:
        self._owner = None if cg is None else weakref.ref(cg)

    def _write_product(self, scale, threads=1, block=None):
        """The buffer's strict lower triangle := that of s U Uᵀ; returns its diagonal (a vector).  Row block I of the
        lower triangle is U[I, i:] U[:i, i:]ᵀ left of the diagonal block (U[:i, i:] lies above the diagonal, which no
        block writes) and U[I, i:] U[I, i:]ᵀ on it, from a copy of U[I, i:] whose own lower part is zeroed.  The blocks
        are independent: ``threads`` of kopt's workers make them, each on one BLAS thread (a threaded GEMM's bits
        follow the thread count; one block's bits do not depend on who makes it).  ``scale``: a number, or one per
        center (U diag(s) Uᵀ: each column of U scaled)."""
        xp, U, M = self.xp, self.U, self.M
        block = product_block(M) if block is None else block
        diag = xp.empty(M, dtype=np.float64)
        vector = getattr(scale, "ndim", 0) == 1

        def one(lo):
            hi = min(M, lo + block)
            rows = U[lo:hi, lo:].copy()
            rows[:, :hi - lo] = xp.triu(rows[:, :hi - lo])
            scaled = rows * (scale[None, lo:] if vector else scale)
            if lo:
                U[lo:hi, :lo] = scaled @ U[:lo, lo:].T
            on = scaled @ rows.T
            diag[lo:hi] = xp.diagonal(on)
            U[lo:hi, lo:hi] = xp.triu(U[lo:hi, lo:hi]) + xp.tril(on, -1)  # the block's upper triangle keeps U

        starts = list(range(0, M, block))
        with blas_threads(1):
            # the costly middle blocks first, so that no thread is left with one at the end
            parallel_map(one, sorted(starts, key=lambda lo: -(M - lo) * (lo + block)), threads if xp is np else 1)
        return diag

    def _write_weighted(self, scale, weights, rows, threads):
        """The buffer's strict lower triangle := that of ``scale`` T̂_w (:meth:`factor`); returns its diagonal."""
        if self.source is None:
            raise ValueError("these factors were made without their centers' rows: no weighted preconditioner")
        kernel, kept_rows, drawn_rows, kept = self.source
        weights = self.xp.asarray(weights, dtype=np.float64)
        if rows is None and self.gram is None:  # the kept centers' weights on U Uᵀ's columns, as a mean over them
            return self._write_product(scale / self.M * weights[self.xp.asarray(kept)], threads)
        G = drawn_gram(kernel, kept_rows, drawn_rows if rows is None else rows, self.U, threads=threads,
                       weights=weights)
        return self._write_gram(scale, G)

    def _write_gram(self, scale, G=None, block=BLOCK):
        """The buffer's strict lower triangle := that of s G (:attr:`gram`, or the given G); returns its diagonal."""
        xp, U, M = self.xp, self.U, self.M
        G = self.gram if G is None else G
        for lo in range(0, M, block):
            hi = min(M, lo + block)
            if lo:
                U[lo:hi, :lo] = scale * G[lo:hi, :lo]
            U[lo:hi, lo:hi] = xp.triu(U[lo:hi, lo:hi]) + xp.tril(scale * G[lo:hi, lo:hi], -1)
        return scale * xp.diagonal(G).copy()

    def factor(self, scale: float, lam: float, threads: int = 1, weights: np.ndarray | None = None,
               rows: np.ndarray | None = None) -> None:
        """Factor P = ``scale`` U Uᵀ + ``lam`` I (``scale`` G + ``lam`` I where ``gram`` is set) in the buffer.

        The factor goes to the buffer's strict lower triangle (L̃, unit diagonal) and ``l_diag`` (D), the product and
        the factor on ``threads`` of kopt's workers (the same bits on any count); U's upper triangle and diagonal are
        kept.

        With ``weights`` the estimate of T weighs its rows (a Newton system's curvature at them): P = ``scale`` T̂_w +
        ``lam`` I with T̂_w = mean_j w_j z_j z_jᵀ over the estimate's rows, z_j = U⁻ᵀ k(kept, x_j).  Where neither
        ``gram`` is set nor ``rows`` are given, the kept centers' weights scale U Uᵀ's columns (T̂_w = U diag(w_kept)
        Uᵀ / M: no kernel values); else T̂_w is made by :func:`drawn_gram` in an M × M float64 array of its own, for
        this factor only.

        Parameters
        ----------
        scale : float
            s (:meth:`scale_for`).
        lam : float
            λ.
        threads : int, optional
            kopt's worker threads for the product and the Cholesky factor (by tiles in fixed parts:
            ``kopt.numerics.linalg.parted_cholesky``).
        weights : array of shape (m,), optional
            One float64 weight per row of the estimate: the kept centers, ``rows``, or the drawn centers.
        rows : array of shape (m, d), optional
            The estimate's rows (dense, in the problem's dtype: the drawn centers and more rows of the problem).

        Raises
        ------
        numpy.linalg.LinAlgError
            P is not positive definite (the buffer's U is intact).
        ValueError
            ``weights`` are given to factors made without their centers' rows (``source``).

        Examples
        --------
        >>> import numpy as np
        >>> from kopt.contract.registry import registry
        >>> from kopt.nystrom import CenterFactors, center_basis
        >>> X = np.random.default_rng(0).normal(size=(200, 2))
        >>> kernel = registry().get("kernel", "gaussian")(bandwidth=1.0)
        >>> kept, U = center_basis(kernel, X[:20])
        >>> factors = CenterFactors(U)
        >>> factors.factor(factors.scale_for(1.0), 1e-3)
        >>> factors.factored, factors.l_diag.shape
        (True, (20,))
        >>> from kopt.nystrom import center_factors
        >>> kept_rows, made = center_factors(kernel, X[:20])  # factors that keep their centers' rows
        >>> made.factor(made.scale_for(1.0), 1e-3, weights=np.full(20, 0.5))  # half the curvature at every center
        >>> made.factored
        True
        """
        xp, U = self.xp, self.U
        self.l_diag = self._made_with = None
        if weights is None:
            diag = self._write_product(scale, threads) if self.gram is None else self._write_gram(scale)
        else:
            diag = self._write_weighted(scale, weights, rows, threads)
        idx = xp.arange(self.M)
        U[idx, idx] = diag + lam
        with blas_threads(1):  # the same bits on any thread count (a threaded LAPACK Cholesky's follow the cores)
            try:
                if xp is np:
                    # by tiles in fixed parts on kopt's workers: the lower triangle and the diagonal alone, in place
                    if parted_cholesky(U, threads=threads) is None:
                        from scipy.linalg import lapack

                        # NumPy's BLAS lacks the entries: LAPACK on one thread (Fortran order: the lower triangle)
                        L, info = lapack.dpotrf(U, lower=1, clean=0, overwrite_a=1)
                        if info != 0 or not np.shares_memory(L, U):
                            raise np.linalg.LinAlgError("the Nystrom preconditioner is not positive definite")
                else:  # pragma: no cover - GPU only: the factor is made in a copy, then written back below U
                    L = xp.linalg.cholesky(xp.tril(U) + xp.tril(U, -1).T)
                    if not bool(xp.all(xp.isfinite(xp.diagonal(L)))):
                        raise np.linalg.LinAlgError("the Nystrom preconditioner is not positive definite")
                    U[...] = xp.triu(U) + xp.tril(L, -1)
                    U[idx, idx] = xp.diagonal(L)
                d = U[idx, idx].copy()
                for lo in range(0, self.M, BLOCK):  # L̃ = L D⁻¹: each column of the strict lower triangle over its pivot
                    hi = min(self.M, lo + BLOCK)
                    panel = U[lo:, lo:hi]
                    U[lo:, lo:hi] = xp.triu(panel) + xp.tril(panel, -1) / d[None, lo:hi]
            finally:
                U[idx, idx] = self.u_diag
        self.l_diag = d
        self._made_with = (float(scale), float(lam), weights, rows)

    def holds(self, scale: float, lam: float, weights: np.ndarray | None = None, rows: np.ndarray | None = None) -> bool:
        """Whether the buffer holds the factor :meth:`factor` makes from these arguments: the same ``scale`` and
        ``lam``, and the very ``weights`` and ``rows`` objects it was made from (or None, as then).

        A Newton step that keeps the last step's preconditioner passes its weights again (:class:`SmoothNewton`): the
        factor is not made twice.

        Parameters
        ----------
        scale : float
            s (:meth:`scale_for`).
        lam : float
            λ.
        weights : array, optional
            The estimate's weights :meth:`factor` was given (the same object), or None.
        rows : array, optional
            The estimate's rows :meth:`factor` was given (the same object), or None.

        Returns
        -------
        bool
            True where the buffer's factor is the one these arguments make.

        Examples
        --------
        >>> import numpy as np
        >>> from kopt.nystrom import CenterFactors, center_basis
        >>> from kopt.contract.registry import registry
        >>> kernel = registry().get("kernel", "gaussian")(bandwidth=1.0)
        >>> kept, U = center_basis(kernel, np.random.default_rng(0).normal(size=(20, 2)))
        >>> factors = CenterFactors(U)
        >>> factors.factor(0.05, 1e-3)
        >>> factors.holds(0.05, 1e-3), factors.holds(0.05, 1e-4)
        (True, False)
        """
        made = self._made_with
        return (self.factored and made is not None and made[0] == float(scale) and made[1] == float(lam)
                and made[2] is weights and made[3] is rows)

    def precondition(self, r: np.ndarray) -> np.ndarray:
        """P⁻¹ r = L̃⁻ᵀ D⁻² L̃⁻¹ r: two unit-diagonal triangular solves on the buffer's strict lower triangle.

        Parameters
        ----------
        r : array of shape (M,) or (M, k)
            A residual.

        Returns
        -------
        array of the shape of ``r``
            P⁻¹ r at the λ of the last :meth:`factor`.

        Examples
        --------
        >>> import numpy as np
        >>> from kopt.contract.registry import registry
        >>> from kopt.nystrom import CenterFactors, center_basis
        >>> X = np.random.default_rng(0).normal(size=(200, 2))
        >>> kernel = registry().get("kernel", "gaussian")(bandwidth=1.0)
        >>> kept, U = center_basis(kernel, X[:20])
        >>> factors = CenterFactors(U)
        >>> factors.factor(0.05, 1e-3)
        >>> from kopt.nystrom import upper_times
        >>> P = 0.05 * upper_times(factors.U, upper_times(factors.U, np.eye(20), trans=True)) + 1e-3 * np.eye(20)
        >>> bool(np.allclose(P @ factors.precondition(np.ones(20)), 1.0))
        True
        """
        d = self.l_diag
        d2 = (d * d)[:, None] if r.ndim == 2 else d * d
        z = solve_triangular(self.U, r, lower=True, unit_diagonal=True)
        return solve_triangular(self.U, z / d2, lower=True, trans="T", unit_diagonal=True)

    def whiten(self, x: np.ndarray) -> np.ndarray:
        """U⁻ᵀ x: kernel values against the centers into whitened coordinates.

        Parameters
        ----------
        x : array of shape (M,) or (M, k)
            Values on the kept centers.

        Returns
        -------
        array of the shape of ``x``
            U⁻ᵀ x.

        Examples
        --------
        >>> import numpy as np
        >>> from kopt.contract.registry import registry
        >>> from kopt.nystrom import CenterFactors, center_basis
        >>> X = np.random.default_rng(0).normal(size=(200, 2))
        >>> kernel = registry().get("kernel", "gaussian")(bandwidth=1.0)
        >>> kept, U = center_basis(kernel, X[:20])
        >>> factors = CenterFactors(U)
        >>> x = np.ones((20, 1))
        >>> from kopt.nystrom import upper_times
        >>> bool(np.allclose(upper_times(factors.U, factors.whiten(x), trans=True), x))
        True
        """
        return solve_triangular(self.U, x, lower=False, trans="T")

    def coef(self, v: np.ndarray) -> np.ndarray:
        """U⁻¹ v: whitened coefficients into coefficients on the kept centers.

        Parameters
        ----------
        v : array of shape (M,) or (M, k)
            Whitened coefficients.

        Returns
        -------
        array of the shape of ``v``
            U⁻¹ v.

        Examples
        --------
        >>> import numpy as np
        >>> from kopt.contract.registry import registry
        >>> from kopt.nystrom import CenterFactors, center_basis
        >>> X = np.random.default_rng(0).normal(size=(200, 2))
        >>> kernel = registry().get("kernel", "gaussian")(bandwidth=1.0)
        >>> kept, U = center_basis(kernel, X[:20])
        >>> factors = CenterFactors(U)
        >>> v = np.ones((20, 1))
        >>> from kopt.nystrom import upper_times
        >>> bool(np.allclose(upper_times(factors.U, factors.coef(v)), v))
        True
        """
        return solve_triangular(self.U, v, lower=False)


def drawn_gram(kernel: Kernel, kept: np.ndarray, drawn: np.ndarray, U: np.ndarray, threads: int = 1,
               block: int = BLOCK, weights: np.ndarray | None = None) -> np.ndarray:
    """The preconditioner's estimate of T from every one of the D drawn centers (or from any rows, weighed).

    G = U⁻ᵀ K(kept, drawn) K(drawn, kept) U⁻¹ / D.  T = U⁻ᵀ (A/n) U⁻¹ with A/n the mean of k_i k_iᵀ over the rows;
    the drawn centers are a uniform sample of the rows, so their mean of k_c k_cᵀ estimates A/n, while the kept ones
    alone are not a uniform sample where the pivoted basis dropped many of them.  A block of drawn centers at a
    time, each on one BLAS thread of kopt's workers, so the bits do not depend on the thread count.

    Parameters
    ----------
    kernel : Kernel
        The kernel.
    kept, drawn : array
        The kept and the drawn centers' dense rows.
    U : ndarray of shape (M, M)
        The kept centers' factor (its upper triangle is read).
    threads : int, optional
        kopt's worker threads.
    block : int, optional
        Drawn centers per block.
    weights : ndarray of shape (D,), optional
        One weight per row of ``drawn``: G = U⁻ᵀ K(kept, drawn) diag(weights) K(drawn, kept) U⁻¹ / D, the estimate of
        a Newton system's T_D from its curvature at those rows (``drawn`` may then be any rows of the problem:
        :meth:`CenterFactors.factor`).

    Returns
    -------
    ndarray of shape (M, M)
        G's lower triangle and diagonal, float64, Fortran order.

    Examples
    --------
    >>> import numpy as np
    >>> from kopt.contract.registry import registry
    >>> kernel = registry().get("kernel", "gaussian")(bandwidth=1.0)
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(200, 2))
    >>> Y = np.sin(X[:, :1])
    >>> from kopt.nystrom import center_basis, drawn_gram, kept_centers
    >>> kept, U = center_basis(kernel, X[:20])
    >>> drawn_gram(kernel, kept_centers(X[:20], kept), X[:20], U).shape
    (20, 20)
    """
    xp = get_namespace(U)
    Ck, Cd = (xp.asarray(C, dtype=np.float64, order="F") for C in (kept, drawn))  # as center_basis reads them
    if weights is not None:
        weights = xp.asarray(weights, dtype=np.float64)
    M, D = Ck.shape[0], Cd.shape[0]
    G = xp.zeros((M, M), dtype=np.float64, order="F")
    workers = threads if xp is np else 1
    sub = max(16, block // 4)  # columns a worker whitens at once: fixed, so the products' shapes (and bits) are too
    with blas_threads(1):
        for lo in range(0, D, block):
            hi = min(D, lo + block)
            W = xp.empty((M, hi - lo), dtype=np.float64, order="F")

            def whiten(a, lo=lo, hi=hi, W=W):
                b = min(hi, a + sub)
                block_values = xp.asfortranarray(kernel.exact(Ck, Cd[a:b]), dtype=np.float64)
                # NumPy's CBLAS with the GIL released (SciPy's solve holds it: the workers took turns), else SciPy's
                if xp is not np or not released_trsm(U, block_values, side="left", trans=True):
                    block_values = solve_triangular(U, block_values, lower=False, trans="T")
                W[:, a - lo:b - lo] = block_values

            parallel_map(whiten, range(lo, hi, sub), workers)

            Ww = W if weights is None else W * weights[None, lo:hi]

            def rows(r, W=W, Ww=Ww):
                q = min(M, r + block)
                G[r:q, :q] += Ww[r:q] @ W[:q].T

            parallel_map(rows, sorted(range(0, M, block), key=lambda r: -r), workers)
    G /= D
    return G
