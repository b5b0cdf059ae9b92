"""Built-in regularizers."""
from kopt.hookspecs import hookimpl

from .penalties import L2

REGULARIZERS = [L2]


@hookimpl
def kopt_register_regularizers(register):
    for cls in REGULARIZERS:
        register(cls)
