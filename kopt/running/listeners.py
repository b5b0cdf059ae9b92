"""kopt's own run-time hook implementations: progress bar, trace, checkpoints."""
from __future__ import annotations

import math
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


def run_may_stop_early(run) -> bool:
    """Whether the run stops when its gap (or criterion) meets a tolerance: its iteration cap is then not its end."""
    return getattr(run, "stopping", None) in ("gap", "criterion") and (getattr(run, "tol", None) or 0) > 0


def _short_duration(seconds) -> str:
    """:func:`_duration`, with tenths of a second below ten seconds (``0.4s``, ``2.5s``)."""
    return f"{seconds:.2g}s" if seconds < 10 else _duration(seconds)


def _duration(seconds) -> str:
    """``42s``, ``3m05s``, ``2h07m``."""
    seconds = max(0, int(round(seconds)))
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"


#: checks of the gap (or criterion) its rate of decrease is measured over: the latest ones, and at least this many
RATE_CHECKS = 6
MIN_RATE_CHECKS = 3


class RunRate:
    """What a progress line can honestly say about time: rows per second in this process (a resumed run's earlier
    time excluded), the time to the iteration cap at the measured speed, and -- for a solver that stops on its gap
    or criterion -- the measured rate of decrease of that value and the time to its tolerance at that rate."""

    def __init__(self):
        self.rows = 0
        self.checks = []  # (elapsed, relative gap or criterion) of the latest checks

    def update(self, record):
        self.rows += record.rows
        value = record.extra.get("rel_gap", record.extra.get("criterion"))
        if value is not None and math.isfinite(value) and value > 0:
            self.checks = (self.checks + [(float(record.elapsed), float(value))])[-RATE_CHECKS:]

    def stats(self, run, record) -> dict:
        """``rows_per_s``; ``left_s`` (the run ends at the cap: the time to it) or, for a solver that may stop
        before the cap, ``cap_left_s`` (the most time left: the cap's) and, once the value falls steadily,
        ``halving_s`` (the time its value takes to halve, measured) and ``estimate_s`` (the time to the tolerance at
        that rate, an estimate); ``value`` and ``tol``."""
        it0 = getattr(run, "start_iteration", 0) or 0
        dt = max(record.elapsed - (getattr(run, "elapsed_before", 0.0) or 0.0), 1e-9)
        out = {"rows_per_s": self.rows / dt if self.rows else None}
        total = run.total_iterations
        done = record.iteration - it0
        to_cap = (total - record.iteration) * dt / done if total and done > 0 and record.iteration <= total else None
        tol = getattr(run, "tol", None) or 0.0
        stopping = getattr(run, "stopping", None)
        if stopping == "none" or (stopping in ("gap", "criterion") and tol <= 0):
            out["left_s"] = to_cap  # it runs to the cap: the time to it is the time left
            return out
        out["cap_left_s"] = to_cap
        if stopping not in ("gap", "criterion") or not self.checks:
            return out
        out["value"], out["tol"] = self.checks[-1][1], tol
        out["what"] = "rel gap" if stopping == "gap" else "criterion"
        slope = _log_slope(self.checks)
        if slope is not None and slope < 0:
            out["halving_s"] = math.log(2.0) / -slope
            left = max(0.0, (math.log(self.checks[-1][1]) - math.log(tol)) / -slope)
            out["estimate_s"] = left if to_cap is None else min(left, to_cap)
        elif slope is not None:
            out["falling"] = False
        return out


def _log_slope(checks):
    """The least-squares slope of log(value) against elapsed seconds over ``checks``, or None (too few checks, or
    all at one time)."""
    if len(checks) < MIN_RATE_CHECKS:
        return None
    t = [c[0] for c in checks]
    v = [math.log(c[1]) for c in checks]
    tm, vm = sum(t) / len(t), sum(v) / len(v)
    var = sum((x - tm) ** 2 for x in t)
    if var <= 0:
        return None
    return sum((x - tm) * (y - vm) for x, y in zip(t, v)) / var


