"""Checks for solver plugins: an interrupted and resumed run ends where an uninterrupted one ends.

The whole solver contract, resume included, is :func:`kopt.testing.check_solver`.
"""
from __future__ import annotations

import contextlib
import copy
import os
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterable, Iterator

import numpy as np

from ..contract.hookspecs import hookimpl

if TYPE_CHECKING:
    from ..contract.components import Solver
    from ..contract.result import Result
    from ..running.context import IterationRecord
    from ..spec import Spec


class StopAt:
    """A run-time hook that requests a stop at ``iteration``, exactly as the first Ctrl-C does.

    Parameters
    ----------
    iteration : int
        The iteration to stop at.

    Attributes
    ----------
    iteration : int
        As given.

    Examples
    --------
    Register it for a while (:func:`~kopt.testing.interrupt_at` does so):

    >>> from kopt.contract.registry import registry
    >>> from kopt.testing import StopAt
    >>> name = registry().pm.register(StopAt(3))
    >>> _ = registry().pm.unregister(name=name)
    """

    def __init__(self, iteration: int) -> None:
        self.iteration = int(iteration)

    @hookimpl
    def kopt_iteration(self, run, record: IterationRecord) -> None:
        """Ask the run to stop once it reports the iteration given, as the first Ctrl-C does.

        Parameters
        ----------
        run : kopt.running.context.RunContext
            The run's context; its ``stop_requested`` is set.
        record : IterationRecord
            The iteration's figures (its number is read).

        Examples
        --------
        >>> from types import SimpleNamespace
        >>> from kopt.testing import StopAt
        >>> run = SimpleNamespace(stop_requested=False)
        >>> StopAt(3).kopt_iteration(run, SimpleNamespace(iteration=3))
        >>> run.stop_requested
        True
        """
        if record.iteration == self.iteration:
            run.stop_requested = True


class KeepStates:
    """A stand-in for the run context of ``Solver.run(problem, run)`` that keeps the solver's state at some iterations.

    It never stops the run; for rate studies of a solver's iterates.

    Parameters
    ----------
    keep : iterable of int, optional
        The iterations whose state is kept.

    Attributes
    ----------
    states : dict
        Iteration -> the state the solver reported there.
    resume_state, start_iteration
        None and 0: a fresh run.

    Examples
    --------
    >>> from kopt.testing import KeepStates
    >>> run = KeepStates(keep={2})
    >>> run.report(1, state=lambda: "one"), run.report(2, state=lambda: "two"), run.states
    (True, True, {2: 'two'})
    """

    def __init__(self, keep: Iterable[int] = ()) -> None:
        self.keep, self.states = set(keep), {}
        self.resume_state, self.start_iteration = None, 0

    def report(self, t: int, state: Callable[[], object] | None = None, **kw: object) -> bool:
        """Keep the state of iteration ``t`` where it is one of ``keep``; never ask the run to stop.

        Parameters
        ----------
        t : int
            The iteration.
        state : callable, optional
            Returns the solver's state (``save()``'s dict for the iterative skeleton).
        **kw
            The iteration's figures (ignored).

        Returns
        -------
        bool
            True: the run goes on.

        Examples
        --------
        >>> from kopt.testing import KeepStates
        >>> run = KeepStates(keep={2})
        >>> run.report(2, state=lambda: {"w": 1.0}), run.states
        (True, {2: {'w': 1.0}})
        """
        if t in self.keep:
            self.states[t] = state()
        return True


def solver_for(spec: Spec) -> Solver:
    """The registered solver of a loaded spec, built from its ``solver`` section.

    Parameters
    ----------
    spec : Spec
        A loaded spec (:func:`kopt.load_spec`).

    Returns
    -------
    Solver
        The solver instance.

    Examples
    --------
    >>> import kopt
    >>> from kopt.testing import solver_for
    >>> solver_for(kopt.load_spec("quickstart")).name
    'joker'
    """
    return spec.component(("solver",))


