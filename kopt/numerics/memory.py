"""Memory: what this process may still take, and what a solve will hold, compared before it is spent.

* :func:`available_bytes` -- the smallest of the memory available without swapping (``psutil``), what the
  process's cgroup still allows (its limit less its usage: cgroup v2 ``memory.max``, v1
  ``memory.limit_in_bytes``) and what the address-space limit (``ulimit -v``, ``RLIMIT_AS``) leaves beside what
  the process already maps.
* A solver's **memory plan** (:meth:`kopt.contract.components.Solver.memory_plan`): the arrays it will hold at its
  peak, as ``(what, bytes)`` items, in terms of the problem's :class:`Sizes` (rows n, columns d, the feature or
  center count M, the outputs and the dtype).  :func:`check_plan` compares it with the memory available before
  the solve allocates anything and refuses a plan that does not fit with one line: the bytes and what holds
  them, the bytes available, and the most of the solver's :attr:`~kopt.contract.components.Solver.memory_key` that fits
  (:func:`largest_fitting`, the rule ``solver: auto`` caps its centers by too).
* :func:`out_of_memory`: a ``MemoryError`` met anyway (the data, a plugin's arrays, predicting) raised again as
  :class:`~kopt.errors.OutOfMemoryError` (exit status 2), saying what was being done and how large the
  allocation was.
* :func:`check_allocation`: one byte count refused the same way (a file's header, a feature map).
"""
from __future__ import annotations

import contextlib
import dataclasses
import os
import sys

import numpy as np

from ..errors import KoptError, MemoryLimitError, OutOfMemoryError

__all__ = ["MemoryLimitError", "OutOfMemoryError", "Sizes", "available_bytes", "check_allocation", "check_plan",
           "largest_fitting", "limits", "matrices", "out_of_memory", "plan_lines", "total"]

#: the spec keys a plan may scale with (:attr:`kopt.contract.components.Solver.memory_key`), and the :class:`Sizes` field
#: each sets
KEYS = {"model.features.count": "count", "data.max_rows": "n"}

#: a cgroup v1 "no limit" is a page-rounded 2^63 - 1
_NO_CGROUP_LIMIT = 1 << 60


# -- what this process may still take ----------------------------------------------------------------------------

def cgroup_available(proc="/proc/self/cgroup", root="/sys/fs/cgroup"):
    """Bytes this process's cgroup (and every cgroup above it) still allows: its memory limit less its usage,
    page cache it may drop (``inactive_file``) not counted as used; None where no limit is set or none is readable.
    cgroup v2 (``memory.max``, ``memory.current``) and v1 (``memory.limit_in_bytes``, ``memory.usage_in_bytes``)."""
    try:
        with open(proc, encoding="utf-8") as fh:
            lines = fh.read().splitlines()
    except OSError:
        return None
    best = None
    for line in lines:
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        _, controllers, path = parts
        if controllers == "":  # v2: one unified hierarchy
            base, files = root, ("memory.max", "memory.current", "inactive_file")
        elif "memory" in controllers.split(","):
            base, files = os.path.join(root, "memory"), ("memory.limit_in_bytes", "memory.usage_in_bytes",
                                                          "total_inactive_file")
        else:
            continue
        for folder in _cgroup_folders(base, path):
            left = _cgroup_left(folder, *files)
            if left is not None:
                best = left if best is None else min(best, left)
    return best


def _cgroup_folders(base, path):
    """The cgroup's folder and those above it up to ``base`` (where a container shows its own cgroup as the root,
    the path names a folder that is not there: ``base`` is then the process's cgroup)."""
    folder = os.path.normpath(os.path.join(base, path.lstrip("/")))
    out = []
    while folder.startswith(os.path.normpath(base)):
        if os.path.isdir(folder):
            out.append(folder)
        if folder == os.path.normpath(base):
            break
        folder = os.path.dirname(folder)
    return out or [base]


