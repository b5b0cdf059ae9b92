"""Hook specifications of kopt (pluggy project name ``kopt``).

Registration hooks are called once, when the plugin manager loads; each gets a
``register`` callback that takes a component class (a subclass of one of the
bases of ``kopt.contract.components``).  ``register`` refuses a class of the wrong kind
and a component whose parameter schema is not a valid JSON schema (the refusal
is recorded in ``registry().errors`` and listed by ``kopt plugins``).  Run-time hooks are called by the run
machinery; kopt's own progress bar, report trace and
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
def kopt_register_losses(register) -> None:
    """Register loss classes: ``register(MyLoss)``, ``MyLoss`` a :class:`kopt.contract.components.Loss`.

    Parameters
    ----------
    register : callable
        Takes a component class; refuses one of the wrong kind or with an invalid parameter schema.

    Examples
    --------
    >>> import pluggy
    >>> from kopt.contract import hookspecs
    >>> from kopt.contract.hookspecs import hookimpl
    >>> from kopt.contract.components import Loss
    >>> class Mine(Loss):
    ...     name = "mine"
    >>> class Plugin:
    ...     @hookimpl
    ...     def kopt_register_losses(self, register):
    ...         register(Mine)
    >>> pm = pluggy.PluginManager("kopt")
    >>> pm.add_hookspecs(hookspecs)
    >>> _ = pm.register(Plugin())
    >>> registered = []
    >>> _ = pm.hook.kopt_register_losses(register=registered.append)
    >>> [c.name for c in registered]
    ['mine']
    """


@hookspec
def kopt_register_kernels(register) -> None:
    """Register kernel classes (:class:`kopt.contract.components.Kernel`).

    Parameters
    ----------
    register : callable
        Takes a component class; refuses one of the wrong kind or with an invalid parameter schema.

    Examples
    --------
    >>> import pluggy
    >>> from kopt.contract import hookspecs
    >>> from kopt.contract.hookspecs import hookimpl
    >>> from kopt.contract.components import Kernel
    >>> class Mine(Kernel):
    ...     name = "mine"
    >>> class Plugin:
    ...     @hookimpl
    ...     def kopt_register_kernels(self, register):
    ...         register(Mine)
    >>> pm = pluggy.PluginManager("kopt")
    >>> pm.add_hookspecs(hookspecs)
    >>> _ = pm.register(Plugin())
    >>> registered = []
    >>> _ = pm.hook.kopt_register_kernels(register=registered.append)
    >>> [c.name for c in registered]
    ['mine']
    """


@hookspec
def kopt_register_regularizers(register) -> None:
    """Register regularizer classes (:class:`kopt.contract.components.Regularizer`).

    Parameters
    ----------
    register : callable
        Takes a component class; refuses one of the wrong kind or with an invalid parameter schema.

    Examples
    --------
    >>> import pluggy
    >>> from kopt.contract import hookspecs
    >>> from kopt.contract.hookspecs import hookimpl
    >>> from kopt.contract.components import Regularizer
    >>> class Mine(Regularizer):
    ...     name = "mine"
    >>> class Plugin:
    ...     @hookimpl
    ...     def kopt_register_regularizers(self, register):
    ...         register(Mine)
    >>> pm = pluggy.PluginManager("kopt")
    >>> pm.add_hookspecs(hookspecs)
    >>> _ = pm.register(Plugin())
    >>> registered = []
    >>> _ = pm.hook.kopt_register_regularizers(register=registered.append)
    >>> [c.name for c in registered]
    ['mine']
    """


@hookspec
def kopt_register_solvers(register) -> None:
    """Register solver classes (:class:`kopt.contract.components.Solver`).

    Parameters
    ----------
    register : callable
        Takes a component class; refuses one of the wrong kind or with an invalid parameter schema.

    Examples
    --------
    >>> import pluggy
    >>> from kopt.contract import hookspecs
    >>> from kopt.contract.hookspecs import hookimpl
    >>> from kopt.contract.components import Solver
    >>> class Mine(Solver):
    ...     name = "mine"
    >>> class Plugin:
    ...     @hookimpl
    ...     def kopt_register_solvers(self, register):
    ...         register(Mine)
    >>> pm = pluggy.PluginManager("kopt")
    >>> pm.add_hookspecs(hookspecs)
    >>> _ = pm.register(Plugin())
    >>> registered = []
    >>> _ = pm.hook.kopt_register_solvers(register=registered.append)
    >>> [c.name for c in registered]
    ['mine']
    """


@hookspec
def kopt_register_predictors(register) -> None:
    """Register the predictor classes models are made of (:class:`kopt.contract.components.Predictor`).

    A model file names its predictor; loading it looks the name up among the registered
    predictors, so a solver with its own predictor class registers it here too.

    Parameters
    ----------
    register : callable
        Takes a component class; refuses one of the wrong kind or with an invalid parameter schema.

    Examples
    --------
    >>> import pluggy
    >>> from kopt.contract import hookspecs
    >>> from kopt.contract.hookspecs import hookimpl
    >>> from kopt.contract.components import Predictor
    >>> class Mine(Predictor):
    ...     name = "mine"
    >>> class Plugin:
    ...     @hookimpl
    ...     def kopt_register_predictors(self, register):
    ...         register(Mine)
    >>> pm = pluggy.PluginManager("kopt")
    >>> pm.add_hookspecs(hookspecs)
    >>> _ = pm.register(Plugin())
    >>> registered = []
    >>> _ = pm.hook.kopt_register_predictors(register=registered.append)
    >>> [c.name for c in registered]
    ['mine']
    """


@hookspec
def kopt_register_datasets(register) -> None:
    """Register dataset presets (:class:`kopt.contract.components.DatasetPreset`).

    Parameters
    ----------
    register : callable
        Takes a component class; refuses one of the wrong kind or with an invalid parameter schema.

    Examples
    --------
    >>> import pluggy
    >>> from kopt.contract import hookspecs
    >>> from kopt.contract.hookspecs import hookimpl
    >>> from kopt.contract.components import DatasetPreset
    >>> class Mine(DatasetPreset):
    ...     name = "mine"
    >>> class Plugin:
    ...     @hookimpl
    ...     def kopt_register_datasets(self, register):
    ...         register(Mine)
    >>> pm = pluggy.PluginManager("kopt")
    >>> pm.add_hookspecs(hookspecs)
    >>> _ = pm.register(Plugin())
    >>> registered = []
    >>> _ = pm.hook.kopt_register_datasets(register=registered.append)
    >>> [c.name for c in registered]
    ['mine']
    """


# -- run time (every implementation is called; results ignored) ---------------


@hookspec
def kopt_run_start(run) -> None:
    """A solve starts.

    Parameters
    ----------
    run : RunContext
        The run's context: its spec, problem and solver.

    Examples
    --------
    >>> from kopt.contract.hookspecs import hookimpl
    >>> class Iterations:
    ...     # counts the iterations every solve reports
    ...     seen = 0
    ...     @hookimpl
    ...     def kopt_iteration(self, run, record):
    ...         self.seen += 1
    >>> counter = Iterations()

    Register it for a while with ``kopt.contract.registry.registry().pm.register(counter)`` (and ``unregister``),
    or publish the module in the ``kopt`` entry-point group.
    """


@hookspec
def kopt_iteration(run, record) -> None:
    """A solver reported an iteration.

    Parameters
    ----------
    run : RunContext
        The run's context.
    record : IterationRecord
        The iteration's figures: its number, the objective, the gap or criterion where checked, the metrics.

    Examples
    --------
    >>> from kopt.contract.hookspecs import hookimpl
    >>> class Iterations:
    ...     # counts the iterations every solve reports
    ...     seen = 0
    ...     @hookimpl
    ...     def kopt_iteration(self, run, record):
    ...         self.seen += 1
    >>> counter = Iterations()

    Register it for a while with ``kopt.contract.registry.registry().pm.register(counter)`` (and ``unregister``),
    or publish the module in the ``kopt`` entry-point group.
    """


@hookspec
def kopt_run_end(run, result) -> None:
    """A solve ended.

    Parameters
    ----------
    run : RunContext
        The run's context.
    result : Result or None
        The :class:`kopt.contract.result.Result`, or None when the run was interrupted.

    Examples
    --------
    >>> from kopt.contract.hookspecs import hookimpl
    >>> class Iterations:
    ...     # counts the iterations every solve reports
    ...     seen = 0
    ...     @hookimpl
    ...     def kopt_iteration(self, run, record):
    ...         self.seen += 1
    >>> counter = Iterations()

    Register it for a while with ``kopt.contract.registry.registry().pm.register(counter)`` (and ``unregister``),
    or publish the module in the ``kopt`` entry-point group.
    """
