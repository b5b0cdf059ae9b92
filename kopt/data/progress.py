"""A byte-counting progress line on stderr.

On a terminal it is one line redrawn in place; within ``drawing(True)`` (the
command line) and without a terminal -- batch jobs, nohup, CI logs -- it is a
plain line every 10 s instead, so a long download or parse still shows signs
of life in a log file.
"""
from __future__ import annotations

import contextlib
import sys
import time

#: None: a tty decides; False: never draw (``kopt solve --quiet``, the Python API by default);
#: True: draw, as plain log lines when the stream is not a tty (``kopt solve``)
_FORCED = None

#: seconds between the plain lines written when the stream is not a terminal
LOG_INTERVAL = 10.0


@contextlib.contextmanager
def drawing(enabled: bool):
    """Within the block, progress is drawn only if ``enabled``: on a tty as a redrawn line,
    elsewhere as a plain line every ``LOG_INTERVAL`` seconds."""
    global _FORCED
    previous, _FORCED = _FORCED, bool(enabled)
    try:
        yield
    finally:
        _FORCED = previous


def human_bytes(nbytes: float) -> str:
    for unit in ("B", "kB", "MB", "GB", "TB"):
        if abs(nbytes) < 1000 or unit == "TB":
            return f"{nbytes:.0f} {unit}" if unit == "B" else f"{nbytes:.1f} {unit}"
        nbytes /= 1000.0
    return f"{nbytes:.1f} TB"  # pragma: no cover


class ByteProgress:
    """``label [#####.....] 45% 1.2 GB/2.6 GB 35.1 MB/s 3,000,000 rows``.

    Parameters
    ----------
    total : int or None
        Expected byte count (``None``: no percentage, only bytes and rate).
    label : str
        Prefix of the line (a file name).
    stream : file, optional
        Where to draw (default ``sys.stderr``).
    enabled : bool, optional
        Force drawing on or off; by default only when ``stream`` is a tty, so
        logs and pipes never fill with carriage returns.
    min_interval : float
        Seconds between redraws; the first draw waits as long, so quick
        reads of small files print nothing.
    """

    def __init__(self, total, label, *, stream=None, enabled=None, min_interval=0.5):
        self.total = total if total and total > 0 else None
        self.label = label
        self.stream = stream or sys.stderr
        tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.log = False
        if enabled is None:
            enabled = tty if _FORCED is None else _FORCED
            self.log = bool(enabled) and not tty
        self.enabled = enabled
        self.min_interval = max(min_interval, LOG_INTERVAL) if self.log else min_interval
        self.start = time.perf_counter()
        self.last = self.start
        self.done = 0
        self.rows = None
        self.drawn = False

    def update(self, done, rows=None, *, force=False):
        """Record ``done`` bytes (and ``rows`` parsed so far); redraw if due."""
        self.done = done
        if rows is not None:
            self.rows = rows
        if not self.enabled:
            return
        now = time.perf_counter()
        if not force and now - self.last < self.min_interval:
            return
        self.last = now
        if self.log:
            self.stream.write("kopt: " + self.line(now) + "\n")
        else:
            self.stream.write("\r" + self.line(now) + "\033[K")
        self.stream.flush()
        self.drawn = True

    def line(self, now=None) -> str:
        """The text of the progress line."""
        elapsed = max((now or time.perf_counter()) - self.start, 1e-9)
        parts = [self.label]
        if self.total:
            frac = min(1.0, self.done / self.total)
            filled = int(frac * 20)
            parts.append("[" + "#" * filled + "." * (20 - filled) + f"] {frac:4.0%}")
            parts.append(f"{human_bytes(self.done)}/{human_bytes(self.total)}")
        else:
            parts.append(human_bytes(self.done))
        parts.append(f"{human_bytes(self.done / elapsed)}/s")
        if self.rows is not None:
            parts.append(f"{self.rows:,} rows")
        return "  ".join(parts)

    def close(self):
        """Draw the final state and end the line (only if anything was drawn)."""
        if self.enabled and self.drawn:
            self.update(self.done, force=True)
            if not self.log:
                self.stream.write("\n")
            self.stream.flush()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False
