"""Array backends: NumPy always, CuPy when asked for and available.

Only this module imports CuPy, lazily.  Numeric code is written once against
an array namespace ``xp``: ``xp = get_namespace(X, w)``.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from .errors import BackendError

NAMES = ("auto", "numpy", "cupy")


@lru_cache(maxsize=1)
def cupy_status() -> tuple[bool, str]:
    """``(available, reason)``: CuPy importable and a CUDA device usable."""
    try:
        import cupy  # noqa: F401
    except Exception as exc:  # ImportError or a broken CUDA install
        return False, f"CuPy is not installed ({type(exc).__name__}: {exc}); install kopt[gpu]"
    try:
        n = cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:
        return False, f"CuPy cannot reach a CUDA device ({exc})"
    if n < 1:
        return False, "CuPy found no CUDA device"
    return True, f"CuPy {cupy.__version__}, {n} device(s)"


@dataclass(frozen=True)
class Backend:
    name: str  # "numpy" or "cupy"
    xp: object
    note: str = ""  # e.g. why auto fell back to numpy

    def asarray(self, a, dtype=None):
        return self.xp.asarray(a, dtype=dtype)

    def to_numpy(self, a):
        return to_numpy(a)


def resolve(name: str) -> Backend:
    """Backend for a spec's ``backend`` value; raises BackendError for an unavailable cupy."""
    if name == "numpy":
        return Backend("numpy", np)
    ok, reason = cupy_status()
    if name == "cupy":
        if not ok:
            raise BackendError(
                f"backend 'cupy' is not available: {reason}. Use backend: numpy or auto",
                path="$.backend",
            )
        import cupy

        return Backend("cupy", cupy)
    if name == "auto":
        if ok:
            import cupy

            return Backend("cupy", cupy, note=f"auto chose cupy: {reason}")
        return Backend("numpy", np, note=f"auto fell back to numpy: {reason}")
    raise BackendError(f"unknown backend {name!r}; allowed: {', '.join(NAMES)}", path="$.backend")


def get_namespace(*arrays):
    """The array module of the arguments (NumPy unless one is a CuPy array)."""
    mods = {type(a).__module__.split(".")[0] for a in arrays if a is not None and not np.isscalar(a)}
    mods.discard("numpy")
    mods.discard("builtins")
    if "cupy" in mods:
        import cupy

        return cupy
    return np


def to_numpy(a):
    """A host NumPy array (no copy for NumPy input)."""
    if type(a).__module__.split(".")[0] == "cupy":
        return a.get()
    return np.asarray(a)
