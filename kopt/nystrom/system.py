"""The normal equations of kernel ridge regression on Nyström centers, whitened, and their λ path.

For centers C (training rows) the model is f(x) = k(x, C) w with ‖f‖² = wᵀRw, R = K_CC.  kopt's
objective with the square loss, λ/2 wᵀRw + (1/n) Σ_i w_i ½ (k(x_i, C) w − y_i)², is minimised by

    (A/n + λ R) w = B/n,   A = Σ_i w_i k_i k_iᵀ,  B = Σ_i w_i k_i y_iᵀ   (k_i = k(x_i, C)).

That system is solved whitened.  With R = UᵀU (U upper triangular) and v = U w, the objective is
λ/2 ‖v‖² + (1/n) Σ w_i ½ (z_iᵀv − y_i)² with z_i = U⁻ᵀ k_i, and

    (T + λ I) v = b,   T = U⁻ᵀ (A/n) U⁻¹,   b = U⁻ᵀ B/n.

T's eigenvalues lie in [0, max k(x, x)] (‖z_i‖² = k_iᵀ R⁻¹ k_i ≤ k(x_i, x_i)), so T + λI is conditioned
at most 1/λ: every λ of the search (down to 1e-9) is resolved in float64.  The unwhitened A/n + λR is
conditioned up to 1/(λ · λ_min(R)), and R of a wide bandwidth on low-dimensional rows has eigenvalues
at float64's rounding: on cal_housing at 1,024 centers it did not factor below λ = 1e-6, and the
validation RMSE kept falling to λ = 1e-7 (1.5% lower, docs/defaults.md).

The centers are first reduced to a well-conditioned basis: R's pivoted Cholesky factorisation
(:func:`kopt.nystrom.center_basis`) keeps a center while its kernel column is more than
:data:`kopt.nystrom.CENTER_TOLERANCE` (relative residual variance) away from the span of those kept
before it.  A dropped center adds at most that much to any function's reach, and keeping it would
amplify A's rounding by up to 1/λ_min(R) in T.

One M × M system serves every output column (one-vs-rest's classes share A: one-hot targets cost one
factorisation for all classes).  A and B are accumulated a chunk of rows at a time -- k(X_chunk, C) in
the problem's dtype, its products in float64 -- so memory is O(M² + chunk · M), never n × M (validation
rows' scores too are computed a chunk at a time).  T costs two M × M triangular solves (2 M³ flops) once,
in A's buffer; a λ path reuses it, each λ one Cholesky (M³/3) made in T's own buffer (its lower triangle, while
the upper one keeps T), so a system holds two M × M float64 arrays, T and U, whatever it is asked.
"""
from __future__ import annotations

import contextlib
import copy
from typing import Callable, Iterable, Iterator, Sequence

import numpy as np
from numpy.typing import ArrayLike

# the NumPy route's BLAS, imported with the plugin, not in a fit's first call
# (docs/design/nystrom-system.md)
from scipy.linalg import blas

from ..contract.components import Kernel
from ..numerics import rows as _rows
from ..numerics import threads as _threads
from ..numerics.backend import get_namespace
from ..numerics.linalg import cho_solve, cholesky, parted_cholesky, released_trsm, solve_triangular
from ..numerics.memory import Sizes
from ..numerics.threads import blas_threads
from .centers import center_basis, leading_rows

#: the largest relative change one refinement step may make to a λ path point's scores: beyond it the solve's
#: rounding, not λ, decides the scores (:meth:`NystromSystem.path`)
RESOLVED = 1e-4
#: from this many centers on, the search's λ path factors on every worker thread (:meth:`NystromSystem.path`,
#: :func:`kopt.numerics.linalg.parted_cholesky`)
PATH_THREADED = 1024
#: entries per chunk of rows: the chunk's k(X, C) and its dense rows are each at most this many (16 MiB in
#: float32, their float64 copy 32 MiB), so wide sparse rows (text: tens of thousands of columns) are densified
#: a few hundred at a time.  Four times larger, the residual pass alone set a solve's peak; the kernel's GEMM, and a
#: rank-k update of 1,024 rows at M = 4,096, run at the BLAS's full rate on chunks of this size
#: (docs/design/memory.md)
CHUNK_ENTRIES = 1 << 22


#: entries per chunk of a pass that only multiplies the kernel values by a few columns (scores, residuals): no
#: rank-k update to feed, so a quarter of :data:`~kopt.nystrom.CHUNK_ENTRIES` (at its full size the validation scores at 4,096
#: centers set the peak, above the Gram's: docs/design/memory.md)
SCORE_ENTRIES = CHUNK_ENTRIES // 4


#: the BLAS's own work buffers touched by the system's rank-k updates and factorisations (the two OpenBLAS pools of
#: NumPy and SciPy, per thread), as measured above the system's arrays (docs/benchmarks/memory_plan.json;
#: docs/design/memory.md)
BLAS_BUFFERS = 32 << 20


