"""One-vs-one kernel ridge regression on Nystrom centers: a system per pair of classes, as SVC's one-vs-one."""
from kopt.contract.hookspecs import hookimpl

from .solver import PairsKRR


@hookimpl
def kopt_register_solvers(register):
    register(PairsKRR)
