"""Built-in dataset presets: real public data sets (fetched into ``$KOPT_DATA`` on first use, or packaged)
the synthetic generator of Dai et al. (2014), and the generated sets at scale (deformed digits, HIGGS-shaped rows, the task family)."""
from kopt.contract.hookspecs import hookimpl

from .digits import DeformedDigits, DeformedDigits8v6
from .higgs import Higgs, Higgs12k
from .higgs_shaped import HiggsShaped
from .libsvm import A9a, Ijcnn1, Reuters, W8a
from .synthetic import DaiSynthetic
from .tabular import CalHousing, Mnist
from .task_family import TaskFamily

PRESETS = [A9a, CalHousing, DaiSynthetic, DeformedDigits, DeformedDigits8v6, Higgs, Higgs12k, HiggsShaped, Ijcnn1,
           Mnist, Reuters, TaskFamily, W8a]


@hookimpl
def kopt_register_datasets(register):
    for cls in PRESETS:
        register(cls)
