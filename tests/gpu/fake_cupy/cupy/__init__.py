"""A stand-in ``cupy`` for machines without a GPU: NumPy under CuPy's name, with a fake CUDA runtime.

Only for the CPU tests of the GPU check (tests/gpu/test_fake_device.py), with this folder first on
PYTHONPATH.  Arrays are plain NumPy arrays, so nothing here tests CuPy's semantics (no device copies,
no refusal of implicit host conversions); what it does exercise is every code path kopt takes when its
backend is CuPy -- the ``xp is not np`` branches, ``cupyx`` calls, the probe, the device report and the
synchronisation of the benchmarks -- so a typo there is found without a GPU.
"""
import numpy as _np
from numpy import *  # noqa: F401,F403

__version__ = "0.0.0+fake"
ndarray = _np.ndarray
FAKE = True


def asnumpy(a, stream=None, order="C", out=None):
    return _np.asarray(a)


def get_array_module(*args):
    import sys

    return sys.modules[__name__]


def __getattr__(name):  # everything else NumPy has
    return getattr(_np, name)


class _Runtime:
    @staticmethod
    def getDeviceCount():
        return 1

    @staticmethod
    def getDeviceProperties(device):
        return {"name": b"Fake CUDA device (NumPy)", "totalGlobalMem": 1 << 34, "multiProcessorCount": 1}

    @staticmethod
    def runtimeGetVersion():
        return 13000

    @staticmethod
    def driverGetVersion():
        return 13000


class Device:
    def __init__(self, device=0):
        self.id = device
        self.compute_capability = "90"

    def synchronize(self):
        pass


class cuda:  # noqa: N801 - CuPy's name
    runtime = _Runtime
    Device = Device
