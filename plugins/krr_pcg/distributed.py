"""krr_pcg on a Dask cluster: one map-reduce round over the partitions per CG iteration (docs/scale.md).

The CG is the engine's :class:`kopt.distributed.cg.PartitionCG` (the client holds what is O(M²) or O(M C), each
worker its rows, labels, row weights and scores; one round a step, the certificate from five sums per output).  The
centers are the same rows as on one machine (:func:`kopt.nystrom.choose_centers`: the seeded order, repeated rows
skipped), read from their partitions a block at a time (``Partitions.take``), gathered once.  ``data.held_out``'s rows
weigh 0 there as on one machine.  A checkpoint gathers the scores (8 bytes per row and output); a resumed run sends
them back (one round) and continues with the same bits; a lost worker's rounds are recomputed from their inputs.
"""
from __future__ import annotations

import numpy as np

from kopt.distributed.cg import PartitionCG
from kopt.numerics import rows as _rows
from kopt.nystrom.centers import choose_centers


def init(problem, start=None, model=None):
    """The solver's state on ``problem.partitions``: the centers gathered once, CG at v = 0, from ``start`` (whitened
    coefficients on these centers) or from ``model`` ``(C, w)`` (another model of the same kernel, projected on them:
    :meth:`kopt.nystrom.NystromCG.projected`)."""
    centers = choose_centers(problem, problem.features.count)
    C = _rows.dense(problem.partitions.take(centers), None, np, problem.dtype)
    cg = PartitionCG(problem, C)
    if model is not None:
        start = cg.projected(*model)
    state = {"problem": problem, "centers": centers, "Y": None, "intercept": cg.mu, "weights": None,
             "system": None, "cg": cg, "C": cg.C, "U": cg.U, **cg.start(problem.lam, start)}
    state["w"] = cg.coef(state["v"])
    return state
