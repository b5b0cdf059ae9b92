"""ADSG (papers/003) and its baselines for block-separable regularized ERM.

Registers three solvers: ``adsg`` (accelerated doubly stochastic gradient,
ADSG II by default, ADSG I as ``variant: reference``), ``mrbcd`` (the same
loop without momenta: variance-reduced random block steps) and ``svrg``
(proximal SVRG, full-vector steps).
"""
from kopt.hookspecs import hookimpl

from .solver import ADSG, MRBCD, SVRG

SOLVERS = [ADSG, MRBCD, SVRG]


@hookimpl
def kopt_register_solvers(register):
    for cls in SOLVERS:
        register(cls)
