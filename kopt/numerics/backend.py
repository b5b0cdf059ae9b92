"""Array backends: NumPy always, CuPy when asked for and available.

Only this module imports CuPy, lazily.  Numeric code is written once against
an array namespace ``xp``: ``xp = get_namespace(X, w)``.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from ..errors import BackendError

NAMES = ("auto", "numpy", "cupy")


@lru_cache(maxsize=1)
def cupy_status() -> tuple[bool, str]:
    """``(available, reason)``: CuPy importable, a CUDA device present, and a tiny kernel runs on it.

    An importable CuPy is not enough for ``backend: auto``: a machine with the wheel but no driver,
    no device, or a driver older than the wheel's CUDA only fails at the first kernel.  The answer is
    cached for the process; :func:`probe_cupy` is the check itself.
    """
    try:
        import cupy
    except Exception as exc:  # ImportError or a broken CUDA install
        return False, (f"CuPy is not installed ({type(exc).__name__}: {exc}); install the CuPy wheel of the "
                       "driver's CUDA major version (nvidia-smi): cupy-cuda12x (kopt[gpu]) or cupy-cuda13x")
    return probe_cupy(cupy)


@lru_cache(maxsize=1)
def nvidia_gpu() -> bool:
    """Whether ``nvidia-smi -L`` lists a GPU (the NVIDIA driver answers), whatever CuPy says.

    ``kopt solve`` says why ``backend: auto`` fell back to NumPy only on such a machine (or with ``-v``):
    without a GPU the fall-back is the expected outcome, not news."""
    import shutil
    import subprocess

    exe = shutil.which("nvidia-smi")
    if exe is None:
        return False
    try:
        out = subprocess.run([exe, "-L"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return False
    return out.returncode == 0 and "GPU" in out.stdout


#: the probe's kernel: sum of squares of 0..7 (an elementwise kernel, a reduction, a copy to the host)
_PROBE_SUM = 140.0


def probe_cupy(cupy) -> tuple[bool, str]:
    """``(usable, reason)`` for an imported CuPy module: count the devices, then run a tiny kernel."""
    try:
        n = int(cupy.cuda.runtime.getDeviceCount())
    except Exception as exc:
        return False, f"CuPy cannot reach a CUDA device ({type(exc).__name__}: {exc})"
    if n < 1:
        return False, "CuPy found no CUDA device"
    try:
        x = cupy.arange(8, dtype=cupy.float32)
        got = float(cupy.asnumpy((x * x).sum()))
    except Exception as exc:
        return False, (f"CuPy sees {n} CUDA device(s) but a tiny kernel failed ({type(exc).__name__}: {exc}); "
                       "check that the cupy-cuda package matches the driver's CUDA version (nvidia-smi)")
    if got != _PROBE_SUM:
        return False, f"CuPy sees {n} CUDA device(s) but a tiny kernel returned {got!r}, not {_PROBE_SUM}"
    return True, f"CuPy {getattr(cupy, '__version__', '?')}, {n} device(s)"


def cupy_device_info() -> dict:
    """What a GPU benchmark reports about its device: name, memory, CUDA runtime and driver, CuPy.

    Only call this where :func:`cupy_status` said yes.
    """
    import cupy

    rt = cupy.cuda.runtime
    dev = cupy.cuda.Device()
    props = rt.getDeviceProperties(dev.id)
    name = props.get("name", b"?")
    return {"device": name.decode() if isinstance(name, bytes) else str(name),
            "compute_capability": str(dev.compute_capability),
            "memory_gib": round(props.get("totalGlobalMem", 0) / 2**30, 2),
            "multiprocessors": props.get("multiProcessorCount"),
            "cuda_runtime": _cuda_version(rt.runtimeGetVersion()),
            "cuda_driver_api": _cuda_version(rt.driverGetVersion()),
            "cupy": cupy.__version__}


def synchronize(xp) -> None:
    """Wait until the device has finished its queued work (a no-op on NumPy): GPU timings need it."""
    if xp is not np:
        xp.cuda.Device().synchronize()


def _cuda_version(v: int) -> str:
    """12040 -> '12.4' (CUDA's integer version encoding)."""
    return f"{v // 1000}.{(v % 1000) // 10}"


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
