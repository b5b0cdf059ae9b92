"""Nyström features: the exact kernel on M centers drawn from the training rows.

A model f = Σ_j w_j k(c_j, ·) over M centers c_j (a seeded uniform sample of the training rows,
as in Williams & Seeger 2001 and Falkon) has ‖f‖² = wᵀK_CC w and scores f(X) = K_XC w.  For an
M-dimensional solver that is a feature map ψ(x) = k(x, C) with the metric R = K_CC: its problem
is the kernel problem restricted to span{k(c_j, ·)}, whose kernel k(x, C) K_CC⁻¹ k(C, x') is
positive definite -- so the duality gap certifies it exactly as it certifies a random-feature
problem.  Data-dependent centers need far fewer features than random ones for the same
accuracy; the price is M kernel evaluations per row (n M d flops per pass) instead of M cosines.

:class:`NystromRows` has the pass API of :mod:`kopt.numerics.bound_features` (``predict``,
``predict_adjoint``, ``gram``, ``features``), on k(X, C) kept in memory within a budget or
recomputed a row chunk at a time, spread over kopt's worker threads; kernel values and their products
are in the problem's dtype, the Gram in float64 (see :mod:`kopt.numerics.bound_features`).
"""
from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Callable

import numpy as np
from numpy.typing import ArrayLike

from ..contract.components import Kernel
from ..contract.problem import Problem
from ..numerics import rows as _rows
from ..numerics import threads as _threads
from ..numerics.bound_features import ChunkedRows
from ..numerics.identity import fingerprint, kernel_identity

#: rows read at a time while drawing centers
CENTER_BLOCK = 4096
#: sparse training rows are densified once when they take at most this many bytes dense
DENSE_COPY_BYTES = 1 << 26


def center_order(problem, count: int):
    """Indices of up to ``count`` training rows with distinct values, in a seeded uniform order: the first
    ``m`` of them are the centers of any size ``m`` ≤ ``count``.

    Rows are taken in the order of one seeded permutation and kept while their values are new
    (data with repeated rows -- a9a's binary features -- would make K_CC singular), until ``count``
    are kept or the rows run out.  The order does not depend on ``count``, so the centers of
    ``solver: auto``'s ladder (256, 512, ...) are nested and the size it chooses is the sample
    ``krr_nystrom`` and ``joker`` draw for that ``features.count``.

    The permutation is the validation split's (:func:`kopt.numerics.splits.split_permutation`, the spec's seed)
    read from its tail, so a split's held-out rows are the last to become centers: up to (1 − v) n
    centers, none is a row held out from the fit it scores.  A held-out center corrupts the validation
    score: its coefficient is fitted without its own label, and at small λ its own kernel column decides
    the score at that row, so the search chose λ and sizes too large (docs/design/center-ladder.md).
    """
    from ..numerics.splits import split_permutation

    n = problem.n
    order = split_permutation(n, problem.seed)[::-1]
    kept, seen = [], set()
    for lo in range(0, n, CENTER_BLOCK):
        idx = order[lo:lo + CENTER_BLOCK]
        by_row = np.argsort(idx)  # read the block in row order (CSR / memmap friendly), keep the seeded order
        block = np.empty((idx.shape[0],), dtype=object)
        block[by_row] = _row_keys(problem, idx[by_row])
        for i, key in zip(idx, block):
            if key not in seen:
                seen.add(key)
                kept.append(int(i))
                if len(kept) == count:
                    return np.asarray(kept)
    return np.asarray(kept, dtype=np.int64)


def _row_keys(problem, idx):
    """One bytes key per row of ``idx`` (sorted; in that order), equal exactly for rows of equal values: the dense
    row's bytes, or a sparse row's nonzero columns and values (no densified block: a block of wide sparse rows is
    large dense).  On a Dask cluster (``problem.X`` None) the rows are fetched from their partitions."""
    from ..numerics.backend import to_numpy

    X, at = (problem.X, idx) if problem.X is not None else (problem.partitions.take(idx), np.arange(len(idx)))
    if _rows.is_sparse(X):
        part = _rows.take(X, at).astype(problem.dtype)
        part.eliminate_zeros()  # explicit zeros and column order do not change a row's values
        part.sort_indices()
        ind, val, ptr = part.indices, part.data, part.indptr
        return [ind[a:b].tobytes() + b"|" + val[a:b].tobytes() for a, b in zip(ptr[:-1], ptr[1:])]
    rows = to_numpy(_rows.dense(X, problem.xp.asarray(at), problem.xp, problem.dtype))
    return [row.tobytes() for row in rows]


