"""GP regression by doubly stochastic gradients (Dai et al. 2014, Sec. 4, App. D).

Solver ``gp`` (``model.form: gp``, square loss) trains a :class:`GPPosterior`: the posterior
mean everywhere, and the posterior variance either through the variance operator Â (any
point, memory O(T²)) or through one KRR-type fit per test point (the data's test split).
``kopt predict`` writes the mean, the variance and a predictive interval.  See docs/gp.md.
"""
from kopt.contract.hookspecs import hookimpl

from .exact import exact_posterior, gp_lambda
from .predictor import GPPosterior
from .solver import GPSolver

__all__ = ["GPSolver", "GPPosterior", "exact_posterior", "gp_lambda"]


@hookimpl
def kopt_register_solvers(register):
    register(GPSolver)


@hookimpl
def kopt_register_predictors(register):
    register(GPPosterior)
