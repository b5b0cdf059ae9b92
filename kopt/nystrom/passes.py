"""One pass over the training rows: the kernel block k(X_chunk, C) made on the fly, used twice, dropped.

A pass of :class:`kopt.nystrom.NystromCG` (``solver: krr_pcg``) gives, for coefficients P (M × C, on the centers),

    S = K P           (n × C: every row's scores, kept: O(n C), never O(n M))
    G = Kᵀ (w ⊙ S)    (M × C: the normal equations' product A P, A = Σ_i w_i k_i k_iᵀ)

with K = k(X, C) in the problem's dtype (float32 by default: the kernel's GEMM and exp, and both products), each
chunk's Kᵀ(w ⊙ S) summed into float64.  The chunks are dealt to :data:`kopt.numerics.threads.PARTS` parts and the parts'
sums added in part order, so the bits do not depend on the thread count; BLAS is held to one thread inside
(the parts are the parallelism: NumPy's exp is single-threaded, so a threaded GEMM alone would leave cores idle).
"""
from __future__ import annotations

from typing import Callable

import numpy as np
from numpy.typing import ArrayLike

from ..contract.components import Kernel
from ..numerics import rows as _rows
from ..numerics import threads as _threads
from ..numerics.backend import get_namespace

#: kernel entries per chunk of rows on the host (2 MiB in float32): a chunk stays in one core's L2 between the GEMM,
#: the exp and the two products that read it (docs/design/kernel-passes.md)
CHUNK_ENTRIES = 1 << 19

#: kernel entries per chunk on a device (CuPy, 8 MiB in float32): a chunk is a few kernel launches, so larger ones
#: keep the device busy
DEVICE_CHUNK_ENTRIES = 1 << 21


