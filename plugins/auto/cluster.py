"""``solver: auto`` on a Dask cluster: the search on the client, the solves on every row on the cluster.

``kopt solve SPEC --scheduler ...``, ``execution.engine: dask`` and ``kopt.solve(..., scheduler=...)`` hand auto a
problem whose rows are the workers' partitions.  :func:`plan` runs the one-machine search on the client
(:func:`kopt.distributed.rows.on_client`: the labels gathered, one value a row):

* up to :data:`.large.SEARCH_ROWS` training rows every row is fetched and the direct search runs on them as on one
  machine (the same split, columns, ladder, bandwidth and λ);
* past it the client's rows are a :class:`kopt.distributed.rows.FetchedRows`: the rows the search reads (its column
  subsample, its sample of :data:`.large.SEARCH_ROWS` rows, the held-out rows, the grown centers) are fetched where it
  reads them, and the centers grown on every row run on the cluster (:class:`kopt.distributed.cg.PartitionCG`: the
  same CG, one round a step, the held-out rows of weight 0 there, their scores gathered each λ).

So the same spec and seed choose what one machine chooses: the split, the column scales, the centers, the bandwidth,
λ and the loss come from the same rows and the same code, and the grown path's sums differ from one machine's only in
their order of addition.  The solve on every row then runs on the cluster by the routes that run there
(:meth:`.solver.AutoSolver.route`): ``krr_pcg`` for the square loss -- where one machine solves ``krr_nystrom``'s
system directly, ``krr_pcg`` solves the same system to a relative gap of :data:`DIRECT_TOL`, warm from the search's
model -- and ``newton_pcg`` for the smooth losses and the squared hinge (whose fixed offset is the loss's best
constant, where one machine's ``svm_nystrom`` solves a bias).  Exact one-vs-one pairs (``krr_pairs``) run on one
machine only: a cluster solves one-vs-rest.
"""
from __future__ import annotations

from . import large

#: the relative duality gap krr_pcg holds the square loss's system to where one machine solves it directly
#: (krr_nystrom): krr_pcg's own default tolerance
DIRECT_TOL = 1e-4


def check_spec(spec, loss):
    """What ``solver: auto`` cannot choose for on a Dask cluster: a loss no route there solves (``(key path, why)``
    pairs, as :meth:`kopt.contract.components.Solver.check_spec` yields them)."""
    from kopt.nystrom import newton_loss

    if loss.name == "square" or newton_loss(loss):
        return
    ok = spec.solvers_accepting()
    yield ("model", "loss", "name"), (
        f"solver 'auto' on a Dask cluster solves the square loss (krr_pcg) and the smooth losses newton_pcg solves "
        f"(logistic, squared hinge, Huber), and loss {loss.name!r} is neither: name a solver that runs it there"
        + (f" ({', '.join(ok)})" if ok else "") + ", or run without a scheduler")


def plan(solver, problem, given, log):
    """The plan of ``solver`` (an :class:`.solver.AutoSolver`) for a problem on a Dask cluster: the one-machine
    search on the client's view of the rows (module docstring), its routes the cluster's."""
    from kopt.distributed.rows import on_client

    every = problem.n <= large.SEARCH_ROWS
    client = on_client(problem, every_row=every)
    parts = problem.partitions
    log(f"auto: on a Dask cluster of {len(parts.rows)} partitions: the search on this client ("
        + ("every one of the " if every else "a seeded sample of the ") + f"{problem.n:,} training rows fetched"
        + "), the solve on every row on the cluster")
    view = None if every else client.X  # the search may let the client's problem drop it
    solver.on_cluster = True
    try:
        out = solver.plan(client, given, log)
    finally:
        solver.on_cluster = False
    out.record["cluster"] = {"partitions": len(parts.rows), "search": "client",
                             "rows_fetched": int(problem.n if every else view.rows_fetched),
                             **({} if every else {"fetches": int(view.fetches)})}
    return out


def direct_start(found, route, lam):
    """The start of the cluster's route on the direct search's chosen system (``found``, on every training row):
    ``{"model": (C, w)}`` -- krr_pcg's from the square loss's solution at ``lam`` (krr_nystrom's model), newton_pcg's
    from the squared hinge's solution where the ladder scored it -- or None."""
    system = found.system
    if route == "krr_pcg":
        return {"model": (system.C, system.coef(system.solve(lam)))}
    if route == "newton_pcg" and found.hinge_start is not None:
        return {"model": (system.C, system.coef(found.hinge_start["v"]))}
    return None
