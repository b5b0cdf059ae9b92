"""Every smooth loss on Nystrom centers by Newton's method, each step's system solved by preconditioned conjugate
gradients (the large-n route of solver: auto for the logistic loss, the squared hinge and Huber)."""
from kopt.contract.hookspecs import hookimpl

from .solver import NystromNewton


@hookimpl
def kopt_register_solvers(register):
    register(NystromNewton)
