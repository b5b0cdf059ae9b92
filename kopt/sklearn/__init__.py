"""scikit-learn estimators: every kopt model in Pipeline, GridSearchCV and cross_val_score.

* :class:`KernelClassifier` -- any classification loss (hinge, squared_hinge, logistic, softmax,
  square/huber with ``target: binary``) with any kernel, regularizer and solver; string or numeric
  labels, two classes or more (one-vs-rest for the solvers that train binary losses so, e.g. joker;
  a multiclass loss such as softmax with dsg).
* :class:`KernelRegressor` -- any regression loss (square, huber, absolute, epsilon_insensitive, lp,
  quantile).
* :class:`GPRegressor` -- GP regression (``model.form: gp``, solver ``gp``) with
  ``predict(X, return_std=True)``.

The constructor arguments map one to one onto spec keys (the table is :data:`PARAMETERS` and
docs/sklearn.md); ``fit`` builds the spec dict and validates it with :func:`kopt.load_spec`, so a
bad value gets the :class:`kopt.SpecError` the CLI prints, in the estimator's words (the parameter,
``KernelClassifier: class_weight[0]: ...``, where the CLI names the spec key).  Training is :func:`kopt.solve` on the arrays; ``estimator.to_spec()`` is the
equivalent YAML spec and :func:`from_spec` builds the estimator from one -- the CLI and the
estimators are the same thing seen two ways.

scikit-learn is an optional dependency (``pip install 'kopt[sklearn]'``); ``import kopt`` never
imports this module.  The estimators write no files: the spec they solve has ``output: {model:
false, report: false, checkpoint_every: 0}`` and the run keeps everything in memory.  They pickle
(the fitted model travels as its model-file metadata and arrays, rebuilt on unpickling exactly as
:func:`kopt.load_model` rebuilds a model file), while kopt's own model files stay pickle-free.

The package's modules: ``base`` (what the estimators share), ``classifier``, ``regressor``, ``gp``,
``checks`` (:func:`expected_failed_checks`) and ``specs`` (:func:`from_spec`).
"""
from __future__ import annotations

from ..contract.registry import registry
from .base import PARAMETERS
from .checks import expected_failed_checks
from .classifier import KernelClassifier
from .gp import GPRegressor
from .regressor import KernelRegressor
from .specs import from_spec

__all__ = ["KernelClassifier", "KernelRegressor", "GPRegressor", "from_spec", "expected_failed_checks", "PARAMETERS"]

# the plugins the estimators dispatch to are loaded with this module, as scikit-learn loads its own estimators'
# code at import: otherwise the first fit in a process paid it, a large share of a small fit
# (docs/design/nystrom-system.md)
registry()
