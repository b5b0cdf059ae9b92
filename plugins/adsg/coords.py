"""From a :class:`kopt.contract.problem.Problem` to ADSG's coordinates: design, constants, model.

A kernel that declares ``linear_input_features`` (``linear``) means the
coordinates are the input features (a scipy CSR matrix for LIBSVM data, or a
dense array); any other kernel with a sampler means random features, the
coefficients of ``problem.feature_map()``.
"""
from __future__ import annotations

import math

import numpy as np

from kopt.errors import DataError
from kopt.models.predictors import FeatureExpansion, LinearPredictor
from kopt.numerics import rows as _rows
from kopt.numerics.backend import to_numpy

from .design import DenseDesign, FeatureDesign, SparseDesign, block_smoothness, materialize_features

#: blocks of input features when ``solver.blocks`` is not set (at most D)
DEFAULT_BLOCKS = 8
#: rows used to estimate L_B when random features are regenerated per mini-batch
SMOOTHNESS_ROWS = 4096


def uses_input_features(kernel) -> bool:
    """Whether the coordinates of ``kernel`` (a class or an instance) are the input features."""
    return bool(kernel.linear_input_features)


def build_design(problem, *, blocks=None, single_block=False, feature_memory_mb=512.0, threads=None):
    """The design of ``problem`` and its feature map (None for input features).

    ``blocks``: coordinate blocks of input features (None: min(D, 8)); ``single_block`` gives
    one block of all coordinates (plain SVRG); ``threads``: the feature map's worker threads.
    Raises DataError for block counts the data cannot have.
    """
    X = problem.X
    xp = problem.xp
    if uses_input_features(problem.kernel):
        D = X.shape[1]
        B = 1 if single_block else (blocks or min(D, DEFAULT_BLOCKS))
        if B > D:
            raise DataError(f"solver.blocks = {B} is larger than the number of input features ({D}); "
                            f"use at most {D} blocks")
        if _rows.is_sparse(X):
            return SparseDesign(X, B), None
        return DenseDesign(xp.asarray(X), B, xp=xp, kind="input features (dense)"), None
    X = _rows.on_backend(X, xp)  # the feature engine densifies sparse rows chunk by chunk
    fmap = problem.feature_map(cache_blocks="all", threads=threads)  # ω of every block stays: M (d + 1) numbers
    D = fmap.n_blocks * fmap.block_size
    edges = np.array([0, D]) if single_block else np.arange(fmap.n_blocks + 1) * fmap.block_size
    nbytes = problem.n * D * problem.dtype.itemsize
    if nbytes <= feature_memory_mb * 2**20:
        A = materialize_features(fmap, X, xp, problem.dtype)
        return DenseDesign(A, edges=edges, xp=xp, kind="random features (materialised)"), fmap
    design = FeatureDesign(fmap, X, xp)
    design.edges = edges
    return design, fmap


def smoothness_constants(design, loss, rng):
    """``(L, L_B)``: every f_i is L-smooth, F is L_B-smooth along each block (Shen et al. 2017, Asm. I–II).

    L = ℓ''_max · max_i ‖a_i‖², L_B = ℓ''_max · max_l λ_max(A_lᵀ A_l / n), with
    ℓ''_max = ``loss.smoothness()``; λ_max by a power iteration (on a row
    subsample when the random features are regenerated per mini-batch).
    """
    c = loss.smoothness()
    L = c * float(design.row_norms_sq().max())
    target = design
    if isinstance(design, FeatureDesign):
        rows = np.arange(design.n) if design.n <= SMOOTHNESS_ROWS else rng.choice(design.n, SMOOTHNESS_ROWS, replace=False)
        target = design.subsample(np.sort(rows))
    L_B = c * block_smoothness(target, rng)[0]
    if not (L > 0 and math.isfinite(L)):
        raise DataError("every training row is zero (or not finite): the problem has no smoothness constant; "
                        "check the data")
    return L, max(L_B, 0.0)


def predictor(problem, design, fmap, x):
    """The model of coefficients ``x``: LinearPredictor (input features) or FeatureExpansion."""
    w = to_numpy(x).astype(np.float64)
    if fmap is None:
        return LinearPredictor({"w": w, "b": np.zeros(())}, {})
    coef = w.reshape(fmap.n_blocks, fmap.block_size)
    meta = {"scale": 1.0 / math.sqrt(w.size), "seed": fmap.seed, "block_size": fmap.block_size,
            "dtype": str(fmap.dtype)}
    return FeatureExpansion({"coef": coef, "blocks": np.arange(fmap.n_blocks)}, meta)


def scores(X, fmap, x, xp):
    """Decision values of coefficients ``x`` on standardized rows ``X`` (dense on ``xp``, or CSR)."""
    if fmap is None:
        if _rows.is_sparse(X):
            return np.asarray(X @ to_numpy(x))
        return xp.asarray(X) @ x.astype(X.dtype)
    coef = x.reshape(fmap.n_blocks, fmap.block_size)
    return fmap.predict(_rows.on_backend(X, xp), coef) / math.sqrt(x.size)
