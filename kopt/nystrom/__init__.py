"""The Nyström service: centers, the whitened system, the preconditioned CG and the kernel passes.

A model f = k(·, C) w on M centers C drawn from the training rows.  Every built-in Nyström solver (``krr_nystrom``,
``krr_pcg``, ``krr_pairs``, ``svm_nystrom``, ``solver: auto``) is made of these pieces, and a third-party solver
uses the same ones (docs/plugin-guide.md, "Solvers on Nyström centers"):

* centers -- :func:`choose_centers` (seeded, from the spec's seed), :func:`center_basis` (the pivoted Cholesky
  R = K_CC = UᵀU on the kept centers), :func:`kept_centers`, :func:`dense_centers`, :class:`NystromRows` (the pass
  API of :mod:`kopt.numerics.bound_features` over k(X, C));
* the direct system -- :class:`NystromSystem` (T + λI, T = U⁻ᵀ(A/n)U⁻¹, one Cholesky per λ), :func:`system_plan`,
  :func:`target_offset`, :func:`residual_pass`;
* the iterative system -- :class:`NystromCG` (preconditioned conjugate gradients, one pass over the rows a step;
  U and its preconditioner share one M × M buffer, :class:`CenterFactors`, read U by :func:`upper_times`; the
  preconditioner estimates T from every drawn center where the basis kept far fewer, :func:`center_factors`,
  :func:`drawn_gram`)
  and :class:`RowPass` (k(X_chunk, C) made on the fly: K p and Kᵀ(K p) in one pass);
* the squared hinge -- :class:`HingeNewton` (Newton on the margin rows' system);
* any smooth loss -- :class:`SmoothNewton` and :class:`NewtonRows` (``kopt.nystrom.smooth``: Newton steps, each
  system by :class:`NystromCG` on rows weighed by the loss's curvature, :meth:`NystromCG.weighted_system`), and
  :func:`best_offset` (the loss's best constant, the model's fixed offset), :func:`newton_loss` (the losses it
  solves), :func:`estimate_positions` (the rows its preconditioner is estimated from);
* the solver base and its certificate -- :class:`NystromSolver`, :func:`certificate`;
* ``kopt.nystrom.cache`` -- systems shared by fits that differ only in λ.
"""
from .centers import CENTER_TOLERANCE, NystromRows, center_basis, choose_centers
from .cg import NystromCG, center_factors
from .factors import CenterFactors, drawn_gram, upper_times
from .newton import HingeNewton
from .passes import RowPass
from .smooth import NewtonRows, SmoothNewton, best_offset, estimate_positions, newton_loss
from .solver import NystromSolver, certificate, dense_centers
from .system import (
    CHUNK_ENTRIES,
    SCORE_ENTRIES,
    NystromSystem,
    blas_held,
    kept_centers,
    kernel_chunks,
    residual_pass,
    row_chunks,
    symmetric_from_lower,
    system_plan,
    target_offset,
)

__all__ = [
    "CENTER_TOLERANCE", "CHUNK_ENTRIES", "CenterFactors", "SCORE_ENTRIES", "HingeNewton", "NystromCG", "NystromRows", "NystromSolver",
    "NystromSystem", "RowPass", "blas_held", "center_basis", "certificate", "choose_centers", "dense_centers",
    "kept_centers", "kernel_chunks", "residual_pass", "row_chunks", "symmetric_from_lower", "system_plan",
    "target_offset", "upper_times", "center_factors", "drawn_gram", "NewtonRows", "SmoothNewton", "best_offset", "estimate_positions", "newton_loss",
]
