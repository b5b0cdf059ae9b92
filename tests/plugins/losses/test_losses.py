"""Property tests of every registered loss, through the public kopt.testing checks.

A loss registered under the ``kopt`` entry-point group is picked up automatically
(``LOSSES`` is built from the registry); ``VARIANTS`` adds non-default parameters.
"""
from __future__ import annotations

import numpy as np
import pytest
import strategies as S
from hypothesis import given, settings
from hypothesis import strategies as st

from kopt.contract.registry import registry
from kopt.errors import DataError
from kopt.testing import (
    check_biconjugate,
    check_conj_domain,
    check_conj_gradients,
    check_dtypes,
    check_fenchel_young,
    check_gradients,
    check_loss,
    check_prox,
    default_instance,
)

NAMES = registry().names("loss")
VARIANTS = {
    "huber(delta=0.3)": ("huber", {"delta": 0.3}),
    "huber(binary)": ("huber", {"target": "binary"}),
    "square(binary)": ("square", {"target": "binary"}),
    "lp(p=1.2)": ("lp", {"p": 1.2}),
    "lp(p=3)": ("lp", {"p": 3.0}),
    "epsilon_insensitive(0.3)": ("epsilon_insensitive", {"epsilon": 0.3}),
    "epsilon_insensitive(0)": ("epsilon_insensitive", {"epsilon": 0.0}),
    "quantile(tau=0.2)": ("quantile", {"tau": 0.2}),
    "novelty(nu=0.5)": ("novelty", {"nu": 0.5}),
}


def make(key):
    if key in VARIANTS:
        name, params = VARIANTS[key]
        return registry().get("loss", name)(**params)
    return default_instance(registry().get("loss", key))


ALL = NAMES + list(VARIANTS)  # the public suite runs on all of these
PROP = NAMES + ["lp(p=1.2)", "epsilon_insensitive(0.3)"]  # hypothesis-driven property tests
CONJ = [k for k in PROP if make(k).has_conjugate]
FAST = settings(derandomize=True, deadline=None, max_examples=10)


def test_builtin_losses_registered():
    want = {"square", "huber", "absolute", "lp", "epsilon_insensitive", "hinge", "squared_hinge", "logistic",
            "softmax", "quantile", "novelty", "kl_density_ratio"}
    assert want <= set(NAMES)
    assert not registry().errors


@pytest.mark.slow
@pytest.mark.parametrize("key", ALL)
def test_public_check_suite(key):
    """kopt.testing.check_loss, the suite a plugin author runs, passes on every loss."""
    ran = check_loss(make(key))
    assert {"gradients", "convexity", "dtypes"} <= set(ran)
    if make(key).has_conjugate:
        assert {"fenchel_young", "biconjugate", "conj_domain", "conj_gradients"} <= set(ran)


@pytest.mark.slow
@pytest.mark.parametrize("key", PROP)
@FAST
@given(data=st.data())
def test_gradients_and_curvature_match_finite_differences(key, data):
    loss = make(key)
    u, y = data.draw(S.problems(loss))
    check_gradients(loss, u, y)


@pytest.mark.slow
@pytest.mark.parametrize("key", CONJ)
@FAST
@given(data=st.data())
def test_fenchel_young(key, data):
    loss = make(key)
    u, y = data.draw(S.problems(loss))
    check_fenchel_young(loss, u, y, data.draw(S.duals(loss, y)))


@pytest.mark.slow
@pytest.mark.parametrize("key", CONJ)
@settings(derandomize=True, deadline=None, max_examples=6)
@given(data=st.data())
def test_biconjugate_equals_loss(key, data):
    loss = make(key)
    u, y = data.draw(S.problems(loss, max_n=8))
    check_biconjugate(loss, u, y)


@pytest.mark.slow
@pytest.mark.parametrize("key", CONJ)
@FAST
@given(data=st.data())
def test_conjugate_finite_exactly_on_box(key, data):
    loss = make(key)
    _, y = data.draw(S.problems(loss, min_n=4))
    check_conj_domain(loss, y, np.random.default_rng(data.draw(st.integers(0, 2**16))), S.N_CLASSES)


@pytest.mark.slow
@pytest.mark.parametrize("key", CONJ)
@FAST
@given(data=st.data())
def test_conjugate_derivatives_match_finite_differences(key, data):
    loss = make(key)
    _, y = data.draw(S.problems(loss))
    check_conj_gradients(loss, data.draw(S.duals(loss, y, interior=0.02)), y)


@pytest.mark.slow
@pytest.mark.parametrize("key", PROP)
@FAST
@given(data=st.data(), step=S.steps)
def test_prox_is_the_argmin(key, data, step):
    loss = make(key)
    u, y = data.draw(S.problems(loss, max_n=10))
    ran = check_prox(loss, u, y, steps=(step,))
    assert ran or loss.target == "multiclass"


@pytest.mark.slow
@pytest.mark.parametrize("key", PROP)
@FAST
@given(data=st.data())
def test_float32_in_float32_out(key, data):
    loss = make(key)
    u, y = data.draw(S.problems(loss))
    v = data.draw(S.duals(loss, y, interior=0.01)) if loss.has_conjugate else None
    check_dtypes(loss, u, y, v)


@pytest.mark.parametrize("key", ALL)
def test_label_validation(key):
    loss = make(key)
    bad = {"binary": np.array([1.0, 0.0]), "multiclass": np.array([0, -1]), "two_sample": np.array([0.0, 2.0]),
           "real": np.array([np.inf])}
    if loss.target == "unlabeled":
        loss.check_labels(np.array([0.3]))  # the label slot carries the offset: anything goes
        return
    with pytest.raises(DataError, match=loss.name):
        loss.check_labels(bad[loss.target])


