"""A component rebuilt with its parameters that are 1 set to other values.

At 1 a parameter's missing factor cancels (s·x = x/s = x), so a loss whose gradient forgets its
1/scale, or a sampler that draws at the bandwidth σ instead of 1/σ, passes every check there.
:func:`kopt.testing.check_loss` and :func:`kopt.testing.check_kernel` therefore repeat their checks on
the instances :func:`at_other_values` gives.
"""
from __future__ import annotations

from ..contract.components import Component

#: values a loss parameter that is 1 is also checked at
LOSS_VALUES = (0.5, 1.7)
#: values a kernel parameter that is 1 (the bandwidth, typically) is also checked at
KERNEL_VALUES = (1.3,)
#: parameters of a bandwidth *rule*, which a numeric bandwidth ignores (kopt.contract.components.BANDWIDTH_PARAMS)
_RULE_PARAMS = ("bandwidth_factor", "bandwidth_subsample")


def at_other_values(component: Component, values: tuple[float, ...]) -> list[tuple[str, Component]]:
    """``[(label, instance)]``: ``component`` rebuilt with one numeric parameter that is 1 set to another value.

    Parameters
    ----------
    component : Component
        The component instance.
    values : tuple of float
        The values to try (:data:`~kopt.testing.LOSS_VALUES`, :data:`~kopt.testing.KERNEL_VALUES`).

    Returns
    -------
    list of tuple
        ``(label, instance)`` pairs, ``label`` such as ``"delta=0.5"``: one per parameter whose value is the number
        1 and per value its schema accepts; every other parameter keeps its value.

    Examples
    --------
    >>> import numpy as np
    >>> import kopt.testing as kt
    >>> from kopt.contract.registry import registry
    >>> huber = kt.default_instance(registry().get("loss", "huber"))
    >>> [label for label, other in kt.at_other_values(huber, (0.5, 1.7))]
    ['delta=0.5', 'delta=1.7']
    """
    cls = type(component)
    params = component.options.as_dict()
    out = []
    for key, value in params.items():
        if key in _RULE_PARAMS or isinstance(value, bool) or not isinstance(value, (int, float)) or value != 1:
            continue
        for v in values:
            try:
                out.append((f"{key}={v:g}", cls(**{**params, key: v})))
            except ValueError:  # the schema refuses the value (an integer or an enum)
                continue
    return out


def run_at_other_values(component, values, check, what):
    """``check(instance)`` on every instance of :func:`at_other_values`, naming the value in a failure."""
    for label, other in at_other_values(component, values):
        try:
            check(other)
        except AssertionError as exc:
            raise AssertionError(
                f"at {label}: {exc} ({what} repeats its checks with each parameter that is 1 set to other values, "
                "since a factor missing from a formula cancels at 1; pass vary=False to check the instance alone)"
            ) from None
