"""solver: auto -- the route, Nystrom centers, bandwidth and lambda chosen on a validation split."""
from kopt.contract.hookspecs import hookimpl

from .solver import AutoSolver


@hookimpl
def kopt_register_solvers(register):
    register(AutoSolver)
