"""Numerics shared by every solver: one code path on NumPy and CuPy.

* :mod:`.backend` -- the array namespace (the only module that imports CuPy);
* :mod:`.linalg` -- Cholesky and triangular solves;  :mod:`.objectives` -- primal, dual, gap;  :mod:`.prox`;
* :mod:`.threads` -- the core count, the worker pool, BLAS limits, fixed reduction parts;
* :mod:`.rows` -- dense and CSR row access;  :mod:`.features` -- seeded random-feature blocks;
  :mod:`.bound_features` -- a feature map bound to fixed rows;
* :mod:`.memory` -- what a solve will hold and what the process may take;
* :mod:`.metrics` -- holdout metrics by target;  :mod:`.splits` -- the seeded permutation splits cut.
"""
