"""Threads: how many cores kopt may use, one worker pool, and BLAS held so the two never oversubscribe.

kopt parallelises its own loops (feature blocks, kernel row chunks) over a pool of Python
threads; NumPy's BLAS calls and ufuncs release the GIL.  While those threads run, BLAS is
held to one thread (threadpoolctl), else each of kopt's threads would start BLAS's own
threads and a 2-core machine would run four, several times slower on a busy machine
(docs/design/blas-threads.md).
When one big BLAS call is all there is (a Cholesky), BLAS gets the cores instead.

The core count is, in order: the solver's ``threads`` option, ``KOPT_THREADS``, and the
CPUs this process may run on (``os.sched_getaffinity``: a container's or ``taskset``'s
limit, not the machine's).
"""
from __future__ import annotations

import contextlib
import os
import threading
from concurrent.futures import ThreadPoolExecutor

from ..errors import EnvVarError

#: upper bound on kopt's own worker threads (beyond it the Python overhead outgrows the gain)
MAX_THREADS = 8
#: a reduction is cut into this many parts whatever the thread count, and the parts are summed in
#: order: results are bit-identical on 1, 2 or 8 threads (a checkpoint resumes on any CPU count)
PARTS = 8


def available_cpus() -> int:
    """The CPUs this process may run on (its affinity mask; the CPU count where there is none)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


def resolve_threads(requested: int | None = None) -> int:
    """Worker threads: ``requested``, else ``KOPT_THREADS``, else the available CPUs (at most 8)."""
    if requested:
        return max(1, int(requested))
    env = os.environ.get("KOPT_THREADS", "").strip()
    if env:
        try:
            value = int(env)
        except ValueError:
            value = 0
        if value < 1:
            raise EnvVarError(f"KOPT_THREADS={env!r}: expected a positive integer (the worker threads kopt may use)")
        return value
    return min(MAX_THREADS, available_cpus())


class _BlasLimit:
    """Process-wide hold of BLAS's thread count (threadpoolctl), nestable.

    Each entry sets the limit and its exit restores what was there before, so a solver can
    hold BLAS to one thread around its threaded loops and give it the cores for one big
    factorisation inside.  Entered from the orchestrating thread (kopt's pool threads run
    inside such a hold; they do not enter one themselves).  A use costs microseconds
    (docs/design/blas-threads.md).
    """

    def __init__(self):
        self._lock = threading.Lock()
        self._libs = None
        self._numpy_own = None

    def _controllers(self):
        if self._libs is None:
            # load every BLAS kopt calls before looking: SciPy's LAPACK brings its own OpenBLAS,
            # which a controller made earlier would not see (and would leave at all cores)
            import scipy.linalg  # noqa: F401
            from threadpoolctl import ThreadpoolController

            self._libs = [c for c in ThreadpoolController().lib_controllers if c.user_api == "blas"]
            self._numpy_own = [numpy_owns(c.filepath) for c in self._libs] if len(self._libs) > 1 else \
                [False] * len(self._libs)
        return self._libs

    @contextlib.contextmanager
    def hold(self, limit: int, numpy_limit: int | None = None):
        with self._lock:
            libs = self._controllers()
            saved = [c.get_num_threads() for c in libs]
            for c, own in zip(libs, self._numpy_own):
                c.set_num_threads(numpy_limit if own and numpy_limit is not None else limit)
        try:
            yield
        finally:
            with self._lock:
                for c, k in zip(libs, saved):
                    c.set_num_threads(k)


def numpy_owns(path) -> bool:
    """Whether the library at ``path`` ships inside NumPy's wheel (``numpy.libs``, ``numpy/.dylibs``): NumPy's own
    BLAS, where SciPy brings another."""
    import numpy

    if not path:
        return False
    root = os.path.dirname(os.path.realpath(numpy.__file__))
    path = os.path.realpath(str(path))
    return any(path.startswith(d + os.sep) for d in (root, root + ".libs"))


_BLAS = _BlasLimit()


def blas_threads(limit: int = 1, numpy: int | None = None):
    """Context manager: BLAS uses at most ``limit`` threads inside; the previous count comes back after.

    ``numpy``: where NumPy and SciPy each bring their own OpenBLAS (their wheels do), NumPy's is held to this many
    instead.  An OpenBLAS's idle worker threads spin for a while after a call before they sleep, so on a 2-core
    machine a SciPy call right after a NumPy one (or the reverse) shares its cores with the other library's spinning
    thread, which slows both (docs/benchmarks/blas_pools.py), and the Nystrom search alternates the kernel's NumPy
    products with SciPy's rank-k updates chunk by chunk (docs/design/blas-threads.md).
    Solvers whose heavy BLAS is SciPy's hold NumPy's own to one thread, so it never wakes its workers."""
    return _BLAS.hold(max(1, int(limit)), None if numpy is None else max(1, int(numpy)))


def scipy_blas(threads: int | None = None):
    """:func:`blas_threads` for work whose heavy BLAS is SciPy's (the Nystrom systems' rank-k updates, triangular
    solves and factors) between NumPy's kernel products: SciPy's BLAS gets ``threads`` (:func:`resolve_threads`),
    NumPy's own OpenBLAS one."""
    return blas_threads(resolve_threads(threads), numpy=1)


_POOL = None
_POOL_LOCK = threading.Lock()


def pool(workers: int) -> ThreadPoolExecutor:
    """kopt's shared worker pool, with at least ``workers`` threads."""
    global _POOL
    with _POOL_LOCK:
        if _POOL is None or _POOL._max_workers < workers:
            _POOL = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="kopt_")
        return _POOL


def in_worker() -> bool:
    """Whether the calling thread is one of the pool's (nested parallel work then runs inline)."""
    return threading.current_thread().name.startswith("kopt_")


def parallel_map(fn, items, threads: int):
    """``[fn(i) for i in items]`` spread over ``threads`` pool threads (in order).

    Runs inline for one thread, one item, or when called from a pool thread (no nested waits).
    """
    items = list(items)
    if threads <= 1 or len(items) < 2 or in_worker():
        return [fn(i) for i in items]
    return list(pool(threads).map(fn, items))


def map_parts(fn, parts: int, threads: int):
    """``[fn(p) for p in range(parts)]``, at most ``threads`` at a time; the results in part order.

    The parts, not the threads, decide how work is cut, so a reduction summed over the results
    in order gives the same bits on any number of threads.
    """
    threads = max(1, min(int(threads), parts))
    if threads == 1 or in_worker():
        return [fn(p) for p in range(parts)]
    out = [None] * parts

    def run(group):
        return [(p, fn(p)) for p in group]

    for done in pool(threads).map(run, [list(range(t, parts, threads)) for t in range(threads)]):
        for p, value in done:
            out[p] = value
    return out


def split(n: int, pieces: int):
    """``pieces`` contiguous ``(lo, hi)`` ranges covering ``range(n)`` (fewer when n is small)."""
    k = max(1, min(n, pieces))
    edges = [round(i * n / k) for i in range(k + 1)]
    return [(a, b) for a, b in zip(edges[:-1], edges[1:]) if b > a]
