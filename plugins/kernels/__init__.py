"""Built-in kernels with their random-feature samplers (Dai et al. 2014, Table 1).

Modules by family: :mod:`.shift_invariant` (Gaussian, Laplacian, Cauchy, Matérn),
:mod:`.dot_product` (linear, arc-cosine, polynomial by TensorSketch),
:mod:`.additive` (homogeneous additive kernels on nonnegative data: χ², intersection,
Hellinger, Jensen–Shannon) and :mod:`.semigroup` (skewed χ² / intersection,
exponential and reciprocal semigroup kernels).  :mod:`._base` holds the fast-path
protocol the feature engine uses.
"""
from kopt.contract.hookspecs import hookimpl

from .additive import Chi2Kernel, HellingerKernel, IntersectionKernel, JensenShannonKernel
from .dot_product import ArcCosineKernel, LinearKernel, PolynomialKernel
from .semigroup import (
    ExponentialSemigroupKernel,
    ReciprocalSemigroupKernel,
    SkewedChi2Kernel,
    SkewedIntersectionKernel,
)
from .shift_invariant import CauchyKernel, GaussianKernel, LaplacianKernel, MaternKernel

KERNELS = [
    GaussianKernel,
    LaplacianKernel,
    CauchyKernel,
    MaternKernel,
    LinearKernel,
    ArcCosineKernel,
    PolynomialKernel,
    HellingerKernel,
    Chi2Kernel,
    IntersectionKernel,
    JensenShannonKernel,
    SkewedChi2Kernel,
    SkewedIntersectionKernel,
    ExponentialSemigroupKernel,
    ReciprocalSemigroupKernel,
]


@hookimpl
def kopt_register_kernels(register):
    for cls in KERNELS:
        register(cls)
