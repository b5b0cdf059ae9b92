"""kopt: large-scale kernel machines from declarative YAML problem specs.

>>> import kopt
>>> result = kopt.solve("specs/krr_exact_cal_housing.yaml")   # doctest: +SKIP
>>> result.model.predict(X)                                     # doctest: +SKIP

The package is laid out in layers, each a folder (docs/architecture.md, "Layout"): ``contract`` (what a plugin
implements), ``numerics``, ``files``, ``data``, ``models``, ``nystrom``, ``spec``, ``running``, ``distributed``,
``selection``, and the faces ``api`` (:func:`solve`), ``cli``, ``sklearn`` and ``testing``.
"""
import sys

from .api import solve
from .contract.version import __version__
from .data import arrays as datasets  # kopt.datasets.load
from .errors import (
    ConvergenceWarning,
    DataError,
    KoptError,
    ModelFileError,
    SpecError,
    SpecWarning,
    Terminated,
    UnknownComponentError,
)
from .models.model import Model, load_model
from .selection.tune import tune
from .spec import Spec, load_spec

sys.modules.setdefault(__name__ + ".datasets", datasets)  # import kopt.datasets

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
