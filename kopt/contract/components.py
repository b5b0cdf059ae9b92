"""The base classes every component plugin subclasses.

A component is a class with a ``name``, a JSON-schema fragment for its
parameters (``params``) and capability flags.  The spec engine composes the
fragments into the spec schema, so a third-party component is validated
exactly like a built-in one.  Instances are built from the validated spec
section: ``Cls(**params)`` where ``params`` excludes ``name``.

Numeric methods take and return arrays of one namespace (NumPy or CuPy); get
it with ``kopt.numerics.backend.get_namespace(*arrays)``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, ClassVar, Iterable

import numpy as np

from .options import build_options
from .result import SolverOutput

if TYPE_CHECKING:  # the layers above (the run context, the spec, the data) are named in the docstrings, not imported
    from ..numerics.memory import Sizes
    from .problem import Problem

# JSON-schema fragments shared by components.
POSITIVE = {"type": "number", "exclusiveMinimum": 0}
NONNEGATIVE = {"type": "number", "minimum": 0}
BANDWIDTH_PARAMS = {
    "bandwidth": {
        "description": "kernel length scale, or a rule computed on the training rows: 'median' (the median "
                       "pairwise distance), 'scale' (scikit-learn's gamma='scale', 1/(d Var X); docs/kernels.md) or "
                       "'auto' (solver auto searches factors of the scale rule on a validation split; every other "
                       "solver takes the scale rule)",
        "oneOf": [POSITIVE, {"enum": ["median", "scale", "auto"]}],
        "default": "auto",  # chosen by measurement: docs/design/preprocessing-and-bandwidth.md
    },
    "bandwidth_factor": {
        "description": "multiplier applied to the bandwidth of a rule ('median' or 'scale')",
        **POSITIVE,
        "default": 1.0,
    },
    "bandwidth_subsample": {
        "description": "rows sampled (seeded) for the bandwidth rule",
        "type": "integer",
        "minimum": 2,
        "default": 2000,
    },
}


class Component:
    """Common base of the components: a name, a parameter schema and a one-line summary.

    A subclass sets the class attributes below; the spec engine validates a spec section against :meth:`schema` and
    builds the component as ``Cls(**params)``.

    Parameters
    ----------
    **params
        The spec section's parameters (``name`` excluded), validated against ``params``; defaults are filled in.

    Attributes
    ----------
    kind : str
        ``"loss"``, ``"kernel"``, ``"regularizer"``, ``"solver"`` or ``"dataset"`` (set by each base class).
    name : str
        The name a spec uses (``model.loss.name: huber``).
    summary : str
        One line for ``kopt plugins``.
    params : dict
        JSON-schema ``properties`` of the parameters (``name`` excluded), with ``default`` and ``description``.
    required : tuple of str
        Parameters that must be given.
    options : OptionsBase
        The instance's parameters as a frozen dataclass, defaults filled in (``lambda`` is ``options.lambda_``).

    Examples
    --------
    >>> from kopt.contract.components import Regularizer
    >>> class Ridge(Regularizer):
    ...     name = "my_ridge"
    ...     summary = "squared L2 norm"
    >>> Ridge(**{"lambda": 0.5}).options.lambda_
    0.5
    >>> Ridge.schema()["required"]
    ['name']
    """

    kind: ClassVar[str] = "component"
    name: ClassVar[str] = ""
    summary: ClassVar[str] = ""
    #: JSON-schema ``properties`` of the parameters (``name`` excluded).
    params: ClassVar[dict] = {}
    #: parameters that must be given.
    required: ClassVar[tuple] = ()

    def __init__(self, **params):
        #: the parameters as a typed, frozen object (:mod:`kopt.contract.options`), schema defaults filled in
        self.options = build_options(type(self), params)

    @classmethod
    def schema(cls) -> dict:
        """The full JSON schema of this component's spec section."""
        return {
            "type": "object",
            "properties": {"name": {"const": cls.name}, **cls.params},
            "required": ["name", *cls.required],
            "additionalProperties": False,
        }

    @classmethod
    def supports(cls) -> str:
        """What ``kopt plugins`` prints in its 'supports' column."""
        return ""

    def __repr__(self):
        args = ", ".join(f"{k}={v!r}" for k, v in self.options.as_dict().items())
        return f"{type(self).__name__}({args})"