def test_square_target_parameter():
    reg = registry()
    assert reg.get("loss", "square")().target == "real"
    assert reg.get("loss", "square")(target="binary").target == "binary"
    assert reg.get("loss", "huber")(target="binary").target == "binary"
    assert reg.get("loss", "square").schema()["properties"]["target"]["enum"] == ["real", "binary"]


def test_spec_engine_reads_target_and_validates_parameters():
    from kopt.errors import SpecError
    from kopt.spec import load_spec

    def spec(loss):
        return {"name": "t", "data": {"source": "dai_synthetic"},
                "model": {"loss": loss, "kernel": {"name": "gaussian", "bandwidth": "median"}, "regularizer": {"name": "l2", "lambda": 0.1}},
                "solver": {"name": "krr_exact"}}

    assert load_spec(spec({"name": "square", "target": "binary"})).component(("model", "loss")).target == "binary"
    for bad, key in [({"name": "huber", "delta": 0}, "delta"), ({"name": "lp", "p": 1}, "p"),
                     ({"name": "quantile", "tau": 1.0}, "tau"), ({"name": "square", "target": "multiclass"}, "target")]:
        with pytest.raises(SpecError, match=key):
            load_spec(spec(bad))


def test_closed_forms_against_peers():
    """Values against SciPy's log_expit / logsumexp, and hand-written pinball and Huber losses."""
    from scipy.special import log_expit, logsumexp

    rng = np.random.default_rng(3)
    reg = registry()
    y = rng.choice([-1.0, 1.0], 50)
    u = 30 * rng.standard_normal(50)
    assert np.allclose(reg.get("loss", "logistic")().value(u, y), -log_expit(y * u), rtol=1e-12)
    Y = rng.integers(0, 4, 50)
    U = 20 * rng.standard_normal((50, 4))
    assert np.allclose(reg.get("loss", "softmax")().value(U, Y), logsumexp(U, axis=1) - U[np.arange(50), Y])
    yr, ur = rng.standard_normal(50), rng.standard_normal(50)
    pin = np.where(yr >= ur, 0.3 * (yr - ur), 0.7 * (ur - yr))
    assert np.allclose(reg.get("loss", "quantile")(tau=0.3).value(ur, yr), pin)
    r = ur - yr
    want = np.where(np.abs(r) <= 0.5, 0.5 * r**2, 0.5 * np.abs(r) - 0.125)
    assert np.allclose(reg.get("loss", "huber")(delta=0.5).value(ur, yr), want)


def test_softmax_with_two_classes_is_logistic():
    reg = registry()
    sm, lg = reg.get("loss", "softmax")(), reg.get("loss", "logistic")()
    rng = np.random.default_rng(4)
    U = 3 * rng.standard_normal((40, 2))
    Y = rng.integers(0, 2, 40)
    y_pm = np.where(Y == 1, 1.0, -1.0)
    margin = U[:, 1] - U[:, 0]
    assert np.allclose(sm.value(U, Y), lg.value(margin, y_pm))
    # conjugates: v = (−b, b) on the shifted simplex <-> logistic v' = b
    b = rng.uniform(-1, 0, 40) * y_pm
    V = np.stack([-b, b], axis=1)
    assert np.allclose(sm.conj(V, Y), lg.conj(b, y_pm))


def test_docs_table_lists_every_builtin_loss_and_regularizer():
    from pathlib import Path

    text = (Path(__file__).resolve().parents[3] / "docs" / "losses.md").read_text()
    for kind in ("loss", "regularizer"):
        for name, entry in registry().components[kind].items():
            if entry.plugin in ("losses", "regularizers"):  # the built-in packages' entry points
                assert f"| `{name}`" in text, f"docs/losses.md has no row for {kind} {name!r}"


@pytest.mark.parametrize("key", PROP)
def test_every_method_runs_on_the_backend(key, xp):
    """NumPy and CuPy give the same float32 results (the cupy case needs a GPU)."""
    from kopt.numerics.backend import to_numpy
    from kopt.testing import sample_duals, sample_labels, sample_scores

    loss = make(key)
    rng = np.random.default_rng(0)
    y = sample_labels(loss, 30, rng)
    u = sample_scores(loss, y, rng).astype(np.float32)
    calls = [("value", u), ("grad", u), ("curvature", u)]
    if loss.has_conjugate:
        v = sample_duals(loss, y, rng, interior=0.01).astype(np.float32)
        calls += [("conj", v), ("conj_grad", v), ("conj_curvature", v)]
    if loss.target != "multiclass":
        calls.append(("prox", u))
    for meth, x in calls:
        args = (xp.asarray(x), xp.asarray(y)) + ((0.7,) if meth == "prox" else ())
        out = getattr(loss, meth)(*args)
        ref = getattr(loss, meth)(x, y, *args[2:])
        assert isinstance(out, xp.ndarray) and out.dtype == np.float32, meth
        assert np.allclose(to_numpy(out), ref, rtol=1e-5, atol=1e-6, equal_nan=True), meth
    lo, hi = loss.conj_box(xp.asarray(y)) if loss.has_conjugate and loss.target != "multiclass" else (None, None)
    if lo is not None:
        assert isinstance(lo, xp.ndarray) and isinstance(hi, xp.ndarray)
