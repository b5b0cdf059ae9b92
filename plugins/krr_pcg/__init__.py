"""Kernel ridge regression on Nystrom centers by preconditioned conjugate gradients (the large-n route of
solver: auto)."""
from kopt.contract.hookspecs import hookimpl

from .solver import NystromPCG


@hookimpl
def kopt_register_solvers(register):
    register(NystromPCG)
