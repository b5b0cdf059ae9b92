"""Built-in predictors: the model kinds of :mod:`kopt.models.predictors`, registered like a third party's.

``kernel_expansion`` (Σ_i coef_i k(s_i, x)), ``feature_expansion`` (random-feature
coefficients, ω regenerated from the seed), ``linear`` (xᵀw + b) and ``pairwise_votes`` (one-vs-one kernel
expansions that vote).  Model files name
their predictor; :func:`kopt.load_model` finds it among the registered ones.
"""
from kopt.contract.hookspecs import hookimpl
from kopt.models.predictors import FeatureExpansion, KernelExpansion, LinearPredictor, PairwiseVotes

PREDICTORS = [KernelExpansion, FeatureExpansion, LinearPredictor, PairwiseVotes]


@hookimpl
def kopt_register_predictors(register):
    for cls in PREDICTORS:
        register(cls)