def _cgroup_left(folder, limit_file, usage_file, inactive_key):
    """What one cgroup folder's limit leaves (None: no limit there)."""
    try:
        with open(os.path.join(folder, limit_file), encoding="utf-8") as fh:
            text = fh.read().strip()
        if text == "max" or not text.isdigit() or int(text) >= _NO_CGROUP_LIMIT:
            return None
        limit = int(text)
        with open(os.path.join(folder, usage_file), encoding="utf-8") as fh:
            usage = int(fh.read().strip())
    except (OSError, ValueError):
        return None
    inactive = 0
    try:
        with open(os.path.join(folder, "memory.stat"), encoding="utf-8") as fh:
            for line in fh:
                key, _, value = line.partition(" ")
                if key == inactive_key:
                    inactive = int(value)
                    break
    except (OSError, ValueError):
        pass
    return max(0, limit - max(0, usage - inactive))


def limits() -> dict:
    """Each limit on what this process may still allocate, in bytes: ``{"free memory": ..., "the cgroup's memory
    limit": ..., "the address-space limit (ulimit -v)": ...}`` (the last two only where they are set)."""
    import psutil

    out = {"free memory": int(psutil.virtual_memory().available)}
    left = cgroup_available()
    if left is not None:
        out["the cgroup's memory limit"] = int(left)
    try:
        import resource
    except ImportError:  # Windows: no rlimits
        return out
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    if soft != resource.RLIM_INFINITY:
        out["the address-space limit (ulimit -v)"] = max(0, int(soft) - int(psutil.Process().memory_info().vms))
    return out


def available_bytes() -> int:
    """Bytes this process may still allocate: the smallest of :func:`limits`."""
    return min(limits().values())


def _limited_by(have) -> str:
    """Which limit ``have`` is (words), or '' where none is (a caller's own figure)."""
    for words, value in sorted(limits().items(), key=lambda kv: kv[1]):
        if abs(value - have) <= max(0.05 * have, 1 << 20):
            return words
    return ""


def _available_words(have) -> str:
    by = _limited_by(have)
    return f"{format_bytes(have)} of memory {'is' if have < 2 else 'are'} available" + (f" ({by})" if by else "")


def peak_rss_mb() -> float:
    """This process's peak resident memory in MiB: ``ru_maxrss`` is KiB on Linux and bytes on macOS;
    Windows reports the peak working set through ``psutil``."""
    try:
        import resource
    except ImportError:
        import psutil

        info = psutil.Process().memory_info()
        return float(getattr(info, "peak_wset", info.rss)) / 2 ** 20
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / 2 ** 20 if sys.platform == "darwin" else peak / 1024.0


def format_bytes(nbytes) -> str:
    """``1536`` -> ``'1.5 KiB'``."""
    value = float(nbytes)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if value < 1024 or unit == "PiB":
            return f"{value:.3g} {unit}" if unit != "B" else f"{int(value)} B"
        value /= 1024
    return f"{value:.3g} PiB"


def check_allocation(nbytes, what: str, lower: str):
    """Raise :class:`MemoryLimitError` when ``nbytes`` (an int; may be huge) exceed the available memory.

    ``what`` says what the bytes are for (``"a.libsvm: 2e12 features: per-feature statistics"``),
    ``lower`` what to change (``"set data.n_features"``).
    """
    have = available_bytes()
    if nbytes > have:
        raise MemoryLimitError(f"{what} need about {format_bytes(nbytes)}; {_available_words(have)}; {lower}")


# -- MemoryError met anyway ---------------------------------------------------------------------------------------

#: what a solve's out-of-memory message advises
SOLVE_ADVICE = "a smaller spec fits: kopt validate --data prints its memory plan"


