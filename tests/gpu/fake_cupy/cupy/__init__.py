"""A stand-in ``cupy`` for machines without a GPU: NumPy under CuPy's name, with a fake CUDA runtime.

Only for the CPU tests of the GPU check (tests/gpu/test_fake_device.py), with this folder first on
PYTHONPATH.  "Device" arrays are NumPy arrays of the subclass :class:`ndarray` (its ``__module__`` is
``cupy``, so ``kopt.numerics.backend.get_namespace`` and ``to_numpy`` treat them as CuPy's), and like CuPy it
refuses what a GPU cannot do implicitly:

* a ufunc or NumPy function mixing a device array with a host array of one or more dimensions
  (``device + host``, ``np.maximum(device, host)``): TypeError;
* a ``cupy.*`` function (other than the constructors ``asarray``, ``zeros``, ...) or a
  ``cupyx.scipy.linalg`` one given a host array: TypeError.

So every ``xp is not np`` branch, ``cupyx`` call, the probe, the device report and the benchmarks'
synchronisation run on the CPU, and a host/device mix-up fails there.  What it cannot check: device
memory, ``np.asarray(device_array)`` (NumPy converts a subclass without asking), CUDA's rounding.
"""
import functools

import numpy as _np

__version__ = "0.0.0+fake"
FAKE = True
#: functions that may take host data (they copy it to the "device")
_CONSTRUCTORS = {"asarray", "array", "ascontiguousarray", "asanyarray", "zeros", "ones", "empty", "full", "arange",
                 "linspace", "eye", "identity", "zeros_like", "ones_like", "empty_like", "full_like", "indices", "tri"}


class ndarray(_np.ndarray):  # noqa: N801 - CuPy's name
    """A "device" array: NumPy's, refusing to mix with host arrays."""

    def get(self, stream=None, order="C", out=None):
        return _np.array(self.view(_np.ndarray), copy=True)

    def __array_ufunc__(self, ufunc, method, *inputs, out=None, **kwargs):
        _refuse_mix(inputs + (out or ()), f"{ufunc.__name__}.{method}")
        if out is not None:
            kwargs["out"] = tuple(_host(x) for x in out)
        res = getattr(ufunc, method)(*(_host(x) for x in inputs), **kwargs)
        if out is not None:
            return out[0] if len(out) == 1 else out
        return _device(res)

    def __array_function__(self, func, types, args, kwargs):
        _refuse_mix(_flat(args) + _flat(tuple(kwargs.values())), f"numpy.{func.__name__}")
        return _device(func(*_host_all(args), **{k: _host_all(v) for k, v in kwargs.items()}))


ndarray.__module__ = "cupy"


def _flat(xs):
    out = []
    for x in xs:
        out.extend(_flat(tuple(x)) if isinstance(x, (list, tuple)) else [x])
    return tuple(out)


def _host_arrays(xs):
    return [x for x in xs if type(x) is _np.ndarray and x.ndim > 0]


def _refuse_mix(xs, what):
    host = _host_arrays(xs)
    if host and any(isinstance(x, ndarray) for x in xs):
        raise TypeError(f"fake cupy: {what} mixes a host array of shape {host[0].shape} with device arrays")


def _host(x):
    return x.view(_np.ndarray) if isinstance(x, ndarray) else x


def _host_all(x):
    return type(x)(_host_all(v) for v in x) if isinstance(x, (list, tuple)) else _host(x)


def _device(res):
    if isinstance(res, tuple):
        return tuple(_device(r) for r in res)
    if isinstance(res, (_np.ndarray, _np.generic)):
        return _np.asarray(res).view(ndarray)
    return res


def device_function(name, f):
    """``f`` as CuPy's ``name``: host arrays refused (constructors excepted), results on the "device"."""

    @functools.wraps(f)
    def call(*args, **kwargs):
        if name.rsplit(".", 1)[-1] not in _CONSTRUCTORS:
            host = _host_arrays(_flat(args) + _flat(tuple(kwargs.values())))
            if host:
                raise TypeError(f"fake cupy: cupy.{name} was given a host array of shape {host[0].shape}")
        return _device(f(*_host_all(args), **{k: _host_all(v) for k, v in kwargs.items()}))

    return call


def asnumpy(a, stream=None, order="C", out=None):
    return a.get() if isinstance(a, ndarray) else _np.asarray(a)


def get_array_module(*args):
    import sys

    return sys.modules[__name__]


class _Submodule:
    def __init__(self, module, prefix):
        self._module, self._prefix = module, prefix

    def __getattr__(self, name):
        f = getattr(self._module, name)
        return device_function(self._prefix + name, f) if callable(f) else f


linalg = _Submodule(_np.linalg, "linalg.")
random = _Submodule(_np.random, "random.")


def __getattr__(name):  # everything else NumPy has: functions and ufuncs as device functions
    f = getattr(_np, name)
    if callable(f) and not isinstance(f, type):
        return device_function(name, f)
    return f


float16, float32, float64, complex64, complex128 = _np.float16, _np.float32, _np.float64, _np.complex64, _np.complex128
int8, int16, int32, int64, uint8, uint32, uint64, intp, bool_ = (_np.int8, _np.int16, _np.int32, _np.int64, _np.uint8,
                                                                 _np.uint32, _np.uint64, _np.intp, _np.bool_)
dtype, newaxis, pi, inf, nan, e = _np.dtype, _np.newaxis, _np.pi, _np.inf, _np.nan, _np.e


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
