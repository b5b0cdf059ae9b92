"""Sizes checked against memory before they are allocated.

:func:`check_allocation` compares a byte estimate with what this process may
still take (the kernel's ``MemAvailable``, capped by an address-space limit
``ulimit -v`` set on the process) and raises a :class:`~kopt.errors.KoptError`
(exit status 2) with the estimate and the option to lower, instead of a
``MemoryError`` halfway through, or swapping for an hour.
"""
from __future__ import annotations

import os
import resource

from .errors import KoptError


class MemoryLimitError(KoptError):
    """An input implies more memory than this machine has."""

    exit_status = 2


def available_bytes() -> int:
    """Bytes this process may still allocate (a best estimate; no limit known: 2**62)."""
    limit = 1 << 62
    try:
        with open("/proc/meminfo", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    limit = int(line.split()[1]) * 1024
                    break
    except (OSError, ValueError, IndexError):
        try:
            limit = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
        except (ValueError, OSError, AttributeError):
            pass
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    if soft != resource.RLIM_INFINITY:
        limit = min(limit, max(0, soft - _mapped_bytes()))
    return limit


def _mapped_bytes() -> int:
    try:
        with open("/proc/self/statm", encoding="ascii") as fh:
            return int(fh.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


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
