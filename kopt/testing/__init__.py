"""Check suites a plugin author runs on their own components.

``check_loss``, ``check_kernel``, ``check_regularizer`` and ``check_solver`` run every check of a kind; the single
checks and the samplers they use are public too, for a test that wants one property.

Each check raises ``AssertionError`` with a message naming the component, the violated
property and the first offending point.
"""
from ._samples import default_instance, sample_duals, sample_labels, sample_scores
from ._variants import KERNEL_VALUES, LOSS_VALUES, at_other_values
from .data import solver_check_data  # noqa: E402
from .duality import check_strong_duality, check_weak_duality, gaussian_gram
from .kernels import (
    KERNEL_CHECKS,
    check_domain,
    check_dsg_gradient,
    check_engine,
    check_exact,
    check_kernel,
    check_psd,
    check_regeneration,
    check_unbiased,
    kernel_instance,
)
from .losses import (
    CHECKS,
    check_biconjugate,
    check_bounds,
    check_conj_domain,
    check_conj_edges,
    check_conj_gradients,
    check_convexity,
    check_dtypes,
    check_fenchel_young,
    check_gradients,
    check_interface,
    check_labels_validation,
    check_loss,
    check_prox,
)
from .regularizers import (
    check_moreau_decomposition,
    check_moreau_envelope,
    check_prox_argmin,
    check_regularizer,
    check_strong_convexity,
)
from .solver_contract import SOLVER_CHECKS, SolverCheck, check_solver, state_problems  # noqa: E402
from .solvers import KeepStates, StopAt, check_resume, interrupt_at, solver_for  # noqa: E402

__all__ = [
    "default_instance", "sample_duals", "sample_labels", "sample_scores", "KERNEL_VALUES", "LOSS_VALUES",
    "at_other_values", "solver_check_data", "check_strong_duality", "check_weak_duality", "gaussian_gram",
    "KERNEL_CHECKS", "check_domain", "check_dsg_gradient", "check_engine", "check_exact", "check_kernel",
    "check_psd", "check_regeneration", "check_unbiased", "kernel_instance", "CHECKS", "check_biconjugate",
    "check_bounds", "check_conj_domain", "check_conj_edges", "check_conj_gradients", "check_convexity",
    "check_dtypes", "check_fenchel_young", "check_gradients", "check_interface", "check_labels_validation",
    "check_loss", "check_prox", "check_moreau_decomposition", "check_moreau_envelope", "check_prox_argmin",
    "check_regularizer", "check_strong_convexity", "SOLVER_CHECKS", "SolverCheck", "check_solver", "state_problems",
    "KeepStates", "StopAt", "check_resume", "interrupt_at", "solver_for",
]
