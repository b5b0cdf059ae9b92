"""The doubly stochastic solver family: DSG (Dai et al. 2014), UDSG and CDSG (Li & Póczos 2016).

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
