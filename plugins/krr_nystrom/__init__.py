"""Kernel ridge regression on Nystrom centers by a direct solve (the fast route of solver: auto)."""
from kopt.contract.hookspecs import hookimpl

from .solver import NystromKRR


@hookimpl
def kopt_register_solvers(register):
    register(NystromKRR)
