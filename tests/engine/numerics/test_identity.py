"""kopt.numerics.identity: the content keys of caches that are never stale (its docstrings' examples, and what a key
must tell apart)."""
import doctest

import numpy as np
import scipy.sparse as sp

from kopt.contract.registry import registry
from kopt.numerics import identity
from kopt.numerics.identity import fingerprint, kernel_identity


def test_the_examples_run():
    results = doctest.testmod(identity)
    assert results.attempted >= 6 and results.failed == 0


def test_the_hash_follows_the_values_dtype_shape_and_kind():
    a = np.arange(12.0).reshape(3, 4)
    assert fingerprint(a) == fingerprint(np.array(a, order="F"))  # the values, not their memory layout
    changed = a.copy()
    changed[1, 2] += 1e-12
    others = [changed, a.astype(np.float32), a.reshape(4, 3), sp.csr_matrix(a), None]
    assert len({fingerprint(a), *map(fingerprint, others)}) == 1 + len(others)


def test_the_kernel_identity_follows_the_class_and_every_option():
    gaussian, laplacian = registry().get("kernel", "gaussian"), registry().get("kernel", "laplacian")
    assert kernel_identity(gaussian(bandwidth=1.5)) == kernel_identity(gaussian(bandwidth=1.5))
    assert kernel_identity(gaussian(bandwidth=1.5)) != kernel_identity(gaussian(bandwidth=1.5000001))
    assert kernel_identity(gaussian(bandwidth=1.5)) != kernel_identity(laplacian(bandwidth=1.5))
