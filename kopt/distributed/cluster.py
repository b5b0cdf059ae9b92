"""The Dask client a distributed run talks to: ``local:N``, a scheduler address, or a given Client."""
from __future__ import annotations

from ..errors import ClusterError, KoptError
from ..spec.scheduler import LOCAL, check_address

#: seconds to wait for a scheduler address to answer (kopt solve --connect-timeout)
CONNECT_TIMEOUT = 10.0



def require_dask():
    """Import ``distributed``, or fail with the install command (exit status 2 on the CLI)."""
    try:
        import dask  # noqa: F401
        import distributed
    except ImportError:
        raise ClusterError("execution.engine 'dask' needs Dask: pip install 'kopt[dask]' "
                        "(dask[array,dataframe] and distributed)") from None
    return distributed


def describe(scheduler) -> str:
    """Words for where a run's scheduler is (reports and messages)."""
    if isinstance(scheduler, str):
        return scheduler
    return f"the given Client ({getattr(scheduler, 'scheduler', None) and scheduler.scheduler.address})"


class Cluster:
    """A connected client; closes what it opened (a LocalCluster it started, its own Client).

    ``scheduler``: ``"local"`` / ``"local:N"`` (a LocalCluster of N worker processes with one thread
    each; ``local`` uses one per CPU), ``"tcp://HOST:PORT"`` (an existing scheduler: dask-jobqueue,
    Kubernetes, ``dask scheduler``), or a ``distributed.Client`` (used as is, never closed here).
    ``connect_timeout``: seconds to wait for an address to answer (default :data:`CONNECT_TIMEOUT`); a
    scheduler that does not answer is a :class:`~kopt.errors.ClusterError` (exit status 2).
    """

    def __init__(self, scheduler, connect_timeout=None):
        distributed = require_dask()
        timeout = CONNECT_TIMEOUT if connect_timeout is None else float(connect_timeout)
        self.owned = []
        if isinstance(scheduler, distributed.Client):
            self.client = scheduler
            return
        scheduler = scheduler or "local"
        problem = check_address(scheduler)
        if problem:
            raise KoptError(f"execution.scheduler: {problem}")
        m = LOCAL.match(scheduler)
        try:
            if m:
                n = int(m.group(1)) if m.group(1) else None
                cluster = distributed.LocalCluster(n_workers=n, processes=True, threads_per_worker=1,
                                                   dashboard_address=None)
                self.owned.append(cluster)
                self.client = distributed.Client(cluster)
            else:
                self.client = distributed.Client(scheduler, timeout=f"{timeout}s")
        except (OSError, TimeoutError) as exc:
            self.close()
            raise ClusterError(f"execution.scheduler {scheduler!r}: cannot connect ({exc}); is the scheduler "
                               "running and reachable from here? (--connect-timeout sets the wait, "
                               f"{timeout:g} s now)") from None
        self.owned.insert(0, self.client)

    @property
    def n_workers(self) -> int:
        n = len(self.client.nthreads())
        if n == 0:  # a cluster still starting (or replacing) its workers
            try:
                self.client.wait_for_workers(1, timeout=60)
            except TimeoutError:
                raise ClusterError("the Dask cluster has no workers (waited 60 s for one)") from None
            n = len(self.client.nthreads())
        return n

    def close(self):
        for obj in self.owned:
            obj.close()
        self.owned = []

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