def centers_used(asked: int, drawn: int, kept: int, *, key: str = "model.features.count",
                 rows: str = "distinct rows") -> dict:
    """The report's word on how many of the ``asked`` centers the model uses, and a warning when it is fewer.

    ``asked``: ``model.features.count``; ``drawn``: the distinct training rows :func:`choose_centers` found
    (fewer than ``asked`` when the data hold fewer distinct rows); ``kept``: those :func:`center_basis` kept
    (it drops centers the kernel cannot tell from the span of the others).  Returns the solver's info entries
    ``centers_asked``, ``n_centers``, ``centers_dropped`` and, when ``kept < asked``, ``centers_note`` -- the
    one line also issued as a :class:`~kopt.errors.FeatureCountWarning` (``kopt solve`` prints it on stderr).
    ``rows``: what the drawn count counts, for the message."""
    import warnings

    from ..errors import FeatureCountWarning

    asked, drawn, kept = int(asked), int(drawn), int(kept)
    info = {"centers_asked": asked, "n_centers": kept, "centers_dropped": drawn - kept}
    if kept >= asked:
        return info
    why = []
    if drawn < asked:
        why.append(f"the training data hold {drawn:,} {rows}, so only {drawn:,} centers can be drawn "
                   "(more centers than rows)")
    if kept < drawn:
        why.append(f"{drawn - kept:,} of the {drawn:,} drawn centers are ones the kernel cannot tell apart (each "
                   "within the others' span at this bandwidth) and were dropped")
    note = (f"{key} = {asked:,} asks for more Nystrom centers than this model can use: {'; '.join(why)}; the "
            f"model uses {kept:,} centers (set {key} to {kept:,} or fewer to ask for what is used)")
    info["centers_note"] = note
    warnings.warn(note, FeatureCountWarning, stacklevel=2)
    return info


#: the center rules of ``model.features.centers``
CENTER_RULES = ("uniform", "rpcholesky")


def choose_centers(problem: Problem, count: int, kernel: Kernel | None = None) -> np.ndarray:
    """The seeded Nyström centers: sorted indices of ``count`` training rows with distinct values.

    By the spec's center rule (``model.features.centers``): ``uniform``, a uniform sample of the distinct training
    rows (the first ``count`` of ``center_order``); ``rpcholesky``, randomly pivoted Cholesky's
    (``rpcholesky_order``).  Both are drawn from the spec's seed, so the same spec picks the same centers.

    Parameters
    ----------
    problem : Problem
        The assembled problem (its rows and seed).
    count : int
        The number of centers (``model.features.count``); at most the distinct rows.
    kernel : Kernel, optional
        The kernel randomly pivoted Cholesky measures residuals in (default: the problem's).

    Returns
    -------
    ndarray of int
        Sorted row indices.

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
    >>> from kopt.nystrom import choose_centers
    >>> centers = choose_centers(problem, 20)
    >>> len(centers), bool((np.diff(centers) > 0).all())
    (20, True)
    """
    rule = getattr(problem.features, "centers", "uniform") if getattr(problem, "features", None) else "uniform"
    if rule == "rpcholesky":
        return np.sort(rpcholesky_order(problem, count, kernel))
    return np.sort(center_order(problem, count))


