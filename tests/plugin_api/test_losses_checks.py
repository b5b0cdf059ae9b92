"""The public loss checks fail on broken losses, each with a message naming the property."""
from __future__ import annotations

import numpy as np
import pytest

from kopt.contract.registry import registry
from kopt.numerics.backend import get_namespace
from kopt.testing import check_conj_edges, check_loss


def builtin(name):
    return registry().get("loss", name)


def broken(name, **overrides):
    """A subclass of a built-in loss with some methods replaced."""
    return type(f"Broken_{name}", (builtin(name),), overrides)()


def _naive_logistic_conj(self, v, y):
    a = -v * np.asarray(y, dtype=v.dtype)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.where(a > 0, a * np.log(np.where(a > 0, a, 1)), 0) + np.where(
            a < 1, (1 - a) * np.log(np.where(a < 1, 1 - a, 1)), 0)
    return np.where((a >= 0) & (a <= 1), out, np.inf).astype(v.dtype)


CASES = [
    ("logistic conjugate missing a term", "logistic",
     {"conj": lambda self, v, y: np.where((-v * y >= 0) & (-v * y <= 1),
                                           (-v * y) * np.log(np.clip(-v * y, 1e-300, None)), np.inf)},
     "Fenchel"),
    ("hinge box with the wrong sign", "hinge",
     {"conj_box": lambda self, y: (np.minimum(0, y), np.maximum(0, y))}, "conj"),
    ("huber gradient not clipped", "huber", {"grad": lambda self, u, y: u - y}, "gradient"),
    ("square curvature 2", "square", {"curvature": lambda self, u, y: 2 * np.ones_like(u)}, "curvature"),
    ("nan instead of +inf outside the box", "absolute",
     {"conj": lambda self, v, y: np.where(np.abs(v) <= 1, v * y, np.nan)}, r"\+inf"),
    ("prox returns u", "logistic", {"prox": lambda self, u, y, step: u}, "prox"),
    ("hinge declared smooth", "hinge", {"smooth": True}, "declares smooth but has a kink"),
    ("grad_bound too small", "logistic", {"grad_bound": lambda self: 0.5}, "grad_bound"),
    ("smoothness too small", "logistic", {"smoothness": lambda self: 0.1}, "Lipschitz"),
    ("float64 output for float32 input", "squared_hinge",
     {"value": lambda self, u, y: (0.5 * np.maximum(1 - y * u, 0) ** 2).astype(np.float64)}, "float32"),
    ("nonconvex value", "square",
     {"value": lambda self, u, y: np.cos(u - y), "grad": lambda self, u, y: -np.sin(u - y)}, "convex"),
    ("softmax conjugate ignores Σ v = 0", "softmax",
     {"conj": lambda self, v, y: builtin("softmax").conj(self, v - v.mean(axis=1, keepdims=True), y)}, "Σ v = 0"),
    ("conjugate gradient off by the label", "square", {"conj_grad": lambda self, v, y: v}, "conjugate gradient"),
    ("softmax conjugate not shifted by the label", "softmax",
     {"conj_grad": lambda self, v, y: np.log(np.clip(v + 1.0 / v.shape[1], 1e-300, None)) + 1}, "conjugate"),
]


@pytest.mark.parametrize("what, name, overrides, message", CASES, ids=[c[0] for c in CASES])
def test_check_loss_catches(what, name, overrides, message):
    with pytest.raises(AssertionError, match=message):
        check_loss(broken(name, **overrides))


def test_naive_binary_entropy_fails_the_float32_edge_check():
    """log(1 − a) instead of log1p(−a) loses the (1 − a) log(1 − a) term for tiny a in float32."""
    y = np.array([1.0, -1.0, 1.0, -1.0])
    check_conj_edges(builtin("logistic")(), y)
    with pytest.raises(AssertionError, match="inaccurate near a box edge"):
        check_conj_edges(broken("logistic", conj=_naive_logistic_conj), y)


