"""Built-in losses (registered through the ``kopt`` entry-point group).

Modules by family: :mod:`.regression` (ρ(u − y) losses), :mod:`.classification`
(binary, y ∈ {−1, +1}), :mod:`.multiclass` (softmax, C outputs), :mod:`.density`
(primal-only novelty detection and KL density ratio).  Every loss follows the conventions of :mod:`._common`.
"""
from kopt.contract.hookspecs import hookimpl

from .classification import HingeLoss, LogisticLoss, SquaredHingeLoss
from .density import KLDensityRatioLoss, NoveltyLoss
from .multiclass import SoftmaxLoss
from .regression import (
    AbsoluteLoss,
    EpsilonInsensitiveLoss,
    HuberLoss,
    LpLoss,
    QuantileLoss,
    SquareLoss,
)

LOSSES = [
    SquareLoss,
    HuberLoss,
    AbsoluteLoss,
    LpLoss,
    EpsilonInsensitiveLoss,
    QuantileLoss,
    HingeLoss,
    SquaredHingeLoss,
    LogisticLoss,
    SoftmaxLoss,
    NoveltyLoss,
    KLDensityRatioLoss,
]


@hookimpl
def kopt_register_losses(register):
    for cls in LOSSES:
        register(cls)
