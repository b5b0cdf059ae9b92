"""ADSG (Shen et al. 2017) and its baselines for block-separable regularized ERM.

Registers four solvers: ``adsg`` (accelerated doubly stochastic gradient,
ADSG II by default, ADSG I as ``variant: reference``), ``mrbcd`` (the same
loop without momenta: variance-reduced random block steps), ``svrg``
(proximal SVRG, full-vector steps) and ``katyusha`` (accelerated SVRG,
Shen et al.'s accelerated baseline).
"""
from kopt.contract.hookspecs import hookimpl

from .katyusha import Katyusha
from .solver import ADSG, MRBCD, SVRG

SOLVERS = [ADSG, MRBCD, SVRG, Katyusha]


@hookimpl
def kopt_register_solvers(register):
    for cls in SOLVERS:
        register(cls)
