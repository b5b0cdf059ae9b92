"""kopt's own run-time hook implementations: progress bar, trace, checkpoints."""
from __future__ import annotations

import sys
import time

from . import checkpoint
from .hookspecs import hookimpl


class TraceRecorder:
    """Keeps every iteration record (as dicts) for the report; thins very long runs."""

    def __init__(self, trace=None, max_points=20000):
        self.trace = list(trace or [])
        self.max_points = max_points
        self.stride = 1

    @hookimpl
    def kopt_iteration(self, run, record):
        if record.iteration % self.stride and record.gap is None and not record.metrics:
            return
        self.trace.append(record.as_dict())
        if len(self.trace) > self.max_points:
            self.trace = self.trace[::2]
            self.stride *= 2


class Checkpointer:
    """Writes the solver's state every ``checkpoint_every`` iterations and on interrupt."""

    def __init__(self, out_dir, spec_data, solver, tracer):
        self.out_dir = out_dir
        self.spec_data = spec_data
        self.solver = solver
        self.tracer = tracer

    @hookimpl(trylast=True)  # after every other listener, which may request a stop
    def kopt_iteration(self, run, record):
        if record.state is None:
            return
        if run.checkpoint_due(record.iteration) or (run.stop_requested and run.checkpoint_every):
            checkpoint.write(self.out_dir, iteration=record.iteration, state=record.state(), spec_data=self.spec_data,
                             solver=self.solver, trace=self.tracer.trace, elapsed=record.elapsed)


class ProgressBar:
    """One refreshing stderr line: iteration, objective, gap, rows/s."""

    def __init__(self, stream=None, min_interval=0.2):
        self.stream = stream or sys.stderr
        self.min_interval = min_interval
        self.last_draw = float("-inf")
        self.rows = 0
        self.shown = False

    @hookimpl
    def kopt_iteration(self, run, record):
        self.rows += record.rows
        now = time.perf_counter()
        if now - self.last_draw < self.min_interval:
            return
        self.last_draw = now
        total = run.total_iterations
        it = f"{record.iteration}/{total}" if total else str(record.iteration)
        bar = ""
        if total:
            frac = min(1.0, record.iteration / total)
            bar = "[" + "#" * int(frac * 20) + "." * (20 - int(frac * 20)) + "] "
        parts = [f"\r{bar}it {it}"]
        if record.objective is not None:
            parts.append(f"obj {record.objective:.6g}")
        if record.gap is not None:
            parts.append(f"gap {record.gap:.3g}")
        rate = self.rows / max(record.elapsed, 1e-9)
        if self.rows:
            parts.append(f"{rate:,.0f} rows/s")
        parts.append(f"{record.elapsed:.1f}s")
        self.stream.write("  ".join(parts) + "\033[K")
        self.stream.flush()
        self.shown = True

    @hookimpl
    def kopt_run_end(self, run, result):
        if self.shown:
            self.stream.write("\n")
            self.stream.flush()
