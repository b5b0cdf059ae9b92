"""The squared hinge (L2-SVM) on Nystrom centers by active-set Newton (solver: auto's route for it)."""
from kopt.contract.hookspecs import hookimpl

from .solver import NystromSVM


@hookimpl
def kopt_register_solvers(register):
    register(NystromSVM)
