"""The doubly stochastic solver family: DSG (papers/001), UDSG and CDSG (papers/000).

Solvers ``dsg``, ``udsg`` and ``cdsg`` train a :class:`kopt.models.predictors.FeatureExpansion`
(coefficients of seeded random-feature blocks) on any primal loss; see docs/dsg.md.
"""
from kopt.contract.hookspecs import hookimpl

from .solver import CDSG, DSG, UDSG, DoublyStochastic

__all__ = ["DSG", "UDSG", "CDSG", "DoublyStochastic"]


@hookimpl
def kopt_register_solvers(register):
    for cls in (DSG, UDSG, CDSG):
        register(cls)