def test_third_party_loss_passes_the_suite():
    """A minimal loss written against the contract only (not a kopt_plugins.losses subclass)."""
    from kopt.contract.components import Loss

    class Cosh(Loss):
        name = "logcosh_test"
        target = "real"
        has_conjugate = False

        def value(self, u, y):
            xp = get_namespace(u)
            r = u - xp.asarray(y, dtype=u.dtype)
            return xp.logaddexp(r, -r) - u.dtype.type(np.log(2.0))

        def grad(self, u, y):
            return get_namespace(u).tanh(u - np.asarray(y, dtype=u.dtype))

        def curvature(self, u, y):
            t = self.grad(u, y)
            return 1 - t * t

        def grad_bound(self):
            return 1.0

        def smoothness(self):
            return 1.0

        def prox(self, u, y, step):
            from kopt.numerics.prox import newton_prox

            return newton_prox(self, u, y, step)

    ran = check_loss(Cosh())
    assert "prox" in ran and "fenchel_young" not in ran


def test_skip_names_known_checks():
    loss = builtin("hinge")()
    assert "dtypes" not in check_loss(loss, skip=("dtypes",))
    with pytest.raises(ValueError, match="unknown checks"):
        check_loss(loss, skip=("dtype",))


def test_plugin_guide_example_passes_the_suite():
    """The LogCosh example of docs/plugin-guide.md runs and passes check_loss."""
    import re
    from pathlib import Path

    text = (Path(__file__).resolve().parents[2] / "docs" / "plugin-guide.md").read_text()
    block = re.search(r"```python\n(import numpy as np\nfrom kopt.numerics.backend.*?)```", text, re.S).group(1)
    ns = {}
    exec(block, ns)  # noqa: S102 - our own documentation
    assert check_loss(ns["LogCosh"](scale=0.5)) == ["interface", "labels", "convexity", "gradients", "bounds", "dtypes"]


def test_a_wrong_conjugate_fails_the_biconjugate_check_with_its_message():
    """A conjugate off by a constant factor: the check's AssertionError, not a TypeError from building it."""
    from kopt.testing import check_biconjugate

    Square = builtin("square")
    wrong = type("WrongConjSquare", (Square,), {"name": "wrong_conj", "conj": lambda self, v, y: v * v + v * y})
    rng = np.random.default_rng(0)
    y = rng.standard_normal(20)
    with pytest.raises(AssertionError, match=r"loss 'wrong_conj': numeric biconjugate sup_v uv − ℓ\*\(v\) differs "
                                             r"from ℓ\(u\) \(\d+ of 20 points\); first: u=.*, loss=.*, biconjugate="):
        check_biconjugate(wrong(), y + rng.standard_normal(20), y)


# -- parameters other than 1: a factor missing from a formula cancels at 1 (issue 25) ----------------------------


def test_a_parameter_at_1_is_also_checked_at_other_values():
    """Huber's gradient clipped at ±1 instead of ±δ is exact at the default δ = 1: caught at δ = 0.5."""
    def grad(self, u, y):
        return np.clip(u - np.asarray(y, dtype=u.dtype), -1.0, 1.0).astype(u.dtype)

    mutant = broken("huber", grad=grad)
    assert "gradients" in check_loss(mutant, vary=False)  # the instance alone passes
    with pytest.raises(AssertionError, match=r"^at delta=0\.5: loss .*gradient.*pass vary=False"):
        check_loss(mutant)


def test_which_parameters_are_varied():
    from kopt.testing import KERNEL_VALUES, LOSS_VALUES, at_other_values, kernel_instance

    reg = registry()
    assert [label for label, _ in at_other_values(builtin("huber")(), LOSS_VALUES)] == ["delta=0.5", "delta=1.7"]
    assert at_other_values(builtin("huber")(delta=2.0), LOSS_VALUES) == []  # not 1: already informative
    gaussian = at_other_values(kernel_instance(reg.get("kernel", "gaussian")), KERNEL_VALUES)
    # the bandwidth rule's factor is ignored by a numeric bandwidth, and sincos is a bool
    assert [(label, k.bandwidth) for label, k in gaussian] == [("bandwidth=1.3", 1.3)]
    # an integer or enumerated parameter at 1 (arccos's order) accepts no other value
    assert at_other_values(kernel_instance(reg.get("kernel", "arccos")), KERNEL_VALUES) == []
