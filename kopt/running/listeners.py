"""kopt's own run-time hook implementations: progress bar, trace, checkpoints."""
from __future__ import annotations

import sys
import time

from ..contract.hookspecs import hookimpl
from ..files.atomic import writing
from . import checkpoint


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
            with writing(self.out_dir, f"the checkpoint of iteration {record.iteration}"):
                checkpoint.write(self.out_dir, iteration=record.iteration, state=record.state(),
                                 spec_data=self.spec_data, solver=self.solver, trace=self.tracer.trace,
                                 elapsed=record.elapsed, backend=run.problem.backend.name)


def _duration(seconds) -> str:
    """``42s``, ``3m05s``, ``2h07m``."""
    seconds = max(0, int(round(seconds)))
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"


class _Rate:
    """Iterations and rows per second in this process (a resumed run's earlier time excluded)."""

    def __init__(self):
        self.rows = 0

    def update(self, record):
        self.rows += record.rows

    def stats(self, run, record) -> dict:
        it0 = getattr(run, "start_iteration", 0) or 0
        dt = max(record.elapsed - (getattr(run, "elapsed_before", 0.0) or 0.0), 1e-9)
        out = {"rows_per_s": self.rows / dt if self.rows else None, "eta_s": None}
        total = run.total_iterations
        done = record.iteration - it0
        if total and done > 0 and record.iteration <= total:
            out["eta_s"] = (total - record.iteration) * dt / done
        return out


class ProgressBar:
    """Progress on stderr: iteration, objective, gap, rows/s, elapsed time and ETA.

    On a terminal (``mode="tty"``) one line redrawn in place at most every
    ``min_interval`` seconds; otherwise (``mode="log"``: batch jobs, nohup, CI
    logs) a plain line every ``log_every`` seconds, or every ``log_every_iter``
    iterations when that is set, and a last one when the run ends.  ``mode``
    defaults to ``"tty"`` when the stream is a terminal, else ``"log"``.
    """

    def __init__(self, stream=None, min_interval=0.2, *, mode=None, log_every=10.0, log_every_iter=None):
        self.stream = stream or sys.stderr
        if mode is None:
            mode = "tty" if getattr(self.stream, "isatty", lambda: False)() else "log"
        self.mode = mode
        self.min_interval = min_interval if mode == "tty" else log_every
        self.log_every_iter = log_every_iter if mode == "log" else None
        self.last_draw = None
        self.rate = _Rate()
        self.shown = False
        self.last = None

    @property
    def rows(self):
        return self.rate.rows

    def _due(self, record, now):
        if self.log_every_iter:
            return record.iteration % self.log_every_iter == 0
        if self.last_draw is None:
            self.last_draw = now if self.mode == "log" else float("-inf")  # a log's first line after one interval
        return now - self.last_draw >= self.min_interval

    @hookimpl
    def kopt_iteration(self, run, record):
        self.rate.update(record)
        self.last = record
        now = time.perf_counter()
        if not self._due(record, now):
            return
        self.last_draw = now
        self._draw(run, record)

    def line(self, run, record, final=False) -> str:
        total = run.total_iterations
        it = f"{record.iteration}/{total}" if total else str(record.iteration)
        parts = [f"it {it}"]
        if record.objective is not None:
            parts.append(f"obj {record.objective:.6g}")
        if record.gap is not None:
            parts.append(f"gap {record.gap:.3g}")
        st = self.rate.stats(run, record)
        if st["rows_per_s"]:
            parts.append(f"{st['rows_per_s']:,.0f} rows/s")
        parts.append(_duration(record.elapsed))
        if not final and st["eta_s"] is not None and record.iteration < (total or 0):
            parts.append(f"ETA {_duration(st['eta_s'])}")
        return "  ".join(parts)

    def _draw(self, run, record, final=False):
        if self.mode == "tty":
            bar = ""
            total = run.total_iterations
            if total:
                frac = min(1.0, record.iteration / total)
                bar = "[" + "#" * int(frac * 20) + "." * (20 - int(frac * 20)) + "] "
            self.stream.write("\r" + bar + self.line(run, record, final) + "\033[K")
        else:
            self.stream.write("kopt: " + self.line(run, record, final) + ("  (end)" if final else "") + "\n")
        self.stream.flush()
        self.shown = True

    @hookimpl
    def kopt_run_end(self, run, result):
        if self.mode == "tty":
            if self.shown:
                self.stream.write("\n")
                self.stream.flush()
        elif self.last is not None and self.last_draw is not None:
            self._draw(run, self.last, final=True)  # the final state, so a log always ends with the last iteration


class JsonLog:
    """Progress as JSON lines (``kopt solve --log-json FILE``): a ``start`` event, a ``progress`` event at
    the same cadence as :class:`ProgressBar`'s log lines, and an ``end`` event with the results."""

    def __init__(self, stream, *, log_every=10.0, log_every_iter=None, spec_name=None):
        self.stream = stream
        self.log_every = log_every
        self.log_every_iter = log_every_iter
        self.spec_name = spec_name
        self.rate = _Rate()
        self.last_emit = None
        self.last = None

    def _emit(self, obj):
        from ..files.atomic import dumps

        self.stream.write(dumps(obj) + "\n")
        self.stream.flush()

    @hookimpl
    def kopt_run_start(self, run):
        self.last_emit = time.perf_counter()
        self._emit({"event": "start", "time": time.time(), "name": self.spec_name,
                    "start_iteration": run.start_iteration, "total_iterations": run.total_iterations})

    def _record(self, run, record):
        out = {"event": "progress", "time": time.time(), "iteration": record.iteration,
               "total_iterations": run.total_iterations, "elapsed_s": round(record.elapsed, 3)}
        for k in ("objective", "dual", "gap"):
            v = getattr(record, k)
            if v is not None:
                out[k] = float(v)
        out.update({k: v for k, v in self.rate.stats(run, record).items() if v is not None})
        out.update({f"test_{k}": v for k, v in record.metrics.items()})
        return out

    @hookimpl
    def kopt_iteration(self, run, record):
        self.rate.update(record)
        self.last = record
        now = time.perf_counter()
        due = (record.iteration % self.log_every_iter == 0) if self.log_every_iter else (
            self.last_emit is None or now - self.last_emit >= self.log_every)
        if due:
            self.last_emit = now
            self._emit(self._record(run, record))

    @hookimpl
    def kopt_run_end(self, run, result):
        out = {"event": "end" if result is not None else "interrupted", "time": time.time()}
        if self.last is not None:
            out.update({k: v for k, v in self._record(run, self.last).items() if k not in ("event", "time", "eta_s")})
        if result is not None:
            out.update(iterations=result.n_iter, success=result.success, message=result.message,
                       objective=result.objective, gap=result.gap, metrics=result.metrics,
                       fit_s=result.timings.get("fit_s"))
        self._emit(out)
