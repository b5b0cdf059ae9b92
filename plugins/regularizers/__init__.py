"""Built-in regularizers: l2, l1, elastic_net (see :mod:`.penalties`)."""
from kopt.contract.hookspecs import hookimpl

from .penalties import L1, L2, ElasticNet

REGULARIZERS = [L2, L1, ElasticNet]


@hookimpl
def kopt_register_regularizers(register):
    for cls in REGULARIZERS:
        register(cls)
