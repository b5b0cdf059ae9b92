"""The seeded permutation of the training rows that every split cuts.

A validation split holds out its head and folds are its consecutive parts (:func:`kopt.running.validation.make_splits`);
Nyström centers are drawn from its tail first (:func:`kopt.nystrom.center_order`), so the rows a validation
split holds out are the last to become centers.
"""
from __future__ import annotations

import numpy as np

#: the stream of the permutation, beside the spec's seed ("tune", from when only kopt tune split rows)
SPLIT_STREAM = 0x74756E65


def split_permutation(n: int, seed: int) -> np.ndarray:
    """The seeded permutation of ``n`` rows (the spec's ``seed``)."""
    return np.random.default_rng([int(seed), SPLIT_STREAM]).permutation(n)