@contextlib.contextmanager
def interrupt_at(iteration: int) -> Iterator[None]:
    """Within the block, every solve stops at ``iteration``, raising ``KeyboardInterrupt`` from ``kopt.solve``.

    Parameters
    ----------
    iteration : int
        The iteration to stop at.

    Yields
    ------
    None
        The block runs with the stop request registered.

    Examples
    --------
    >>> import numpy as np
    >>> import kopt
    >>> from kopt.testing import interrupt_at
    >>> X = np.random.default_rng(0).normal(size=(100, 2))
    >>> spec = {"model": {"loss": {"name": "square"}, "kernel": {"name": "gaussian", "bandwidth": 1.0},
    ...                   "regularizer": {"name": "l2", "lambda": 1e-3}, "features": {"count": 64, "block_size": 32}},
    ...         "solver": {"name": "dsg", "iterations": 6, "batch_size": 16}}
    >>> with interrupt_at(2):
    ...     try:
    ...         kopt.solve(spec, data=(X, X[:, 0]))
    ...     except KeyboardInterrupt:
    ...         print("stopped")
    stopped
    """
    from ..contract.registry import registry

    reg = registry()
    name = reg.pm.register(StopAt(iteration))
    try:
        yield
    finally:
        reg.pm.unregister(name=name)


def check_resume(spec: dict, data: tuple | None = None, *, stop_at: int,
                 out_dir: str | os.PathLike) -> tuple[Result, Result]:
    """Solve ``spec`` uninterrupted, then interrupted at ``stop_at`` and resumed, and compare the models bit for bit.

    ``output.checkpoint_every`` is set to ``stop_at + 1`` where the spec does not checkpoint.

    Parameters
    ----------
    spec : dict
        The spec.
    data : tuple, optional
        ``(X, y[, X_test, y_test])`` instead of the spec's data.
    stop_at : int
        The iteration the second run is interrupted at.
    out_dir : str or path
        The runs write to ``out_dir/full`` and ``out_dir/cut``.

    Returns
    -------
    full, resumed : Result
        The two runs' results.

    Raises
    ------
    AssertionError
        A model array or the iteration count differs, or the solver ignored the stop request.

    Examples
    --------
    >>> import kopt.testing as kt
    >>> spec = {"model": {"loss": {"name": "square"}, "kernel": {"name": "gaussian", "bandwidth": 1.0},
    ...                   "regularizer": {"name": "l2", "lambda": 1e-3}, "features": {"count": 64, "block_size": 32}},
    ...         "solver": {"name": "dsg", "iterations": 6, "batch_size": 16}}
    >>> data = kt.solver_check_data("real", n=100, n_test=20)
    >>> full, resumed = kt.check_resume(spec, data, stop_at=3, out_dir="resume")
    >>> full.n_iter == resumed.n_iter
    True
    """
    full, resumed = resume_runs(spec, data, stop_at=stop_at, out_dir=out_dir)
    a, b = full.model.predictor.arrays, resumed.model.predictor.arrays
    assert a.keys() == b.keys(), f"model arrays differ in names: {sorted(a)} vs {sorted(b)}"
    for key in a:
        if not np.array_equal(np.asarray(a[key]), np.asarray(b[key])):
            raise AssertionError(f"resumed run differs from the uninterrupted run in model array {key!r}")
    assert full.n_iter == resumed.n_iter, f"n_iter {full.n_iter} uninterrupted vs {resumed.n_iter} resumed"
    return full, resumed


def resume_runs(spec: dict, data=None, *, stop_at: int, out_dir):
    """The runs of :func:`check_resume`, uncompared: ``(full, resumed)``.

    Raises AssertionError only when the solver ignores the stop request.
    """
    import kopt

    out_dir = Path(out_dir)

    def with_dir(sub):
        s = copy.deepcopy(spec)
        s.setdefault("output", {})
        s["output"]["dir"] = str(out_dir / sub)
        if not s["output"].get("checkpoint_every"):  # missing or 0 (off): a resume needs a checkpoint
            s["output"]["checkpoint_every"] = max(1, stop_at + 1)
        return s

    full = kopt.solve(with_dir("full"), data=data)
    cut = with_dir("cut")
    with interrupt_at(stop_at):
        try:
            kopt.solve(cut, data=data)
        except KeyboardInterrupt:
            pass
        else:
            raise AssertionError(f"the solver ignored the stop request at iteration {stop_at} (did it check run.report?)")
    return full, kopt.solve(cut, data=data, resume=True)
