"""Hook specifications of kopt (pluggy project name ``kopt``).

Registration hooks are called once, when the plugin manager loads; each gets a
``register`` callback that takes a component class (a subclass of one of the
bases in :mod:`kopt.contract.components`).  ``register`` refuses a class of the wrong kind
and a component whose parameter schema is not a valid JSON schema (the refusal
is recorded in ``registry().errors`` and listed by ``kopt plugins``).  Run-time hooks are called by the run
machinery (:mod:`kopt.running.context`); kopt's own progress bar, report trace and
checkpoints are implemented as run-time hook implementations too.

A plugin is a module (or object) with ``@hookimpl``-decorated functions,
published in the ``kopt`` entry-point group::

    [project.entry-points.kopt]
    mysolver = "kopt_mysolver"
"""
from __future__ import annotations

import pluggy

hookspec = pluggy.HookspecMarker("kopt")
hookimpl = pluggy.HookimplMarker("kopt")


# -- registration (called once per plugin at load; results ignored) ------------


@hookspec
def kopt_register_losses(register):
    """Register loss classes: ``register(MyLoss)`` with ``MyLoss`` a :class:`kopt.contract.components.Loss`."""


@hookspec
def kopt_register_kernels(register):
    """Register kernel classes (:class:`kopt.contract.components.Kernel`)."""


@hookspec
def kopt_register_regularizers(register):
    """Register regularizer classes (:class:`kopt.contract.components.Regularizer`)."""


@hookspec
def kopt_register_solvers(register):
    """Register solver classes (:class:`kopt.contract.components.Solver`)."""


@hookspec
def kopt_register_predictors(register):
    """Register the predictor classes models are made of (:class:`kopt.contract.components.Predictor`).

    A model file names its predictor; loading it looks the name up among the registered
    predictors, so a solver with its own predictor class registers it here too.
    """


@hookspec
def kopt_register_datasets(register):
    """Register dataset presets (:class:`kopt.contract.components.DatasetPreset`)."""


# -- run time (every implementation is called; results ignored) ---------------


@hookspec
def kopt_run_start(run):
    """A solve starts. ``run`` is the :class:`kopt.running.context.RunContext`."""


@hookspec
def kopt_iteration(run, record):
    """A solver reported an iteration. ``record`` is a :class:`kopt.running.context.IterationRecord`."""


@hookspec
def kopt_run_end(run, result):
    """A solve ended (``result`` is the :class:`kopt.contract.result.Result`, or ``None`` when interrupted)."""
