"""``solver: auto``'s budget: a count of work, so that every choice depends on the data, the spec and its seed alone.

The search stops adding centers, stops its column sweeps and stops walking λ where the *work it counts* would pass
its budget, never where a clock says so: the same spec and seed choose the same route, center count, bandwidth,
column scales and λ on a quiet machine, a busy one, and on 1 or 16 threads.

**The unit is a flop**, and every stage's cost is counted by formula from the sizes it works on (never measured):

* a kernel value of d columns: ``2 d + KERNEL_VALUE_FLOPS`` (:func:`kernel_value`; the product of its row and
  center, then its exp and the pass's bookkeeping);
* a Nyström system of M centers on n rows (:func:`system`): its n M kernel values, the rank-n update of its M × M
  sums (n M²) and the centers' Cholesky (M³/3);
* a λ of a direct path (:func:`direct_lambda`): one M × M Cholesky (M³/3) and the scores of the validation rows
  (2 M a row an output); the validation rows' kernel values (:func:`kernel_values`) once a system;
* a conjugate-gradient step on n rows (:func:`cg_step`): one pass of n M kernel values, two products with them
  (4 n M flops an output), and a λ's preconditioner M³/3 (:func:`cg_lambda`); the factors of the centers, 2 M³
  a path (:func:`cg_factors`);
* a Newton step of the squared hinge: one pass over the fit rows and one M³/3 Cholesky;
* randomly pivoted Cholesky's centers (:func:`rpcholesky`): P M kernel values of its P candidates and P M².

**The default budget** (:func:`default_work`) is :data:`WORK_PER` flops per :data:`WORK_ROWS` training rows, at
least :data:`WORK_MIN`: 1.2·10¹³ flops up to 500,000 rows, 2.4·10¹³ at 10⁶: 120 s per 500,000 training rows and at
least 120 s, at the reference rate :data:`REFERENCE_FLOPS` (10¹¹ flop/s, a float64 BLAS roofline of two cores;
docs/design/work-budget.md).  A faster or slower machine spends more or less time on the same work, and chooses the
same model.

**Time** enters twice, never as a choice: a rate measured as the work counted so far over the seconds it took
turns the budget into an estimated time for the progress lines (:meth:`Budget.words`), and a wall-clock limit the
user sets (``solver.budget``, seconds) is a hard stop: the search stops growing where the time counted so far plus
the next step's work at that rate would pass it.  Where that limit binds, the choice depends on the machine: the
log says so and the report records where (``budget.time_limit_bound``, ``budget.machine_dependent``).
"""
from __future__ import annotations

import math
import time

#: the default budget: this many flops per :data:`WORK_ROWS` training rows, at least :data:`WORK_MIN`
#: (120 s per 500,000 rows, at least 120 s, at :data:`REFERENCE_FLOPS`)
WORK_PER = 1.2e13
WORK_ROWS = 500_000
WORK_MIN = 1.2e13
#: the reference rate the old default's seconds were translated at (documentation: no choice reads it)
REFERENCE_FLOPS = 1e11
#: a kernel value's flops beyond the 2 d of its product (its exp and the pass's bookkeeping): with them a kernel value
#: of 28 columns counts 88 flops, 1.1 G kernel values/s at :data:`REFERENCE_FLOPS`
KERNEL_VALUE_FLOPS = 32


def default_work(n_train: int) -> float:
    """The default budget in flops: :data:`WORK_PER` per :data:`WORK_ROWS` training rows, at least
    :data:`WORK_MIN`."""
    return max(WORK_MIN, WORK_PER * n_train / WORK_ROWS)


def rule_words() -> str:
    return (f"{WORK_PER:.3g} flops per {WORK_ROWS:,} training rows, at least {WORK_MIN:.3g}: 120 s per 500,000 rows "
            f"at the reference {REFERENCE_FLOPS:.3g} flop/s; a kernel value of d columns counts 2d + "
            f"{KERNEL_VALUE_FLOPS} flops, a system n M² + M³/3, a CG step n M kernel values")


def kernel_value(d: int) -> float:
    """The flops a kernel value of ``d`` columns counts."""
    return 2.0 * d + KERNEL_VALUE_FLOPS


def kernel_values(n: int, M: int, d: int) -> float:
    """``n`` rows' kernel values against ``M`` centers."""
    return float(n) * M * kernel_value(d)


def system(n: int, M: int, d: int) -> float:
    """A Nyström system of ``M`` centers on ``n`` rows: its kernel values, its rank-n update, the centers' Cholesky."""
    return kernel_values(n, M, d) + float(n) * M * M + M ** 3 / 3.0


def direct_lambda(M: int, n_val: int, outputs: int = 1) -> float:
    """One λ of a direct path: an M × M Cholesky and the validation rows' scores."""
    return M ** 3 / 3.0 + 2.0 * n_val * M * outputs


