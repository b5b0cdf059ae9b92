"""The state of one DSG/UDSG/CDSG run: what the solver skeleton passes back to every call.

:class:`RunState` holds the model (a :class:`~kopt_plugins.dsg.expansion.BlockExpansion`), the
loss terms and the offset τ, the batch sampler, the running estimates (‖f‖² and the
objective), the step counters, the policy's :class:`Context`, and the
:class:`~kopt_plugins.dsg.batch.LocalRows` (on a Dask cluster,
:class:`~kopt_plugins.dsg.distributed.PartitionedRows`) that evaluates batches and check rows.
:meth:`RunState.save` is the checkpoint; a state rebuilt by :meth:`RunState.restore` continues bit for bit.
"""
from __future__ import annotations

from kopt.errors import DataError

from .batch import LocalRows
from .expansion import BlockExpansion
from .objective import LossTerms
from .sampling import BatchSampler
from .tracking import RunningObjective


class Context:
    """What a policy may look at in iteration t (``cross``, ``zeta_sq``, ``candidates``: CDSG only).

    Attributes
    ----------
    expansion : BlockExpansion
        The model.
    gamma : float
        γ_t, the step of a new block.
    B : int
        The batch size.
    grad_sq : float
        Mean ℓ'² on the batch.
    variance, grad_bound : float or None
        σ² and M of Li & Póczos (2016) eq. 9 (set by CDSG's ``prepare``).
    cross : ndarray or None
        ⟨f_k, ζ⟩ of the checked blocks ``candidates``.
    zeta_sq : float
        ‖ζ‖² of the batch's functional gradient.
    candidates : ndarray or None
        Positions (in the expansion) of the checked blocks, sorted.
    """

    expansion = None
    gamma = 0.0
    B = 1
    grad_sq = 0.0
    variance = 0.0
    grad_bound = None
    cross = None
    zeta_sq = 0.0
    candidates = None


class RunState:
    """Everything one run of a :class:`~kopt_plugins.dsg.solver.DoublyStochastic` solver holds.

    Parameters
    ----------
    solver : DoublyStochastic
        The solver (its options, thread count and ``prepare`` policy hook).
    problem : kopt.contract.problem.Problem
        The assembled problem.
    """

    def __init__(self, solver, problem):
        o = solver.options
        self.problem = problem
        self.xp = problem.xp
        self.B = int(o.batch_size)
        if self.B > problem.n:
            raise DataError(
                f"solver.batch_size = {self.B} is larger than the {problem.n} training rows; "
                f"set solver.batch_size <= {problem.n}"
            )
        # no fixed count: every call names its blocks (the model grows by blocks)
        self.fmap = problem.feature_map(count=False, threads=solver.n_threads)
        self.F = self.fmap.block_size
        self.C = problem.n_outputs if problem.loss.target == "multiclass" else None
        self.expansion = BlockExpansion(self.xp, self.F, self.C, averaging=o.averaging)
        self.terms = LossTerms(problem)
        self.sampler = BatchSampler(problem, self.B, o.sampling)
        self.objective = RunningObjective(o.objective_window)
        self.norm_sq = 0.0
        self.new_steps = self.reuse_steps = 0
        self.ctx = Context()
        self.ctx.expansion, self.ctx.B = self.expansion, self.B
        self.holdout_rows = 0       # rows of the skeleton's holdout subset (0: no intermediate holdout metrics)
        if problem.partitions is None:
            self.data = LocalRows(problem, self.fmap, self.expansion, self.terms)
        else:  # the rows are on the workers of a Dask cluster: the same sums, added over the partitions
            from .distributed import PartitionedRows

            self.data = PartitionedRows(problem, solver, self.expansion, self.terms)
        solver.prepare(problem, self.fmap, self.ctx)

    # -- scores of fixed row sets (this process's rows) -------------------------------------------
    def tracker(self, X):
        """A :class:`~kopt_plugins.dsg.tracking.ScoreTracker` of the rows ``X``, following the expansion."""
        return self.data.tracker(X)

    def scores(self, tracker):
        """f(X) of the tracker's rows: the current iterate, or the averaged one with ``averaging``."""
        return self.data.scores(tracker)

    def training_scores(self, rows):
        """f at the training rows ``rows`` (sorted indices, or None: all), tracked incrementally."""
        return self.data.training_scores(rows)

    # -- checkpoints -------------------------------------------------------------------------
    def save(self) -> dict:
        """The checkpoint: expansion, running estimates, τ and the step counters."""
        s = self.expansion.state()
        s.update(self.objective.state())
        s.update({"norm_sq": self.norm_sq, "tau": self.terms.tau,
                  "new_steps": self.new_steps, "reuse_steps": self.reuse_steps})
        return s

    def restore(self, saved: dict):
        """Continue from :meth:`save`'s dict."""
        self.expansion.restore(saved)
        self.objective.restore(saved)
        self.norm_sq = float(saved["norm_sq"])
        self.terms.tau = float(saved["tau"])
        self.new_steps, self.reuse_steps = int(saved["new_steps"]), int(saved["reuse_steps"])
        self.data.restored()
        return self
