"""Built-in dataset presets."""
from kopt.hookspecs import hookimpl

from .synthetic import DaiSynthetic

PRESETS = [DaiSynthetic]


@hookimpl
def kopt_register_datasets(register):
    for cls in PRESETS:
        register(cls)
