"""The run machinery solvers talk to: iteration reports, checkpoints, Ctrl-C.

The solver skeleton (:mod:`kopt.contract.iterative`) calls ``run.report(t, objective=..., ...)``
once per iteration.  The
report goes to every ``kopt_iteration`` hook implementation: kopt's own
progress bar, trace recorder and checkpointer (:mod:`kopt.running.listeners`) are
such implementations, registered for the duration of the run.  ``report``
returns False when the run must stop (Ctrl-C, SIGTERM): the solver then returns what it
has.  Solvers that draw per-iteration randomness from ``problem.rng(stream, t)``
resume bit-identically from ``run.resume_state``.
"""
from __future__ import annotations

import contextlib
import signal
import threading
import time
from dataclasses import dataclass, field


@dataclass
class IterationRecord:
    iteration: int
    elapsed: float
    objective: float | None = None
    dual: float | None = None
    gap: float | None = None
    rows: int = 0
    metrics: dict = field(default_factory=dict)
    extra: dict = field(default_factory=dict)
    state: object = None  # callable returning the solver state (for checkpoints), or None

    def as_dict(self):
        d = {"iteration": self.iteration, "elapsed": round(self.elapsed, 6)}
        for k in ("objective", "dual", "gap"):
            v = getattr(self, k)
            if v is not None:
                d[k] = float(v)
        if self.rows:
            d["rows"] = int(self.rows)
        d.update({f"test_{k}": v for k, v in self.metrics.items()})
        d.update(self.extra)
        return d


class RunContext:
    """Passed to ``Solver.run(problem, run)``.

    Attributes
    ----------
    resume_state : dict or None -- the state of the checkpoint being resumed.
    start_iteration : int -- the iteration to continue from (0 for a fresh run).
    total_iterations : int or None -- the iteration cap, for the progress bar.
    stopping : str or None -- the solver's stopping rule (``"gap"``, ``"criterion"``, ``"none"``; None: unknown):
    whether the run may end before the cap, which the progress line's time left must say.
    tol : float or None -- the tolerance the gap or criterion is held to.
    """

    def __init__(self, spec, problem, pm, *, out_dir=None, checkpoint_every=0, resume_state=None, start_iteration=0,
                 total_iterations=None, stopping=None, tol=None):
        self.spec = spec
        self.problem = problem
        self.pm = pm
        self.out_dir = out_dir
        self.checkpoint_every = int(checkpoint_every or 0)
        self.resume_state = resume_state
        self.start_iteration = int(start_iteration)
        self.total_iterations = total_iterations
        self.stopping = stopping
        self.tol = tol
        self.stop_requested = False
        self.stop_signal = None  # signal.SIGINT or SIGTERM when a signal asked for the stop
        self.interrupted = False
        self.started = time.perf_counter()
        self.elapsed_before = 0.0 if resume_state is None else float(resume_state.get("_elapsed", 0.0))

    @property
    def elapsed(self):
        return self.elapsed_before + time.perf_counter() - self.started

    def report(self, iteration, *, objective=None, dual=None, gap=None, rows=0, metrics=None, state=None, **extra) -> bool:
        """Report iteration ``iteration`` (1-based); returns False if the solver must stop now."""
        rec = IterationRecord(int(iteration), self.elapsed, objective, dual, gap, rows, dict(metrics or {}), extra, state)
        self.pm.hook.kopt_iteration(run=self, record=rec)
        if self.stop_requested:
            self.interrupted = True
        return not self.stop_requested

    def checkpoint_due(self, iteration):
        return self.checkpoint_every > 0 and iteration % self.checkpoint_every == 0


class interrupt_guard:
    """Turn the first Ctrl-C (SIGINT) or SIGTERM into ``run.stop_requested`` (and ``run.stop_signal``):
    the solver stops at its next report, the checkpointer writes that iteration, and :func:`kopt.solve`
    raises ``KeyboardInterrupt`` or :class:`~kopt.errors.Terminated`.  A second signal raises at once."""

    SIGNALS = (signal.SIGINT, signal.SIGTERM)

    def __init__(self, run):
        self.run = run
        self.previous = {}

    def __enter__(self):
        if threading.current_thread() is threading.main_thread():
            for sig in self.SIGNALS:
                self.previous[sig] = signal.getsignal(sig)
                signal.signal(sig, self._handle)
        return self

    def _handle(self, signum, frame):
        if self.run.stop_requested:
            self._restore()
            raise_for(signum)
        self.run.stop_requested = True
        self.run.stop_signal = signum

    def _restore(self):
        for sig, handler in self.previous.items():
            signal.signal(sig, handler if handler is not None else signal.SIG_DFL)
        self.previous = {}

    def __exit__(self, *exc):
        self._restore()
        return False


def raise_for(signum=None):
    """Raise what a stop by ``signum`` means: :class:`~kopt.errors.Terminated` for SIGTERM, else
    ``KeyboardInterrupt``."""
    from ..errors import Terminated

    if signum == signal.SIGTERM:
        raise Terminated()
    raise KeyboardInterrupt


@contextlib.contextmanager
def sigterm_raises():
    """For the whole of a CLI command: SIGTERM raises :class:`~kopt.errors.Terminated` wherever it lands
    (reading data, writing files), so the command ends with its message and exit status 143 instead of
    dying silently.  A solve in progress installs :class:`interrupt_guard` on top, which stops cleanly."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, lambda signum, frame: raise_for(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous if previous is not None else signal.SIG_DFL)
