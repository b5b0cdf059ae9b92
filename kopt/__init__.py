"""kopt: large-scale kernel machines from declarative YAML problem specs.

>>> import kopt
>>> result = kopt.solve("specs/krr_exact_cal_housing.yaml")   # doctest: +SKIP
>>> result.model.predict(X)                                     # doctest: +SKIP
"""
from .version import __version__  # noqa: E402

from .api import solve  # noqa: E402
from .errors import (  # noqa: E402
    ConvergenceWarning,
    DataError,
    KoptError,
    ModelFileError,
    SpecError,
    SpecWarning,
    Terminated,
    UnknownComponentError,
)
from .model import Model, load_model  # noqa: E402
from .spec import Spec, load_spec  # noqa: E402
from .tune import tune  # noqa: E402
from . import datasets  # noqa: E402  (kopt.datasets.load)

__all__ = [
    "__version__",
    "solve",
    "tune",
    "datasets",
    "load_spec",
    "load_model",
    "Spec",
    "Model",
    "KoptError",
    "SpecError",
    "DataError",
    "ModelFileError",
    "UnknownComponentError",
    "ConvergenceWarning",
    "SpecWarning",
    "Terminated",
]
