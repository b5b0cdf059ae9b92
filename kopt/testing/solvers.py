"""Checks for solver plugins: an interrupted and resumed run ends where an uninterrupted one ends.

The whole solver contract, resume included, is :func:`kopt.testing.check_solver`.
"""
from __future__ import annotations

import contextlib
import copy
from pathlib import Path

import numpy as np

from ..contract.hookspecs import hookimpl


class StopAt:
    """A run-time hook that requests a stop at ``iteration``, exactly as the first Ctrl-C does."""

    def __init__(self, iteration: int):
        self.iteration = int(iteration)

    @hookimpl
    def kopt_iteration(self, run, record):
        if record.iteration == self.iteration:
            run.stop_requested = True


class KeepStates:
    """A stand-in for the run context of ``Solver.run(problem, ctx)``: it keeps the solver's state at the
    iterations in ``keep`` (``states[t]``) and never stops the run; for rate studies of a solver's iterates."""

    def __init__(self, keep=()):
        self.keep, self.states = set(keep), {}
        self.resume_state, self.start_iteration = None, 0

    def report(self, t, state=None, **kw):
        if t in self.keep:
            self.states[t] = state()
        return True


def solver_for(spec):
    """The registered solver of a loaded spec, built from its ``solver`` section."""
    return spec.component(("solver",))


@contextlib.contextmanager
def interrupt_at(iteration: int):
    """Within the block, every solve stops at ``iteration`` (raising KeyboardInterrupt from ``kopt.solve``)."""
    from ..contract.registry import registry

    reg = registry()
    name = reg.pm.register(StopAt(iteration))
    try:
        yield
    finally:
        reg.pm.unregister(name=name)


def check_resume(spec: dict, data=None, *, stop_at: int, out_dir):
    """Solve ``spec`` uninterrupted, then interrupted at ``stop_at`` and resumed; compare bit for bit.

    ``spec`` must checkpoint (``output.checkpoint_every`` is set to ``stop_at + 1`` when missing or 0).
    The runs write to ``out_dir``/full and ``out_dir``/cut (``out_dir``: a str or a Path).
    Returns ``(full, resumed)`` results; raises AssertionError if any model array differs.
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
