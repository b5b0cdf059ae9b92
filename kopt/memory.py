"""Sizes checked against memory before they are allocated.

:func:`check_allocation` compares a byte estimate with what this process may
still take (``psutil``'s available memory, capped by an address-space limit
``ulimit -v`` set on the process) and raises a :class:`~kopt.errors.KoptError`
(exit status 2) with the estimate and the option to lower, instead of a
``MemoryError`` halfway through, or swapping for an hour.
"""
from __future__ import annotations

import sys

from .errors import KoptError


class MemoryLimitError(KoptError):
    """An input implies more memory than this machine has."""

    exit_status = 2


def available_bytes() -> int:
    """Bytes this process may still allocate (a best estimate from ``psutil``: the memory available
    without swapping, capped by an address-space limit ``ulimit -v`` where the OS has one)."""
    import psutil

    limit = int(psutil.virtual_memory().available)
    try:
        import resource
    except ImportError:  # Windows: no rlimits
        return limit
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    if soft != resource.RLIM_INFINITY:
        limit = min(limit, max(0, soft - int(psutil.Process().memory_info().vms)))
    return limit


def peak_rss_mb() -> float:
    """This process's peak resident memory in MiB: ``ru_maxrss`` is KiB on Linux and bytes on macOS;
    Windows reports the peak working set through ``psutil``."""
    try:
        import resource
    except ImportError:
        import psutil

        info = psutil.Process().memory_info()
        return float(getattr(info, "peak_wset", info.rss)) / 2 ** 20
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / 2 ** 20 if sys.platform == "darwin" else peak / 1024.0


def format_bytes(nbytes) -> str:
    """``1536`` -> ``'1.5 KiB'``."""
    value = float(nbytes)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if value < 1024 or unit == "PiB":
            return f"{value:.3g} {unit}" if unit != "B" else f"{int(value)} B"
        value /= 1024
    return f"{value:.3g} PiB"


def check_allocation(nbytes, what: str, lower: str):
    """Raise :class:`MemoryLimitError` when ``nbytes`` (an int; may be huge) exceed the available memory.

    ``what`` says what the bytes are for (``"a.libsvm: 2e12 features: per-feature statistics"``),
    ``lower`` what to change (``"set data.n_features"``).
    """
    have = available_bytes()
    if nbytes > have:
        raise MemoryLimitError(f"{what} need about {format_bytes(nbytes)}, more than the {format_bytes(have)} "
                               f"of memory available; {lower}")