#: randomly pivoted Cholesky's factor of its candidate rows holds at most this many float64 values (128 MiB), and its
#: candidates are at least twice the centers asked for (``rpcholesky_order``)
RPC_ENTRIES = 1 << 24
#: the candidates it draws at a time (each accepted or rejected in turn: ``rpcholesky_order``)
RPC_BLOCK = 64
#: the random stream of its draws, beside the spec's seed
RPC_STREAM = 0x72706368
#: its candidates are at most this share of the training rows: the held-out rows of ``solver: auto``'s default
#: validation split (20%, the last rows ``center_order`` reaches) are never candidates
RPC_ROWS_SHARE = 0.8
#: candidate rows one worker thread updates at a time in each block's products (a fixed partition of the rows, so the
#: draws' bits do not follow the thread count)
RPC_ROWS = 1024
#: the draws of this many (candidates, kernel, count, seed) are kept (a few KB each: the positions drawn), so a solve
#: after ``solver: auto``'s search takes its centers instead of drawing them again (docs/design/auto-centers.md)
RPC_MEMO_ENTRIES = 8
_rpc_memo: OrderedDict = OrderedDict()
_rpc_memo_lock = threading.Lock()


def rpcholesky_pool(n: int, count: int, d: int) -> int:
    """The candidate rows randomly pivoted Cholesky draws ``count`` centers from, of ``n`` training rows of ``d``
    columns: as many as its factor's :data:`RPC_ENTRIES` hold (a wide row's dense values counted too), at least twice
    ``count``, at most :data:`RPC_ROWS_SHARE` of the rows."""
    return int(max(1, min(int(RPC_ROWS_SHARE * n), max(2 * count, RPC_ENTRIES // max(count, d, 1)))))


def rpcholesky_order(problem, count: int, kernel=None):
    """Indices of up to ``count`` training rows chosen by randomly pivoted Cholesky, in the order chosen.

    The candidates are the first rows of ``center_order`` (a seeded uniform sample of the distinct rows, the held-out
    rows of the spec's validation split last), as many as :func:`rpcholesky_pool` allows.  Each next center is drawn
    with probability proportional to its residual variance k(x, x) − k(x, S) K_SS⁻¹ k(S, x) given the centers S drawn
    before it (Chen et al. (2025), "RPCholesky"): a row the centers already
    explain is rarely drawn, so each center carries more of the kernel than a uniform one.  The draws come
    :data:`RPC_BLOCK` at a time, each accepted with probability its residual now over its residual when drawn (the
    block's rejection sampling of Epperly et al. (2024): the same distribution as one at a time).  It stops early
    where the candidates' residuals fall to :data:`CENTER_TOLERANCE` of their mean
    k(x, x): fewer centers then explain them all.  Seeded by the spec's seed; the products run on blocks of
    :data:`RPC_ROWS` candidates spread over kopt's worker threads, each on one BLAS thread, a partition that does not
    follow the thread count, so neither do the draws.  The last :data:`RPC_MEMO_ENTRIES` draws are kept by what they
    are a function of (the candidates' values, the kernel, the count, the seed): the solve after ``solver: auto``'s
    search takes the search's centers instead of drawing them again.  On a Dask cluster the candidates are fetched
    from their partitions.  ``kernel``: the kernel the residuals are measured in (default:
    the problem's).  P M (d + M) flops for P candidates and M centers."""
    from ..numerics.backend import to_numpy

    kernel = problem.kernel if kernel is None else kernel
    pool = center_order(problem, rpcholesky_pool(problem.n, count, int(problem.d)))
    if problem.X is None:  # a Dask cluster: the candidates fetched from their partitions (the same rows)
        X = _rows.dense(problem.partitions.take(np.sort(pool)), None, np, problem.dtype)
    else:
        X = _rows.dense(problem.X, problem.xp.asarray(np.sort(pool)), problem.xp, problem.dtype)
    X = np.asarray(to_numpy(X), dtype=np.float64)
    X = X[np.argsort(np.argsort(pool))]  # back in the seeded order
    key = _rpc_key(kernel, X, count, int(problem.seed))
    with _rpc_memo_lock:
        chosen = _rpc_memo.get(key)
    if chosen is None:
        with _threads.blas_threads(1):
            chosen = _rpcholesky(kernel, X, count, np.random.default_rng([int(problem.seed), RPC_STREAM]),
                                 threads=_threads.resolve_threads())
        chosen.setflags(write=False)  # kept: no caller may change what a later draw returns
        with _rpc_memo_lock:
            _rpc_memo[key] = chosen
            while len(_rpc_memo) > RPC_MEMO_ENTRIES:
                _rpc_memo.popitem(last=False)
    return pool[chosen]


def _rpc_key(kernel, X, count, seed):
    """What randomly pivoted Cholesky's draws are a function of: the candidates' values (a content hash), the
    kernel's class and options, the count and the seed."""
    return fingerprint(X), *kernel_identity(kernel), int(count), seed


def _rpcholesky(kernel, X, count, rng, threads=1):
    """Positions in ``X`` of up to ``count`` centers drawn by blocked randomly pivoted Cholesky with rejection
    (``rpcholesky_order``).  A block's candidates are accepted or rejected on their own residual kernel (b × b),
    then the accepted ones' columns of the factor are made for every candidate at once: GEMMs, not a rank-one
    update per center, on :data:`RPC_ROWS` candidates at a time spread over ``threads`` worker threads (each on one
    BLAS thread: the caller holds BLAS to one)."""
    from scipy.linalg import solve_triangular

    P = X.shape[0]
    count = min(count, P)
    F = np.zeros((P, count), dtype=np.float64)  # the candidates' Cholesky factor, a block of columns at a time
    d = np.asarray(kernel.diag(X), dtype=np.float64).copy()
    floor = CENTER_TOLERANCE * float(np.mean(d))
    chosen = []
    while len(chosen) < count:
        total = float(d.sum())
        if total <= floor * P:
            break
        cand = np.searchsorted(np.cumsum(d), rng.random(min(RPC_BLOCK, count - len(chosen))) * total)
        cand = np.minimum(cand, P - 1)
        i = len(chosen)
        H = np.asarray(kernel.exact(X[cand], X[cand]), dtype=np.float64) - F[cand, :i] @ F[cand, :i].T
        G = H.copy()  # the candidates' residual kernel, kept for the accepted ones' factor
        drawn_at = d[cand].copy()
        accept = rng.random(len(cand))
        took = []
        for j in range(len(cand)):
            h = H[j, j]
            if h <= floor or accept[j] * drawn_at[j] > h:
                continue  # already explained, or rejected: its residual fell since it was drawn
            col = H[:, j] / np.sqrt(h)
            H -= np.outer(col, col)
            took.append(j)
            if i + len(took) == count:
                break
        if not took:
            continue
        A = cand[took]
        L = np.linalg.cholesky(G[np.ix_(took, took)])
        XA, FA = X[A], F[A, :i].T.copy()

        def update(lo, XA=XA, FA=FA, L=L, i=i, b=len(A)):
            # candidates lo..lo+RPC_ROWS: their columns of the factor, (k(x, A) − F[x, :i] F[A, :i]ᵀ) L⁻ᵀ, and their
            # residual variances less those columns' squares
            hi = min(P, lo + RPC_ROWS)
            K = np.asarray(kernel.exact(X[lo:hi], XA), dtype=np.float64) - F[lo:hi, :i] @ FA
            cols = solve_triangular(L, K.T, lower=True, check_finite=False).T
            F[lo:hi, i:i + b] = cols
            np.maximum(d[lo:hi] - np.einsum("ij,ij->i", cols, cols), 0.0, out=d[lo:hi])

        _threads.parallel_map(update, range(0, P, RPC_ROWS), threads)
        d[A] = 0.0
        chosen.extend(int(c) for c in A)
    return np.asarray(chosen, dtype=np.int64)


#: a center is kept while its kernel column's residual variance, after the span of the centers kept before it,
#: is above this share of the mean k(c, c) (:func:`center_basis`)
CENTER_TOLERANCE = 1e-6


#: centers whose values are at most this share nonzero (text's tf-idf rows: about 1%) give R = K_CC by the
#: kernel's sparse-rows product where it has one (:attr:`kopt.contract.components.Kernel.sparse_rows`)
SPARSE_CENTERS = 0.1


#: where the kept centers' U fills at most this share of R's M x M buffer and the buffer cannot be cut in place,
#: :func:`center_basis` copies U out and frees the buffer (above it, the copy's moment holds more than it frees)
COMPACT_SHARE = 0.5


def center_basis(kernel: Kernel, C: np.ndarray, tol: float = CENTER_TOLERANCE) -> tuple[np.ndarray, np.ndarray]:
    """A well-conditioned basis of the centers C by the pivoted Cholesky factorization of R = K_CC.

    LAPACK's ``?pstrf`` orders the centers greedily, each next the one farthest (in the kernel's feature space) from
    the span of those before it, and stops where that distance² falls to ``tol`` times the mean k(c, c).  Repeated
    or nearly repeated centers -- rows closer than the bandwidth resolves -- are what it drops; without them the
    smallest eigenvalue of R stays near ``tol`` instead of at float64's rounding.

    Parameters
    ----------
    kernel : Kernel
        The kernel, its bandwidth a number.
    C : array of shape (m, d)
        The drawn centers, dense.
    tol : float, optional
        The residual variance share below which a center is dropped (:data:`~kopt.nystrom.CENTER_TOLERANCE`).

    Returns
    -------
    kept : ndarray of int
        The positions of the kept centers in ``C``, in the pivoted order.
    U : ndarray of shape (M, M)
        The upper Cholesky factor of the kept centers' R = K_CC (float64): R = UᵀU up to rounding.

    Examples
    --------
    >>> import numpy as np
    >>> from kopt.contract.registry import registry
    >>> kernel = registry().get("kernel", "gaussian")(bandwidth=1.0)
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(200, 2))
    >>> Y = np.sin(X[:, :1])
    >>> from kopt.nystrom import center_basis
    >>> C = np.vstack([X[:5], X[:1]])  # the last center repeats the first
    >>> kept, U = center_basis(kernel, C)
    >>> len(kept), U.shape
    (5, (5, 5))
    """
    from scipy.linalg import lapack

    from ..numerics.backend import to_numpy

    host = to_numpy(C)  # R and its factor are made on the host (LAPACK); U goes back to C's backend
    if getattr(kernel, "sparse_rows", False) and np.count_nonzero(host) <= SPARSE_CENTERS * host.size:
        R = _sparse_center_kernel(kernel, host)
    else:
        C64 = np.asarray(host, dtype=np.float64, order="F")  # Fortran order: kernels read columns
        R = np.asarray(kernel.exact(C64, C64), dtype=np.float64)
    scale = float(np.mean(np.diagonal(R))) or 1.0
    # R is symmetric, so R.T (Fortran order, the same memory) is R: LAPACK factors it in place, no copy, and
    # reads one triangle only (no symmetrising pass: it made an M × M temporary)
    c, piv, rank, info = lapack.dpstrf(R.T, tol=tol * scale, lower=0, overwrite_a=1)
    if info < 0 or rank < 1:
        raise np.linalg.LinAlgError("the kernel matrix of the Nystrom centers has no positive pivot")
    kept = np.asarray(piv[:rank], dtype=np.int64) - 1
    # Fortran order, as LAPACK gave it: BLAS reads it without a copy; where centers were dropped, the leading
    # rank x rank block is compacted in R's own buffer (a copy held R and U at once)
    U = leading_rows(c, rank)[:, :rank]
    if rank < c.shape[0]:
        owner = c if c.base is None else c.base
        del c, R
        U = _kept_block(owner, U, rank)
    else:
        del c, R
    for lo in range(0, rank, 1024):  # the strict lower triangle holds LAPACK's workspace: zero it in place
        hi = min(rank, lo + 1024)
        U[hi:, lo:hi] = 0.0
        D = U[lo:hi, lo:hi]
        D[np.tril_indices(hi - lo, -1)] = 0.0
    return kept, _xp(C).asarray(U)


def _kept_block(owner, U, rank):
    """U (the leading ``rank`` x ``rank`` block of the factor's buffer, Fortran order) without the drawn centers' M x M
    buffer around it: the buffer cut to U's entries in place where ``owner`` owns it and U starts it (``realloc`` gives
    the tail back, no copy and no second matrix at the peak: at 8,192 drawn centers R and a copy of U had set the
    grown route's peak, docs/design/memory.md); else a copy where U fills at most :data:`COMPACT_SHARE` of it, else U,
    a view.  The caller holds no other view of the buffer after this call."""
    whole = owner.flags.owndata and owner.base is None and (owner.flags.c_contiguous or owner.flags.f_contiguous)
    if whole and U.flags.f_contiguous and U.ctypes.data == owner.ctypes.data:
        del U
        owner.resize((rank * rank,), refcheck=False)  # the caller's views of the M x M buffer are dropped with it
        return owner.reshape((rank, rank), order="F")
    if rank * rank <= COMPACT_SHARE * owner.size:
        return np.array(U, order="F")
    return U


def leading_rows(A, rows):
    """A[:rows] of a Fortran-order NumPy array A, compacted in place: a contiguous Fortran-order view of A's own
    buffer (A's content is overwritten).  Each column's leading ``rows`` entries move to where a (rows, ·) array
    keeps them, left to right, so no entry is overwritten before it moves."""
    if rows == A.shape[0]:
        return A
    if not A.flags.f_contiguous:
        raise ValueError("leading_rows compacts a Fortran-order array")
    M, d = A.shape
    flat = A.reshape(-1, order="F")  # a view: A is Fortran-contiguous
    for j in range(1, d):
        flat[j * rows:(j + 1) * rows] = flat[j * M:j * M + rows]  # overlapping moves: NumPy copies them safely
    return flat[:rows * d].reshape((rows, d), order="F")


def _sparse_center_kernel(kernel, C, band=512):
    """R = K_CC in float64 for centers densified from sparse rows (text), a band of R's rows at a time: the
    centers as CSR (their nonzeros) against a float64 band of them, so xᵀc is a sparse product and no dense
    float64 copy of every center is made.  R is symmetric: its rows lo..hi are the transpose of the columns
    k(C, C[lo:hi]) (docs/design/memory.md)."""
    import scipy.sparse as sp

    M = C.shape[0]
    rows = sp.csr_matrix(C).astype(np.float64)
    R = np.empty((M, M), dtype=np.float64)
    for lo in range(0, M, band):
        hi = min(M, lo + band)
        R[lo:hi] = np.asarray(kernel.exact(rows, np.asarray(C[lo:hi], dtype=np.float64, order="F")), dtype=np.float64).T
    return R


def add_center_kernel(kernel, C, G, rows=256):
    """``G += K_CC`` a band of rows at a time (no second M × M array)."""
    xp = _xp(C)
    M = C.shape[0]
    C64 = xp.asarray(C, dtype=np.float64)
    for lo in range(0, M, rows):
        hi = min(M, lo + rows)
        G[lo:hi] += xp.asarray(kernel.exact(C64[lo:hi], C64), dtype=G.dtype)


def _xp(a):
    from ..numerics.backend import get_namespace

    return get_namespace(a)


class NystromRows(ChunkedRows):
    """k(X, C) bound to the training rows ``X``: the passes of an M-dimensional solver.

    The feature map of this object is k(x, C) itself, unscaled, and the metric of a coefficient vector w is wᵀRw
    with R = K_CC (not ‖w‖²): whiten with :func:`center_basis`'s U (v = U w, ‖f‖² = ‖v‖²) where a solver wants the
    identity metric.  Every pass cuts its chunks into a fixed number of parts summed in part order, so its bits do
    not depend on the thread count.

    Parameters
    ----------
    kernel : Kernel
        The problem's kernel, its bandwidth a number.
    X : array or sparse matrix of shape (n, d)
        The rows (dense, or CSR: small CSR rows are densified once).
    C : array of shape (M, d)
        The dense centers, in the problem's dtype, on its backend.
    dtype : dtype
        The kernel values' precision (``problem.dtype``).
    memory_bytes : int
        K = k(X, C) is computed once and kept when it takes at most this many bytes, else every pass recomputes it
        a chunk of rows at a time.
    threads : int, optional
        kopt's worker threads (the solver's ``self.n_threads``).

    Attributes
    ----------
    n, M : int
        Rows and centers.
    xp : module
        The array module.
    dtype : dtype
        The kernel values' precision.
    materialized : bool
        Whether K is held.
    K : array or None
        K, where held.

    Examples
    --------
    >>> import numpy as np
    >>> from kopt.contract.registry import registry
    >>> kernel = registry().get("kernel", "gaussian")(bandwidth=1.0)
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(200, 2))
    >>> Y = np.sin(X[:, :1])
    >>> from kopt.nystrom import NystromRows
    >>> rows = NystromRows(kernel, X, X[:20], dtype=np.float64, memory_bytes=1 << 20)
    >>> rows.materialized, rows.predict(np.ones((20, 1))).shape
    (True, (200, 1))
    """

    #: kernel entries per chunk of a pass (2 MB in float32: small temporaries, per-call costs amortised)
    CHUNK_ENTRIES = 1 << 19

    def __init__(self, kernel: Kernel, X: ArrayLike, C: np.ndarray, *, dtype: np.dtype | type, memory_bytes: int,
                 threads: int | None = None) -> None:
        self.kernel = kernel
        self.C = C
        self.dtype = np.dtype(dtype)
        self.xp = _xp(C)
        if _rows.is_sparse(X) and X.shape[0] * X.shape[1] * self.dtype.itemsize <= DENSE_COPY_BYTES:
            X = _rows.dense(X, None, self.xp, self.dtype)  # a9a: 16 MB once, instead of a CSR slice per chunk and pass
        self.X = X
        self.n, self.M = X.shape[0], C.shape[0]
        self.threads = _threads.resolve_threads(threads)
        step = max(16, self.CHUNK_ENTRIES // max(1, self.M))
        self.chunks = _rows.chunks(self.n, step)
        self.K = None
        self.materialized = self.n * self.M * self.dtype.itemsize <= memory_bytes
        if self.materialized:
            self.K = self.xp.empty((self.n, self.M), dtype=self.dtype)

            def fill(p):
                for lo, hi in self._ranges(p):
                    self.K[lo:hi] = self._compute(lo, hi)

            with _threads.blas_threads(1):
                _threads.map_parts(fill, _threads.PARTS, self.threads)

    def _compute(self, lo, hi):
        Xc = _rows.kernel_rows(self.kernel, self.X, slice(lo, hi), self.xp, self.dtype)
        return self.xp.asarray(self.kernel.exact(Xc, self.C), dtype=self.dtype)

    def _block(self, lo, hi):
        return self.K[lo:hi] if self.K is not None else self._compute(lo, hi)

    def predict(self, v: np.ndarray) -> np.ndarray:
        """K v: every row's scores k(x_i, C) v for coefficients ``v`` on the centers.

        ``v`` is cast to the kernel values' dtype and each chunk's product is taken in that dtype (float32 by default:
        unit round-off 6e-8 per operation, summed over M terms), then stored in float64; for a certificate's scores
        take a float64 pass instead (:class:`RowPass`'s ``products(P, precise=True)``, or :func:`residual_pass`).

        Parameters
        ----------
        v : array of shape (M,) or (M, k)
            Coefficients on the centers.

        Returns
        -------
        array of shape (n, k)
            The scores, float64 (a 1-D ``v`` gives k = 1).

        Examples
        --------
        >>> import numpy as np
        >>> from kopt.contract.registry import registry
        >>> from kopt.nystrom import NystromRows
        >>> X = np.random.default_rng(0).normal(size=(200, 2))
        >>> kernel = registry().get("kernel", "gaussian")(bandwidth=1.0)
        >>> rows = NystromRows(kernel, X, X[:20], dtype=np.float64, memory_bytes=0)  # every pass computes K
        >>> K = kernel.exact(X, X[:20])
        >>> v = np.ones(20)
        >>> bool(np.allclose(rows.predict(v)[:, 0], K @ v))
        True
        """
        return super().predict(v)

    def predict_adjoint(self, v: np.ndarray,
                        fn: Callable[[np.ndarray, int, int], np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        """The scores K v and Kᵀ fn(K v), with one evaluation of the kernel values: the scores and a gradient's sum.

        The products are in the kernel values' dtype (``fn``'s output is cast to it), each chunk's Kᵀ(·) summed in
        float64.

        Parameters
        ----------
        v : array of shape (M,) or (M, k)
            Coefficients on the centers.
        fn : callable
            ``fn(pred_rows, lo, hi)``, row-wise: given the float64 scores of rows lo:hi (``(hi - lo, k)``), returns
            what multiplies them, ``(hi - lo, k)`` or ``(hi - lo,)`` -- e.g. ``lambda f, lo, hi: w[lo:hi, None] *
            loss.grad(f[:, 0], y[lo:hi])[:, None]`` for Kᵀ(w ⊙ ℓ'(f)).  It runs on kopt's worker threads, on disjoint
            rows, and must not call the engine.

        Returns
        -------
        scores : array of shape (n, k)
            K v, float64.
        G : array of shape (M, k)
            Kᵀ fn(K v), float64.

        Examples
        --------
        >>> import numpy as np
        >>> from kopt.contract.registry import registry
        >>> from kopt.nystrom import NystromRows
        >>> X = np.random.default_rng(0).normal(size=(200, 2))
        >>> kernel = registry().get("kernel", "gaussian")(bandwidth=1.0)
        >>> rows = NystromRows(kernel, X, X[:20], dtype=np.float64, memory_bytes=0)  # every pass computes K
        >>> K = kernel.exact(X, X[:20])
        >>> y = np.sin(X[:, 0])
        >>> residual = lambda f, lo, hi: f[:, 0] - y[lo:hi]
        >>> scores, G = rows.predict_adjoint(np.ones(20), residual)
        >>> bool(np.allclose(G[:, 0], K.T @ (K @ np.ones(20) - y)))
        True
        """
        return super().predict_adjoint(v, fn)

    def gram(self, weights: np.ndarray | None = None) -> np.ndarray:
        """A = Σ_i w_i k(x_i, C)ᵀ k(x_i, C) over the rows, summed in float64 on the worker threads.

        Rows of weight 0 cost nothing.  With R = K_CC = UᵀU, U⁻ᵀ (A/n) U⁻¹ is :class:`NystromSystem`'s T.

        Parameters
        ----------
        weights : array of shape (n,), optional
            Row weights (every row with weight 1 without them).

        Returns
        -------
        array of shape (M, M)
            A in its upper triangle, float64; the strict lower triangle is not meaningful (mirror the upper one, or
            read it alone).

        Examples
        --------
        >>> import numpy as np
        >>> from kopt.contract.registry import registry
        >>> from kopt.nystrom import NystromRows
        >>> X = np.random.default_rng(0).normal(size=(200, 2))
        >>> kernel = registry().get("kernel", "gaussian")(bandwidth=1.0)
        >>> rows = NystromRows(kernel, X, X[:20], dtype=np.float64, memory_bytes=0)
        >>> K = kernel.exact(X, X[:20])
        >>> bool(np.allclose(np.triu(rows.gram()), np.triu(K.T @ K)))
        True
        """
        return super().gram(weights)

    def features(self, rows: np.ndarray) -> np.ndarray:
        """The kernel values k(x_i, C) of some rows: read where K is held, else computed over the worker threads.

        Parameters
        ----------
        rows : array of int
            Row indices, on the backend.

        Returns
        -------
        array of shape (len(rows), M)
            The rows' kernel values, in the kernel values' dtype.

        Examples
        --------
        >>> import numpy as np
        >>> from kopt.contract.registry import registry
        >>> from kopt.nystrom import NystromRows
        >>> X = np.random.default_rng(0).normal(size=(200, 2))
        >>> kernel = registry().get("kernel", "gaussian")(bandwidth=1.0)
        >>> passes = NystromRows(kernel, X, X[:20], dtype=np.float64, memory_bytes=0)
        >>> picked = np.array([3, 7, 150])
        >>> bool(np.allclose(passes.features(picked), kernel.exact(X[picked], X[:20])))
        True
        """
        if self.K is not None:
            return self.K[rows]
        Z = self.xp.empty((int(rows.shape[0]), self.M), dtype=self.dtype)

        pieces = _threads.split(Z.shape[0], _threads.PARTS)  # a fixed cut: the same bits on any thread count

        def work(p):
            if p >= len(pieces):
                return
            lo, hi = pieces[p]
            Xr = _rows.kernel_rows(self.kernel, self.X, rows[lo:hi], self.xp, self.dtype)
            Z[lo:hi] = self.kernel.exact(Xr, self.C)

        with _threads.blas_threads(1):
            _threads.map_parts(work, _threads.PARTS, self.threads)
        return Z