@contextlib.contextmanager
def out_of_memory(doing: str, advice: str = ""):
    """Raise a ``MemoryError`` from the block again as :class:`OutOfMemoryError`: ``doing`` says what was being
    done (``"reading data/train.csv"``), NumPy's message how large the allocation was, ``advice`` what to do.
    kopt's own memory errors pass unchanged."""
    try:
        yield
    except OutOfMemoryError:
        raise
    except MemoryError as exc:
        raise OutOfMemoryError(out_of_memory_message(doing, exc, advice)) from exc


def out_of_memory_message(doing, exc, advice="") -> str:
    """The one line of a ``MemoryError`` met while ``doing``."""
    said = str(exc).strip() or "an allocation failed (no size given)"
    try:
        have = _available_words(available_bytes())
    except Exception:  # the figure is a help, never a second failure
        have = ""
    return (f"out of memory while {doing}: {said}" + (f"; {have} now" if have else "")
            + (f"; {advice}" if advice else ""))


# -- memory plans -------------------------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Sizes:
    """The sizes a memory plan is written in: ``n`` training rows of ``d`` columns, ``count`` features or centers
    (``model.features.count``, of ``kind`` random or nystrom), ``outputs`` columns the solver fits (1, or one per
    class one-vs-rest), the features' ``dtype``, ``n_test`` test rows; ``problem`` is the assembled problem where
    there is one (a plan that depends on more than the sizes -- the loss, the kernel -- reads it)."""

    n: int
    d: int
    count: int
    outputs: int = 1
    dtype: np.dtype = np.dtype("float32")
    kind: str = "random"
    n_test: int = 0
    problem: object = dataclasses.field(default=None, compare=False, repr=False)

    @classmethod
    def of(cls, problem) -> "Sizes":
        """The sizes of an assembled problem."""
        pre = problem.preprocessor
        outputs = problem.n_classes if pre.target == "multiclass" and problem.loss.target == "binary" \
            else problem.n_outputs
        n_test = 0 if problem.X_test is None else int(problem.X_test.shape[0])
        return cls(n=int(problem.n), d=int(problem.d), count=int(problem.features.count), outputs=int(outputs),
                   dtype=np.dtype(problem.dtype), kind=problem.features.kind, n_test=n_test, problem=problem)

    def replace(self, **changes) -> "Sizes":
        return dataclasses.replace(self, **changes)

    @property
    def itemsize(self) -> int:
        return self.dtype.itemsize


_COUNT_WORDS = {1: "one", 2: "two", 3: "three", 4: "four", 5: "five", 6: "six", 7: "seven", 8: "eight", 9: "nine"}


def matrices(count, rows, cols, dtype, what="") -> tuple:
    """The plan item of ``count`` arrays of ``rows x cols`` ``dtype`` values: ``("three 4,096 x 4,096 float64
    matrices (what)", bytes)``."""
    dtype = np.dtype(dtype)
    count, rows, cols = int(count), int(rows), int(cols)
    how_many = _COUNT_WORDS.get(count, f"{count:,}")
    noun = "matrix" if count == 1 else "matrices"
    words = f"{how_many} {rows:,} x {cols:,} {dtype.name} {noun}" + (f" ({what})" if what else "")
    return words, count * rows * cols * dtype.itemsize


def total(plan) -> int:
    """The bytes of a plan's items."""
    return int(sum(int(nbytes) for _, nbytes in plan))


def plan_of(solver, sizes) -> list:
    """``solver``'s plan at ``sizes``, each item checked to be ``(words, bytes >= 0)``."""
    plan = list(solver.memory_plan(sizes) or [])
    for item in plan:
        if not (isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], str)
                and int(item[1]) == item[1] and item[1] >= 0):
            raise KoptError(f"solver {solver.name!r}: memory_plan gave {item!r}; each item must be a (words, bytes) "
                            "pair with bytes >= 0")
    return plan


