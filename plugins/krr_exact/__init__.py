"""Exact kernel ridge regression by a Cholesky solve: kopt's correctness oracle."""
from kopt.contract.hookspecs import hookimpl

from .solver import ExactKRR


@hookimpl
def kopt_register_solvers(register):
    register(ExactKRR)
