"""Joker: dual block coordinate descent with trust region (Zhang & Lai 2025), exact and random-feature.

Registers the solver ``joker`` (see docs/joker.md).
"""
from kopt.contract.hookspecs import hookimpl

from .solver import JokerSolver


@hookimpl
def kopt_register_solvers(register):
    register(JokerSolver)
