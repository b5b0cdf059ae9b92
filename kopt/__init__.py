"""kopt: large-scale kernel machines from declarative YAML problem specs.

>>> import kopt
>>> result = kopt.solve("specs/krr_exact_cal_housing.yaml")   # doctest: +SKIP
>>> result.model.predict(X)                                     # doctest: +SKIP

The package is laid out in layers, each a folder (docs/architecture.md, "Layout"): ``contract`` (what a plugin
implements), ``numerics``, ``files``, ``data``, ``models``, ``nystrom``, ``spec``, ``running``, ``distributed``,
``selection``, and the faces ``api`` (:func:`solve`), ``cli``, ``sklearn`` and ``testing``.
"""
import importlib
import importlib.abc
import importlib.util
import sys
import warnings

from .contract.version import __version__

#: the module paths of kopt 0.1's flat layout -> where each module lives now.  ``import kopt.components`` and
#: ``from kopt.hookspecs import hookimpl`` keep working (the same module object, with a DeprecationWarning), so a
#: plugin written against the old paths runs unchanged.
MOVED_MODULES = {
    "kopt.assemble": "kopt.running.assemble",
    "kopt.backend": "kopt.numerics.backend",
    "kopt.bandwidth": "kopt.contract.bandwidth",
    "kopt.bench": "kopt.cli.bench",
    "kopt.checkpoint": "kopt.running.checkpoint",
    "kopt.components": "kopt.contract.components",
    "kopt.data.bandwidth": "kopt.contract.bandwidth",
    "kopt.data.commands": "kopt.cli.data",
    "kopt.feature_rows": "kopt.numerics.bound_features",
    "kopt.features": "kopt.numerics.features",
    "kopt.fileio": "kopt.files.atomic",
    "kopt.fileset": "kopt.files.sets",
    "kopt.hookspecs": "kopt.contract.hookspecs",
    "kopt.iterative": "kopt.contract.iterative",
    "kopt.linalg": "kopt.numerics.linalg",
    "kopt.listeners": "kopt.running.listeners",
    "kopt.logs": "kopt.running.logs",
    "kopt.memory": "kopt.numerics.memory",
    "kopt.metrics": "kopt.numerics.metrics",
    "kopt.model": "kopt.models.model",
    "kopt.model_checks": "kopt.models.checks",
    "kopt.npzfile": "kopt.files.npz",
    "kopt.nystrom_cache": "kopt.nystrom.cache",
    "kopt.objectives": "kopt.numerics.objectives",
    "kopt.options": "kopt.contract.options",
    "kopt.outdir": "kopt.running.outdir",
    "kopt.plotting": "kopt.running.plotting",
    "kopt.plugins": "kopt.contract.registry",
    "kopt.predicting": "kopt.models.predict_file",
    "kopt.predictors": "kopt.models.predictors",
    "kopt.problem": "kopt.contract.problem",
    "kopt.prox": "kopt.numerics.prox",
    "kopt.result": "kopt.contract.result",
    "kopt.rows": "kopt.numerics.rows",
    "kopt.run": "kopt.running.context",
    "kopt.specfiles": "kopt.spec.packaged",
    "kopt.splits": "kopt.numerics.splits",
    "kopt.threads": "kopt.numerics.threads",
    "kopt.tune": "kopt.selection.tune",
    "kopt.tune_nystrom": "kopt.selection.nystrom_folds",
    "kopt.tune_report": "kopt.selection.tune_report",
    "kopt.version": "kopt.contract.version",
}


class _MovedModule(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Imports an old module path as the module it moved to (the same object, so patches and state are shared)."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname in MOVED_MODULES:
            return importlib.util.spec_from_loader(fullname, self)
        return None

    def create_module(self, spec):
        new = MOVED_MODULES[spec.name]
        warnings.warn(f"{spec.name} moved to {new}; import it from there (the old path will be removed)",
                      DeprecationWarning, stacklevel=2)
        module = importlib.import_module(new)
        self._specs = getattr(self, "_specs", {})
        self._specs[spec.name] = module.__spec__
        return module

    def exec_module(self, module):
        # the import system set the alias's spec on the real module: give it its own back
        module.__spec__ = self._specs.pop(module.__spec__.name, module.__spec__)


sys.meta_path.append(_MovedModule())

from .api import solve  # noqa: E402
from .data import arrays as datasets  # noqa: E402  (kopt.datasets.load)
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
from .models.model import Model, load_model  # noqa: E402
from .selection.tune import tune  # noqa: E402
from .spec import Spec, load_spec  # noqa: E402

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
