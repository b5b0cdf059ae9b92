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

    def __init__(self, **params: object) -> None:
        #: the parameters as a typed, frozen object (:mod:`kopt.contract.options`), schema defaults filled in
        self.options = build_options(type(self), params)

    @classmethod
    def schema(cls) -> dict:
        """The full JSON schema of this component's spec section: ``name`` and the ``params``, nothing else.

        Returns
        -------
        dict
            A JSON-schema object; the spec engine composes these into the spec's schema.

        Examples
        --------
        >>> from kopt.contract.registry import registry
        >>> schema = registry().get("loss", "huber").schema()
        >>> schema["properties"]["name"], schema["additionalProperties"]
        ({'const': 'huber'}, False)
        """
        return {
            "type": "object",
            "properties": {"name": {"const": cls.name}, **cls.params},
            "required": ["name", *cls.required],
            "additionalProperties": False,
        }

    @classmethod
    def supports(cls) -> str:
        """What ``kopt plugins`` prints in its 'supports' column.

        Returns
        -------
        str
            A few words; each kind of component says what its flags declare.

        Examples
        --------
        >>> from kopt.contract.components import Component
        >>> Component.supports()
        ''
        """
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
        """The number of scores per row for ``n_classes`` classes: 1, or C for a multiclass loss.

        Parameters
        ----------
        n_classes : int
            The classes of the labels (1 for real targets).

        Returns
        -------
        int
            The scores per row the model makes.

        Examples
        --------
        >>> from kopt.contract.registry import registry
        >>> registry().get("loss", "softmax")().n_outputs(3), registry().get("loss", "square")().n_outputs(3)
        (3, 1)
        """
        return 1

    def check_labels(self, y: np.ndarray, *, source: str = "labels") -> None:
        """Check that ``y`` is encoded for this loss's target.

        Called by the core after label encoding.  binary: -1/+1; multiclass: integer class ids >= 0; two_sample: 0/1;
        real: finite values; unlabeled: anything (the slot may carry the loss's offset).  Override to add loss-specific
        checks.

        Parameters
        ----------
        y : array of shape (n,)
            The encoded labels, or None.
        source : str, optional
            What the labels are called in the error (a file, a column).

        Raises
        ------
        kopt.DataError
            A label is not encoded for this loss's target; the message names the first one and how many are bad.

        Examples
        --------
        >>> import numpy as np
        >>> from kopt.contract.registry import registry
        >>> logistic = registry().get("loss", "logistic")()
        >>> logistic.check_labels(np.array([-1.0, 1.0]))
        >>> logistic.check_labels(np.array([0.0, 1.0]))
        Traceback (most recent call last):
            ...
        kopt.errors.DataError: labels: loss 'logistic' needs labels encoded as -1/+1; got np.float64(0.0) (1 bad values)
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
        """ℓ(y, u), elementwise: the loss of the predictions ``u`` at the labels ``y``.

        Parameters
        ----------
        u : array of shape (n,) or (n, C)
            Predictions (scores).
        y : array of shape (n,)
            Labels, as :meth:`check_labels` accepts them.

        Returns
        -------
        array of the shape of ``u``
            The losses (one per row for a multiclass loss).

        Examples
        --------
        >>> import numpy as np
        >>> from kopt.contract.registry import registry
        >>> logistic = registry().get("loss", "logistic")()
        >>> u, y = np.array([-1.0, 0.0, 2.0]), np.array([1.0, 1.0, -1.0])
        >>> logistic.value(u, y).round(4)  # log(1 + exp(-y u))
        array([1.3133, 0.6931, 2.1269])
        """
        raise NotImplementedError

    def grad(self, u: np.ndarray, y: np.ndarray) -> np.ndarray:
        """∂ℓ/∂u at ``u``, elementwise (a subgradient where ℓ is not differentiable).

        Parameters
        ----------
        u : array of shape (n,) or (n, C)
            Predictions.
        y : array of shape (n,)
            Labels.

        Returns
        -------
        array of the shape of ``u``
            The derivatives.

        Examples
        --------
        >>> import numpy as np
        >>> from kopt.contract.registry import registry
        >>> logistic = registry().get("loss", "logistic")()
        >>> u, y = np.array([-1.0, 0.0, 2.0]), np.array([1.0, 1.0, -1.0])
        >>> logistic.grad(u, y).round(4)  # -y / (1 + exp(y u))
        array([-0.7311, -0.5   ,  0.8808])
        """
        raise NotImplementedError

    def curvature(self, u: np.ndarray, y: np.ndarray) -> np.ndarray:
        """∂²ℓ/∂u² at ``u``, elementwise (a generalized second derivative where ℓ has none).

        Parameters
        ----------
        u : array of shape (n,) or (n, C)
            Predictions.
        y : array of shape (n,)
            Labels.

        Returns
        -------
        array of the shape of ``u``
            The second derivatives, at least 0 (ℓ is convex in u).

        Examples
        --------
        >>> import numpy as np
        >>> from kopt.contract.registry import registry
        >>> logistic = registry().get("loss", "logistic")()
        >>> u, y = np.array([-1.0, 0.0, 2.0]), np.array([1.0, 1.0, -1.0])
        >>> logistic.curvature(u, y).round(4)  # σ(u)(1 − σ(u))
        array([0.1966, 0.25  , 0.105 ])
        """
        raise NotImplementedError

    def grad_bound(self) -> float | None:
        """A bound on ``abs(grad(u, y))`` where one exists (CDSG needs it), else None.

        Returns
        -------
        float or None
            The bound.

        Examples
        --------
        >>> from kopt.contract.registry import registry
        >>> registry().get("loss", "logistic")().grad_bound(), registry().get("loss", "square")().grad_bound()
        (1.0, None)
        """
        return None

    def smoothness(self) -> float | None:
        """The Lipschitz constant of ℓ' in u (ADSG needs it), None if ℓ is nonsmooth.

        Returns
        -------
        float or None
            The constant.

        Examples
        --------
        >>> from kopt.contract.registry import registry
        >>> registry().get("loss", "logistic")().smoothness(), registry().get("loss", "hinge")().smoothness()
        (0.25, None)
        """
        return None

    # conjugate
    def conj(self, v: np.ndarray, y: np.ndarray) -> np.ndarray:
        """The conjugate ℓ*(y, v) = sup_u v u − ℓ(y, u), elementwise; +inf outside :meth:`conj_box`.

        Parameters
        ----------
        v : array of shape (n,) or (n, C)
            Dual values.
        y : array of shape (n,)
            Labels.

        Returns
        -------
        array of the shape of ``v``
            The conjugate's values.

        Examples
        --------
        At v = ℓ'(u) the Fenchel-Young inequality is an equality, ℓ(u) + ℓ*(v) = u v:

        >>> import numpy as np
        >>> from kopt.contract.registry import registry
        >>> logistic = registry().get("loss", "logistic")()
        >>> u, y = np.array([-1.0, 0.0, 2.0]), np.array([1.0, 1.0, -1.0])
        >>> v = logistic.grad(u, y)
        >>> bool(np.allclose(logistic.value(u, y) + logistic.conj(v, y), u * v))
        True
        """
        raise NotImplementedError

    def conj_grad(self, v: np.ndarray, y: np.ndarray) -> np.ndarray:
        """∂ℓ*/∂v at ``v``, elementwise: the prediction u whose derivative ℓ'(u) is v.

        Parameters
        ----------
        v : array of shape (n,) or (n, C)
            Dual values inside :meth:`conj_box`.
        y : array of shape (n,)
            Labels.

        Returns
        -------
        array of the shape of ``v``
            The derivatives.

        Examples
        --------
        >>> import numpy as np
        >>> from kopt.contract.registry import registry
        >>> logistic = registry().get("loss", "logistic")()
        >>> u, y = np.array([-1.0, 0.0, 2.0]), np.array([1.0, 1.0, -1.0])
        >>> logistic.conj_grad(logistic.grad(u, y), y).round(6)  # the inverse of ℓ'
        array([-1., -0.,  2.])
        """
        raise NotImplementedError

    def conj_curvature(self, v: np.ndarray, y: np.ndarray) -> np.ndarray:
        """∂²ℓ*/∂v² at ``v``, elementwise: 1 / ℓ''(u) at the u with ℓ'(u) = v, where ℓ is twice differentiable.

        Parameters
        ----------
        v : array of shape (n,) or (n, C)
            Dual values inside :meth:`conj_box`.
        y : array of shape (n,)
            Labels.

        Returns
        -------
        array of the shape of ``v``
            The second derivatives.

        Examples
        --------
        >>> import numpy as np
        >>> from kopt.contract.registry import registry
        >>> logistic = registry().get("loss", "logistic")()
        >>> u, y = np.array([-1.0, 0.0, 2.0]), np.array([1.0, 1.0, -1.0])
        >>> v = logistic.grad(u, y)
        >>> bool(np.allclose(logistic.conj_curvature(v, y), 1.0 / logistic.curvature(u, y)))
        True
        """
        raise NotImplementedError

    def conj_box(self, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The box ``(lo, hi)`` bounding the domain of ``conj(·, y)``, per row.

        Parameters
        ----------
        y : array of shape (n,)
            Labels.

        Returns
        -------
        lo, hi : arrays of shape (n,)
            The bounds (may hold ±inf).

        Examples
        --------
        >>> import numpy as np
        >>> from kopt.contract.registry import registry
        >>> logistic = registry().get("loss", "logistic")()
        >>> u, y = np.array([-1.0, 0.0, 2.0]), np.array([1.0, 1.0, -1.0])
        >>> logistic.conj_box(y)  # v between 0 and -y
        (array([-1., -1.,  0.]), array([0., 0., 1.]))
        """
        raise NotImplementedError

    def prox(self, u: np.ndarray, y: np.ndarray, step: float) -> np.ndarray:
        """The proximal point argmin_z ℓ(y, z) + (z − u)²/(2 step), elementwise.

        Raise ``NotImplementedError`` where there is none in closed form; ``kopt.numerics.prox.newton_prox`` gives one
        for any loss with ``grad`` and ``curvature``.

        Parameters
        ----------
        u : array of shape (n,)
            The points.
        y : array of shape (n,)
            Labels.
        step : float
            The step, positive.

        Returns
        -------
        array of shape (n,)
            The proximal points.

        Examples
        --------
        >>> import numpy as np
        >>> from kopt.contract.registry import registry
        >>> square = registry().get("loss", "square")()
        >>> square.prox(np.array([3.0]), np.array([1.0]), 1.0)  # ½(z − 1)² + ½(z − 3)²: z = 2
        array([2.])
        """
        raise NotImplementedError

    # optional extras, declared by a flag
    def offset_grad(self, u: np.ndarray, tau: np.ndarray) -> np.ndarray:
        """∂ℓ/∂τ at scores ``u`` for the offset ``tau`` (only where :attr:`has_offset`).

        The offset travels in the label slot: ``value(u, tau)`` and ``grad(u, tau)``; a solver steps
        τ ← τ − γ · mean(offset_grad(u, τ)) and adds −τ to the decision function.

        Parameters
        ----------
        u : array of shape (n,)
            Scores.
        tau : array of shape (n,)
            The offset, in every row's label slot.

        Returns
        -------
        array of shape (n,)
            The derivatives in τ.

        Examples
        --------
        >>> import numpy as np
        >>> from kopt.contract.registry import registry
        >>> novelty = registry().get("loss", "novelty")(nu=0.1)  # the one-class SVM's loss, with its offset
        >>> novelty.offset_grad(np.array([0.5, 2.0]), np.array([1.0, 1.0]))
        array([ 0.9, -0.1])
        """
        raise NotImplementedError(f"loss {self.name!r} has no offset (has_offset is False)")

    def balance_weights(self, y: np.ndarray) -> np.ndarray:
        """The weights of the training rows with labels ``y`` (only where :attr:`has_balance_weights`).

        A solver multiplies every row's loss and gradient by its weight.

        Parameters
        ----------
        y : array of shape (n,)
            The labels.

        Returns
        -------
        array of shape (n,)
            One weight per row.

        Raises
        ------
        ValueError
            The weights cannot be formed from these labels (an implementation raises it; the base has no weights).

        Examples
        --------
        >>> import numpy as np
        >>> from kopt.contract.registry import registry
        >>> ratio = registry().get("loss", "kl_density_ratio")()  # rows of the two samples weighed to equal shares
        >>> ratio.balance_weights(np.array([0.0, 0.0, 1.0, 1.0, 1.0])).round(4)
        array([1.25  , 1.25  , 0.8333, 0.8333, 0.8333])
        """
        raise NotImplementedError(f"loss {self.name!r} has no row weights (has_balance_weights is False)")

    @classmethod
    def supports(cls) -> str:
        """What ``kopt plugins`` prints in its 'supports' column: the target, smooth or not, and the conjugate.

        Returns
        -------
        str
            The words.

        Examples
        --------
        >>> from kopt.contract.registry import registry
        >>> registry().get("loss", "hinge").supports()
        'binary, nonsmooth, conjugate'
        """
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
        """Check that ``X`` lies in :attr:`input_domain` (the default accepts any rows).

        Parameters
        ----------
        X : array of shape (n, d)
            The rows, as the kernel will see them (after preprocessing).

        Raises
        ------
        kopt.DataError
            ``X`` lies outside the kernel's input domain (an implementation raises it; the default accepts).

        Examples
        --------
        >>> import numpy as np
        >>> from kopt.contract.registry import registry
        >>> intersection = registry().get("kernel", "intersection")()  # histograms: nonnegative inputs
        >>> intersection.check_input(np.array([[0.5, 0.5]]))
        >>> intersection.check_input(np.array([[-1.0, 2.0]]))
        Traceback (most recent call last):
            ...
        kopt.errors.DataError: kernel 'intersection' needs nonnegative features ...
        """

    def exact(self, X: np.ndarray, Y: np.ndarray) -> np.ndarray:
        """The kernel matrix k(X, Y).

        Parameters
        ----------
        X : array of shape (n, d)
            Rows (SciPy CSR too where :attr:`sparse_rows`).
        Y : array of shape (m, d)
            Rows, dense.

        Returns
        -------
        array of shape (n, m)
            k(x_i, y_j).

        Examples
        --------
        >>> import numpy as np
        >>> from kopt.contract.registry import registry
        >>> kernel = registry().get("kernel", "gaussian")(bandwidth=1.0)
        >>> X = np.array([[0.0, 0.0], [1.0, 0.0]])
        >>> kernel.exact(X, X).round(4)  # exp(−‖x − y‖² / 2)
        array([[1.    , 0.6065],
               [0.6065, 1.    ]])
        """
        raise NotImplementedError

    def bind(self, Y: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
        """``k(·, Y)`` for a fixed second argument: a callable ``f(X) = exact(X, Y)``.

        A pass over row chunks against the same centers calls it once per chunk, so a kernel may do here, once, what
        does not depend on X (the Gaussian's scaled, augmented centers).  The default calls :meth:`exact`.

        Parameters
        ----------
        Y : array of shape (m, d)
            The fixed rows (the centers).

        Returns
        -------
        callable
            ``f(X)``, an array of shape (len(X), m).

        Examples
        --------
        >>> import numpy as np
        >>> from kopt.contract.registry import registry
        >>> kernel = registry().get("kernel", "gaussian")(bandwidth=1.0)
        >>> X = np.array([[0.0, 0.0], [1.0, 0.0]])
        >>> against = kernel.bind(X)
        >>> bool(np.allclose(against(X[:1]), kernel.exact(X[:1], X)))
        True
        """
        return lambda X: self.exact(X, Y)

    def diag(self, X: np.ndarray) -> np.ndarray:
        """The diagonal k(x, x) of the rows of ``X``.

        Parameters
        ----------
        X : array of shape (n, d)
            Rows.

        Returns
        -------
        array of shape (n,)
            k(x_i, x_i).

        Examples
        --------
        >>> import numpy as np
        >>> from kopt.contract.registry import registry
        >>> kernel = registry().get("kernel", "gaussian")(bandwidth=1.0)
        >>> X = np.array([[0.0, 0.0], [1.0, 0.0]])
        >>> kernel.diag(X)
        array([1., 1.])
        """
        raise NotImplementedError

    def sample(self, rng: np.random.Generator, n_in: int, count: int) -> dict:
        """The parameters of ``count`` random features on ``n_in`` inputs, drawn on the host.

        Parameters
        ----------
        rng : numpy.random.Generator
            The seeded generator (the feature engine gives each block its own).
        n_in : int
            The inputs (columns).
        count : int
            The features.

        Returns
        -------
        dict
            Named NumPy arrays, what :meth:`features` reads.

        Examples
        --------
        >>> import numpy as np
        >>> from kopt.contract.registry import registry
        >>> kernel = registry().get("kernel", "gaussian")(bandwidth=1.0)
        >>> X = np.array([[0.0, 0.0], [1.0, 0.0]])
        >>> params = kernel.sample(np.random.default_rng(0), 2, 3)
        >>> sorted(params), params["b"].shape
        (['Wb', 'b'], (3,))
        """
        raise NotImplementedError

    def features(self, X: np.ndarray, params: dict, out: np.ndarray | None = None) -> np.ndarray:
        """The unscaled random features of the rows of ``X`` for ``params``.

        Unscaled: E_ω[φ_ω(x) φ_ω(x')] = k(x, x') for every single feature; the feature engine scales by 1/√count.

        Parameters
        ----------
        X : array of shape (n, d)
            Rows.
        params : dict
            What :meth:`sample` drew.
        out : array of shape (n, count), optional
            Where to write the features.

        Returns
        -------
        array of shape (n, count)
            The features.

        Examples
        --------
        >>> import numpy as np
        >>> from kopt.contract.registry import registry
        >>> kernel = registry().get("kernel", "gaussian")(bandwidth=1.0)
        >>> X = np.array([[0.0, 0.0], [1.0, 0.0]])
        >>> Z = kernel.features(X, kernel.sample(np.random.default_rng(0), 2, 4000))
        >>> Z.shape, bool(abs((Z[0] * Z[1]).mean() - 0.6065) < 0.05)
        ((2, 4000), True)
        """
        raise NotImplementedError

    # the feature engine's fast path (optional: the defaults fall back on ``features``)
    def prepare_rows(self, X: np.ndarray) -> np.ndarray:
        """A per-row transform computed once per row chunk and shared by every feature block.

        Part of the feature engine's fast path (optional): the default returns ``X``.

        Parameters
        ----------
        X : array of shape (n, d)
            Rows.

        Returns
        -------
        array
            What :meth:`raw_features` takes as ``P``.

        Examples
        --------
        >>> import numpy as np
        >>> from kopt.contract.registry import registry
        >>> kernel = registry().get("kernel", "gaussian")(bandwidth=1.0)
        >>> X = np.array([[0.0, 0.0], [1.0, 0.0]])
        >>> kernel.prepare_rows(X).shape  # the Gaussian's rows, augmented by one column for its GEMM
        (2, 3)
        """
        return X

    def raw_features(self, P: np.ndarray, params: dict,
                     out: np.ndarray | None = None) -> tuple[np.ndarray | tuple, float]:
        """The block's features as ``scale * Z`` for rows ``P = prepare_rows(X)``: the feature engine's fast path.

        The engine folds ``scale`` into its reductions.  The default is ``(features(P, params, out), 1.0)``.

        Parameters
        ----------
        P : array
            :meth:`prepare_rows`' rows.
        params : dict
            What :meth:`sample` drew.
        out : array, optional
            Where to write Z.

        Returns
        -------
        Z : array of shape (n, F), or tuple of arrays
            The features, or C-contiguous pieces of them laid side by side.
        scale : float
            Their common factor.

        Examples
        --------
        >>> import numpy as np
        >>> from kopt.contract.registry import registry
        >>> kernel = registry().get("kernel", "gaussian")(bandwidth=1.0)
        >>> X = np.array([[0.0, 0.0], [1.0, 0.0]])
        >>> params = kernel.sample(np.random.default_rng(0), 2, 3)
        >>> Z, scale = kernel.raw_features(kernel.prepare_rows(X), params)
        >>> full = np.hstack(Z) if isinstance(Z, tuple) else Z
        >>> bool(np.allclose(scale * full, kernel.features(X, params)))
        True
        """
        return self.features(P, params, out=out), 1.0

    @classmethod
    def supports(cls) -> str:
        """What ``kopt plugins`` prints in its 'supports' column: exact only, or with random features.

        Returns
        -------
        str
            The words.

        Examples
        --------
        >>> from kopt.contract.registry import registry
        >>> registry().get("kernel", "gaussian").supports(), registry().get("kernel", "linear").supports()
        ('exact, random features', 'exact only')
        """
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
        """The weight λ (``options.lambda_``) as a float.

        Raises
        ------
        kopt.SpecError
            λ is ``auto``: it is chosen on a validation split before the solve, and the step asking needs a number.

        Examples
        --------
        >>> from kopt.contract.registry import registry
        >>> l2 = registry().get("regularizer", "l2")
        >>> l2(**{"lambda": 0.5}).lam
        0.5
        >>> l2().lam
        Traceback (most recent call last):
            ...
        kopt.errors.SpecError: model.regularizer.lambda: model.regularizer.lambda is auto: ...
        """
        if self.options.lambda_ == "auto":
            from ..errors import SpecError

            raise SpecError("model.regularizer.lambda is auto: it is chosen on a validation split before the solve, "
                            "and this step needs a number", source="model.regularizer.lambda")
        return float(self.options.lambda_)

    def value(self, w: np.ndarray) -> float:
        """The penalty λ P(w).

        Parameters
        ----------
        w : array
            The coefficients.

        Returns
        -------
        float
            λ P(w).

        Examples
        --------
        >>> import numpy as np
        >>> from kopt.contract.registry import registry
        >>> l1 = registry().get("regularizer", "l1")(**{"lambda": 0.5})
        >>> float(l1.value(np.array([1.0, -2.0])))  # 0.5 (|1| + |−2|)
        1.5
        """
        raise NotImplementedError

    def prox(self, w: np.ndarray, step: float) -> np.ndarray:
        """The proximal point argmin_z λ P(z) + ‖z − w‖²/(2 step), blockwise.

        Parameters
        ----------
        w : array
            The point.
        step : float
            The step, positive.

        Returns
        -------
        array of the shape of ``w``
            The proximal point.

        Examples
        --------
        >>> import numpy as np
        >>> from kopt.contract.registry import registry
        >>> l1 = registry().get("regularizer", "l1")(**{"lambda": 0.5})
        >>> l1.prox(np.array([1.0, -2.0, 0.2]), 1.0)  # soft thresholding at λ step
        array([ 0.5, -1.5,  0. ])
        """
        raise NotImplementedError

    def strong_convexity(self) -> float:
        """The strong-convexity constant of λ P: λ for the squared L2 norm, 0 where it has none.

        Returns
        -------
        float
            The constant.

        Examples
        --------
        >>> from kopt.contract.registry import registry
        >>> [registry().get("regularizer", name)(**{"lambda": 0.5}).strong_convexity() for name in ("l2", "l1")]
        [0.5, 0.0]
        """
        raise NotImplementedError

    @classmethod
    def supports(cls) -> str:
        """What ``kopt plugins`` prints in its 'supports' column.

        Returns
        -------
        str
            The words.

        Examples
        --------
        >>> from kopt.contract.registry import registry
        >>> registry().get("regularizer", "l2").supports()
        'value, block prox, strong-convexity constant'
        """
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
    distributed_held_out : bool
        On a Dask cluster it weighs ``data.held_out``'s rows 0 (``problem.partitions.held_out``).
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
    #: True when, on a Dask cluster, the solver gives ``data.held_out``'s rows weight 0 (their sorted positions are
    #: ``problem.partitions.held_out``): the core refuses ``data.held_out`` there for a solver without it
    distributed_held_out: ClassVar[bool] = False

    #: True when :meth:`warm_state` starts a run at one λ from a finished run at another (a warm
    #: start along a regularisation path: ``kopt.solve(..., start_from=snapshot)``, ``kopt tune``).
    lambda_warm_start: ClassVar[bool] = False

    def warm_state(self, saved: dict, lam_from: float, lam_to: float) -> dict:
        """A finished run's state at one λ, made the starting state of the same problem at another.

        A warm start along a regularization path (``kopt.solve(..., start_from=snapshot)``, ``kopt tune``).  Solvers
        with :attr:`lambda_warm_start` implement it; the result must be a valid start (e.g. dual variables inside the
        new box), and the run then converges as from any start.

        Parameters
        ----------
        saved : dict
            The final state, as :meth:`kopt.contract.iterative.IterativeSolver.save` gave it.
        lam_from : float
            The λ of that run.
        lam_to : float
            The λ of the run to start.

        Returns
        -------
        dict
            A state :meth:`kopt.contract.iterative.IterativeSolver.load` takes.

        Examples
        --------
        >>> import numpy as np
        >>> from kopt.contract.registry import registry
        >>> pcg = registry().get("solver", "krr_pcg")
        >>> pcg.lambda_warm_start, sorted(pcg().warm_state({"v": np.zeros((4, 1))}, 1e-3, 1e-4))
        (True, ['v'])
        """
        raise NotImplementedError

    #: True when :meth:`refit_state` may start a run on all training rows from a finished run on a
    #: subset of them at the same λ (``lambda: auto``'s refit after its validation path).
    refit_warm_start: ClassVar[bool] = False

    def refit_state(self, saved: dict, rows: np.ndarray, n: int) -> dict | None:
        """A finished run's state on a subset of the training rows, made the starting state of the same spec on all of
        them (``lambda: auto``'s refit after its validation path).

        Solvers with :attr:`refit_warm_start` implement it; the result must be a valid start, and the run then
        converges as from any start.

        Parameters
        ----------
        saved : dict
            The final state of the run on the subset.
        rows : array of int
            The subset: sorted indices into the ``n`` training rows.
        n : int
            The training rows.

        Returns
        -------
        dict or None
            A state :meth:`kopt.contract.iterative.IterativeSolver.load` takes, or None: start as usual (the default).

        Examples
        --------
        >>> import numpy as np
        >>> from kopt.contract.registry import registry
        >>> registry().get("solver", "dsg")().refit_state({}, np.arange(10), 20) is None
        True
        """
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
        """The spec to solve on all training rows, the record of how it was chosen, and optionally the start of that
        solve (solvers with :attr:`plans` implement it).

        The problem is the plan's to use up: it may release ``problem.X`` once it holds what it needs (the solve on
        every row assembles its problem again), as ``solver: auto`` does with the rows as given once it has their
        column-scaled copy.

        Parameters
        ----------
        problem : Problem
            The assembled problem.
        given : dict
            The spec as its author wrote it, before defaults.
        log : callable, optional
            Takes progress lines.

        Returns
        -------
        Plan
            What was chosen.
        """
        raise NotImplementedError

    #: the spec key the memory plan grows with (``"model.features.count"`` or ``"data.max_rows"``): a plan that does
    #: not fit is refused with the most of it that fits (``kopt.numerics.memory.largest_fitting``); None: no such key
    memory_key: ClassVar[str | None] = None
    #: words added to the refusal of a plan that does not fit: another route (``"or use solver krr_nystrom"``)
    memory_hint: ClassVar[str] = ""

    def memory_plan(self, sizes: Sizes) -> list[tuple[str, int]]:
        """What the solver will hold at its peak beside the training data, as ``(words, bytes)`` items.

        Before the solve allocates anything kopt compares the plan's total with the memory available and refuses one
        that does not fit (exit status 2) with the bytes, what holds them, the bytes available and the most of
        :attr:`memory_key` that fits; ``kopt validate --data`` prints it.  Write the items with
        ``kopt.numerics.memory.matrices`` (e.g. ``matrices(2, M, M, "float64", "the system and its factor")``).

        Parameters
        ----------
        sizes : kopt.numerics.memory.Sizes
            ``n``, ``d``, ``count`` (M), ``outputs``, ``dtype``, ``n_test``, and ``problem`` for anything else.

        Returns
        -------
        list of (str, int)
            The items; the default, ``[]``, declares nothing, so nothing is checked.

        Examples
        --------
        >>> from kopt.contract.registry import registry
        >>> from kopt.numerics.memory import Sizes
        >>> plan = registry().get("solver", "krr_exact")().memory_plan(Sizes(n=1000, d=10, count=0))
        >>> plan[0]
        ('two 1,000 x 1,000 float64 matrices (the kernel matrix and its Cholesky factor)', 16000000)
        """
        return []

    def memory_sizes(self, problem: Problem) -> Sizes:
        """The sizes the memory plan is taken at: the problem's own (a planning solver's, the largest it may try).

        Parameters
        ----------
        problem : Problem
            The assembled problem.

        Returns
        -------
        kopt.numerics.memory.Sizes
            The sizes :meth:`memory_plan` is given.
        """
        from ..numerics.memory import Sizes

        return Sizes.of(problem)

    def check_spec(self, spec) -> Iterable[tuple[tuple, str]]:
        """Extra compatibility checks on the resolved spec, before data is read.

        Parameters
        ----------
        spec : kopt.spec.Spec
            The resolved spec: ``spec["model"]`` etc. are its sections (defaults filled), and ``spec.loss``,
            ``spec.regularizer`` (instances) and ``spec.kernel_class`` the components it names.

        Returns
        -------
        iterable of (tuple, str)
            ``(key_path, message)`` pairs, key paths such as ``("solver", "batch_size")``; the default yields none.

        Examples
        --------
        >>> import kopt
        >>> from kopt.contract.registry import registry
        >>> spec = kopt.load_spec({"model": {"loss": {"name": "logistic"}, "kernel": {"name": "gaussian"}}})
        >>> list(registry().get("solver", "dsg")().check_spec(spec))
        []
        """
        return ()

    def run(self, problem: Problem, run) -> SolverOutput:
        """Solve ``problem``.

        :class:`kopt.contract.iterative.IterativeSolver` implements it for you.

        Parameters
        ----------
        problem : Problem
            The assembled problem.
        run : run context
            ``run.report(t, state=..., ...)`` reports an iteration (progress, trace, checkpoints) and returns False
            when the run must stop (Ctrl-C); ``run.resume_state`` is the state to start from, or None.

        Returns
        -------
        SolverOutput
            The predictor, the solver's facts and its trace.
        """
        raise NotImplementedError

    @classmethod
    def supports(cls) -> str:
        """What ``kopt plugins`` prints in its 'supports' column: the forms, the kernel mode and the losses it needs.

        Returns
        -------
        str
            The words.

        Examples
        --------
        >>> from kopt.contract.registry import registry
        >>> registry().get("solver", "krr_exact").supports()
        'forms=primal/dual, kernel=exact, losses with a conjugate'
        """
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
        """The data spec with this preset's file paths and parse options filled in (a file preset; it may fetch the
        files).

        Parameters
        ----------
        data_spec : dict
            The spec's ``data`` section.

        Returns
        -------
        dict
            The section, completed.

        Examples
        --------
        >>> from kopt.contract.registry import registry
        >>> higgs = registry().get("dataset", "higgs-12k")()
        >>> sorted(higgs.resolve({"source": "higgs-12k"}))
        ['header', 'label', 'source', 'test', 'train']
        """
        raise NotImplementedError

    def generate(self, data_spec: dict) -> object | None:
        """The data set of a generator preset; None for a file preset (the default).

        Parameters
        ----------
        data_spec : dict
            The spec's ``data`` section.

        Returns
        -------
        kopt.data.Dataset or None
            The training (and test) rows.

        Examples
        --------
        >>> from kopt.contract.registry import registry
        >>> registry().get("dataset", "higgs-12k")().generate({"source": "higgs-12k"}) is None
        True
        >>> ds = registry().get("dataset", "dai_synthetic")(n_train=100, n_test=10).generate({})
        >>> ds.X.shape, ds.X_test.shape
        ((100, 2), (10, 2))
        """
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
        """Raw scores for standardized rows ``X``.

        Parameters
        ----------
        X : array of shape (n, d)
            Rows, standardized as the training rows were.
        context : kopt.models.model.PredictContext
            The kernel, loss, backend and preprocessor the model was trained with.

        Returns
        -------
        array of shape (n,) or (n, C)
            The scores.

        Examples
        --------
        >>> import numpy as np
        >>> from kopt.contract.components import Predictor
        >>> class Linear(Predictor):
        ...     name = "my_linear"
        ...     def decision_function(self, X, context):
        ...         return X @ self.arrays["w"]
        >>> Linear({"w": np.array([1.0, -1.0])}, {}).decision_function(np.array([[2.0, 0.5]]), None)
        array([1.5])
        """
        raise NotImplementedError

    def predict_extra(self, X: np.ndarray, context) -> dict:
        """Additional named outputs (e.g. a Gaussian process's variance); empty by default.

        Parameters
        ----------
        X : array of shape (n, d)
            Rows, standardized as the training rows were.
        context : kopt.models.model.PredictContext
            The kernel, loss, backend and preprocessor the model was trained with.

        Returns
        -------
        dict
            Name to array of shape (n,) or (n, C).

        Examples
        --------
        >>> import numpy as np
        >>> from kopt.contract.components import Predictor
        >>> Predictor({}, {}).predict_extra(np.zeros((2, 1)), None)
        {}
        """
        return {}

    @classmethod
    def supports(cls) -> str:
        """What ``kopt plugins`` prints in its 'supports' column (nothing by default).

        Returns
        -------
        str
            The words.

        Examples
        --------
        >>> from kopt.contract.components import Predictor
        >>> Predictor.supports()
        ''
        """
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
