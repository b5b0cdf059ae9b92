"""Running a spec on a Dask cluster (the ``kopt[dask]`` extra).

Nothing here is imported by ``import kopt``: :func:`kopt.solve` imports this package only for a spec
whose ``execution.engine`` is ``dask`` (``kopt solve SPEC --scheduler ADDRESS``).

* :mod:`.cluster` -- the connection: ``local:N`` (a LocalCluster of N worker processes), a
  scheduler address, or a ``distributed.Client`` given from Python.
* :mod:`.partitions` -- the training and test rows as partitions held by the workers, read by them
  (spec files and presets) or taken from a ``dask.array``/``dask.dataframe``; tasks run against
  them with :meth:`Partitions.map`; what a solver keeps next to a partition derives from :class:`Held`,
  and the problem its tasks start from is :func:`worker_template`'s (the shape only in place of the partitions).
* :mod:`.assemble` -- the distributed counterpart of :func:`kopt.running.assemble.assemble`: the preprocessing
  statistics and the median bandwidth computed from per-partition pieces, the :class:`kopt.contract.problem.Problem`
  whose ``partitions`` the distributed solvers read, and the final holdout metrics.

A solver runs distributed when its class sets ``distributed = True`` and its state reads
``problem.partitions`` (Joker's features mode: ``kopt_plugins.joker.rounds``; the DSG family:
``kopt_plugins.dsg.distributed``).
"""