def cg_step(n: int, M: int, d: int, outputs: int = 1) -> float:
    """One conjugate-gradient step on ``n`` rows: a pass of kernel values and two products with them."""
    return kernel_values(n, M, d) + 4.0 * n * M * outputs


def cg_lambda(M: int) -> float:
    """A λ's preconditioner: the product U Uᵀ and its Cholesky, M³/3 each (:mod:`kopt.nystrom.factors`)."""
    return 2.0 * M ** 3 / 3.0


def cg_factors(M: int) -> float:
    """The centers' factor of a CG path (the pivoted Cholesky of K_CC): M³/3."""
    return M ** 3 / 3.0


def rpcholesky(P: int, M: int, d: int) -> float:
    """Randomly pivoted Cholesky drawing ``M`` centers from ``P`` candidate rows: their P M kernel values and the
    factor's updates, P M² (:func:`kopt.nystrom.centers.rpcholesky_order`)."""
    return kernel_values(P, M, d) + float(P) * M * M


def newton_step(n: int, M: int, d: int) -> float:
    """A squared-hinge Newton step: one pass over ``n`` rows and one M × M Cholesky."""
    return kernel_values(n, M, d) + 2.0 * n * M + M ** 3 / 3.0


class Budget:
    """The work the search may count (``work`` flops), what it has counted (:attr:`spent`), and the user's optional
    wall-clock limit (``seconds``).  :meth:`share` gives a stage its own cap, counted into this one too."""

    def __init__(self, work: float, seconds: float | None = None, *, rule: str | None = None, _root=None,
                 _start=0.0):
        self.work = float(work)
        self.seconds = None if seconds is None else float(seconds)
        self.rule = rule
        self.spent = 0.0
        self._root = _root
        self._start = _start  # the root's spent work when this share began
        self.t0 = time.perf_counter() if _root is None else _root.t0
        self.bound = [] if _root is None else _root.bound  # where the wall-clock limit stopped a stage

    def share(self, work: float) -> Budget:
        """A stage's budget of at most ``work`` flops, counted into this one as it is spent."""
        return Budget(min(work, self.left()), self.seconds, rule=self.rule, _root=self)

    def count(self, flops: float) -> None:
        self.spent += float(flops)
        if self._root is not None:
            self._root.count(flops)

    def left(self) -> float:
        return max(0.0, self.work - self.spent)

    def affords(self, flops: float) -> bool:
        """Whether ``flops`` more stay within the work budget (the choice-making test: counted, never timed)."""
        return self.spent + flops <= self.work

    def over(self) -> bool:
        return self.spent > self.work

    # -- time: estimates, and the user's hard limit ----------------------------------------------------------------
    def elapsed(self) -> float:
        return time.perf_counter() - self.t0

    def _root_spent(self) -> float:
        return (self._root._root_spent() if self._root is not None else self.spent)

    def rate(self) -> float | None:
        """Flops counted a second so far on this machine (an estimate for the progress line), or None."""
        t = self.elapsed()
        spent = self._root_spent()
        return spent / t if spent > 0 and t > 0 else None

    def out_of_time(self, where: str, next_flops: float = 0.0) -> bool:
        """Whether the user's wall-clock limit stops the search at ``where``: the seconds spent, plus ``next_flops``
        at the rate measured so far, pass it.  Records where it bound (the choice then depends on the machine)."""
        if self.seconds is None:
            return False
        rate = self.rate()
        projected = self.elapsed() + (next_flops / rate if rate and next_flops else 0.0)
        if projected <= self.seconds:
            return False
        if where not in self.bound:
            self.bound.append(where)
        return True

    def words(self) -> str:
        """``2.1e12 of 1.2e13 flops (18%), about 40 s left at this machine's 5.2e10 flop/s so far``: the search's
        progress against its work budget, and its ETA (an estimate: the rate is measured, the choices do not read
        it)."""
        root = self if self._root is None else self._root
        while root._root is not None:
            root = root._root
        share = root.spent / root.work if root.work > 0 else math.inf
        out = f"{root.spent:.2g} of {root.work:.2g} flops ({100 * share:.0f}%)"
        rate = root.rate()
        if rate:
            out += f", at most ~{root.left() / rate:.0f} s left at this machine's {rate:.2g} flop/s so far"
        if root.seconds is not None:
            out += f"; {root.elapsed():.0f} s of the {root.seconds:g} s time limit"
        return out

    def record(self) -> dict:
        """The report's ``budget``: the rule, the work counted, the time limit and where it bound."""
        return {"rule": self.rule, "work_flops": self.work, "spent_flops": self.spent,
                "time_limit_s": self.seconds, "time_limit_bound": list(self.bound),
                "machine_dependent": bool(self.bound)}
