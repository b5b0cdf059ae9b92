"""The checks of scikit-learn's ``sklearn.utils.estimator_checks`` each estimator is expected to fail, and why."""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..contract.registry import registry
from ..models.model import OWN_PROBABILITIES
from .base import component

if TYPE_CHECKING:
    from .classifier import KernelClassifier
    from .gp import GPRegressor
    from .regressor import KernelRegressor

WEIGHT_CHECKS = ("check_sample_weights_not_an_array", "check_sample_weights_list", "check_sample_weights_pandas_series",
                  "check_sample_weights_shape",
                  "check_sample_weights_not_overwritten", "check_sample_weight_equivalence_on_dense_data",
                  "check_sample_weight_equivalence_on_sparse_data")
EQUIVALENCE_CHECKS = WEIGHT_CHECKS[-2:]
#: solvers whose weighted answer is a deterministic function of the weighted data (a direct solve)
DIRECT_SOLVERS = ("krr_exact",)


def expected_failed_checks(estimator: KernelClassifier | KernelRegressor | GPRegressor) -> dict[str, str]:
    """The checks of ``sklearn.utils.estimator_checks`` this estimator is expected to fail, with the reason.

    Pass it to ``check_estimator(est, expected_failed_checks=expected_failed_checks(est))`` or
    ``parametrize_with_checks(..., expected_failed_checks=expected_failed_checks)``.  The list
    depends on the parameters:

    * a solver without sample weights (gp, adsg, mrbcd, svrg, katyusha): every check that fits with
      ``sample_weight`` -- the estimator refuses the weights with a message naming the solvers
      that take them;
    * an iterative solver with weights (dsg, udsg, cdsg, joker): fitting with an integer weight is
      the same problem as repeating the row, but not the same run -- mini-batches and blocks are
      drawn from the rows, so the iterates differ (the answers agree within the stopping rule);
    * the median-heuristic bandwidth: it is computed from the rows, not their weights, so repeating
      a row changes it (a numeric bandwidth makes ``krr_exact`` pass the equivalence checks);
    * a margin loss's classifier (square, squared hinge, hinge, and ``auto``, which is one of the first two):
      ``check_classifiers_train`` asks the argmax of
      ``predict_proba`` to be ``predict``; the calibrated sigmoids' 0.5 is not the score's 0 (SVC's probabilities
      disagree with its predict the same way), so a row near the boundary can differ;
    * float32 features (the default): predictions on a subset or a permutation of the rows agree with
      the full batch to float32 rounding (about 1e-7 relative), not to the checks' 1e-7 absolute+relative
      bound on every row.

    Parameters
    ----------
    estimator : KernelClassifier, KernelRegressor or GPRegressor
        The estimator, with the parameters it will be checked with.

    Returns
    -------
    dict
        Check name -> the reason it is expected to fail.

    Examples
    --------
    >>> from kopt.sklearn import KernelClassifier, expected_failed_checks
    >>> sorted(expected_failed_checks(KernelClassifier(solver="krr_exact", bandwidth=1.0,
    ...                                                features={"dtype": "float64"})))
    ['check_classifiers_train']
    """
    reasons = {}
    solver = component("solver", getattr(estimator, "solver", None))
    if solver is not None and not solver.sample_weight:
        takes = ", ".join(n for n in registry().names("solver") if registry().get("solver", n).sample_weight)
        for name in WEIGHT_CHECKS:
            reasons[name] = f"solver {solver.name!r} does not accept sample weights (solvers that do: {takes})"
        if getattr(estimator, "_estimator_type", None) == "classifier" or hasattr(estimator, "class_weight"):
            reasons["check_class_weight_classifiers"] = (
                f"solver {solver.name!r} does not accept sample weights, which class_weight multiplies (solvers "
                f"that do: {takes})")
    elif solver is not None:
        if solver.name not in DIRECT_SOLVERS:
            for name in EQUIVALENCE_CHECKS:
                reasons[name] = (f"solver {solver.name!r} is iterative (mini-batches or blocks of rows): a repeated "
                                 "row is the same problem as an integer weight but not the same run -- the answers "
                                 "agree within the solver's stopping rule, not to 1e-7")
        elif getattr(estimator, "bandwidth", None) == "median":
            for name in EQUIVALENCE_CHECKS:
                reasons[name] = ("bandwidth='median' is computed from the rows, not their weights: repeating a row "
                                 "changes it (a numeric bandwidth passes)")
    loss = getattr(estimator, "loss", None)
    margin = loss == "auto" or component("loss", loss) is not None and loss not in OWN_PROBABILITIES  # auto: square
    if margin and _classifier(estimator):  # or the squared hinge, both margin losses
        reasons["check_classifiers_train"] = (
            f"loss {loss!r}: predict is the score's sign (its largest column), and predict_proba Platt sigmoids of "
            "the scores fitted on held-out rows, so on a row near the boundary the two can disagree, as "
            "SVC(probability=True)'s do (the probabilities' own argmax is not the trained classifier's)")
    features = estimator.features if isinstance(getattr(estimator, "features", None), dict) else {}
    if features.get("dtype", "float32") == "float32":
        for name in ("check_methods_subset_invariance", "check_methods_sample_order_invariance"):
            reasons[name] = ("float32 features: predictions on a subset or a permutation of the rows agree to "
                             "float32 rounding (~1e-7 relative), not always within the check's 1e-7 bound")
    return reasons



def _classifier(estimator):
    from sklearn.base import is_classifier

    return is_classifier(estimator)
