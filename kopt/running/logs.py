"""Progress from Python: log records through the ``logging`` logger ``kopt``, a tqdm bar in notebooks.

* :class:`LogProgress` is what ``kopt.solve`` registers by default (``progress=False``): an INFO record when
  the run starts, one every 10 s (iteration, objective, gap, rows/s, the time left as far as it is known -- the
  line ``kopt solve`` prints in a log) and one at the end, saying what stopped the run; a DEBUG record at every duality-gap check.  They reach whatever the
  application configured (``logging.basicConfig(level=logging.INFO)``, a notebook's or a batch job's
  handlers); with nothing configured they are dropped, like any library's.
* :class:`NotebookBar` is ``progress=True`` inside a Jupyter kernel: a live ``tqdm.auto`` bar.  Elsewhere
  ``progress=True`` is the stderr progress line of :class:`kopt.running.listeners.ProgressBar`.
* :func:`verbose_progress` maps scikit-learn's ``verbose`` onto these: 0 nothing on screen, 1 the progress
  bar (or line), 2 and more the log records down to DEBUG on stderr.
"""
from __future__ import annotations

import contextlib
import logging
import sys

from ..contract.hookspecs import hookimpl
from .listeners import ProgressBar, RunRate, run_may_stop_early

LOGGER = logging.getLogger("kopt")
LOGGER.addHandler(logging.NullHandler())  # a library's logger: the application decides where records go

#: seconds between INFO progress records
LOG_EVERY = 10.0


class LogProgress(ProgressBar):
    """Progress records through ``logger`` (default: the ``kopt`` logger), at :class:`ProgressBar`'s log cadence."""

    def __init__(self, logger=None, *, log_every=None):
        super().__init__(stream=sys.stderr, mode="log", log_every=LOG_EVERY if log_every is None else log_every)
        self.logger = logger or LOGGER

    @hookimpl
    def kopt_run_start(self, run):
        total = run.total_iterations
        self.logger.info("%s: solver %s on %s rows%s", run.spec.get("name") or "kopt.solve",
                         run.spec["solver"]["name"], f"{run.problem.n:,}",
                         f", at most {total:,} iterations" if total else "")

    @hookimpl
    def kopt_iteration(self, run, record):
        if record.gap is not None and self.logger.isEnabledFor(logging.DEBUG):
            self.logger.debug("check: %s", self.line(run, record))
        super().kopt_iteration(run, record)  # INFO every log_every seconds, through _draw

    @hookimpl
    def kopt_run_end(self, run, result):
        super().kopt_run_end(run, result)

    def _draw(self, run, record, final=False):
        end = f"  (end: {final})" if isinstance(final, str) else "  (end)" if final else ""
        self.logger.info("%s%s", self.line(run, record, final), end)
        self.shown = True


class NotebookBar:
    """A ``tqdm.auto`` bar over the iterations, with the objective and gap as its postfix."""

    def __init__(self):
        self.bar = None
        self.rate = None

    @hookimpl
    def kopt_run_start(self, run):
        from tqdm.auto import tqdm

        self.rate = RunRate()
        # a run that stops on its gap does not end at its cap: no time "remaining" to the cap on its bar
        fmt = "{l_bar}{bar}| {n_fmt}/{total_fmt} [{elapsed}, {rate_fmt}{postfix}]" if run_may_stop_early(run) else None
        self.bar = tqdm(total=run.total_iterations, initial=run.start_iteration or 0, unit="it",
                        desc=run.spec.get("name") or "kopt", bar_format=fmt)

    @hookimpl
    def kopt_iteration(self, run, record):
        if self.bar is None:
            return
        post = {}
        if record.objective is not None:
            post["obj"] = f"{record.objective:.6g}"
        if record.gap is not None:
            post["gap"] = f"{record.gap:.3g}"
        self.rate.update(record)
        stats = self.rate.stats(run, record)
        if stats.get("halving_s") is not None:
            post["halving"] = f"{stats['halving_s']:.3g}s"
        if stats.get("estimate_s") is not None:
            post["about"] = f"{stats['estimate_s']:.0f}s left"
        if post:
            self.bar.set_postfix(post, refresh=False)
        self.bar.update(max(0, record.iteration - self.bar.n))

    @hookimpl
    def kopt_run_end(self, run, result):
        if self.bar is not None:
            self.bar.close()
            self.bar = None


def in_notebook() -> bool:
    """Whether this process is a Jupyter kernel (IPython's ``ZMQInteractiveShell``)."""
    ipython = sys.modules.get("IPython")
    shell = getattr(ipython, "get_ipython", lambda: None)() if ipython else None
    return type(shell).__name__ == "ZMQInteractiveShell"


def display_listener():
    """``progress=True``: a tqdm bar in a notebook (when tqdm is installed), else the stderr progress line."""
    if in_notebook():
        try:
            import tqdm.auto  # noqa: F401
        except ImportError:
            return ProgressBar()
        return NotebookBar()
    return ProgressBar()


@contextlib.contextmanager
def verbose_progress(verbose):
    """Yield ``kopt.solve``'s ``progress`` for scikit-learn's ``verbose``: 0/False nothing on screen (the
    records still reach the application's handlers); 1/True the progress bar; >= 2 every record down to
    DEBUG (a line every 10 s and at every gap check) on stderr -- through a handler added for the block
    only when neither the ``kopt`` logger nor the root logger has one."""
    level = int(verbose or 0)
    if level < 2:
        yield level >= 1
        return
    configured = any(not isinstance(h, logging.NullHandler) for h in LOGGER.handlers) or logging.getLogger().handlers
    handler = None
    if not configured:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("kopt: %(message)s"))
        LOGGER.addHandler(handler)
    previous = LOGGER.level
    LOGGER.setLevel(logging.DEBUG)
    try:
        yield False
    finally:
        LOGGER.setLevel(previous)
        if handler is not None:
            LOGGER.removeHandler(handler)


def progress_listeners(progress) -> list:
    """The listeners ``kopt.solve(progress=...)`` registers: for False/None, log records through the
    ``kopt`` logger (:class:`LogProgress`); for True, a tqdm bar in a notebook, else a
    :class:`kopt.running.listeners.ProgressBar` on stderr; or the given listener objects (a list: the CLI's)."""
    if not progress:
        return [LogProgress()]
    if progress is True:
        return [display_listener()]
    if not isinstance(progress, (list, tuple)):
        raise TypeError(f"progress={progress!r}: expected True, False or a list of listener objects")
    return list(progress)
