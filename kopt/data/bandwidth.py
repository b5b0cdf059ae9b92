"""The median heuristic for kernel bandwidths."""
from __future__ import annotations

import numpy as np


def median_distance(X, metric="l2", subsample=2000, seed=0):
    """Median pairwise distance (``l2`` or ``l1``) over a seeded subsample of rows."""
    n = X.shape[0]
    rng = np.random.default_rng([int(seed), 0x6D6564])
    idx = rng.choice(n, size=min(n, int(subsample)), replace=False) if n > subsample else np.arange(n)
    S = X[np.sort(idx)]
    S = np.asarray(S.todense() if hasattr(S, "todense") else S, dtype=np.float64)
    if metric == "l1":
        from scipy.spatial.distance import pdist

        d = pdist(S, "cityblock")
    else:
        sq = np.einsum("ij,ij->i", S, S)
        G = sq[:, None] + sq[None, :] - 2.0 * (S @ S.T)
        iu = np.triu_indices(S.shape[0], k=1)
        d = np.sqrt(np.maximum(G[iu], 0.0))
    d = d[d > 0]
    if d.size == 0:
        return 1.0
    return float(np.median(d))
