"""The iterative-solver skeleton: one loop, one stopping rule, one vocabulary for every solver.

A solver supplies the mathematics -- :meth:`IterativeSolver.init`, :meth:`~IterativeSolver.step`
(one iteration: a mini-batch, a block of rows, an epoch), :meth:`~IterativeSolver.check` (the
objective, and the dual and duality gap where its form has them, or its own stopping
criterion), :meth:`~IterativeSolver.decision_function` (scores for the holdout),
:meth:`~IterativeSolver.save`/:meth:`~IterativeSolver.load` (its checkpoint state) and
:meth:`~IterativeSolver.finish` (the model's predictor).  The skeleton (``run_iterations``)
owns everything else, the same way for every solver:

* the iteration cap (``iterations``) and the cadence of checks (``check_every``, on
  ``check_rows`` seeded training rows) and of holdout metrics (``holdout_every``, on
  ``holdout_rows`` seeded test rows);
* the stopping rule: relative duality gap ``(P − D) / max(|P|, |D|) ≤ tol`` (``stopping =
  "gap"``), the solver's own criterion ``≤ tol`` (``"criterion"``), or the cap (``"none"``);
  a gap below −(the rounding bound of the sums that formed P and D, ``rounding_bound``) is a
  wrong conjugate or box and stops with an
  error naming the loss, never ``success``;
* divergence: a non-finite objective, gap or criterion, or :class:`Diverged` raised by
  ``step``, ends the run with status ``diverged`` -- reported, never raised;
* progress, the trace, checkpoints and resume, Ctrl-C (through the run context,
  :class:`kopt.running.context.RunContext`); a
  run resumed from a checked iteration re-judges that state first, as the uninterrupted run did; a warm start the
  solver checks at no cost (:meth:`IterativeSolver.check_at_start`) is judged before the first step; a
  ``MemoryError`` in the check after a finished step writes the checkpoint due at that step first;
* threads: BLAS is held to one thread while kopt's own worker threads run (``blas =
  "single"``), or gets the solver's ``threads`` when BLAS is all there is (``blas = "all"``: SciPy's BLAS, with
  NumPy's own OpenBLAS, where it is a second library, held to one thread).

The options every iterative solver shares are ``COMMON_OPTIONS``; a solver picks the
ones it uses with :func:`common_options` (setting its own defaults) and adds its own.  A
shared option a solver does not declare takes the skeleton's default (``shared_option``).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, ClassVar

import numpy as np

from ..errors import KoptError
from ..numerics import rows as _rows
from ..numerics import threads as _threads
from .components import Solver
from .result import SolverOutput

if TYPE_CHECKING:
    from .components import Predictor
    from .problem import Problem

#: The shared option vocabulary (JSON-schema fragments).  Documented once, here and in
#: docs/plugin-guide.md; each solver's page says what one iteration is.
COMMON_OPTIONS = {
    "iterations": {"type": "integer", "minimum": 1,
                   "description": "iteration cap; one iteration is the solver's unit of work (a mini-batch, a "
                                  "block of rows, an epoch: see the solver's iteration_unit)"},
    "batch_size": {"type": "integer", "minimum": 1, "description": "training rows per iteration"},
    "tol": {"type": "number", "minimum": 0,
            "description": "stop when the relative duality gap (P - D)/max(|P|, |D|) -- or the solver's own "
                           "criterion where its form has no gap -- is at most tol (0: run to the cap)"},
    "check_every": {"type": ["integer", "null"], "minimum": 0,
                    "description": "iterations between checks of the objective and the gap or criterion (the "
                                   "stopping rule); null: the solver's default; 0: only at the end"},
    "check_rows": {"type": "integer", "minimum": 0,
                   "description": "estimate the objective and the gap on this many seeded training rows (0: all)"},
    "holdout_every": {"type": ["integer", "null"], "minimum": 0,
                      "description": "iterations between holdout metrics in the trace; null: the solver's default; "
                                     "0: none (the result's metrics are computed at the end either way)"},
    "holdout_rows": {"type": "integer", "minimum": 0,
                     "description": "holdout rows (seeded) scored at intermediate checks (0: all); the final metrics "
                                    "use every test row"},
    "threads": {"type": ["integer", "null"], "minimum": 1,
                "description": "worker threads (null: KOPT_THREADS, else the CPUs this process may use, at most 8)"},
}

_BASE_DEFAULTS = {"check_every": None, "check_rows": 0, "holdout_every": None, "holdout_rows": 0, "threads": None}


def common_options(**defaults) -> dict:
    """Schema fragments of the shared options named in ``defaults``, with the solver's defaults.

    The shared vocabulary (``iterations``, ``batch_size``, ``tol``, and the cadence and thread options) means the
    same in every solver; the cadence and thread options are always included, with fixed defaults.

    Parameters
    ----------
    **defaults
        ``name=default`` for each shared option the solver takes (``iterations``, ``batch_size``, ``tol``, ...).

    Returns
    -------
    dict
        JSON-schema ``properties``, to merge into the solver's ``params``.

    Raises
    ------
    KeyError
        A name is not a shared option.

    Examples
    --------
    >>> from kopt.contract.iterative import common_options
    >>> options = common_options(iterations=1000, tol=1e-3)
    >>> options["iterations"]["default"], options["tol"]["default"]
    (1000, 0.001)
    >>> sorted(options)
    ['check_every', 'check_rows', 'holdout_every', 'holdout_rows', 'iterations', 'threads', 'tol']
    """
    unknown = sorted(set(defaults) - set(COMMON_OPTIONS))
    if unknown:
        raise KeyError(f"not shared options: {', '.join(unknown)}; shared: {', '.join(COMMON_OPTIONS)}")
    out = {}
    for key, schema in COMMON_OPTIONS.items():
        if key in defaults:
            out[key] = {**schema, "default": defaults[key]}
        elif key in _BASE_DEFAULTS:
            out[key] = {**schema, "default": _BASE_DEFAULTS[key]}
    return out


class Diverged(KoptError):
    """Raised by a solver's ``step`` when its iterate has blown up; the skeleton ends the run with status
    ``diverged`` and reports it (never raised to the caller)."""


@dataclass
class Step:
    """What :meth:`IterativeSolver.step` returns (``None`` is an empty Step).

    Parameters
    ----------
    rows, objective, dual, extra
        The attributes below.

    Attributes
    ----------
    rows : int
        Training rows the iteration touched (the progress rate).
    objective : float or None
        A cheap running estimate of the objective shown between checks.
    dual : float or None
        The dual objective, where a dual solver keeps it up to date for free.
    extra : dict
        Per-iteration trace fields.

    Examples
    --------
    >>> from kopt.contract.iterative import Step
    >>> Step(rows=256, objective=0.42)
    Step(rows=256, objective=0.42, dual=None, extra={})
    """

    rows: int = 0
    objective: float | None = None
    dual: float | None = None
    extra: dict = field(default_factory=dict)


@dataclass
class Check:
    """What :meth:`IterativeSolver.check` returns: the objective and the gap, or the solver's own criterion.

    Parameters
    ----------
    objective, dual, criterion, metrics, extra, scale, terms
        The attributes below.

    Attributes
    ----------
    objective : float or None
        The primal objective P in kopt's convention, λ/2‖f‖² + (1/n) Σ ℓ (estimated on the check rows when the
        skeleton passes a subset).
    dual : float or None
        The dual objective D where the form has one; the gap is then P − D.
    criterion : float or None
        The solver's stopping quantity when it has no gap.
    metrics : dict
        Holdout metrics the skeleton cannot compute from scores (e.g. interval coverage).
    extra : dict
        Trace fields.
    scale : float or None
        Σ|t| over the terms added up to form P and D, in P's units (default ``abs(P) + abs(D)``): with ``terms``
        it bounds the rounding of P − D, so a slightly negative gap from rounding is not taken for a wrong
        conjugate.
    terms : int or None
        The length of the longest sum (default n plus the feature count).
    gap : float or None
        P − D (a property).
    rel_gap : float or None
        (P − D) / max(``abs(P)``, ``abs(D)``), what ``tol`` is compared with (a property).

    Examples
    --------
    >>> from kopt.contract.iterative import Check
    >>> check = Check(objective=0.50, dual=0.49)
    >>> round(check.gap, 6), round(check.rel_gap, 6)
    (0.01, 0.02)
    """

    objective: float | None = None
    dual: float | None = None
    criterion: float | None = None
    metrics: dict = field(default_factory=dict)
    extra: dict = field(default_factory=dict)
    scale: float | None = None
    terms: int | None = None

    @property
    def gap(self) -> float | None:
        """P − D, or None without a dual."""
        if self.objective is None or self.dual is None:
            return None
        return self.objective - self.dual

    @property
    def rel_gap(self) -> float | None:
        """The relative duality gap, or None without a dual."""
        if self.gap is None:
            return None
        return self.gap / max(abs(self.objective), abs(self.dual), 1e-300)


def rounding_bound(check: Check, problem) -> float:
    """An upper bound of the rounding in P − D, from the sums that formed them.

    A sum of k terms rounds by at most γ_k·Σ|t| with γ_k ≈ k·u (Higham, *Accuracy and Stability of
    Numerical Algorithms*, §4.2), u the unit round-off of the precision the terms were formed in
    (the features' dtype: float32 scores carry float32 rounding into a float64 sum).  Each term
    itself is a short product (a few more roundings, and the feature dot products, which the count
    includes), and P and D round independently: bound = 2·(k + 16)·u·Σ|t|.  Worst case on purpose:
    a correct solver must never be stopped by it on any CPU or BLAS kernel (their sums associate
    differently), while a wrong conjugate or box moves P − D by a fixed share of the terms, which
    this stays far below (a wrong unit conjugate is caught while (k + 16)·u ≪ 1: n up to ~10⁶ rows in
    float32, any n in float64).
    """
    u = float(np.finfo(problem.dtype).eps)
    k = check.terms
    if k is None:
        feats = getattr(problem, "features", None)
        k = int(problem.n) + int(getattr(feats, "count", 0) or 0)
    scale = check.scale
    if scale is None:
        scale = abs(check.objective or 0.0) + abs(check.dual or 0.0)
    return 2.0 * (k + 16) * u * abs(float(scale))


class IterativeSolver(Solver):
    """Base of the iterative solvers: the solver supplies the mathematics, the skeleton runs the loop.

    A subclass implements :meth:`init`, :meth:`step`, :meth:`check`, :meth:`decision_function`, :meth:`save`,
    :meth:`load` and :meth:`finish`.  The skeleton (``run_iterations``, the module docstring) owns the iteration cap,
    the cadence of checks, the stopping rule, divergence, progress, the trace, checkpoints, resume and Ctrl-C, the
    same way for every solver.  Its ``params`` start from :func:`common_options`.

    Attributes
    ----------
    stopping : str
        ``"gap"`` (relative duality gap ≤ ``tol``), ``"criterion"`` (the solver's own quantity ≤ ``tol``) or
        ``"none"`` (run to the cap).
    criterion_name : str
        Words for the criterion in messages.
    iteration_unit : str
        What one iteration is (a mini-batch, a block of rows, an epoch), for the docs and progress.
    blas : str
        ``"single"``: BLAS is held to one thread while kopt's worker threads run; ``"all"``: BLAS gets the
        solver's ``threads``.
    warm_start : bool
        The trajectory does not read the cap (True by default; a schedule over the whole run sets False).
    divergence_hint : str
        What to change when the run diverges.
    n_threads : int
        Worker threads for this run (the ``threads`` option, ``KOPT_THREADS``, the available CPUs).

    Examples
    --------
    >>> from kopt.contract.iterative import IterativeSolver
    >>> from kopt.contract.registry import registry
    >>> joker = registry().get("solver", "joker")
    >>> joker.stopping, issubclass(joker, IterativeSolver)
    ('gap', True)

    The calling order, each method's arguments and what it returns are below; :doc:`/docs/plugin-guide` ("A
    complete example") writes a whole solver.
    """

    stopping: ClassVar[str] = "gap"
    criterion_name: ClassVar[str] = "criterion"
    iteration_unit: ClassVar[str] = "iteration"
    blas: ClassVar[str] = "single"
    #: the skeleton's trajectory does not read the cap: a run continued from a snapshot with a larger
    #: ``iterations`` ends where a fresh run ends.  A solver whose iterates depend on ``iterations``
    #: (e.g. a schedule or an average over the last half of the run) sets this to False.
    warm_start: ClassVar[bool] = True
    divergence_hint: ClassVar[str] = "lower the step size or raise lambda"

    # -- the contract ---------------------------------------------------------------------------
    def init(self, problem: Problem) -> object:
        """The starting state of a fresh run.

        Parameters
        ----------
        problem : Problem
            The assembled problem.

        Returns
        -------
        object
            Any object: the skeleton only passes it back to the other methods.
        """
        raise NotImplementedError

    def step(self, state: object, t: int) -> Step | None:
        """Iteration ``t``: move the iterate in ``state``, in place.

        Draw randomness from ``problem.rng(stream, t)``, so that a resumed run repeats it.

        Parameters
        ----------
        state : object
            The run's state.
        t : int
            The iteration, 1-based.

        Returns
        -------
        Step or None
            What the step measured in passing (an objective estimate, the rows it read); None: nothing.

        Raises
        ------
        Diverged
            The iterate blew up; the run ends with status ``diverged`` and the class's ``divergence_hint``.
        """
        raise NotImplementedError

    def check(self, state: object, rows: np.ndarray | None) -> Check:
        """The objective and the gap (or the solver's criterion) now, without changing the iterates.

        The skeleton's stopping rule reads it at the cadence of :meth:`cadence`; the default measures nothing.

        Parameters
        ----------
        state : object
            The run's state.
        rows : array of int or None
            Sorted training row indices to estimate on, or None for every row.

        Returns
        -------
        Check
            The objective, the dual value or the criterion, and metrics.

        Examples
        --------
        >>> from kopt.contract.iterative import IterativeSolver
        >>> IterativeSolver().check(None, None).rel_gap is None
        True
        """
        return Check()

    def decision_function(self, state: object, X: np.ndarray) -> np.ndarray:
        """The current iterate's scores on standardized rows ``X``.

        Parameters
        ----------
        state : object
            The run's state.
        X : array of shape (n, d)
            Rows, standardized as the training rows are, on the backend.

        Returns
        -------
        array of shape (n,) or (n, C)
            The scores.
        """
        raise NotImplementedError

    def scorer(self, state: object, X: np.ndarray) -> Callable[[], np.ndarray]:
        """A callable giving the current scores of the fixed rows ``X`` (the holdout subset).

        The default calls :meth:`decision_function`; override it to keep the scores up to date incrementally.

        Parameters
        ----------
        state : object
            The run's state.
        X : array of shape (n, d)
            The fixed rows.

        Returns
        -------
        callable
            ``scores()``, an array of shape (n,) or (n, C).
        """
        return lambda: self.decision_function(state, X)

    def check_at_start(self, state: object) -> bool:
        """Whether the state :meth:`init` made is checked before the first step: a warm start that may already meet
        the tolerance, where the check costs no pass over the rows.  Where the check stops the run, it ends after 0
        iterations.

        Parameters
        ----------
        state : object
            The run's state after :meth:`init`.

        Returns
        -------
        bool
            False here: the first check comes after the first step.

        Examples
        --------
        >>> from kopt.contract.iterative import IterativeSolver
        >>> IterativeSolver().check_at_start(None)
        False
        """
        return False

    def cadence(self, state: object) -> tuple[int, int]:
        """The default ``(check_every, holdout_every)`` where the options leave them null.

        Parameters
        ----------
        state : object
            The run's state after :meth:`init` or :meth:`load`.

        Returns
        -------
        tuple of int
            Iterations between checks, and between holdout scorings (0: none).

        Examples
        --------
        >>> from kopt.contract.iterative import IterativeSolver
        >>> IterativeSolver().cadence(None)
        (1, 1)
        """
        return 1, 1

    def save(self, state: object) -> dict:
        """The checkpoint: a flat dict of arrays and JSON scalars from which :meth:`load` rebuilds the state.

        Parameters
        ----------
        state : object
            The run's state.

        Returns
        -------
        dict
            Arrays and JSON scalars.
        """
        raise NotImplementedError

    def load(self, problem: Problem, saved: dict) -> object:
        """The state of a run resumed from :meth:`save`'s dict (or warm-started from :meth:`~kopt.contract.components.Solver.warm_state`'s).

        Parameters
        ----------
        problem : Problem
            The assembled problem.
        saved : dict
            What :meth:`save` returned.

        Returns
        -------
        object
            The state, as :meth:`init` would make it, at the saved iterate.
        """
        raise NotImplementedError

    def finish(self, state: object) -> tuple[Predictor, dict]:
        """The model and the solver's facts at the end of the run.

        Parameters
        ----------
        state : object
            The run's state.

        Returns
        -------
        predictor : Predictor
            What the model evaluates (:class:`kopt.contract.components.Predictor`).
        info : dict
            JSON facts for ``result.info`` (the skeleton adds ``status`` and the gap).
        """
        raise NotImplementedError

    def held_out(self, state: object) -> dict | None:
        """The calibration's held-out scores where the solve made them, else None.

        With None (the default) the calibration solves the spec again on the other rows.

        Parameters
        ----------
        state : object
            The run's final state.

        Returns
        -------
        dict or None
            What ``SolverOutput.held_out`` returns: ``rows``, ``scores`` and ``words``.

        Examples
        --------
        >>> from kopt.contract.iterative import IterativeSolver
        >>> IterativeSolver().held_out(None) is None
        True
        """
        return None

    # -- the skeleton ---------------------------------------------------------------------------
    @property
    def n_threads(self) -> int:
        """Worker threads for this run: the ``threads`` option, else ``KOPT_THREADS``, else the available CPUs.

        Examples
        --------
        >>> from kopt.contract.registry import registry
        >>> registry().get("solver", "dsg")(threads=1).n_threads
        1
        """
        return _threads.resolve_threads(shared_option(self, "threads"))

    def run(self, problem: Problem, run) -> SolverOutput:
        """Run the skeleton's loop on ``problem`` with this solver's methods (:meth:`kopt.contract.components.Solver.run`).

        The loop owns the iteration cap, the checks' cadence, the stopping rule, divergence, progress, the trace,
        checkpoints, resume and Ctrl-C.

        Parameters
        ----------
        problem : Problem
            The assembled problem.
        run : run context
            The run's reporting and resume (:meth:`kopt.contract.components.Solver.run`).

        Returns
        -------
        SolverOutput
            The predictor, the iterations, the status, the certificate and the facts.
        """
        # "all": the solver's heavy BLAS is SciPy's (factorisations, rank-k updates): NumPy's own OpenBLAS, where it is
        # another library, is held to one thread (kopt.numerics.threads.scipy_blas)
        hold = _threads.blas_threads(1) if self.blas == "single" else _threads.scipy_blas(self.n_threads)
        with hold:
            return run_iterations(self, problem, run)


def shared_option(solver, key):
    """A shared option's value; a solver that does not declare it gets the skeleton's default
    (iterations 1, tol 0, the cadence options null/0, threads null)."""
    return getattr(solver.options, key, {"iterations": 1, "tol": 0.0, **_BASE_DEFAULTS}.get(key))


def run_iterations(solver: IterativeSolver, problem, run) -> SolverOutput:
    """The loop every :class:`IterativeSolver` runs (see the module docstring)."""
    o = {k: shared_option(solver, k) for k in COMMON_OPTIONS}
    T = o["iterations"]
    tol = o["tol"] or 0.0
    start = run.start_iteration
    state = solver.init(problem) if run.resume_state is None else solver.load(problem, run.resume_state)
    check_default, holdout_default = solver.cadence(state)
    check_every = check_default if o["check_every"] is None else o["check_every"]
    holdout_every = holdout_default if o["holdout_every"] is None else o["holdout_every"]
    check_rows = _rows.sample(problem.rng("check_rows"), problem.n, o["check_rows"])
    holdout = _Holdout(solver, state, problem, o["holdout_rows"]) if holdout_every else None
    tracker = _Stopping(solver, problem, tol)

    def save():
        return solver.save(state)

    def due(t):
        return bool(check_every and t % check_every == 0) or t == T

    t, last, done = start, None, False
    if start and due(start):
        # resumed from a checked iteration: the uninterrupted run judged this very state there (and
        # may have stopped: converged, diverged), so the resumed run judges it first
        last = solver.check(state, check_rows)
        done = tracker.judge(start, last)
    elif not start and solver.check_at_start(state):
        # a warm start that may already meet the tolerance: judged before any step, reported as iteration 0 where it does
        last = solver.check(state, check_rows)
        done = tracker.judge(0, last)
        if done:
            run.report(0, state=save, rows=0, metrics=last.metrics, **_record(last))
    for t in range(start + 1, (start if done else T) + 1):
        try:
            step = solver.step(state, t) or Step()
        except Diverged as exc:
            tracker.diverged(t, str(exc))
            break
        if step.objective is not None and not math.isfinite(step.objective):
            tracker.diverged(t, f"the objective estimate is {step.objective}")
            break
        due_check = due(t)
        due_holdout = holdout is not None and (t % holdout_every == 0 or t == T)
        record = {"objective": step.objective, "dual": step.dual, "rows": step.rows, **step.extra}
        if due_check or due_holdout:
            try:
                last = solver.check(state, check_rows)
                record.update(_record(last))
                record["metrics"] = {**(holdout.metrics() if due_holdout else {}), **last.metrics}
            except MemoryError:
                # the step is done: a checkpoint due at it is written before the error ends the run
                if run.checkpoint_due(t):
                    run.report(t, state=save, **record)
                raise
            if tracker.judge(t, last):
                run.report(t, state=save, **record)
                break
        if not run.report(t, state=save, **record):
            tracker.interrupted(t)
            break
    if tracker.status == "running":
        tracker.status = "iteration_cap"
    if tracker.status in ("interrupted", "diverged"):
        last = last or Check()
    elif tracker.checked_at != t:  # nothing ran (resumed at the cap): judge the state as it is
        last = solver.check(state, check_rows)
        tracker.judge_final(t, last)
    predictor, info = solver.finish(state)
    info = {**info, "status": tracker.status,
            "check_rows": problem.n if check_rows is None else int(check_rows.shape[0])}
    if last.rel_gap is not None:
        info["rel_gap"] = last.rel_gap
    if last.criterion is not None:
        info[solver.criterion_name.replace(" ", "_")] = last.criterion
    return SolverOutput(predictor, n_iter=t, success=tracker.success, message=tracker.message(t, last),
                        objective=last.objective, dual=last.dual, gap=last.gap, status=tracker.status, info=info,
                        # only a solver that makes held-out scores keeps its state alive for them (another's state
                        # -- an M x M system -- would outlive the solve into the calibration's)
                        held_out=(lambda: solver.held_out(state))
                        if type(solver).held_out is not IterativeSolver.held_out else None)


def _record(check: Check) -> dict:
    out = {"objective": check.objective, "dual": check.dual, "gap": check.gap, **check.extra}
    if check.rel_gap is not None:
        out["rel_gap"] = check.rel_gap
    if check.criterion is not None:
        out["criterion"] = check.criterion
    return out


class _Holdout:
    """The seeded holdout subset and its metrics (the run's single way of scoring the holdout)."""

    def __init__(self, solver, state, problem, n_rows):
        self.problem = problem
        self.score = None
        self.on_partitions = None
        parts = problem.partitions
        if problem.X_test is None and parts is not None and getattr(parts, "test_rows", None):
            # on a Dask cluster the test rows stay on the workers: a solver that can score them there says how
            if hasattr(solver, "partition_scorer"):
                self.rows = _rows.sample(problem.rng("holdout_rows"), int(sum(parts.test_rows)), n_rows)
                self.on_partitions = solver.partition_scorer(state, self.rows)
            return
        if problem.X_test is None or problem.y_test_raw is None:
            return
        self.rows = _rows.sample(problem.rng("holdout_rows"), problem.X_test.shape[0], n_rows)
        X = problem.X_test if self.rows is None else _rows.take(problem.X_test, problem.xp.asarray(self.rows))
        self.score = solver.scorer(state, X)

    def metrics(self) -> dict:
        if self.on_partitions is not None:
            scores, y = self.on_partitions()  # the subset's scores and raw labels, gathered in row order
            if y is None:
                return {}
            if scores.ndim == 2 and scores.shape[1] == 1:
                scores = scores[:, 0]
            from ..numerics.metrics import evaluate

            return evaluate(self.problem.preprocessor.target, y, scores, self.problem.preprocessor)
        if self.score is None:
            return {}
        return self.problem.holdout_metrics(self.score(), rows=self.rows)


class _Stopping:
    """The stopping rule, divergence and the final status/message, the same for every solver."""

    def __init__(self, solver, problem, tol):
        self.solver = solver
        self.problem = problem
        self.tol = tol
        self.status = "running"
        self.detail = ""
        self.checked_at = None

    @property
    def success(self):
        return self.status == "converged" or (self.status == "iteration_cap" and self.solver.stopping == "none")

    def judge(self, t, check: Check) -> bool:
        """Record a check at iteration t; True when the run must stop (converged or diverged)."""
        self.checked_at = t
        bad = [(k, v) for k, v in (("objective", check.objective), ("dual objective", check.dual),
                                   ("duality gap", check.gap), (self.solver.criterion_name, check.criterion))
               if v is not None and not math.isfinite(v)]
        if bad:
            self.diverged(t, f"the {bad[0][0]} is {bad[0][1]}")
            return True
        if self.solver.stopping == "gap" and check.rel_gap is not None:
            rel = check.rel_gap
            bound = rounding_bound(check, self.problem)
            if check.gap < -bound:  # below any rounding of the sums formed: the conjugate or its box is wrong
                loss = self.problem.loss
                raise KoptError(
                    f"solver {self.solver.name!r}: the duality gap is negative at iteration {t} (P - D = {check.gap:.6g}, "
                    f"relative {rel:.3g}, beyond the rounding bound {bound:.3g} of the sums that formed P and D): "
                    "the primal is below the dual, which weak duality forbids. The conjugate "
                    f"or its box of loss {loss.name!r} is wrong (kopt.testing.check_loss finds which), or the solver's "
                    "dual objective is")
            if self.tol > 0 and rel <= self.tol:
                self.status = "converged"
                return True
        if self.solver.stopping == "criterion" and check.criterion is not None and self.tol > 0 \
                and check.criterion <= self.tol:
            self.status = "converged"
            return True
        return False

    def judge_final(self, t, check: Check):
        if self.judge(t, check) is False:
            self.status = "iteration_cap"

    def interrupted(self, t):
        self.status = "interrupted"

    def diverged(self, t, what):
        self.status = "diverged"
        self.detail = f"diverged at iteration {t}: {what}; {self.solver.divergence_hint}"

    def message(self, t, check: Check) -> str:
        s = self.solver
        if self.status == "diverged":
            return self.detail
        if self.status == "interrupted":
            return f"interrupted at iteration {t}"
        if s.stopping == "gap" and check.rel_gap is not None:
            value, what = check.rel_gap, "relative duality gap"
        elif s.stopping == "criterion" and check.criterion is not None:
            value, what = check.criterion, s.criterion_name
        else:
            return f"{t} iterations"
        if self.status == "converged":
            return f"{what} {value:.3g} <= tol {self.tol:g} after {t} iterations"
        if self.tol == 0:
            return f"ran to the iteration cap ({t}) with {what} {value:.3g} (tol 0: no stopping rule)"
        return (f"stopped at the iteration cap ({t}) with {what} {value:.3g} > tol {self.tol:g}; "
                "raise solver.iterations or loosen solver.tol")