class Loss(Component):
    """A loss ℓ(y, u) of the prediction u, with its Fenchel conjugate in u.

    The conjugate is ``conj(v, y) = sup_u v*u - ℓ(y, u)``, finite exactly on the box ``conj_box(y)``.  All methods
    are elementwise over ``u`` (or ``v``) and ``y`` and return arrays of their namespace; for a multiclass loss ``u``
    is ``(n, C)`` and ``y`` holds class ids.  A solver calls only the methods its flags ask for: the primal ones
    (``value``, ``grad``, ``curvature``) always, the conjugate ones where ``has_conjugate``.
    :doc:`/docs/losses` gives the conventions.

    Attributes
    ----------
    target : str
        The labels: ``"real"``, ``"binary"`` (-1/+1), ``"multiclass"`` (0..C-1), ``"unlabeled"`` (novelty
        detection) or ``"two_sample"`` (density ratios: 0/1 marks the sample a row comes from).
    smooth : bool
        Whether ℓ is differentiable with a Lipschitz gradient in u.
    has_conjugate : bool
        Whether the conjugate methods are implemented (the dual solvers need them).
    conj_sum_zero : bool
        The conjugate's domain is the box intersected with Σ_c v_c = 0 (softmax).
    has_offset : bool
        The loss has an offset τ that travels in the label slot and that the solver optimizes next to f
        (novelty detection); it then implements :meth:`offset_grad`.
    has_balance_weights : bool
        The loss weights its rows (density ratios); it then implements :meth:`balance_weights`.

    Examples
    --------
    A loss plugin implements the primal methods, and the conjugate ones for the dual solvers:

    >>> import numpy as np
    >>> from kopt.contract.components import Loss
    >>> class HalfSquare(Loss):
    ...     name = "half_square"
    ...     def value(self, u, y):
    ...         return 0.5 * (u - y) ** 2
    ...     def grad(self, u, y):
    ...         return u - y
    ...     def curvature(self, u, y):
    ...         return np.ones_like(u)
    >>> loss = HalfSquare()
    >>> loss.value(np.array([0.0, 3.0]), np.array([1.0, 1.0]))
    array([0.5, 2. ])
    >>> loss.grad(np.array([0.0, 3.0]), np.array([1.0, 1.0]))
    array([-1.,  2.])
    """

    kind = "loss"
    #: label type: "real", "binary" ({-1,+1}), "multiclass" (0..C-1),
    #: "unlabeled" (novelty detection), "two_sample" (density ratio: y in {0,1}
    #: marks which sample a row comes from).
    target: ClassVar[str] = "real"
    smooth: ClassVar[bool] = True
    has_conjugate: ClassVar[bool] = False
    #: the conjugate's domain is the box intersected with Σ_c v_c = 0 (e.g. softmax)
    conj_sum_zero: ClassVar[bool] = False
    #: the loss has an offset τ that travels in the label slot and that the solver optimises
    #: next to f (``unlabeled`` novelty detection); it then implements :meth:`offset_grad`
    has_offset: ClassVar[bool] = False
    #: the loss weights its rows (``two_sample`` density ratios); it then implements :meth:`balance_weights`
    has_balance_weights: ClassVar[bool] = False

    def n_outputs(self, n_classes: int) -> int:
        """The number of scores per row for ``n_classes`` classes: 1, or C for a multiclass loss."""
        return 1

    def check_labels(self, y: np.ndarray, *, source: str = "labels") -> None:
        """Raise :class:`kopt.errors.DataError` unless ``y`` is encoded for this loss's target.

        Called by the core after label encoding.  binary: -1/+1; multiclass: integer
        class ids >= 0; two_sample: 0/1; real: finite values; unlabeled: anything (the
        slot may carry the loss's offset).  Override to add loss-specific checks.
        """
        import numpy as np

        from ..errors import DataError
        from ..numerics.backend import to_numpy

        if self.target == "unlabeled" or y is None:
            return
        y = to_numpy(y)
        if self.target == "real":
            bad, what = ~np.isfinite(y.astype(np.float64)), "finite real values"
        elif self.target == "binary":
            bad, what = (y != 1) & (y != -1), "labels encoded as -1/+1"
        elif self.target == "two_sample":
            bad, what = (y != 0) & (y != 1), "sample indicators 0/1"
        else:  # multiclass
            bad, what = (y < 0) | (y != np.round(y)), "integer class ids 0..C-1"
        if np.any(bad):
            first = y[bad].ravel()[0]
            raise DataError(f"{source}: loss {self.name!r} needs {what}; got {first!r} ({int(bad.sum())} bad values)")

    # primal
    def value(self, u: np.ndarray, y: np.ndarray) -> np.ndarray:
        """ℓ(y, u), elementwise."""
        raise NotImplementedError

    def grad(self, u: np.ndarray, y: np.ndarray) -> np.ndarray:
        """∂ℓ/∂u at ``u``, elementwise (a subgradient where ℓ is not differentiable)."""
        raise NotImplementedError

    def curvature(self, u: np.ndarray, y: np.ndarray) -> np.ndarray:
        """∂²ℓ/∂u² at ``u``, elementwise (a generalized second derivative where ℓ has none)."""
        raise NotImplementedError

    def grad_bound(self) -> float | None:
        """A bound M on ``abs(grad(u, y))`` where one exists (CDSG needs it), else None."""
        return None

    def smoothness(self) -> float | None:
        """The Lipschitz constant of ℓ' in u (ADSG needs it), None if nonsmooth."""
        return None

    # conjugate
    def conj(self, v: np.ndarray, y: np.ndarray) -> np.ndarray:
        """The conjugate ℓ*(y, v) = sup_u v u − ℓ(y, u), elementwise; +inf outside :meth:`conj_box`."""
        raise NotImplementedError

    def conj_grad(self, v: np.ndarray, y: np.ndarray) -> np.ndarray:
        """∂ℓ*/∂v at ``v``, elementwise."""
        raise NotImplementedError

    def conj_curvature(self, v: np.ndarray, y: np.ndarray) -> np.ndarray:
        """∂²ℓ*/∂v² at ``v``, elementwise."""
        raise NotImplementedError

    def conj_box(self, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(lo, hi)`` arrays (may hold ±inf) bounding the domain of ``conj(·, y)``."""
        raise NotImplementedError

    def prox(self, u: np.ndarray, y: np.ndarray, step: float) -> np.ndarray:
        """argmin_z ℓ(y, z) + (z - u)²/(2 step).

        Raise NotImplementedError when there is none; ``kopt.numerics.prox.newton_prox`` gives one
        for any loss with ``grad`` and ``curvature``.
        """
        raise NotImplementedError

    # optional extras, declared by a flag
    def offset_grad(self, u: np.ndarray, tau: np.ndarray) -> np.ndarray:
        """∂ℓ/∂τ at scores ``u`` for the offset ``tau`` (only when :attr:`has_offset`).

        The offset travels in the label slot: ``value(u, tau)`` and ``grad(u, tau)``; a solver
        steps τ ← τ − γ · mean(offset_grad(u, τ)) and adds −τ to the decision function.
        """
        raise NotImplementedError(f"loss {self.name!r} has no offset (has_offset is False)")

    def balance_weights(self, y: np.ndarray) -> np.ndarray:
        """Per-row weights of the training rows with labels ``y`` (only when :attr:`has_balance_weights`).

        A solver multiplies every row's loss and gradient by its weight.  Raise ``ValueError``
        for labels the weights cannot be formed from.
        """
        raise NotImplementedError(f"loss {self.name!r} has no row weights (has_balance_weights is False)")

    @classmethod
    def supports(cls) -> str:
        """What ``kopt plugins`` prints in its 'supports' column."""
        parts = [cls.target, "smooth" if cls.smooth else "nonsmooth"]
        if cls.has_conjugate:
            parts.append("conjugate")
        return ", ".join(parts)


class Kernel(Component):
    """A positive-definite kernel with its exact form and a random-feature sampler.

    ``sample(rng, n_in, count)`` draws the parameters of ``count`` features on the host (NumPy);
    ``features(X, params)`` evaluates them, unscaled: E_ω[φ_ω(x) φ_ω(x')] = k(x, x') for every single feature.
    The feature engine (``kopt.numerics.features.FeatureMap``) does the blocking, seeding, scaling and threading.

    Attributes
    ----------
    has_features : bool
        Whether the kernel has a random-feature sampler (:meth:`sample`, :meth:`features`).
    bandwidth_metric : str or None
        The distance the ``median`` bandwidth rule measures: ``"l2"``, ``"l1"``, or None for a kernel without a
        bandwidth.
    input_domain : str
        The inputs the kernel accepts: ``"real"``, or a restriction such as ``"nonnegative"``.
    linear_input_features : bool
        k(x, x') = xᵀx' on the raw inputs: solvers working in coordinates use the input features themselves.
    sparse_rows : bool
        :meth:`exact` takes SciPy CSR rows ``X`` (``Y`` dense) as they are, at the cost of their nonzeros.

    Examples
    --------
    The built-in Gaussian kernel, exact and by random features:

    >>> import numpy as np
    >>> from kopt.contract.registry import registry
    >>> Gaussian = registry().get("kernel", "gaussian")
    >>> kernel = Gaussian(bandwidth=1.0)
    >>> X = np.array([[0.0, 0.0], [1.0, 0.0]])
    >>> kernel.exact(X, X).round(4)
    array([[1.    , 0.6065],
           [0.6065, 1.    ]])
    >>> params = kernel.sample(np.random.default_rng(0), 2, 4000)
    >>> Z = kernel.features(X, params)
    >>> float(abs((Z[0] * Z[1]).mean() - 0.6065)) < 0.05
    True
    """

    kind = "kernel"
    has_features: ClassVar[bool] = True
    #: distance the median heuristic measures: "l2", "l1" or None (no bandwidth)
    bandwidth_metric: ClassVar[str | None] = "l2"
    #: inputs the kernel accepts: "real", or a restriction such as "nonnegative"
    input_domain: ClassVar[str] = "real"
    #: k(x, x') = xᵀx' on the raw inputs: solvers working in coordinates use the input features themselves
    linear_input_features: ClassVar[bool] = False
    #: :meth:`exact` takes scipy CSR rows X (Y dense) as they are: text's wide sparse rows cost their nonzeros, not
    #: their width (callers densify X otherwise: ``kopt.numerics.rows.kernel_rows``)
    sparse_rows: ClassVar[bool] = False

    def check_input(self, X: np.ndarray) -> None:
        """Raise :class:`kopt.DataError` if ``X`` lies outside :attr:`input_domain` (default: accept)."""

    def exact(self, X: np.ndarray, Y: np.ndarray) -> np.ndarray:
        """The kernel matrix k(X, Y), ``(len(X), len(Y))``."""
        raise NotImplementedError

    def bind(self, Y: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
        """``k(·, Y)`` for a fixed second argument: a callable ``f(X) = exact(X, Y)`` for the row chunks of a pass
        against the same centers.  A kernel may do once here what does not depend on X (the Gaussian's scaled,
        augmented centers, costly to recompute per chunk).  Default: ``exact``."""
        return lambda X: self.exact(X, Y)

    def diag(self, X: np.ndarray) -> np.ndarray:
        """The diagonal k(x, x) of the rows of ``X``, ``(len(X),)``."""
        raise NotImplementedError

    def sample(self, rng: np.random.Generator, n_in: int, count: int) -> dict:
        """The parameters of ``count`` random features on ``n_in`` inputs, drawn from the NumPy generator ``rng``."""
        raise NotImplementedError

    def features(self, X: np.ndarray, params: dict, out: np.ndarray | None = None) -> np.ndarray:
        """The unscaled features of the rows of ``X`` for ``params`` (what :meth:`sample` drew), ``(len(X), count)``;
        written into ``out`` when given."""
        raise NotImplementedError

    # the feature engine's fast path (optional: the defaults fall back on ``features``)
    def prepare_rows(self, X: np.ndarray) -> np.ndarray:
        """Per-row transform computed once per row chunk and shared by every feature block (default: ``X``)."""
        return X

    def raw_features(self, P: np.ndarray, params: dict, out: np.ndarray | None = None) -> tuple[np.ndarray | tuple, float]:
        """``(Z, scale)``: the block's features are ``scale * Z`` for rows ``P = prepare_rows(X)``.

        ``Z`` is an ``(n, F)`` array or a tuple of C-contiguous pieces laid side by side; the
        engine folds ``scale`` into its reductions.  Default: ``(features(P, params, out), 1.0)``.
        """
        return self.features(P, params, out=out), 1.0

    @classmethod
    def supports(cls) -> str:
        """What ``kopt plugins`` prints in its 'supports' column."""
        return "exact, random features" if cls.has_features else "exact only"


class Regularizer(Component):
    """A block-separable penalty P(w) with its prox; ``lam`` is its weight λ.

    Its spec section is ``model.regularizer``; every regularizer takes ``lambda`` (a number ≥ 0, or ``auto``).

    Attributes
    ----------
    lam : float
        The weight λ (``options.lambda_``).

    Examples
    --------
    >>> import numpy as np
    >>> from kopt.contract.registry import registry
    >>> l2 = registry().get("regularizer", "l2")(**{"lambda": 0.5})
    >>> l2.lam, float(l2.value(np.array([1.0, 2.0])))
    (0.5, 1.25)
    >>> l2.prox(np.array([1.0, 2.0]), 2.0)
    array([0.5, 1. ])
    """

    kind = "regularizer"
    params = {"lambda": {
        "anyOf": [NONNEGATIVE, {"const": "auto"}], "default": "auto",  # chosen by measurement: docs/design/lambda-auto.md
        "description": "regularization weight λ (kopt convention: λ/2‖f‖² + mean loss), or auto: chosen before the "
                       "solve on a seeded 20% validation split of the training rows along a warm-started λ path "
                       "(1e-2 ... 1e-7; docs/defaults.md); unlabeled and two-sample losses, the gp form and Dask "
                       "runs, which cannot use auto, get 1e-4 when lambda is left out"}}

    @property
    def lam(self) -> float:
        """The weight λ (``options.lambda_``) as a float."""
        if self.options.lambda_ == "auto":
            from ..errors import SpecError

            raise SpecError("model.regularizer.lambda is auto: it is chosen on a validation split before the solve, "
                            "and this step needs a number", source="model.regularizer.lambda")
        return float(self.options.lambda_)

    def value(self, w: np.ndarray) -> float:
        """The penalty λ P(w)."""
        raise NotImplementedError

    def prox(self, w: np.ndarray, step: float) -> np.ndarray:
        """argmin_z λ P(z) + ‖z - w‖²/(2 step), blockwise."""
        raise NotImplementedError

    def strong_convexity(self) -> float:
        """The strong-convexity constant of λ P (λ for the squared L2 norm; 0 where it has none)."""
        raise NotImplementedError

    @classmethod
    def supports(cls) -> str:
        """What ``kopt plugins`` prints in its 'supports' column."""
        return "value, block prox, strong-convexity constant"


class Solver(Component):
    """A solver: its options are its ``params``; ``run(problem, run)`` returns a :class:`~kopt.contract.result.SolverOutput`.

    The class attributes declare what the solver handles; the spec engine refuses a spec that asks for anything else
    before any data is read.  Most solvers subclass :class:`kopt.contract.iterative.IterativeSolver`, which owns the
    loop, the stopping rule, checkpoints and progress; the solvers on Nyström centers subclass
    :class:`kopt.nystrom.NystromSolver`.

    Attributes
    ----------
    forms : tuple of str
        The ``model.form`` values it solves: ``"primal"``, ``"dual"``, ``"gp"``.
    targets : tuple of str
        The loss targets it trains (:attr:`Loss.target`).
    needs_smooth_loss, needs_conjugate : bool
        Whether it needs a smooth loss, or one with a conjugate.
    kernel_mode : str
        ``"features"`` (random features), ``"exact"`` (the kernel matrix), ``"either"`` or ``"none"``.
    feature_kinds : tuple of str
        The ``model.features.kind`` values it handles (``"random"``, ``"nystrom"``).
    default_feature_kind : str or None
        The kind a spec naming this solver gets when it gives none; None: ``"random"``.
    one_vs_rest : bool
        It trains a binary loss one-vs-rest on more than two classes (the model then scores C outputs).
    backends : tuple of str
        The array backends it runs on.
    sample_weight : bool
        It weighs training rows by ``problem.sample_weight``, minimizing λ/2‖f‖² + (1/n) Σ w_i ℓ(y_i, f(x_i)).
    warm_start : bool
        A run may continue from a previous run's state with a larger ``iterations`` cap and end where a fresh run
        with that cap ends.
    distributed : bool
        It runs on a Dask cluster, reading the rows from ``problem.partitions``.
    lambda_warm_start : bool
        :meth:`warm_state` starts a run at one λ from a finished run at another.
    refit_warm_start : bool
        :meth:`refit_state` starts a run on all rows from a run on a subset of them.
    plans : bool
        It chooses the spec to solve rather than solving (``solver: auto``; :meth:`plan`).
    auto_loss : dict or None
        For a planning solver that chooses the loss too: the loss section a spec with ``model.loss.name: auto`` is
        checked with.
    memory_key : str or None
        The spec key the memory plan grows with; a plan that does not fit is refused with the most of it that fits.
    memory_hint : str
        Words added to that refusal, naming another route.

    Examples
    --------
    What a built-in solver declares:

    >>> from kopt.contract.registry import registry
    >>> joker = registry().get("solver", "joker")
    >>> joker.forms, joker.needs_conjugate, joker.kernel_mode
    (('dual',), True, 'either')

    A solver plugin's first lines (the plugin guide's complete example fills in the methods):

    >>> from kopt.contract.iterative import IterativeSolver, common_options
    >>> class GradientDescent(IterativeSolver):
    ...     name = "my_gd"
    ...     forms = ("primal",)
    ...     needs_smooth_loss = True
    ...     params = {**common_options(iterations=100, tol=1e-4), "step_size": {"type": "number", "default": 1.0}}
    >>> GradientDescent().options.step_size
    1.0
    """

    kind = "solver"
    forms: ClassVar[tuple] = ("primal",)
    targets: ClassVar[tuple] = ("real", "binary", "multiclass")
    needs_smooth_loss: ClassVar[bool] = False
    needs_conjugate: ClassVar[bool] = False
    #: "features" (random features), "exact" (kernel matrix), "either", or "none"
    kernel_mode: ClassVar[str] = "features"
    #: the ``model.features.kind`` values the solver handles ("random": the kernel's sampler; "nystrom")
    feature_kinds: ClassVar[tuple] = ("random",)
    #: the ``model.features.kind`` a spec naming this solver gets when it gives none (one of ``feature_kinds``);
    #: None: ``random``.  The solvers on Nyström centers (:class:`kopt.nystrom.NystromSolver`) declare "nystrom".
    #: A spec that gives a kind explicitly keeps it, and one the solver does not handle is still refused.
    default_feature_kind: ClassVar[str | None] = None
    #: True when the solver trains a binary loss one-vs-rest on labels with more than two classes
    #: (the problem then carries class ids 0..C-1 and the model scores C outputs).
    one_vs_rest: ClassVar[bool] = False
    backends: ClassVar[tuple] = ("numpy", "cupy")
    #: True when the solver weighs training rows by ``problem.sample_weight`` (``kopt.solve(...,
    #: sample_weight=w)``): it minimises λ/2‖f‖² + (1/n) Σ w_i ℓ(y_i, f(x_i)) with w normalised to mean 1.
    #: The core refuses weights for a solver without it.
    sample_weight: ClassVar[bool] = False
    #: True when a run may continue from a previous run's state with a larger ``iterations`` cap (or
    #: another ``tol``) and end exactly where a fresh run with that cap ends -- the trajectory does not
    #: depend on the cap (``kopt.solve(..., resume=snapshot)``, the estimators' ``warm_start``).
    warm_start: ClassVar[bool] = False
    #: True when the solver runs on a Dask cluster (``execution.engine: dask``): it reads the rows from
    #: ``problem.partitions`` (``problem.X`` is None) and says in ``check_spec`` which of its settings
    #: cannot run there.  The core refuses ``execution.engine: dask`` for a solver without it.
    distributed: ClassVar[bool] = False

    #: True when :meth:`warm_state` starts a run at one λ from a finished run at another (a warm
    #: start along a regularisation path: ``kopt.solve(..., start_from=snapshot)``, ``kopt tune``).
    lambda_warm_start: ClassVar[bool] = False

    def warm_state(self, saved: dict, lam_from: float, lam_to: float) -> dict:
        """The final state ``saved`` (what ``save`` gave) of a run at λ = ``lam_from``, made the
        starting state (what ``load`` takes) of the same problem at λ = ``lam_to``.  Solvers with
        ``lambda_warm_start`` implement it; the result must be a valid start (e.g. dual variables
        inside the new box), the run then converges as from any start."""
        raise NotImplementedError

    #: True when :meth:`refit_state` may start a run on all training rows from a finished run on a
    #: subset of them at the same λ (``lambda: auto``'s refit after its validation path).
    refit_warm_start: ClassVar[bool] = False

    def refit_state(self, saved: dict, rows: np.ndarray, n: int) -> dict | None:
        """The final state ``saved`` of a run on the training rows ``rows`` (sorted indices into the
        ``n`` training rows), made the starting state of the same spec on all ``n`` rows; or None
        (start as usual).  Solvers with ``refit_warm_start`` implement it; the result must be a
        valid start, the run then converges as from any start."""
        return None

    #: True for a solver that chooses the spec that solves rather than solving (``solver: auto``):
    #: ``kopt.solve`` assembles the problem, calls :meth:`plan`, and solves the spec it returns.
    plans: ClassVar[bool] = False
    #: for a planning solver that chooses the loss too: the loss section a spec with ``model.loss.name: auto`` is
    #: checked and assembled with (``{"name": "square", "target": "binary"}`` for ``solver: auto``); :meth:`plan` then
    #: says in its overrides which loss it solves (``"model.loss"``), reading ``given`` to know the author left it
    #: to the solver.  None: ``model.loss.name: auto`` is refused for this solver.
    auto_loss: ClassVar[dict | None] = None

    def plan(self, problem: Problem, given: dict, log: Callable[[str], None] | None = None) -> Plan:
        """A :class:`Plan`: the spec to solve on all training rows, the record of how it was chosen, and
        optionally the start of that solve.  ``given`` is the spec as its author wrote it (before
        defaults); ``log`` takes progress lines (or is None).  Solvers with ``plans`` implement it.  The
        problem is the plan's to use up: it may release ``problem.X`` once it holds what it needs (the solve
        on every row assembles its problem again), as ``solver: auto`` does with the rows as given once it has
        their column-scaled copy."""
        raise NotImplementedError

    #: the spec key the memory plan grows with (``"model.features.count"`` or ``"data.max_rows"``): a plan that does
    #: not fit is refused with the most of it that fits (``kopt.numerics.memory.largest_fitting``); None: no such key
    memory_key: ClassVar[str | None] = None
    #: words added to the refusal of a plan that does not fit: another route (``"or use solver krr_nystrom"``)
    memory_hint: ClassVar[str] = ""

    def memory_plan(self, sizes: Sizes) -> list[tuple[str, int]]:
        """What the solver will hold at its peak beside the training data, as ``(words, bytes)`` items, e.g.
        ``kopt.numerics.memory.matrices(2, M, M, "float64", "the system and its factor")``, in terms of ``sizes``
        (:class:`kopt.numerics.memory.Sizes`: ``n``, ``d``, ``count`` M, ``outputs``, ``dtype``, ``n_test``; ``problem``
        for anything else).  Before the solve allocates anything kopt compares the plan's total with the memory
        available and refuses one that does not fit (exit status 2) with the bytes, what holds them, the bytes
        available and the most of :attr:`memory_key` that fits; ``kopt validate --data`` prints it.  The default,
        ``[]``, declares nothing: nothing is checked."""
        return []

    def memory_sizes(self, problem: Problem) -> Sizes:
        """The :class:`kopt.numerics.memory.Sizes` the plan is taken at: the problem's own (a planning solver's the largest
        it may try)."""
        from ..numerics.memory import Sizes

        return Sizes.of(problem)

    def check_spec(self, spec) -> Iterable[tuple[tuple, str]]:
        """Extra compatibility checks on the resolved spec, before data is read.

        ``spec`` is the :class:`kopt.spec.Spec`: ``spec["model"]`` etc. are the resolved
        sections (defaults filled), and ``spec.loss``, ``spec.regularizer`` (instances) and
        ``spec.kernel_class`` are the components it names.  Yield ``(key_path, message)``
        pairs; key paths are tuples such as ``("solver", "batch_size")``.
        """
        return ()

    def run(self, problem: Problem, run) -> SolverOutput:
        """Solve ``problem`` (:class:`kopt.contract.problem.Problem`); return a
        :class:`~kopt.contract.result.SolverOutput`.

        ``run`` is the run context: ``run.report(t, state=..., ...)`` reports an iteration (progress, trace,
        checkpoints) and returns False when the run must stop (Ctrl-C); ``run.resume_state`` is the state to start
        from, or None.  :class:`kopt.contract.iterative.IterativeSolver` implements it for you.
        """
        raise NotImplementedError

    @classmethod
    def supports(cls) -> str:
        """What ``kopt plugins`` prints in its 'supports' column."""
        s = f"forms={'/'.join(cls.forms)}, kernel={cls.kernel_mode}"
        if cls.needs_smooth_loss:
            s += ", smooth losses"
        if cls.needs_conjugate:
            s += ", losses with a conjugate"
        if cls.distributed:
            s += ", Dask cluster"
        return s


class DatasetPreset(Component):
    """A named data source (``data.source: higgs``).

    Either a file layout -- :meth:`resolve` fills in the file paths and parse options (and may fetch the files) --
    or a generator -- :meth:`generate` returns a ``kopt.data.Dataset`` directly.  The preset is built from
    ``data.options`` (validated against ``params``).

    Attributes
    ----------
    task : str
        What the labels are (``"binary"``, ``"multiclass"``, ``"regression"``, ...), where the preset says.

    Examples
    --------
    >>> from kopt.contract.registry import registry
    >>> higgs = registry().get("dataset", "higgs-12k")()
    >>> higgs.task, sorted(higgs.resolve({"source": "higgs-12k"}))
    ('binary', ['header', 'label', 'source', 'test', 'train'])
    """

    kind = "dataset"
    #: what the labels are ("binary", "multiclass", "regression", ...); "" where the preset does not say
    task: ClassVar[str] = ""

    def resolve(self, data_spec: dict) -> dict:
        """The data spec ``data_spec`` (the spec's ``data`` section) with this preset's file paths and parse options
        filled in."""
        raise NotImplementedError

    def generate(self, data_spec: dict):
        """A ``kopt.data.Dataset`` for a generator preset; None for a file preset."""
        return None


class Predictor:
    """What a trained model evaluates: arrays and JSON metadata, no pickle.

    Subclasses set ``name`` (stored in the model file to find the class again in the registry) and implement
    :meth:`decision_function`; they are registered through the ``kopt_register_predictors`` hook.

    Parameters
    ----------
    arrays : dict
        Numeric NumPy arrays only (they go into the model's ``.npz``).
    meta : dict
        JSON values only (they go into the model's ``.json``).

    Attributes
    ----------
    arrays, meta : dict
        As given.
    name : str
        The name the model file records.
    summary : str
        One line for ``kopt plugins``.

    Examples
    --------
    A linear predictor on the input columns:

    >>> import numpy as np
    >>> from kopt.contract.components import Predictor
    >>> class Linear(Predictor):
    ...     name = "my_linear"
    ...     def decision_function(self, X, context):
    ...         return X @ self.arrays["w"]
    >>> Linear({"w": np.array([1.0, -1.0])}, {}).decision_function(np.array([[2.0, 0.5]]), None)
    array([1.5])
    """

    kind = "predictor"
    name: ClassVar[str] = ""
    summary: ClassVar[str] = ""

    def __init__(self, arrays: dict, meta: dict) -> None:
        self.arrays = arrays
        self.meta = meta

    def decision_function(self, X: np.ndarray, context) -> np.ndarray:
        """Raw scores for standardized ``X``: ``(n,)`` or ``(n, C)``.

        ``context`` is the :class:`kopt.models.model.PredictContext` (kernel, loss, backend, preprocessor).
        """
        raise NotImplementedError

    def predict_extra(self, X: np.ndarray, context) -> dict:
        """Additional named outputs (e.g. GP variance); empty by default."""
        return {}

    @classmethod
    def supports(cls) -> str:
        """What ``kopt plugins`` prints in its 'supports' column."""
        return ""


KINDS = {
    "loss": Loss,
    "kernel": Kernel,
    "regularizer": Regularizer,
    "solver": Solver,
    "dataset": DatasetPreset,
    "predictor": Predictor,
}


@dataclass
class Plan:
    """What a planning solver (:attr:`Solver.plans`) chose: what :meth:`Solver.plan` returns.

    Parameters
    ----------
    overrides, record, start_state, held_out
        The attributes below.

    Attributes
    ----------
    overrides : dict
        Dotted spec keys to the values the solve on all training rows uses (``"solver"`` to a whole solver
        section).
    record : dict
        JSON for ``report["auto"]``: what was measured and why this was chosen.
    start_state : dict or None
        Handed to the chosen solver's ``load`` as the state that solve starts from: work the planning already did
        on the same problem.  It lives in this process only: the chosen spec alone reproduces the model.
    held_out : dict or None
        ``{"rows": indices into the training rows, "scores": (rows, C) scores of them by a model of the chosen
        settings not fitted on them, "words": which rows}``: a margin classifier's probabilities are calibrated on
        them.

    Examples
    --------
    >>> from kopt.contract.components import Plan
    >>> plan = Plan(overrides={"solver": {"name": "krr_nystrom"}, "model.features.count": 512},
    ...             record={"route": "krr_nystrom", "why": "few rows"})
    >>> plan.overrides["model.features.count"], plan.start_state
    (512, None)
    """

    overrides: dict
    record: dict
    start_state: dict | None = None
    held_out: dict | None = None
