"""The machine's own roofline: float32 cos and GEMM rates, CPU flags, load -- what benchmarks report beside their figures.

Machines of one kind differ (AVX-512 or AVX2 only: a 3x difference in float32 cos), so every
kopt benchmark states its targets against rates measured here, in the same run.
"""
from __future__ import annotations

import os
import platform
import time

import numpy as np

from ...numerics import threads as _threads
from ...numerics.features import CHUNK_BYTES


def median_time(fn, repeat):
    times = []
    for _ in range(max(1, repeat)):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def cos_roofline(threads, elements=1 << 27, repeat=3):
    """float32 cos throughput in G elements/s with ``threads`` threads on cache-sized buffers."""
    size = CHUNK_BYTES // 4
    rng = np.random.default_rng(0)
    src = [(rng.standard_normal(size) * 4.0).astype(np.float32) for _ in range(threads)]
    dst = [np.empty(size, np.float32) for _ in range(threads)]
    per_thread = max(1, elements // (size * threads))

    def work(t):
        for _ in range(per_thread):
            np.cos(src[t], out=dst[t])

    def run():
        _threads.parallel_map(work, range(threads), threads)

    t = median_time(run, repeat)
    return per_thread * size * threads / t / 1e9


def sgemm_rate(dim, block, elements=1 << 27, repeat=3):
    """GFLOP/s of one thread on the engine's GEMM shape ((rows, d+1) @ (d+1, block/2))."""
    rng = np.random.default_rng(0)
    h = max(1, block // 2)
    rows = max(8, CHUNK_BYTES // (4 * block))
    A = rng.standard_normal((rows, dim + 1)).astype(np.float32)
    B = rng.standard_normal((dim + 1, h)).astype(np.float32)
    C = np.empty((rows, h), np.float32)
    reps = max(1, elements // (rows * h))

    def run():
        for _ in range(reps):
            np.matmul(A, B, out=C)

    with _threads.blas_threads(1):
        t = median_time(run, repeat)
    return 2.0 * rows * (dim + 1) * h * reps / t / 1e9


def gemm_rate(threads, n=2048, repeat=3):
    """GFLOP/s of a square float32 GEMM (n × n) on ``threads`` BLAS threads."""
    rng = np.random.default_rng(0)
    A = rng.standard_normal((n, n)).astype(np.float32)
    B = rng.standard_normal((n, n)).astype(np.float32)
    C = np.empty((n, n), np.float32)
    with _threads.blas_threads(threads):
        np.matmul(A, B, out=C)
        t = median_time(lambda: np.matmul(A, B, out=C), repeat)
    return 2.0 * n ** 3 / t / 1e9


def cpu_flags():
    """The vector extensions that set the float32 cos and GEMM rates (from /proc/cpuinfo)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("flags"):
                    flags = set(line.split(":", 1)[1].split())
                    return sorted(f for f in flags if f in ("avx", "avx2", "fma", "avx512f", "avx512dq",
                                                            "avx512bw", "avx512vl", "avx512_bf16", "amx_tile"))
    except OSError:
        pass
    return []


def cpu_model():
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine():
    """What a benchmark reports about where it ran: the CPU and its flags, the BLAS kernels (threadpoolctl) and
    the OpenBLAS variables that pick them, the versions and the load."""
    import scipy

    return {"cpu": cpu_model(), "cpus_available": _threads.available_cpus(), "cpu_flags": cpu_flags(),
            "blas": blas_kernels(), "blas_env": blas_env(),
            "numpy": np.__version__, "scipy": scipy.__version__, "python": platform.python_version(),
            "loadavg": list(os.getloadavg())}


def run_record() -> dict:
    """The stamp every benchmark record carries: when, at which commit, on which machine and by which command.

    ``kopt bench`` and every script of docs/benchmarks/ that writes a result file stamp each record with it, so
    that a result file says how to make it again and where its figures come from.

    Returns
    -------
    dict
        ``date`` (UTC, ``YYYY-MM-DD``), ``commit`` (the checkout's short commit; None outside a git checkout),
        ``command`` (the command line, as ``kopt ...`` or ``python ...``) and ``machine`` (:func:`machine`: the
        CPU model and flags, the BLAS libraries threadpoolctl sees with their kernels, versions and threads, the
        OpenBLAS variables, the versions and the load).
    """
    import shlex
    import subprocess
    import sys
    import time

    try:
        here = os.path.dirname(os.path.abspath(__file__))
        commit = subprocess.run(["git", "-C", here, "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                                timeout=10).stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        commit = None
    if os.path.basename(sys.argv[0]) in ("kopt", "__main__.py"):  # the kopt command, or python -m kopt
        command = " ".join(["kopt", *map(shlex.quote, sys.argv[1:])])
    else:
        command = " ".join(["python", *map(shlex.quote, sys.argv)])
    return {"date": time.strftime("%Y-%m-%d", time.gmtime()), "commit": commit, "command": command,
            "machine": machine()}


def blas_kernels():
    """The BLAS libraries loaded (threadpoolctl): library, version, the kernel set it runs
    (``architecture``, e.g. Haswell = AVX2 kernels, SkylakeX = AVX-512) and its threads."""
    import scipy.linalg  # noqa: F401  (SciPy's own OpenBLAS is loaded only with it)
    from threadpoolctl import threadpool_info

    out = []
    for info in threadpool_info():
        if info.get("user_api") != "blas":
            continue
        path = info.get("filepath") or ""
        owner = "numpy" if "numpy" in path else "scipy" if "scipy" in path else os.path.basename(path)
        out.append({"library": info.get("internal_api"), "for": owner, "version": info.get("version"),
                    "kernel": info.get("architecture"), "threads": info.get("num_threads")})
    return out


def blas_env():
    """The OpenBLAS variables that pick its kernels (OPENBLAS_CORETYPE, OPENBLAS_L2_SIZE), as set."""
    return {k: os.environ[k] for k in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE") if k in os.environ}

