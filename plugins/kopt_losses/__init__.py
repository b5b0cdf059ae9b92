"""Built-in losses (registered through the ``kopt`` entry-point group)."""
from kopt.hookspecs import hookimpl

from .regression import SquareLoss

LOSSES = [SquareLoss]


@hookimpl
def kopt_register_losses(register):
    for cls in LOSSES:
        register(cls)