def time_words(stats, final=False) -> list:
    """The progress line's words about the stopping value and the time left (:meth:`RunRate.stats`), each labelled:
    ``rel gap 0.021 -> tol 0.01, halving every 12s``, ``about 13s left at that rate``, ``at most 9m00s (the cap)``;
    ``1m05s left`` where the run ends at its cap."""
    words = []
    if "value" in stats:
        trend = (f", halving every {_short_duration(stats['halving_s'])}" if "halving_s" in stats
                 else ", not falling" if stats.get("falling") is False else "")
        words.append(f"{stats.get('what', 'rel gap')} {stats['value']:.3g} -> tol {stats['tol']:g}{trend}")
    if final:
        return words
    if stats.get("left_s") is not None:
        words.append(f"{_duration(stats['left_s'])} left")
    if stats.get("estimate_s") is not None:
        words.append(f"about {_duration(stats['estimate_s'])} left at that rate")
    if stats.get("cap_left_s") is not None:
        words.append(f"at most {_duration(stats['cap_left_s'])} (the cap)")
    return words


def end_words(result) -> str:
    """What stopped the run, for the final progress line: the result's status and message (None: interrupted)."""
    if result is None:
        return "interrupted"
    status, message = getattr(result, "status", None), getattr(result, "message", "") or ""
    if status == "converged":
        return f"converged: {message}" if message else "converged"
    if status == "iteration_cap":
        return message if "cap" in message else f"the iteration cap ({result.n_iter} iterations)"
    if status in ("diverged", "interrupted"):
        return message or status
    return message or str(status or "done")


class ProgressBar:
    """Progress on stderr: iteration, objective, gap, rows/s, elapsed time and the time left, labelled.

    The time left is said only as it is known: the time to the iteration cap where the run goes to it; for a
    solver that stops on its gap (or criterion) and a tolerance, the gap's measured rate ("halving every 12s"),
    an estimate of the time to the tolerance at that rate, and "at most" the cap's time.  The last line says what
    stopped the run.

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
        self.rate = RunRate()
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
        if record.iteration >= (total or 0) and total:
            st.pop("left_s", None), st.pop("cap_left_s", None)
        if st["rows_per_s"]:
            parts.append(f"{st['rows_per_s']:,.0f} rows/s")
        parts.append(_duration(record.elapsed))
        parts.extend(time_words(st, final))
        return "  ".join(parts)

    def _draw(self, run, record, final=False):
        end = f"  (end: {final})" if isinstance(final, str) else "  (end)" if final else ""
        if self.mode == "tty":
            bar = ""
            total = run.total_iterations
            if total and not run_may_stop_early(run):  # a bar to the cap only where the run goes to it
                frac = min(1.0, record.iteration / total)
                bar = "[" + "#" * int(frac * 20) + "." * (20 - int(frac * 20)) + "] "
            self.stream.write("\r" + bar + self.line(run, record, final) + end + "\033[K")
        else:
            self.stream.write("kopt: " + self.line(run, record, final) + end + "\n")
        self.stream.flush()
        self.shown = True

    @hookimpl
    def kopt_run_end(self, run, result):
        """The last line: the final iteration's state and what stopped the run (:func:`end_words`)."""
        if self.mode == "tty":
            if self.shown:
                if self.last is not None:
                    self._draw(run, self.last, final=end_words(result))
                self.stream.write("\n")
                self.stream.flush()
        elif self.last is not None and self.last_draw is not None:
            self._draw(run, self.last, final=end_words(result))  # a log always ends with the last iteration


class JsonLog:
    """Progress as JSON lines (``kopt solve --log-json FILE``): a ``start`` event, a ``progress`` event at
    the same cadence as :class:`ProgressBar`'s log lines, and an ``end`` event with the results."""

    def __init__(self, stream, *, log_every=10.0, log_every_iter=None, spec_name=None):
        self.stream = stream
        self.log_every = log_every
        self.log_every_iter = log_every_iter
        self.spec_name = spec_name
        self.rate = RunRate()
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
        out.update({k: v for k, v in self.rate.stats(run, record).items() if v is not None and k != "falling"})
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
            out.update({k: v for k, v in self._record(run, self.last).items()
                        if k not in ("event", "time", "left_s", "cap_left_s", "estimate_s")})
        out["stopped_by"] = end_words(result)
        if result is not None:
            out.update(iterations=result.n_iter, success=result.success, message=result.message,
                       objective=result.objective, gap=result.gap, metrics=result.metrics,
                       fit_s=result.timings.get("fit_s"))
        self._emit(out)
