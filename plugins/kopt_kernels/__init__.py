"""Built-in kernels with their random-feature samplers."""
from kopt.hookspecs import hookimpl

from .shift_invariant import GaussianKernel

KERNELS = [GaussianKernel]


@hookimpl
def kopt_register_kernels(register):
    for cls in KERNELS:
        register(cls)
