"""Built-in kernels with their random-feature samplers (papers/001 Table 1).

Modules by family: :mod:`.shift_invariant` (Gaussian, Laplacian, Cauchy, Matérn),
:mod:`.dot_product` (linear, arc-cosine, polynomial by TensorSketch),
:mod:`.additive` (homogeneous additive kernels on nonnegative data: χ², intersection,
Hellinger, Jensen–Shannon) and :mod:`.semigroup` (skewed χ² / intersection,
exponential and reciprocal semigroup kernels).
"""
from kopt.hookspecs import hookimpl

from .shift_invariant import CauchyKernel, GaussianKernel, LaplacianKernel, MaternKernel

KERNELS = [GaussianKernel, LaplacianKernel, CauchyKernel, MaternKernel]


@hookimpl
def kopt_register_kernels(register):
    for cls in KERNELS:
        register(cls)