class RowPass:
    """The passes over rows ``X`` against centers ``C``: K p and Kᵀ(K p) in one evaluation of every kernel block.

    Nothing n × M is held: each pass makes every block k(X[lo:hi], C) once and drops it.  The chunks are dealt to a
    fixed number of parts summed in part order, so the bits do not depend on the thread count.

    Parameters
    ----------
    kernel : Kernel
        The kernel.
    X : array or sparse matrix of shape (n, d)
        The rows.
    C : array of shape (M, d)
        The centers, dense, in the problem's dtype.
    dtype : dtype
        The kernel values' precision.
    weights : array of shape (n,), optional
        The row weights :meth:`products` multiplies by.
    threads : int, optional
        kopt's worker threads.
    chunk_entries : int, optional
        Kernel values per chunk (by default a few MiB; larger on CuPy).

    Attributes
    ----------
    n, M : int
        Rows and centers.
    xp : module
        The array module.
    dtype : dtype
        The kernel values' precision.
    chunks : list of tuple of int
        The ``(lo, hi)`` row ranges.
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
    >>> from kopt.nystrom import RowPass
    >>> rows = RowPass(kernel, X, X[:20], np.float64)
    >>> S, G = rows.products(np.ones((20, 1)))
    >>> S.shape, G.shape, rows.passes
    ((200, 1), (20, 1), 1)
    """

    def __init__(self, kernel: Kernel, X: ArrayLike, C: np.ndarray, dtype: np.dtype | type, weights: np.ndarray | None = None,
                 threads: int | None = None, chunk_entries: int | None = None) -> None:
        self.X, self.C = X, C
        self.kernel = kernel
        self.dtype = np.dtype(dtype)
        self.xp = get_namespace(C)
        self.weights = weights
        self.n, self.M = X.shape[0], C.shape[0]
        self.threads = _threads.resolve_threads(threads)
        default = CHUNK_ENTRIES if self.xp is np else DEVICE_CHUNK_ENTRIES
        entries = default if chunk_entries is None else int(chunk_entries)
        width = max(self.M, 0 if (_rows.is_sparse(X) and getattr(kernel, "sparse_rows", False)) else X.shape[1])
        self.chunks = _rows.chunks(self.n, max(16, entries // max(1, width)))
        self.bound = kernel.bind(C)  # the centers' side of the kernel, made once for every pass
        self.passes = 0

    def block(self, lo: int, hi: int) -> np.ndarray:
        """The kernel block k(X[lo:hi], C) in the problem's dtype.

        Parameters
        ----------
        lo, hi : int
            The row range.

        Returns
        -------
        array of shape (hi - lo, M)
            The block.

        Examples
        --------
        >>> import numpy as np
        >>> from kopt.contract.registry import registry
        >>> from kopt.nystrom import RowPass
        >>> X = np.random.default_rng(0).normal(size=(200, 2))
        >>> kernel = registry().get("kernel", "gaussian")(bandwidth=1.0)
        >>> rows = RowPass(kernel, X, X[:20], np.float64)
        >>> K = kernel.exact(X, X[:20])
        >>> bool(np.allclose(rows.block(10, 30), K[10:30]))
        True
        """
        rows = _rows.kernel_rows(self.kernel, self.X, slice(lo, hi), self.xp, self.dtype)
        return self.bound(rows).astype(self.dtype, copy=False)

    def products(self, P: np.ndarray, scores_out: np.ndarray | None = None, weighted: bool = True,
                 precise: bool = False, weights: np.ndarray | None = None,
                 adjoint: np.ndarray | None = None) -> tuple[np.ndarray, ...]:
        """The scores S = K P and the normal equations' product G = Kᵀ(w ⊙ S), in one evaluation of every kernel block.

        The products run in the problem's dtype (float32 by default), each chunk's Kᵀ(w ⊙ S) summed into float64.

        Parameters
        ----------
        P : array of shape (M, k)
            Coefficients on the centers.
        scores_out : array of shape (n, k), optional
            Where to write S (float64).
        weighted : bool, optional
            Multiply S by the weights w before Kᵀ (where the pass or the call has weights).
        precise : bool, optional
            The products in float64 too (the kernel values are still the dtype's): the certificate's pass, whose
            rounding is the direct solve's.
        weights : array of shape (n,) or (n, k), optional
            The weights w for this pass alone, instead of the pass's own: one per row, or one per row and column of P
            (each output its own, a Newton step's curvature).
        adjoint : array of shape (n, j), optional
            Rows R whose Kᵀ R (:meth:`adjoint`, the same bits) this pass makes too, from the same kernel blocks;
            with ``precise`` only.

        Returns
        -------
        S : array of shape (n, k)
            K P, float64.
        G : array of shape (M, k)
            Kᵀ(w ⊙ S), float64.
        A : array of shape (M, j)
            Kᵀ R, float64: where ``adjoint`` is given.

        Raises
        ------
        ValueError
            ``adjoint`` without ``precise``.

        Examples
        --------
        >>> import numpy as np
        >>> from kopt.contract.registry import registry
        >>> from kopt.nystrom import RowPass
        >>> X = np.random.default_rng(0).normal(size=(200, 2))
        >>> kernel = registry().get("kernel", "gaussian")(bandwidth=1.0)
        >>> rows = RowPass(kernel, X, X[:20], np.float64)
        >>> K = kernel.exact(X, X[:20])
        >>> P = np.ones((20, 1))
        >>> S, G = rows.products(P)
        >>> bool(np.allclose(S, K @ P)), bool(np.allclose(G, K.T @ (K @ P)))
        (True, True)
        >>> w = np.linspace(0.0, 2.0, 200)
        >>> S, G = rows.products(P, weights=w)
        >>> bool(np.allclose(G, K.T @ (w[:, None] * (K @ P))))
        True
        """
        xp = self.xp
        if adjoint is not None and not precise:
            raise ValueError("products(adjoint=...) makes Kᵀ R with float64 products: precise=True")
        P = xp.asarray(P)
        dtype = np.dtype(np.float64) if precise else self.dtype
        Pd = P.astype(dtype)
        C = P.shape[1]
        S = xp.empty((self.n, C), dtype=np.float64) if scores_out is None else scores_out
        w = (self.weights if weights is None else weights) if weighted else None

        def work(p):
            acc = xp.zeros((self.M, C), dtype=np.float64)
            extra = None if adjoint is None else xp.zeros((self.M, adjoint.shape[1]), dtype=np.float64)
            for lo, hi in self.chunks[p::_threads.PARTS]:
                K = self.block(lo, hi).astype(dtype, copy=False)
                s = K @ Pd
                S[lo:hi] = s
                if w is not None:
                    s = s * (w[lo:hi, None] if w.ndim == 1 else w[lo:hi]).astype(dtype)
                acc += K.T @ s
                if extra is not None:
                    extra += K.T @ adjoint[lo:hi]
            return acc if extra is None else (acc, extra)

        if adjoint is None:
            return S, self._summed(work)
        G, A = self._summed(work)
        return S, G, A

    def _summed(self, work):
        """One pass: ``work(p)`` on every part (BLAS held to one thread inside kopt's workers), the parts' M x C sums
        (or tuples of them) added in part order, so the bits do not depend on the thread count."""
        with _threads.blas_threads(1):
            parts = _threads.map_parts(work, _threads.PARTS, self.threads)
        self.passes += 1
        if isinstance(parts[0], tuple):  # several sums from the same blocks: each added in part order
            return tuple(_in_order([part[i] for part in parts]) for i in range(len(parts[0])))
        return _in_order(parts)

    def predict_adjoint(self, P: np.ndarray,
                        fn: Callable[[np.ndarray, int, int], np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        """The scores S = K P and G = Kᵀ fn(S), float64 products, in one evaluation of every kernel block.

        This is the pass a certificate of any loss takes: with ``fn = lambda f, lo, hi: w[lo:hi, None] * loss.grad(f,
        y[lo:hi, None])``, G is the Kᵀr of :func:`kopt.nystrom.certificate` at the coefficients P.  The kernel values
        are the problem's dtype's, as in every pass, so the scores and G are those of the same K (the parts summed in
        part order: the same bits on any thread count).

        Parameters
        ----------
        P : array of shape (M,) or (M, k)
            Coefficients on the centers.
        fn : callable
            ``fn(S_rows, lo, hi)``, row-wise: given the float64 scores of rows lo:hi (``(hi - lo, k)``), returns
            ``(hi - lo, k)`` (or ``(hi - lo,)`` for k = 1).  It runs on kopt's worker threads, on disjoint rows, and
            must not call the engine.

        Returns
        -------
        S : array of shape (n, k)
            K P, float64.
        G : array of shape (M, k)
            Kᵀ fn(S), float64.

        Examples
        --------
        >>> import numpy as np
        >>> from kopt.contract.registry import registry
        >>> from kopt.nystrom import RowPass
        >>> X = np.random.default_rng(0).normal(size=(200, 2))
        >>> kernel = registry().get("kernel", "gaussian")(bandwidth=1.0)
        >>> rows = RowPass(kernel, X, X[:20], np.float64)
        >>> K = kernel.exact(X, X[:20])
        >>> y = np.sign(X[:, 0])
        >>> logistic = registry().get("loss", "logistic")()
        >>> grad = lambda f, lo, hi: logistic.grad(f, y[lo:hi, None])
        >>> S, G = rows.predict_adjoint(np.full(20, 0.1), grad)
        >>> bool(np.allclose(G, K.T @ logistic.grad(S, y[:, None])))
        True
        """
        xp = self.xp
        P = xp.asarray(P, dtype=np.float64).reshape(self.M, -1)
        C = P.shape[1]
        S = xp.empty((self.n, C), dtype=np.float64)

        def work(p):
            acc = xp.zeros((self.M, C), dtype=np.float64)
            for lo, hi in self.chunks[p::_threads.PARTS]:
                K = self.block(lo, hi).astype(np.float64)
                S[lo:hi] = K @ P
                acc += K.T @ xp.asarray(fn(S[lo:hi], lo, hi), dtype=np.float64).reshape(hi - lo, C)
            return acc

        G = self._summed(work)
        return S, G

    def adjoint(self, R: np.ndarray) -> np.ndarray:
        """Kᵀ R with float64 products: the right-hand side's pass, once, Kᵀ(w ⊙ Y).

        Parameters
        ----------
        R : array of shape (n, k)
            Float64 values per row.

        Returns
        -------
        array of shape (M, k)
            Kᵀ R, float64.

        Examples
        --------
        >>> import numpy as np
        >>> from kopt.contract.registry import registry
        >>> from kopt.nystrom import RowPass
        >>> X = np.random.default_rng(0).normal(size=(200, 2))
        >>> kernel = registry().get("kernel", "gaussian")(bandwidth=1.0)
        >>> rows = RowPass(kernel, X, X[:20], np.float64)
        >>> K = kernel.exact(X, X[:20])
        >>> R = np.sin(X[:, :1])
        >>> bool(np.allclose(rows.adjoint(R), K.T @ R))
        True
        """
        xp = self.xp
        C = R.shape[1]

        def work(p):
            acc = xp.zeros((self.M, C), dtype=np.float64)
            for lo, hi in self.chunks[p::_threads.PARTS]:
                acc += self.block(lo, hi).astype(np.float64).T @ R[lo:hi]
            return acc

        G = self._summed(work)
        return G

    def scores_pass(self, P: np.ndarray) -> np.ndarray:
        """The scores K P alone (float64), without the adjoint product.

        Parameters
        ----------
        P : array of shape (M, k)
            Coefficients on the centers.

        Returns
        -------
        array of shape (n, k)
            K P.

        Examples
        --------
        >>> import numpy as np
        >>> from kopt.contract.registry import registry
        >>> from kopt.nystrom import RowPass
        >>> X = np.random.default_rng(0).normal(size=(200, 2))
        >>> kernel = registry().get("kernel", "gaussian")(bandwidth=1.0)
        >>> rows = RowPass(kernel, X, X[:20], np.float64)
        >>> K = kernel.exact(X, X[:20])
        >>> P = np.ones((20, 2))
        >>> bool(np.allclose(rows.scores_pass(P), K @ P))
        True
        """
        xp = self.xp
        Pd = xp.asarray(P).astype(self.dtype)
        S = xp.empty((self.n, Pd.shape[1]), dtype=np.float64)

        def work(p):
            for lo, hi in self.chunks[p::_threads.PARTS]:
                S[lo:hi] = self.block(lo, hi) @ Pd

        with _threads.blas_threads(1):
            _threads.map_parts(work, _threads.PARTS, self.threads)
        return S


def _in_order(parts):
    """The parts' sums added in part order (the same bits on any thread count)."""
    total = parts[0]
    for g in parts[1:]:
        total += g
    return total