def largest_fitting(solver, sizes, have, field=None) -> int:
    """The largest value of the :class:`Sizes` field ``field`` (default: the one the solver's ``memory_key`` sets),
    at most its value in ``sizes``, whose plan fits ``have`` bytes; 0 where not even 1 does.  Plans grow with
    their sizes, so a bisection finds it."""
    field = field or KEYS[solver.memory_key]
    top = int(getattr(sizes, field))
    if top < 1 or total(plan_of(solver, sizes.replace(**{field: 1}))) > have:
        return 0
    lo, hi = 1, top  # the plan at lo fits
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if total(plan_of(solver, sizes.replace(**{field: mid}))) <= have:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _unit(solver, sizes) -> str:
    field = KEYS.get(solver.memory_key)
    if field == "n":
        return "training rows"
    return "centers" if sizes.kind == "nystrom" else "features"


def _round_down(value) -> int:
    """``7,843`` -> ``7,800``: two significant digits, never above the value."""
    if value < 100:
        return int(value)
    step = 10 ** (len(str(int(value))) - 2)
    return int(value) // step * step


def _holders(plan, need) -> str:
    """The plan's items that hold most of it, largest first, and the rest as one figure."""
    items = sorted(plan, key=lambda item: -item[1])
    named, rest = [], 0
    for words, nbytes in items:
        if nbytes >= 0.05 * need and len(named) < 3:
            named.append(f"{words}: {format_bytes(nbytes)}")
        else:
            rest += nbytes
    if rest:
        named.append(f"{format_bytes(rest)} in smaller arrays")
    return ", ".join(named)


def refusal(solver, sizes, plan, have) -> str:
    """The one line of a plan that does not fit ``have`` bytes."""
    need = total(plan)
    key = solver.memory_key
    lead = f"solver {solver.name}"
    fit_words = ""
    if key in KEYS:
        field = KEYS[key]
        value = int(getattr(sizes, field))
        lead = f"{key} {value:,} ({solver.name})"
        fit = largest_fitting(solver, sizes, have, field)
        unit = _unit(solver, sizes)
        fit_words = (f"; at most ~{_round_down(fit):,} {unit} fit: lower {key}" if fit else
                     f"; not even one of the {unit} fits beside what is already held")
    hint = f", {solver.memory_hint}" if getattr(solver, "memory_hint", "") else ""
    return (f"{lead} needs {format_bytes(need)} in {_holders(plan, need)}; {_available_words(have)}"
            f"{fit_words}{hint}")


def check_plan(solver, sizes, have=None) -> list:
    """Raise :class:`MemoryLimitError` (one line, exit status 2) when ``solver``'s plan at ``sizes`` exceeds the
    memory available (``have``: :func:`available_bytes`); returns the plan (``[]``: the solver declares none and
    nothing is checked)."""
    plan = plan_of(solver, sizes)
    if not plan:
        return plan
    have = available_bytes() if have is None else have
    if total(plan) > have:
        raise MemoryLimitError(refusal(solver, sizes, plan, have))
    return plan


def plan_lines(solver, sizes, have=None) -> list:
    """``kopt validate --data``'s lines: the sizes, each item of the plan, its total against the memory available."""
    plan = plan_of(solver, sizes)
    unit = "centers" if sizes.kind == "nystrom" else "features"
    head = (f"memory plan of {solver.name}: {sizes.n:,} training rows x {sizes.d:,} columns, {sizes.count:,} {unit}, "
            f"{sizes.outputs} output{'s' if sizes.outputs != 1 else ''}, {sizes.dtype.name}")
    if not plan:
        return [head, f"  (solver {solver.name} declares no memory plan: nothing is checked before it runs)"]
    have = available_bytes() if have is None else have
    width = max(len(words) for words, _ in plan)
    lines = [head] + [f"  {words.ljust(width)}  {format_bytes(nbytes):>10}" for words, nbytes in plan]
    need = total(plan)
    verdict = "fits" if need <= have else "does NOT fit"
    lines.append(f"  {'total'.ljust(width)}  {format_bytes(need):>10}  {verdict}: {_available_words(have)}")
    return lines