def system_plan(sizes: Sizes) -> list[tuple[str, int]]:
    """What a :class:`NystromSystem` of ``sizes.count`` centers holds at its peak, as memory plan items.

    T (A's buffer, later the factor's too) and U, M × M float64 each; a chunk of rows' kernel values in the
    features' dtype and its float64 copy; the dense centers; the BLAS's work buffers.  A solver returns these from
    its ``memory_plan`` so kopt refuses a system that does not fit before allocating it.

    Parameters
    ----------
    sizes : Sizes
        The problem's sizes (``n``, ``d``, ``count``, ``dtype``, ...).

    Returns
    -------
    list of tuple
        ``(words, bytes)`` items.

    Examples
    --------
    >>> import numpy as np
    >>> import kopt
    >>> from kopt.running.assemble import assemble
    >>> X = np.random.default_rng(0).normal(size=(200, 2))
    >>> spec = kopt.load_spec({"model": {"loss": {"name": "square"}, "kernel": {"name": "gaussian", "bandwidth": 1.0},
    ...                                  "regularizer": {"name": "l2", "lambda": 1e-3},
    ...                                  "features": {"kind": "nystrom", "count": 20}},
    ...                        "solver": {"name": "krr_pcg"}})
    >>> problem = assemble(spec, (X, X[:, 0]))
    >>> from kopt.nystrom import system_plan
    >>> from kopt.numerics.memory import Sizes
    >>> [words for words, size in system_plan(Sizes.of(problem))][0]
    "two 20 x 20 float64 matrices (the system T and the centers' factor U)"
    """
    from ..numerics.memory import matrices

    M, d = min(sizes.count, sizes.n), sizes.d  # the centers are distinct training rows
    problem = sizes.problem
    sparse = problem is not None and _rows.is_sparse(problem.X) and getattr(problem.kernel, "sparse_rows", False)
    rows = max(1, min(sizes.n, CHUNK_ENTRIES // max(1, M, 0 if sparse else d)))
    plan = [matrices(2, M, M, "float64", "the system T and the centers' factor U"),
            matrices(1, rows, M, "float64", "a chunk of rows' kernel values"),
            matrices(1, rows, M, sizes.dtype, "the same chunk as computed"),
            matrices(2, M, d + 2, sizes.dtype, "the dense centers, and as the kernel reads them"),
            ("the BLAS's work buffers", BLAS_BUFFERS)]
    if problem is not None and getattr(getattr(problem, "features", None), "centers", "uniform") == "rpcholesky":
        plan += rpcholesky_plan(sizes.n, M, d)
    return plan


def rpcholesky_plan(n, count, d):
    """What :func:`kopt.nystrom.centers.rpcholesky_order` holds while it draws ``count`` centers from ``n`` rows of
    ``d`` columns: its candidates' factor and their dense rows (float64), and a block of their kernel values."""
    from ..numerics.memory import matrices
    from .centers import RPC_BLOCK, rpcholesky_pool

    P = rpcholesky_pool(n, count, d)
    return [matrices(1, P, min(count, P), "float64", "randomly pivoted Cholesky's factor of its candidate rows"),
            matrices(1, P, d + RPC_BLOCK, "float64", "its candidate rows, and a block of their kernel values")]


def row_chunks(X: ArrayLike, M: int, kernel: Kernel | None = None, entries: int | None = None) -> list[tuple[int, int]]:
    """``(lo, hi)`` row ranges of X whose kernel values against M centers stay within ``entries``.

    The dense rows count too, unless the kernel takes X's sparse rows as they are.

    Parameters
    ----------
    X : array or sparse matrix of shape (n, d)
        The rows.
    M : int
        The number of centers.
    kernel : Kernel, optional
        The kernel (whether it reads sparse rows as they are).
    entries : int, optional
        Kernel values per chunk (:data:`~kopt.nystrom.CHUNK_ENTRIES` by default).

    Returns
    -------
    list of tuple of int
        The row ranges, in order.

    Examples
    --------
    >>> import numpy as np
    >>> from kopt.nystrom import row_chunks
    >>> list(row_chunks(np.zeros((200, 2)), 20, entries=1000))[:2]
    [(0, 50), (50, 100)]
    """
    entries = CHUNK_ENTRIES if entries is None else entries
    return _rows.chunks(X.shape[0], max(1, entries // max(1, M, _width(X, kernel))))


def _width(X, kernel):
    """Values per row a kernel evaluation densifies: X's width, or none for sparse rows the kernel takes."""
    return 0 if _rows.is_sparse(X) and getattr(kernel, "sparse_rows", False) else X.shape[1]


def _gram_update(A, K, alpha=1.0):
    """A += α Kᵀ K (K float64), the lower triangle only: in place by a rank-k update on NumPy (no M × M
    temporary; A's upper triangle is not touched)."""
    xp = get_namespace(K)
    if xp is np:
        # in Fortran order A.T's upper triangle is A's lower one; Kᵀ is a Fortran-order view of the C-order K,
        # which BLAS reads without a copy (faster than trans=1 on K:
        # docs/design/nystrom-system.md)
        out = blas.dsyrk(alpha, K.T, beta=1.0, c=A.T, trans=0, lower=0, overwrite_c=1)
        if not np.shares_memory(out, A):  # pragma: no cover - a SciPy that copied c after all
            A[...] = out.T
    else:  # pragma: no cover - GPU only
        A += alpha * xp.tril(K.T @ K)


def product(A, B):
    """A @ B with BLAS held to one thread on NumPy: a threaded float64 GEMM of two or more columns gives other bits on
    another thread count (OpenBLAS, 1,024 x 1,500 by 1,500 x 2), and these products -- scores, right-hand sides,
    residuals, a few columns each -- feed the search's choices and the model's bits."""
    if get_namespace(A) is np:
        with blas_threads(1):
            return A @ B
    return A @ B  # pragma: no cover - GPU only


def blas_held(threads: int | None) -> contextlib.AbstractContextManager:
    """A context in which BLAS is held to ``threads`` threads, or left as it is (None).

    Parameters
    ----------
    threads : int or None
        BLAS threads inside the context.

    Returns
    -------
    contextmanager
        The context.

    Examples
    --------
    >>> import numpy as np
    >>> from kopt.nystrom import blas_held
    >>> with blas_held(1):
    ...     float(np.ones((4, 4)).dot(np.ones(4))[0])
    4.0
    """
    return contextlib.nullcontext() if threads is None else blas_threads(threads)


def _writeable(A):
    """Whether A may be overwritten (a NumPy array a shared system froze may not)."""
    return getattr(getattr(A, "flags", None), "writeable", True)


def symmetric_from_lower(A: np.ndarray) -> np.ndarray:
    """A with its lower triangle copied onto its upper one (in place on NumPy).

    Parameters
    ----------
    A : array of shape (M, M)
        A square matrix whose lower triangle is set.

    Returns
    -------
    array of shape (M, M)
        The symmetric matrix (``A`` itself on NumPy).

    Examples
    --------
    >>> import numpy as np
    >>> from kopt.nystrom import symmetric_from_lower
    >>> symmetric_from_lower(np.array([[1.0, 0.0], [2.0, 3.0]]))
    array([[1., 2.],
           [2., 3.]])
    """
    if get_namespace(A) is np:
        _mirror_upper(A.T)  # A's lower triangle is its transpose's upper one (a view: in place)
        return A
    return get_namespace(A).tril(A) + get_namespace(A).tril(A, -1).T  # pragma: no cover - GPU only


def kept_centers(C: np.ndarray, kept: ArrayLike, own: bool = False) -> np.ndarray:
    """The rows ``kept`` of the centers C, in that order and in Fortran order (a kernel reads the centers' columns).

    Parameters
    ----------
    C : array of shape (m, d)
        The drawn centers.
    kept : array of int
        The positions to keep (:func:`center_basis`'s).
    own : bool, optional
        ``C`` is handed over (a Fortran-order NumPy array): its rows are put in that order in place, the others last
        and cut off, with no second copy.

    Returns
    -------
    array of shape (len(kept), d)
        The kept rows, Fortran order.

    Examples
    --------
    >>> import numpy as np
    >>> from kopt.nystrom import kept_centers
    >>> C = np.arange(6.0).reshape(3, 2)
    >>> kept_centers(C, [2, 0])
    array([[4., 5.],
           [0., 1.]])
    """
    xp = get_namespace(C)
    if not (own and xp is np and C.flags.f_contiguous):
        return xp.asfortranarray(C[xp.asarray(kept)])
    kept = np.asarray(kept)
    _permute_rows(C, np.concatenate([kept, np.setdiff1d(np.arange(C.shape[0]), kept)]))
    return leading_rows(C, len(kept))


def _permute_rows(C, order, block=256):
    """C[:] = C[order] in place for a Fortran-order C, a block of columns at a time (an M × block temporary)."""
    for lo in range(0, C.shape[1], block):
        C[:, lo:lo + block] = C[order, lo:lo + block]


#: the bytes of one square tile :func:`_mirror_upper` copies: a tile and its transpose (2 x 8 KB: 32 x 32 in float64, 45 x
#: 45 in float32) stay in the L1 cache whatever A's layout, and a float32 matrix takes as few tiles (Python steps) as a
#: float64 one of half its entries (an exact pair's 1,230 x 1,230 float32 kernel: 4.5 -> 2.5 ms)
MIRROR_TILE_BYTES = 8 << 10


def _mirror_upper(A, tile=None):
    """Copy A's strict upper triangle onto its lower one, in place, one square tile at a time.  A strip of columns at a
    time read one matrix's worth of strided rows per strip, slower than tiles for a C-order A and more so for the
    transposed view :func:`symmetric_from_lower` hands it (docs/design/nystrom-system.md)."""
    n = A.shape[0]
    tile = tile or int((MIRROR_TILE_BYTES // A.dtype.itemsize) ** 0.5)
    for lo in range(0, n, tile):
        hi = min(n, lo + tile)
        for top in range(hi, n, tile):
            A[top:top + tile, lo:hi] = A[lo:hi, top:top + tile].T
        D = A[lo:hi, lo:hi]
        lower = np.tril_indices(hi - lo, -1)
        D[lower] = D.T[lower]


#: columns (rows) of a part of :func:`solve_upper_transposed` at least: narrower parts run BLAS's triangular kernel
#: below its rate
SOLVE_PART_MIN = 64


def solve_upper_transposed(U, B, side="left"):
    """U⁻ᵀ B (``side="left"``: B Fortran order, its columns solved) or B U⁻¹ (``"right"``: B's rows solved) in place,
    for the upper triangular U of R = UᵀU, on NumPy; returns B.

    The columns (rows) are cut into ``kopt.numerics.threads.PARTS`` parts whatever the thread count (each at least
    :data:`SOLVE_PART_MIN` wide), each part one single-threaded ``dtrsm`` of NumPy's BLAS with the GIL released
    (:func:`kopt.numerics.linalg.released_trsm`) on kopt's worker threads: the same bits on any thread count, on every
    core.  A threaded ``dtrsm``'s bits followed the cores (T, and the model, did for 74, 81, 102, 300 ... centers), and
    SciPy's holds the GIL.  Where NumPy's BLAS has no such entry: SciPy's, one call on one thread."""
    U = np.asfortranarray(U)
    left = side == "left"
    n = B.shape[1] if left else B.shape[0]
    parts = _threads.split(n, max(1, min(_threads.PARTS, n // SOLVE_PART_MIN)))

    def part(p):
        lo, hi = parts[p]
        if left:  # a block of a Fortran-order B's columns lies contiguous: solved where it is
            return released_trsm(U, B[:, lo:hi], side="left", trans=True)
        block = np.asfortranarray(B[lo:hi])  # a block of rows is strided in either order: solved in a copy
        if not released_trsm(U, block, side="right", trans=False):
            return False
        B[lo:hi] = block
        return True

    with blas_threads(1):
        if all(_threads.map_parts(part, len(parts), _threads.resolve_threads(None))):
            return B
        # no released entry: SciPy's dtrsm, the whole of B at once
        out = blas.dtrsm(1.0, U, B, side=0 if left else 1, lower=0, trans_a=1 if left else 0, overwrite_b=1)
    if not np.shares_memory(out, B):  # pragma: no cover - a SciPy that copied b after all
        B[...] = out
    return B


class NystromSystem:
    """The whitened normal equations of the rows ``X`` for targets ``Y`` on centers ``C``, solved directly.

    With R = K_CC = UᵀU and v = U w, kernel ridge regression on the centers solves (T + λI) v = b with
    T = U⁻ᵀ (A/n) U⁻¹, A = Σ_i w_i k_i k_iᵀ and b = U⁻ᵀ B/n, B = Σ_i w_i k_i y_iᵀ.  The system is built once (one
    pass over the rows, M² memory) and factored once per λ, so a λ path costs one Cholesky a point.  Kernel values
    are computed in ``dtype``, A's products in float64: a float32 A is not positive semidefinite to the precision
    a small λ needs.

    Parameters
    ----------
    kernel : Kernel
        The kernel, its bandwidth a number.
    X : array or sparse matrix of shape (n, d)
        The rows (dense or CSR).
    Y : array of shape (n, k)
        The targets, one column per output.
    C : array of shape (m, d)
        The drawn centers; :func:`center_basis` keeps a well-conditioned basis of them.
    dtype : dtype, optional
        The kernel values' precision (float32 by default).
    weights : array of shape (n,), optional
        Row weights (mean 1).
    basis : tuple, optional
        Another system's ``(kept, U)`` on the same centers and kernel, to reuse.
    own_centers : bool, optional
        ``C`` is handed over (a Fortran-order NumPy array the system may reorder and keep).

    Attributes
    ----------
    C : array of shape (M, d)
        The kept centers, in the pivoted order of :func:`center_basis`.
    kept : ndarray of int
        Their positions in the given ``C``.
    M, n : int
        The kept centers and the rows added.
    U : ndarray of shape (M, M)
        R = K_CC = UᵀU.
    An : ndarray of shape (M, M) or None
        A/n (float64, lower triangle); None once :meth:`whitened` made T, which carries it from then on.
    Bn : ndarray of shape (M, k)
        B/n.

    Examples
    --------
    >>> import numpy as np
    >>> from kopt.contract.registry import registry
    >>> kernel = registry().get("kernel", "gaussian")(bandwidth=1.0)
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(200, 2))
    >>> Y = np.sin(X[:, :1])
    >>> from kopt.nystrom import NystromSystem
    >>> system = NystromSystem(kernel, X, Y, X[:20], dtype=np.float64)
    >>> v = system.solve(1e-3)
    >>> w = system.coef(v)
    >>> w.shape, system.M
    ((20, 1), 20)
    >>> scores = system.path([1e-2, 1e-3], X[:5])
    >>> len(scores), scores[0].shape
    (2, (5, 1))
    """

    def __init__(self, kernel: Kernel, X: ArrayLike, Y: np.ndarray, C: np.ndarray, dtype: np.dtype | type = np.float32,
                 weights: np.ndarray | None = None, basis: tuple | None = None, own_centers: bool = False) -> None:
        xp = get_namespace(C)
        self.kernel, self.dtype, self.xp = kernel, np.dtype(dtype), xp
        if basis is None:
            with blas_threads(1):  # the same bits on any thread count: the pivots choose the centers
                basis = center_basis(kernel, C)
        self.kept, self.U = basis  # ``basis``: another system's ``(kept, U)`` on the same centers and kernel
        self.C = kept_centers(C, self.kept, own=own_centers)
        self.M = self.C.shape[0]
        self.n = 0
        self.An = xp.zeros((self.M, self.M), dtype=np.float64)
        self.Bn = xp.zeros((self.M, Y.shape[1]), dtype=np.float64)
        self._whitened = None
        self._diag = None  # T's diagonal while T's buffer holds a factor (``_factored``)
        self._held = self._release = None  # a factor kept after the call, and its holder's release (:meth:`hold_factor`)
        self._consumed = False  # True once plus(consume=True) took this system's buffers
        self.add_rows(X, Y, weights)

    def add_rows(self, X: ArrayLike, Y: np.ndarray, weights: np.ndarray | None = None) -> None:
        """Add rows to the system: A += Σ w_i k_i k_iᵀ, B += Σ w_i k_i y_iᵀ, n += rows.

        Kernel values are computed in row chunks of :data:`~kopt.nystrom.CHUNK_ENTRIES` (their float64 copy included),
        so memory stays O(M²) whatever n.  Rows are added before the system is solved; a solved one adds rows through
        :meth:`plus`.

        Parameters
        ----------
        X : array or sparse matrix of shape (m, d)
            The rows to add.
        Y : array of shape (m, k)
            Their targets.
        weights : array of shape (m,), optional
            Their weights.

        Raises
        ------
        RuntimeError
            The system is solved (its T made), or :meth:`plus` consumed it.

        Examples
        --------
        >>> import numpy as np
        >>> from kopt.contract.registry import registry
        >>> from kopt.nystrom import NystromSystem
        >>> X = np.random.default_rng(0).normal(size=(200, 2))
        >>> Y = np.sin(X[:, :1])
        >>> kernel = registry().get("kernel", "gaussian")(bandwidth=1.0)
        >>> system = NystromSystem(kernel, X, Y, X[:20], dtype=np.float64)
        >>> system.add_rows(X[:50], Y[:50])
        >>> system.n
        250
        """
        if self.An is None:
            raise RuntimeError("rows are added to a solved Nystrom system through plus()" if not self._consumed else
                               "this Nystrom system was consumed by plus(consume=True): use the one it returned")
        xp = self.xp
        rows = X.shape[0]
        A, B = self.An, self.Bn
        if self.n:
            A *= self.n
            B *= self.n
        for lo, hi, Kc in kernel_chunks(self.kernel, self.C, self.dtype, X):
            Yc = Y[lo:hi]
            if weights is not None:
                w = weights[lo:hi]
                Yc = Yc * w[:, None]
                _gram_update(A, Kc * xp.sqrt(w)[:, None])
            else:
                _gram_update(A, Kc)
            B += product(Kc.T, Yc)
        self.n += rows
        A *= 1.0 / self.n
        B *= 1.0 / self.n
        self._whitened = None

    def plus(self, X: ArrayLike, Y: np.ndarray, weights: np.ndarray | None = None,
             consume: bool = False) -> NystromSystem:
        """A new system: this one's rows and the rows given.

        With this system's T made, the new T is updated by the rows' whitened features z = U⁻ᵀk, a chunk of rows at a
        time (a rank-k update: rows · M² flops, instead of M³ to make T again); ``solver: auto`` adds its validation
        rows this way, so the solve on every row reuses the search's system.

        Parameters
        ----------
        X : array or sparse matrix of shape (m, d)
            The rows to add.
        Y : array of shape (m, k)
            Their targets.
        weights : array of shape (m,), optional
            Their weights.
        consume : bool, optional
            Hand this system's M × M buffer to the new one where it may be written (not a shared one's): one M × M
            float64 less at the peak, and this system is no longer usable.  Otherwise this system is unchanged (it
            may be shared: ``kopt.nystrom.cache``).

        Returns
        -------
        NystromSystem
            The system of both sets of rows.

        Examples
        --------
        >>> import numpy as np
        >>> from kopt.contract.registry import registry
        >>> from kopt.nystrom import NystromSystem
        >>> X = np.random.default_rng(0).normal(size=(200, 2))
        >>> Y = np.sin(X[:, :1])
        >>> kernel = registry().get("kernel", "gaussian")(bandwidth=1.0)
        >>> system = NystromSystem(kernel, X, Y, X[:20], dtype=np.float64)
        >>> T, b = system.whitened()
        >>> both = system.plus(X[:50], Y[:50])
        >>> both.n, system.n
        (250, 200)
        >>> direct = NystromSystem(kernel, np.vstack([X, X[:50]]), np.vstack([Y, Y[:50]]), X[:20], dtype=np.float64)
        >>> bool(np.allclose(both.solve(1e-3), direct.solve(1e-3)))
        True
        """
        self._give_back()
        out = copy.copy(self)
        if self._whitened is None:
            if consume and _writeable(self.An):
                out.An, out.Bn = self.An, self.Bn.copy()
                self.An = None
                self._consumed = True
            else:
                out.An, out.Bn = self.An.copy(), self.Bn.copy()
            out.add_rows(X, Y, weights)
            return out
        xp = self.xp
        T0, b0 = self._whitened[0], self._rhs()
        if consume and _writeable(T0):
            T = T0
            T *= float(self.n)
            self._whitened, self.An, self._consumed = None, None, True
        else:
            T = T0 * float(self.n)
        b, B = b0 * float(self.n), self.Bn * float(self.n)
        for lo, hi, Kc in kernel_chunks(self.kernel, self.C, self.dtype, X):
            Yc = Y[lo:hi] if weights is None else Y[lo:hi] * weights[lo:hi, None]
            B += product(Kc.T, Yc)
            Z = self._whiten_rows(Kc)
            b += product(Z.T, Yc)
            _gram_update(T, Z if weights is None else Z * xp.sqrt(weights[lo:hi])[:, None])
        out.n = self.n + X.shape[0]
        T = symmetric_from_lower(T)
        for a in (T, b, B):
            a *= 1.0 / out.n
        out.An, out.Bn, out._whitened = None, B, (T, b)
        return out

    def own_copy(self) -> NystromSystem:
        """A system of the same rows whose T (made here if it was not) is a writeable copy of its own.

        The squared hinge's Newton steps change T (:meth:`update_rows`), and ``solver: auto`` keeps the square loss's
        system they start from while it compares the two losses.  One M × M float64 more while both live.

        Returns
        -------
        NystromSystem
            The copy.

        Examples
        --------
        >>> import numpy as np
        >>> from kopt.contract.registry import registry
        >>> from kopt.nystrom import NystromSystem
        >>> X = np.random.default_rng(0).normal(size=(200, 2))
        >>> Y = np.sin(X[:, :1])
        >>> kernel = registry().get("kernel", "gaussian")(bandwidth=1.0)
        >>> system = NystromSystem(kernel, X, Y, X[:20], dtype=np.float64)
        >>> mine = system.own_copy()
        >>> mine.whitened()[0] is system.whitened()[0]
        False
        """
        T, b = self.whitened()
        out = copy.copy(self)
        out._whitened = (T.copy(), None if b is None else b.copy())
        out.Bn = None if self.Bn is None else self.Bn.copy()
        out._diag = None
        return out

    @property
    def shed_state(self) -> bool:
        """Whether :meth:`shed` dropped U and the dense centers (:meth:`restore` brings them back).

        Examples
        --------
        >>> import numpy as np
        >>> from kopt.contract.registry import registry
        >>> from kopt.nystrom import NystromSystem
        >>> X = np.random.default_rng(0).normal(size=(200, 2))
        >>> Y = np.sin(X[:, :1])
        >>> kernel = registry().get("kernel", "gaussian")(bandwidth=1.0)
        >>> system = NystromSystem(kernel, X, Y, X[:20], dtype=np.float64)
        >>> system.shed_state
        False
        """
        return self.U is None

    def shed(self) -> None:
        """Drop U and the dense centers, keeping T, b and B/n: a solved system held aside while a larger one is built.

        ``solver: auto`` keeps its best system so far this way while it builds the next size.  Nothing is dropped
        from a shared system (``kopt.nystrom.cache``: its T is read-only), an unsolved one (T not made) or one on a
        device.

        Examples
        --------
        >>> import numpy as np
        >>> from kopt.contract.registry import registry
        >>> from kopt.nystrom import NystromSystem
        >>> X = np.random.default_rng(0).normal(size=(200, 2))
        >>> Y = np.sin(X[:, :1])
        >>> kernel = registry().get("kernel", "gaussian")(bandwidth=1.0)
        >>> system = NystromSystem(kernel, X, Y, X[:20], dtype=np.float64)
        >>> v = system.solve(1e-3)
        >>> system.shed()
        >>> system.shed_state, system.C is None
        (True, True)
        """
        if self._whitened is None or not _writeable(self._whitened[0]) or self.xp is not np:
            return  # shared, unsolved or on a device: nothing is dropped
        self.U = self.C = None

    def restore(self, C: np.ndarray) -> None:
        """U and the dense centers again, after :meth:`shed`.

        The centers' basis is computed as it was (one BLAS thread: the same bits), so the system is the one it was.

        Parameters
        ----------
        C : array of shape (m, d)
            The centers as given to the constructor, in their order; handed over as the constructor's
            ``own_centers`` (the system may reorder and keep them).

        Raises
        ------
        ValueError
            ``C`` are other centers than the system's.

        Examples
        --------
        >>> import numpy as np
        >>> from kopt.contract.registry import registry
        >>> from kopt.nystrom import NystromSystem
        >>> X = np.random.default_rng(0).normal(size=(200, 2))
        >>> Y = np.sin(X[:, :1])
        >>> kernel = registry().get("kernel", "gaussian")(bandwidth=1.0)
        >>> system = NystromSystem(kernel, X, Y, X[:20], dtype=np.float64)
        >>> v = system.solve(1e-3)
        >>> system.shed()
        >>> system.restore(np.asfortranarray(X[:20]))
        >>> system.shed_state, bool(np.allclose(system.coef(v), system.coef(system.solve(1e-3))))
        (False, True)
        """
        if self.U is not None:
            return
        with blas_threads(1):
            kept, U = center_basis(self.kernel, C)
        if not np.array_equal(np.asarray(kept), np.asarray(self.kept)):
            raise ValueError("restore() was given other centers than the system's")
        self.U, self.C = U, kept_centers(C, kept, own=True)

    def update_rows(self, X: ArrayLike | None, sign: float = 1.0, weights: np.ndarray | None = None,
                    chunks: Iterable[tuple[np.ndarray, np.ndarray | None]] | None = None) -> None:
        """T ± (1/n) Σ w_i z_i z_iᵀ over the rows ``X``: the system of another set of rows on the same centers.

        At rows · M² flops (their kernel values, whitened, and a rank-k update of T's lower triangle); n is unchanged.
        The squared hinge's Newton steps (``solver: svm_nystrom``) keep T the system of the rows inside the margin
        this way, as rows cross it.  T must be made and writeable (not a shared system's).  The right-hand sides b and
        B/n are not kept (a row's target does not enter T), so the system's own solves (:meth:`solve`, :meth:`path`,
        :meth:`refine`, :meth:`plus`) refuse it from then on.

        Parameters
        ----------
        X : array or sparse matrix of shape (m, d), or None
            The rows (None with ``chunks``).
        sign : float, optional
            +1 adds the rows, -1 takes them out.
        weights : array of shape (m,), optional
            The rows' weights.
        chunks : iterable of (K, weights) pairs, optional
            Instead of ``X``, the rows' kernel values where the caller holds them (K float64, overwritten).

        Raises
        ------
        ValueError
            T is a shared system's, read-only.

        Examples
        --------
        >>> import numpy as np
        >>> from kopt.contract.registry import registry
        >>> from kopt.nystrom import NystromSystem
        >>> X = np.random.default_rng(0).normal(size=(200, 2))
        >>> Y = np.sin(X[:, :1])
        >>> kernel = registry().get("kernel", "gaussian")(bandwidth=1.0)
        >>> system = NystromSystem(kernel, X, Y, X[:20], dtype=np.float64)
        >>> mine = system.own_copy()
        >>> mine.update_rows(X[:50], sign=-1.0)  # T of the last 150 rows, still divided by n = 200
        >>> rest = NystromSystem(kernel, X[50:], Y[50:], X[:20], dtype=np.float64)
        >>> bool(np.allclose(mine.whitened()[0] * 200 / 150, rest.whitened()[0]))
        True
        """
        self.update_whitened(self.whitened_rows(X, weights, chunks), sign)

    def whitened_rows(self, X: ArrayLike | None = None, weights: np.ndarray | None = None,
                      chunks: Iterable[tuple[np.ndarray, np.ndarray | None]] | None = None) -> Iterator[np.ndarray]:
        """The rows' whitened features √w_i z_i (z_i = U⁻ᵀ k_i), a chunk of rows at a time.

        Parameters
        ----------
        X : array or sparse matrix of shape (m, d), optional
            The rows (None with ``chunks``).
        weights : array of shape (m,), optional
            The rows' weights.
        chunks : iterable of (K, weights) pairs, optional
            As in :meth:`update_rows`.

        Yields
        ------
        array of shape (rows, M)
            A chunk's features (float64; where computed from ``X``, each chunk is overwritten by the next).

        Examples
        --------
        >>> import numpy as np
        >>> from kopt.contract.registry import registry
        >>> from kopt.nystrom import NystromSystem
        >>> X = np.random.default_rng(0).normal(size=(200, 2))
        >>> Y = np.sin(X[:, :1])
        >>> kernel = registry().get("kernel", "gaussian")(bandwidth=1.0)
        >>> system = NystromSystem(kernel, X, Y, X[:20], dtype=np.float64)
        >>> Z = np.vstack([Z.copy() for Z in system.whitened_rows(X)])
        >>> T, b = system.whitened()
        >>> bool(np.allclose(Z.T @ Z / 200, T))
        True
        """
        if chunks is None:
            chunks = ((Kc, None if weights is None else weights[lo:hi])
                      for lo, hi, Kc in kernel_chunks(self.kernel, self.C, self.dtype, X))
        for Kc, w in chunks:
            Z = self._whiten_rows(Kc)
            if w is not None:
                Z *= self.xp.sqrt(w)[:, None]
            yield Z

    def update_whitened(self, Zs: Iterable[np.ndarray], sign: float = 1.0) -> None:
        """T ± (1/n) Σ ZᵀZ over the chunks Z of whitened features: :meth:`update_rows` for rows whose features are at
        hand.

        Parameters
        ----------
        Zs : iterable of arrays of shape (rows, M)
            Chunks of whitened features (:meth:`whitened_rows`).
        sign : float, optional
            +1 adds the rows, -1 takes them out.

        Raises
        ------
        ValueError
            T is a shared system's, read-only.

        Examples
        --------
        >>> import numpy as np
        >>> from kopt.contract.registry import registry
        >>> from kopt.nystrom import NystromSystem
        >>> X = np.random.default_rng(0).normal(size=(200, 2))
        >>> Y = np.sin(X[:, :1])
        >>> kernel = registry().get("kernel", "gaussian")(bandwidth=1.0)
        >>> system = NystromSystem(kernel, X, Y, X[:20], dtype=np.float64)
        >>> mine = system.own_copy()
        >>> Z = [Z.copy() for Z in mine.whitened_rows(X[:50])]
        >>> mine.update_whitened(Z, sign=-1.0)
        >>> mine.update_whitened(Z, sign=1.0)
        >>> bool(np.allclose(mine.whitened()[0], system.whitened()[0]))
        True
        """
        T, _ = self.whitened()
        if not _writeable(T):
            raise ValueError("a shared Nystrom system's T is read-only: update_rows needs a system of its own")
        touched = False
        for Z in Zs:
            if Z.shape[0]:
                _gram_update(T, Z, alpha=float(sign) / self.n)
                touched = True
        if touched:
            T = symmetric_from_lower(T)  # in place on NumPy
        self._whitened, self.Bn = (T, None), None

    def clear_rows(self) -> None:
        """T = 0: the system of no rows (n unchanged), to which :meth:`update_rows` adds rows.

        Raises
        ------
        ValueError
            T is a shared system's, read-only.

        Examples
        --------
        >>> import numpy as np
        >>> from kopt.contract.registry import registry
        >>> from kopt.nystrom import NystromSystem
        >>> X = np.random.default_rng(0).normal(size=(200, 2))
        >>> Y = np.sin(X[:, :1])
        >>> kernel = registry().get("kernel", "gaussian")(bandwidth=1.0)
        >>> system = NystromSystem(kernel, X, Y, X[:20], dtype=np.float64)
        >>> mine = system.own_copy()
        >>> mine.clear_rows()
        >>> mine.update_rows(X[:50])
        >>> part = NystromSystem(kernel, X[:50], Y[:50], X[:20], dtype=np.float64)
        >>> bool(np.allclose(mine.whitened()[0] * 200 / 50, part.whitened()[0]))
        True
        """
        T, _ = self.whitened()
        if not _writeable(T):
            raise ValueError("a shared Nystrom system's T is read-only: clear_rows needs a system of its own")
        T[...] = 0.0
        self._whitened, self.Bn = (T, None), None

    def rescale(self, n: int) -> None:
        """Count the same rows' system as ``n`` rows: T's sums divided by ``n`` instead of by this system's n.

        The squared hinge's search solves on the fit rows, its final solve on every training row.

        Parameters
        ----------
        n : int
            The row count to divide by.

        Examples
        --------
        >>> import numpy as np
        >>> from kopt.contract.registry import registry
        >>> from kopt.nystrom import NystromSystem
        >>> X = np.random.default_rng(0).normal(size=(200, 2))
        >>> Y = np.sin(X[:, :1])
        >>> kernel = registry().get("kernel", "gaussian")(bandwidth=1.0)
        >>> system = NystromSystem(kernel, X, Y, X[:20], dtype=np.float64)
        >>> T = system.whitened()[0].copy()
        >>> system.rescale(400)
        >>> system.n, bool(np.allclose(system.whitened()[0], T / 2))
        (400, True)
        """
        T, b = self.whitened()
        T *= self.n / float(n)
        if b is not None:
            b *= self.n / float(n)
        if self.Bn is not None:
            self.Bn *= self.n / float(n)
        self.n = int(n)

    def _rhs(self):
        """b of :meth:`whitened`, or an error where :meth:`update_rows` did not keep it."""
        b = self.whitened()[1]
        if b is None:
            raise RuntimeError("this Nystrom system's rows were changed by update_rows: it keeps T only")
        return b

    def _whiten_rows(self, K):
        """Z = K U⁻¹ (K float64, overwritten on NumPy): the rows' whitened features z = U⁻ᵀk."""
        if self.xp is np:
            # Zᵀ = U⁻ᵀ Kᵀ in place: Kᵀ of the C-order K is Fortran order (the same bits on any thread count)
            return solve_upper_transposed(self.U, K.T).T
        return solve_triangular(self.U, K.T, lower=False, trans="T").T  # pragma: no cover - GPU only

    @classmethod
    def total(cls, systems: Sequence[NystromSystem]) -> NystromSystem:
        """The system of the union of the systems' rows.

        The row sets are disjoint and on the same centers and kernel: ``kopt tune``'s folds are sums of their parts.

        Parameters
        ----------
        systems : sequence of NystromSystem
            Unsolved systems (their T not made).

        Returns
        -------
        NystromSystem
            The system of every row.

        Raises
        ------
        ValueError
            A system is solved, or the systems are on different centers or kernels.

        Examples
        --------
        >>> import numpy as np
        >>> from kopt.contract.registry import registry
        >>> from kopt.nystrom import NystromSystem
        >>> X = np.random.default_rng(0).normal(size=(200, 2))
        >>> Y = np.sin(X[:, :1])
        >>> kernel = registry().get("kernel", "gaussian")(bandwidth=1.0)
        >>> system = NystromSystem(kernel, X, Y, X[:20], dtype=np.float64)
        >>> first = NystromSystem(kernel, X[:120], Y[:120], X[:20], dtype=np.float64)
        >>> second = NystromSystem(kernel, X[120:], Y[120:], X[:20], dtype=np.float64)
        >>> both = NystromSystem.total([first, second])
        >>> both.n, bool(np.allclose(both.solve(1e-3), system.solve(1e-3)))
        (200, True)
        """
        first = systems[0]
        if any(s.An is None for s in systems):
            raise ValueError("solved systems (their T made) do not add: sum the parts before solving")
        if any(s.M != first.M or s.kernel is not first.kernel and s.kernel.options.as_dict() != first.kernel.options.as_dict()
               for s in systems):
            raise ValueError("systems on different centers or kernels do not add")
        out = copy.copy(first)
        out.n = sum(s.n for s in systems)
        out.An = sum(s.An * (s.n / out.n) for s in systems)
        out.Bn = sum(s.Bn * (s.n / out.n) for s in systems)
        out._whitened = None
        return out

    def whitened(self) -> tuple[np.ndarray, np.ndarray | None]:
        """``(T, b)``: T = U⁻ᵀ (A/n) U⁻¹ (symmetric) and b = U⁻ᵀ B/n, computed once per set of rows.

        On NumPy T is made in A/n's own buffer (mirrored, then two in-place triangular solves, BLAS ``dtrsm`` from the
        left and from the right in fixed parts: bit-identical on 1 and 2 threads), which A/n then no longer holds: T
        carries it (one M × M float64 less at the peak).  LAPACK's congruence ``dsygst`` would take M³ flops instead of
        2 M³, but its bits follow the thread count, and the solve's should not (docs/design/blas-threads.md).

        Returns
        -------
        T : array of shape (M, M)
            The whitened system (read-only for a shared system).
        b : array of shape (M, k) or None
            The whitened right-hand side; None after :meth:`update_rows`.

        Raises
        ------
        RuntimeError
            :meth:`plus` consumed this system.

        Examples
        --------
        >>> import numpy as np
        >>> from kopt.contract.registry import registry
        >>> from kopt.nystrom import NystromSystem
        >>> X = np.random.default_rng(0).normal(size=(200, 2))
        >>> Y = np.sin(X[:, :1])
        >>> kernel = registry().get("kernel", "gaussian")(bandwidth=1.0)
        >>> system = NystromSystem(kernel, X, Y, X[:20], dtype=np.float64)
        >>> T, b = system.whitened()
        >>> T.shape, b.shape, bool(np.allclose(T, T.T))
        ((20, 20), (20, 1), True)
        """
        self._give_back()
        if self._whitened is None:
            if self._consumed:
                raise RuntimeError("this Nystrom system was consumed by plus(consume=True): use the one it returned")
            # a shared system's A/n is read-only (kopt.nystrom.cache): T then takes a copy, read-only too once made
            # (threads may share the system, so no factor is made in its buffer: ``_factored``)
            shared = not _writeable(self.An)
            T = symmetric_from_lower(self.An.copy() if shared else self.An)
            if self.xp is np:
                # symmetric: the C-order T is also its own transpose, the Fortran-order T.T
                # in fixed parts of columns, then of rows, on the worker threads: the same bits on any thread count
                # (:func:`solve_upper_transposed`)
                W = solve_upper_transposed(self.U, T.T, side="left")  # U⁻ᵀ A
                solve_upper_transposed(self.U, W, side="right")  # (U⁻ᵀ A) U⁻¹, in T's buffer
            else:  # pragma: no cover - GPU only
                T = solve_triangular(self.U, solve_triangular(self.U, T, lower=False, trans="T").T, lower=False,
                                     trans="T")
            T = symmetric_from_lower(T)  # exactly symmetric (the two triangles differ by rounding)
            b = solve_triangular(self.U, self.Bn, lower=False, trans="T")
            if shared and self.xp is np:
                T.flags.writeable = False
            self._whitened = (T, b)
            self.An = None  # T carries A from here on (on NumPy in A's own buffer)
        return self._whitened

    def scores(self, X: ArrayLike, w: np.ndarray) -> np.ndarray:
        """k(X, C) w in float64 for the rows ``X``, a chunk of rows at a time (their kernel values never held whole).

        Parameters
        ----------
        X : array or sparse matrix of shape (m, d)
            The rows.
        w : array of shape (M, k)
            Coefficients on the kept centers (:meth:`coef`).

        Returns
        -------
        array of shape (m, k)
            The model's values.

        Examples
        --------
        >>> import numpy as np
        >>> from kopt.contract.registry import registry
        >>> from kopt.nystrom import NystromSystem
        >>> X = np.random.default_rng(0).normal(size=(200, 2))
        >>> Y = np.sin(X[:, :1])
        >>> kernel = registry().get("kernel", "gaussian")(bandwidth=1.0)
        >>> system = NystromSystem(kernel, X, Y, X[:20], dtype=np.float64)
        >>> w = system.coef(system.solve(1e-3))
        >>> bool(np.allclose(system.scores(X, w), kernel.exact(X, system.C) @ w))
        True
        """
        out = self.xp.empty((X.shape[0], w.shape[1]), dtype=np.float64)
        for lo, hi, K in kernel_chunks(self.kernel, self.C, self.dtype, X, SCORE_ENTRIES):
            out[lo:hi] = product(K, w)
        return out

    def _cholesky(self, H, threads=1):
        """The lower Cholesky factor of H (overwritten: its lower triangle and diagonal), or None where H is not
        positive definite; H's strict upper triangle is not touched.  One BLAS thread by default; ``threads=None``:
        on every worker thread, by tiles in fixed parts (:func:`kopt.numerics.linalg.parted_cholesky`: the search's
        scoring from M = 1,024 on and the squared hinge's Newton steps; docs/design/blas-threads.md).  Either way the bits do not depend on the
        machine's cores (a threaded LAPACK Cholesky's do, and the model solved from it did)."""
        try:
            if threads is None and self.xp is np:
                if parted_cholesky(H) is not None:
                    return H
                threads = 1  # NumPy's BLAS lacks the entries: LAPACK on one thread, the same bits too
            with blas_held(threads):
                return cholesky(H, overwrite=True, zero_upper=False)
        except np.linalg.LinAlgError:
            return None

    @contextlib.contextmanager
    def _factored(self, lam, threads=1, required=False):
        """The lower Cholesky factor L of T + λI (None where it does not factor), for the block; T is itself again
        after it.

        On NumPy, with T writeable, L is made in T's own buffer: the factor takes the lower triangle and the
        diagonal, T keeps its strict upper triangle and its diagonal is held aside (``_times_T`` multiplies
        by T meanwhile), and leaving the block mirrors T back.  A copy of T per factor was one M × M float64 more
        at the peak.  A shared system's T is read-only (kopt.nystrom.cache): its factor
        is made in a copy.

        ``required``: where T + λI does not factor, retry with δI added, δ from the features' rounding upwards
        (x10 a try) -- that λ is then effectively δ-regularised, which :meth:`refine` corrects for -- and raise
        ``LinAlgError`` if none does; without it a λ below T's rounding gives None (the search's :meth:`path`
        refuses such a λ)."""
        L, made = self._make_factor(lam, threads, required)
        try:
            yield L
        finally:
            self._unmake_factor(made)

    def _make_factor(self, lam, threads, required):
        """``_factored``'s factor and what ``_unmake_factor`` needs to give T back."""
        T, _ = self.whitened()
        in_place = self.xp is np and _writeable(T) and T.flags.c_contiguous
        diag = self.xp.diagonal(T).copy()
        delta = float(np.finfo(self.dtype).eps) * float(self.xp.sum(diag)) / self.M
        H, L = None, None
        self._diag = diag if in_place else None
        made = (T, diag, in_place)
        try:
            for attempt in range(8 if required else 1):
                shift = lam + (delta * 10.0 ** (attempt - 1) if attempt else 0.0)
                if in_place:
                    if attempt:
                        _mirror_upper(T)  # a failed try overwrote part of the lower triangle
                    H = T
                else:
                    H = T.copy() if H is None else H
                    if attempt:
                        H[...] = T
                H[np.diag_indices(self.M)] = diag + shift
                L = self._cholesky(H, threads)
                if L is not None:
                    break
            if L is None and required:
                raise np.linalg.LinAlgError("the Nystrom system T + lambda I is not positive definite")
        except BaseException:
            self._unmake_factor(made)
            raise
        return L, made

    def _unmake_factor(self, made):
        """T itself again after ``_make_factor`` (its lower triangle from its upper one, its diagonal put back)."""
        T, diag, in_place = made
        if in_place:
            _mirror_upper(T)
            T[np.diag_indices(self.M)] = diag
        self._diag = None

    def hold_factor(self, lam: float, threads: int | None = 1, release: Callable[[], None] | None = None) -> np.ndarray:
        """The lower Cholesky factor of T + λI, kept after the call until :meth:`release_factor`.

        On NumPy it lies in T's own buffer (no M × M copy), so T, read through :meth:`whitened`, is not itself
        meanwhile.  The squared hinge's Newton steps hold the factor of an earlier step's T_S + λI
        (:class:`HingeNewton`).  Where T + λI does not factor, δI is added as in :meth:`factor`.

        Parameters
        ----------
        lam : float
            λ.
        threads : int or None, optional
            BLAS threads for the factor; None: every worker thread, by tiles in fixed parts (the same bits).
        release : callable, optional
            Called with no arguments the first time T is read through :meth:`whitened` (or :meth:`plus`) while the
            factor is held, before T is handed out: the holder gives T back there (:meth:`release_factor`, and
            whatever changes it owes T).

        Returns
        -------
        array of shape (M, M)
            L in its lower triangle and diagonal (its strict upper triangle is T's).

        Raises
        ------
        numpy.linalg.LinAlgError
            T + λI does not factor even with δI added.

        Examples
        --------
        >>> import numpy as np
        >>> from kopt.contract.registry import registry
        >>> from kopt.nystrom import NystromSystem
        >>> X = np.random.default_rng(0).normal(size=(200, 2))
        >>> Y = np.sin(X[:, :1])
        >>> kernel = registry().get("kernel", "gaussian")(bandwidth=1.0)
        >>> system = NystromSystem(kernel, X, Y, X[:20], dtype=np.float64)
        >>> mine = system.own_copy()
        >>> L = np.tril(mine.hold_factor(1e-3))
        >>> mine.release_factor()
        >>> bool(np.allclose(L, mine.factor(1e-3)))
        True
        """
        self._give_back()
        L, self._held = self._make_factor(lam, threads, True)
        self._release = release
        return L

    def release_factor(self) -> None:
        """T itself again after :meth:`hold_factor` (nothing where no factor is held).

        Examples
        --------
        >>> import numpy as np
        >>> from kopt.contract.registry import registry
        >>> from kopt.nystrom import NystromSystem
        >>> X = np.random.default_rng(0).normal(size=(200, 2))
        >>> Y = np.sin(X[:, :1])
        >>> kernel = registry().get("kernel", "gaussian")(bandwidth=1.0)
        >>> system = NystromSystem(kernel, X, Y, X[:20], dtype=np.float64)
        >>> T = system.whitened()[0].copy()
        >>> L = system.hold_factor(1e-3)
        >>> system.release_factor()
        >>> bool(np.array_equal(system.whitened()[0], T))
        True
        """
        held, self._held, self._release = self._held, None, None
        if held is not None:
            self._unmake_factor(held)

    def _give_back(self):
        """Where a factor is held: its holder's ``release`` (else :meth:`release_factor`), so T is itself."""
        if self._held is not None:
            release = self._release or self.release_factor
            self._release = None
            release()
            self.release_factor()  # a holder's release gave T back already: nothing is left held

    def _times_T(self, v):
        """T v from T's strict upper triangle and its diagonal (the same bits whether or not T's buffer holds a
        factor in its lower triangle meanwhile: ``_factored``)."""
        T, _ = self.whitened()
        if self.xp is not np:  # pragma: no cover - GPU only (its factor is made in a copy)
            return T @ v
        # the C-order T's upper triangle is its Fortran transpose's lower one, which dsymm reads (with the
        # diagonal: T's own is put back for the call where the buffer holds a factor's)
        held = self._diag
        with blas_threads(1):  # a threaded ?symm's bits follow the cores
            if held is None:
                return blas.dsymm(1.0, T.T, v, side=0, lower=1)
            factor_diag = np.diagonal(T).copy()
            T[np.diag_indices(self.M)] = held
            try:
                return blas.dsymm(1.0, T.T, v, side=0, lower=1)
            finally:
                T[np.diag_indices(self.M)] = factor_diag

    def factor(self, lam: float) -> np.ndarray:
        """The lower Cholesky factor of T + λI, in a new array (T is unchanged).

        Where T + λI does not factor (λ within T's rounding), δI is added, δ from the features' rounding upwards
        (×10 a try): that λ is then effectively δ-regularized, which :meth:`refine` corrects for.

        Parameters
        ----------
        lam : float
            λ.

        Returns
        -------
        array of shape (M, M)
            L, lower triangular, with L Lᵀ = T + λI (+ δI).

        Raises
        ------
        numpy.linalg.LinAlgError
            T + λI does not factor even with δI added.

        Examples
        --------
        >>> import numpy as np
        >>> from kopt.contract.registry import registry
        >>> from kopt.nystrom import NystromSystem
        >>> X = np.random.default_rng(0).normal(size=(200, 2))
        >>> Y = np.sin(X[:, :1])
        >>> kernel = registry().get("kernel", "gaussian")(bandwidth=1.0)
        >>> system = NystromSystem(kernel, X, Y, X[:20], dtype=np.float64)
        >>> L = system.factor(1e-3)
        >>> T, b = system.whitened()
        >>> bool(np.allclose(L @ L.T, T + 1e-3 * np.eye(system.M)))
        True
        """
        with self._factored(lam, required=True) as L:
            return self.xp.tril(L)

    def coef(self, v: np.ndarray) -> np.ndarray:
        """w = U⁻¹ v: the model's coefficients on the kept centers, from the whitened ones.

        Parameters
        ----------
        v : array of shape (M, k)
            Whitened coefficients (:meth:`solve`).

        Returns
        -------
        array of shape (M, k)
            w, so that the model is k(·, C) w on the kept centers C.

        Examples
        --------
        >>> import numpy as np
        >>> from kopt.contract.registry import registry
        >>> from kopt.nystrom import NystromSystem
        >>> X = np.random.default_rng(0).normal(size=(200, 2))
        >>> Y = np.sin(X[:, :1])
        >>> kernel = registry().get("kernel", "gaussian")(bandwidth=1.0)
        >>> system = NystromSystem(kernel, X, Y, X[:20], dtype=np.float64)
        >>> w = system.coef(system.solve(1e-3))
        >>> w.shape
        (20, 1)
        """
        return solve_triangular(self.U, v, lower=False)

    def solve(self, lam: float, L: np.ndarray | None = None) -> np.ndarray:
        """The whitened coefficients v minimizing λ/2 ‖v‖² + (1/n) Σ w_i ½‖z_iᵀv − y_i‖², (T + λI) v = b.

        Parameters
        ----------
        lam : float
            λ.
        L : array of shape (M, M), optional
            :meth:`factor`'s factor at ``lam``, if at hand; otherwise one is made in T's buffer and T is given back.

        Returns
        -------
        array of shape (M, k)
            v; the coefficients on the centers are :meth:`coef` of it.

        Raises
        ------
        RuntimeError
            :meth:`update_rows` changed the rows, so the system keeps no right-hand side.
        numpy.linalg.LinAlgError
            T + λI does not factor even with δI added (:meth:`factor`).

        Examples
        --------
        >>> import numpy as np
        >>> from kopt.contract.registry import registry
        >>> from kopt.nystrom import NystromSystem
        >>> X = np.random.default_rng(0).normal(size=(200, 2))
        >>> Y = np.sin(X[:, :1])
        >>> kernel = registry().get("kernel", "gaussian")(bandwidth=1.0)
        >>> system = NystromSystem(kernel, X, Y, X[:20], dtype=np.float64)
        >>> v = system.solve(1e-3)
        >>> T, b = system.whitened()
        >>> bool(np.allclose(T @ v + 1e-3 * v, b))
        True
        """
        if L is None:
            with self._factored(lam, required=True) as L:
                return self.solve(lam, L)
        with blas_threads(1):
            return cho_solve(L, self._rhs())

    def refine(self, lam: float, X: ArrayLike, Y: np.ndarray, weights: np.ndarray | None = None, steps: int = 4,
               tol: float = 1e-9) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
        """The solve, refined against float64 residuals over the rows ``X``: mixed-precision iterative refinement.

        Each step is one pass over the rows, corrected through the same factor (made in T's own buffer).  It stops
        where the gradient in v falls to ``tol`` of b.

        Parameters
        ----------
        lam : float
            λ.
        X : array or sparse matrix of shape (n, d)
            The system's rows.
        Y : array of shape (n, k)
            Their targets.
        weights : array of shape (n,), optional
            Their weights.
        steps : int, optional
            The most refinement steps.
        tol : float, optional
            The gradient's norm, relative to b's, that ends the refinement.

        Returns
        -------
        w : array of shape (M, k)
            The coefficients on the kept centers.
        scores : array of shape (n, k)
            k(X, C) w.
        Ktr : array of shape (M, k)
            Kᵀr with r_i = w_i (f_i − y_i), the certificate's product.
        steps : int
            The refinement steps made.

        Raises
        ------
        RuntimeError
            :meth:`update_rows` changed the rows, so the system keeps no right-hand side.

        Examples
        --------
        >>> import numpy as np
        >>> from kopt.contract.registry import registry
        >>> from kopt.nystrom import NystromSystem
        >>> X = np.random.default_rng(0).normal(size=(200, 2))
        >>> Y = np.sin(X[:, :1])
        >>> kernel = registry().get("kernel", "gaussian")(bandwidth=1.0)
        >>> system = NystromSystem(kernel, X, Y, X[:20], dtype=np.float64)
        >>> w, scores, Ktr, steps = system.refine(1e-3, X, Y)
        >>> bool(np.allclose(scores, kernel.exact(X, system.C) @ w)), steps <= 4
        (True, True)
        """
        with self._factored(lam, required=True) as L:
            v = self.solve(lam, L)
            rhs = float(self.xp.sqrt(self.xp.sum(self._rhs() ** 2))) or 1.0
            for k in range(steps + 1):
                w = self.coef(v)
                scores, Ktr = residual_pass(self.kernel, self.C, self.dtype, w, X, Y, weights)
                # the gradient in v: λv + U⁻ᵀ Kᵀr / n
                g = lam * v + solve_triangular(self.U, Ktr / self.n, lower=False, trans="T")
                if k == steps or float(self.xp.sqrt(self.xp.sum(g * g))) <= tol * rhs:
                    return w, scores, Ktr, k
                with blas_threads(1):
                    v = v - cho_solve(L, g)

    def path(self, lams: Sequence[float], X: ArrayLike) -> list[np.ndarray | None]:
        """The scores ``k(X, C) w(λ)`` of the rows ``X`` (the validation rows) for every λ of ``lams``.

        Each λ is one Cholesky of T + λI and one step of iterative refinement against the float64 residual
        (T + λI) v − b.  The step's change to the scores estimates the solve's rounding error in what is scored: where
        it passes ``RESOLVED`` of the scores (or T + λI does not factor), rounding, not λ, decides the scores, and the λ
        is not a choice (None).  X's kernel values are computed a chunk of rows at a time for all the λ together, never
        held whole (docs/design/memory.md).

        Parameters
        ----------
        lams : sequence of float
            The λ to score.
        X : array or sparse matrix of shape (m, d)
            The rows to score (dense or CSR).

        Returns
        -------
        list of (array of shape (m, k) or None)
            Each λ's scores, None for a λ the system does not resolve.

        Raises
        ------
        RuntimeError
            :meth:`update_rows` changed the rows, so the system keeps no right-hand side.

        Examples
        --------
        >>> import numpy as np
        >>> from kopt.contract.registry import registry
        >>> from kopt.nystrom import NystromSystem
        >>> X = np.random.default_rng(0).normal(size=(200, 2))
        >>> Y = np.sin(X[:, :1])
        >>> kernel = registry().get("kernel", "gaussian")(bandwidth=1.0)
        >>> system = NystromSystem(kernel, X, Y, X[:20], dtype=np.float64)
        >>> scores = system.path([1e-2, 1e-3], X[:5])
        >>> len(scores), scores[1].shape
        (2, (5, 1))
        >>> w = system.coef(system.solve(1e-3))
        >>> bool(np.allclose(scores[1], kernel.exact(X[:5], system.C) @ w))
        True
        """
        self.whitened()  # T first: each λ's factor is made in its buffer
        b = self._rhs()
        threads = None if self.M >= PATH_THREADED else 1  # None: every worker thread, the same bits (_cholesky)
        solved = {}
        for i, lam in enumerate(lams):
            with self._factored(lam, threads) as L:  # in T's own buffer (no M × M copy per λ)
                if L is None:
                    continue
                with blas_held(threads):
                    v = cho_solve(L, b)
                    dv = cho_solve(L, self._times_T(v) + lam * v - b)
            solved[i] = (self.coef(v), self.coef(dv))
        if not solved:
            return [None] * len(lams)
        # every λ's scores and corrections in one pass over the validation rows' kernel values
        k = b.shape[1]
        SS = self.scores(X, self.xp.concatenate([w for pair in solved.values() for w in pair], axis=1))
        out = []
        for i in range(len(lams)):
            if i not in solved:
                out.append(None)
                continue
            at = 2 * k * list(solved).index(i)
            S, dS = SS[:, at:at + k], SS[:, at + k:at + 2 * k]
            size = float(self.xp.sqrt(self.xp.sum(S * S))) or 1.0
            if not float(self.xp.sqrt(self.xp.sum(dS * dS))) <= RESOLVED * size:  # NaN is not resolved either
                out.append(None)
                continue
            out.append(S - dS)
        return out


def target_offset(Y: np.ndarray, weights: np.ndarray | None = None) -> np.ndarray:
    """The targets' (weighted) column means: the fixed, unpenalized intercept of the Nyström solvers.

    The model is f(x) = k(x, C) w + μ with μ the training targets' mean: far from every center the scores fall to
    the targets' mean, not to 0.

    Parameters
    ----------
    Y : array of shape (n, k)
        The targets.
    weights : array of shape (n,), optional
        Row weights.

    Returns
    -------
    array of shape (k,)
        The column means.

    Examples
    --------
    >>> import numpy as np
    >>> from kopt.nystrom import target_offset
    >>> Y = np.array([[1.0], [3.0]])
    >>> target_offset(Y), target_offset(Y, np.array([3.0, 1.0]))
    (array([2.]), array([1.5]))
    """
    xp = get_namespace(Y)
    if weights is None:
        return xp.mean(Y, axis=0)
    return (weights[:, None] * Y).sum(axis=0) / weights.sum()


def kernel_chunks(kernel: Kernel, C: np.ndarray, dtype: np.dtype | type, X: ArrayLike, entries: int | None = None,
                  bound: Callable | None = None) -> Iterator[tuple[int, int, np.ndarray]]:
    """``(lo, hi, K)`` for the row chunks of X: K = k(X[lo:hi], C) computed in ``dtype`` and held in float64.

    One float64 buffer is reused from chunk to chunk: each K is overwritten by the next, so use it before asking for
    the next one.  The chunks are :func:`row_chunks` of ``entries``.

    Parameters
    ----------
    kernel : Kernel
        The kernel.
    C : array of shape (M, d)
        The centers, dense.
    dtype : dtype
        The kernel values' precision.
    X : array or sparse matrix of shape (n, d)
        The rows.
    entries : int, optional
        Kernel values per chunk.
    bound : callable, optional
        ``kernel.bind(C)`` where the caller holds it (several passes on the same centers).

    Yields
    ------
    lo, hi : int
        The chunk's rows.
    K : ndarray of shape (hi - lo, M)
        Their kernel values, float64.

    Examples
    --------
    >>> import numpy as np
    >>> from kopt.contract.registry import registry
    >>> kernel = registry().get("kernel", "gaussian")(bandwidth=1.0)
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(200, 2))
    >>> Y = np.sin(X[:, :1])
    >>> from kopt.nystrom import kernel_chunks
    >>> [(lo, hi, K.shape) for lo, hi, K in kernel_chunks(kernel, X[:20], np.float32, X, entries=2000)]
    [(0, 100, (100, 20)), (100, 200, (100, 20))]
    """
    xp = get_namespace(C)
    buf = None
    k = kernel.bind(C) if bound is None else bound  # C's side of the kernel made once for the pass
    for lo, hi in row_chunks(X, C.shape[0], kernel, entries):
        K = k(_rows.kernel_rows(kernel, X, slice(lo, hi), xp, dtype)).astype(dtype, copy=False)
        if buf is None:
            buf = xp.empty((hi - lo, C.shape[0]), dtype=np.float64)  # the first chunk is the largest
        out = buf[:hi - lo]
        out[...] = K
        yield lo, hi, out


def residual_pass(kernel: Kernel, C: np.ndarray, dtype: np.dtype | type, w: np.ndarray, X: ArrayLike, Y: np.ndarray,
                  weights: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """One pass over the rows X at w with float64 products: the scores f = k(X, C) w and Kᵀr, r_i = w_i (f_i − y_i).

    What the square loss's certificate reads (:func:`certificate`).

    Parameters
    ----------
    kernel : Kernel
        The kernel.
    C : array of shape (M, d)
        The centers, dense.
    dtype : dtype
        The kernel values' precision.
    w : array of shape (M, k)
        The coefficients.
    X : array or sparse matrix of shape (n, d)
        The rows.
    Y : array of shape (n, k)
        The targets.
    weights : array of shape (n,), optional
        Row weights.

    Returns
    -------
    scores : ndarray of shape (n, k)
        f.
    Ktr : ndarray of shape (M, k)
        Kᵀr.

    Examples
    --------
    >>> import numpy as np
    >>> from kopt.contract.registry import registry
    >>> kernel = registry().get("kernel", "gaussian")(bandwidth=1.0)
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(200, 2))
    >>> Y = np.sin(X[:, :1])
    >>> from kopt.nystrom import residual_pass
    >>> scores, Ktr = residual_pass(kernel, X[:20], np.float64, np.zeros((20, 1)), X, Y)
    >>> scores.shape, Ktr.shape
    ((200, 1), (20, 1))
    """
    xp = get_namespace(C)
    scores = xp.empty((X.shape[0], w.shape[1]), dtype=np.float64)
    Ktr = xp.zeros(w.shape, dtype=np.float64)
    for lo, hi, K in kernel_chunks(kernel, C, dtype, X, SCORE_ENTRIES):
        f = product(K, w)
        scores[lo:hi] = f
        r = f - Y[lo:hi]
        if weights is not None:
            r = r * weights[lo:hi, None]
        Ktr += product(K.T, r)
    return scores, Ktr
