"""Built-in dataset presets."""
from kopt.hookspecs import hookimpl

from .higgs import Higgs
from .synthetic import DaiSynthetic

PRESETS = [DaiSynthetic, Higgs]


@hookimpl
def kopt_register_datasets(register):
    for cls in PRESETS:
        register(cls)
