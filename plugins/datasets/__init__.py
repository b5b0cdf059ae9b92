"""Built-in dataset presets: real public data sets (fetched into ``$KOPT_DATA`` on first use, or packaged)
and the synthetic generator of papers/001."""
from kopt.hookspecs import hookimpl

from .higgs import Higgs, Higgs12k
from .libsvm import A9a, Ijcnn1, Reuters, W8a
from .synthetic import DaiSynthetic
from .tabular import CalHousing, Mnist

PRESETS = [A9a, CalHousing, DaiSynthetic, Higgs, Higgs12k, Ijcnn1, Mnist, Reuters, W8a]


@hookimpl
def kopt_register_datasets(register):
    for cls in PRESETS:
        register(cls)
