"""Kernels: the public check suite on every registered kernel, property tests, closed forms, domains."""
from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.spatial.distance import cdist
from scipy.special import gamma as gamma_fn
from scipy.special import kv

from kopt.contract.registry import registry
from kopt.errors import DataError
from kopt.testing.kernels import (
    check_dsg_gradient,
    check_kernel,
    check_psd,
    check_unbiased,
    kernel_instance,
    sample_inputs,
)

REG = registry()
NAMES = REG.names("kernel")
FEATURE_NAMES = [n for n in NAMES if REG.get("kernel", n).has_features]
PROPS = settings(derandomize=True, deadline=None, max_examples=6)

# parameter ranges the property tests draw from (by parameter name)
_RANGES = {
    "bandwidth": st.floats(0.3, 4.0),
    "skew": st.floats(0.1, 3.0),
    "beta": st.floats(0.1, 3.0),
    "scale": st.floats(0.2, 5.0),
    "coef0": st.floats(0.0, 2.0),
    "gamma": st.floats(0.1, 1.0),
    "degree": st.integers(1, 4),
    "sincos": st.booleans(),
}
_FIXED = {"bandwidth_factor", "bandwidth_subsample"}


def kernels(name):
    """Instances of kernel ``name`` with drawn parameters."""
    cls = REG.get("kernel", name)
    fields = {}
    for key, schema in cls.params.items():
        if key in _FIXED:
            continue
        if key in _RANGES:
            fields[key] = _RANGES[key]
        elif "enum" in schema:
            fields[key] = st.sampled_from(schema["enum"])
    return st.fixed_dictionaries(fields).map(lambda p: kernel_instance(cls, **p))


def points(kernel, n, d):
    if kernel.input_domain == "real":
        elems = st.floats(-3.0, 3.0, allow_nan=False)
    else:  # nonnegative (or x > −c with c > 0): zeros included
        elems = st.one_of(st.just(0.0), st.floats(0.0, 3.0))
    return st.lists(st.lists(elems, min_size=d, max_size=d), min_size=n, max_size=n).map(np.array)


def kernels_and_points(name, n, d_max=4):
    return st.tuples(kernels(name), st.integers(1, d_max)).flatmap(
        lambda kd: st.tuples(st.just(kd[0]), points(kd[0], n, kd[1])))


# -- the public suite on every registered kernel --------------------------------
@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_check_kernel_suite(name):
    ran = check_kernel(kernel_instance(REG.get("kernel", name)), n=5)
    assert "exact" in ran and "psd" in ran
    if REG.get("kernel", name).has_features:
        assert {"unbiased", "dsg_gradient", "regeneration", "engine"} <= set(ran)


# -- property tests (hypothesis, derandomized) ---------------------------------
@pytest.mark.slow
@pytest.mark.parametrize("name", FEATURE_NAMES)
def test_unbiased_features(name):
    @PROPS
    @given(kernels_and_points(name, 2))
    def run(kx):
        kernel, X = kx
        check_unbiased(kernel, X, n_features=1 << 15)

    run()


@pytest.mark.slow
@pytest.mark.parametrize("name", FEATURE_NAMES)
def test_doubly_stochastic_gradient(name):
    @settings(derandomize=True, deadline=None, max_examples=3)
    @given(kernels_and_points(name, 3), st.lists(st.floats(-2, 2), min_size=3, max_size=3))
    def run(kx, y):
        kernel, X = kx
        check_dsg_gradient(kernel, X, np.array(y), n_features=1 << 14)

    run()


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_gram_psd(name):
    @settings(derandomize=True, deadline=None, max_examples=4)
    @given(kernels_and_points(name, 12, d_max=5))
    def run(kx):
        kernel, X = kx
        check_psd(kernel, X)

    run()


# -- closed forms ----------------------------------------------------------------
def _X(n=7, d=4, seed=0, positive=False):
    rng = np.random.default_rng(seed)
    return rng.exponential(size=(n, d)) if positive else rng.standard_normal((n, d))


def test_shift_invariant_closed_forms():
    X, Y = _X(), _X(5, seed=1)
    s = 1.7
    D2, D1 = cdist(X, Y, "sqeuclidean"), cdist(X, Y, "cityblock")
    def k(name, **p):
        return REG.get("kernel", name)(bandwidth=s, **p).exact(X, Y)

    np.testing.assert_allclose(k("gaussian"), np.exp(-D2 / (2 * s * s)), rtol=1e-10)
    np.testing.assert_allclose(k("laplacian"), np.exp(-D1 / s), rtol=1e-10)
    diff = (X[:, None, :] - Y[None]) / s
    np.testing.assert_allclose(k("cauchy"), np.prod(1.0 / (1.0 + diff**2), axis=2), rtol=1e-10)
    r = np.sqrt(D2)
    for nu in (0.5, 1.5, 2.5):  # against the Bessel form of Dai et al. (2014) Table 1
        z = np.sqrt(2 * nu) * r / s
        want = 2 ** (1 - nu) / gamma_fn(nu) * z**nu * kv(nu, z)
        np.testing.assert_allclose(k("matern", nu=nu), want, rtol=1e-8)


def test_dot_product_closed_forms():
    X, Y = _X(), _X(5, seed=1)
    K = REG.get("kernel", "polynomial")(degree=3, coef0=0.5, gamma=0.2).exact(X, Y)
    want = np.array([[(0.2 * x @ y + 0.5) ** 3 for y in Y] for x in X])
    np.testing.assert_allclose(K, want, rtol=1e-10)
    nx, ny = np.linalg.norm(X, axis=1)[:, None], np.linalg.norm(Y, axis=1)[None]
    theta = np.arccos(np.clip(X @ Y.T / (nx * ny), -1, 1))
    np.testing.assert_allclose(REG.get("kernel", "arccos")(order=0).exact(X, Y), 1 - theta / np.pi, rtol=1e-10)
    j1 = np.sin(theta) + (np.pi - theta) * np.cos(theta)
    np.testing.assert_allclose(REG.get("kernel", "arccos")(order=1).exact(X, Y), nx * ny * j1 / np.pi, rtol=1e-9)


def test_additive_and_semigroup_closed_forms():
    X, Y = _X(positive=True), _X(5, seed=1, positive=True)
    X[0, 0] = 0.0
    a, b = X[:, None, :], Y[None]
    want = {
        "hellinger": np.sqrt(a * b).sum(2),
        "chi2": (2 * a * b / (a + b)).sum(2),
        "intersection": np.minimum(a, b).sum(2),
        "jensen_shannon": (0.5 * np.where(a > 0, a * np.log2((a + b) / np.where(a > 0, a, 1)), 0)
                           + 0.5 * b * np.log2((a + b) / b)).sum(2),
        "skewed_chi2": np.prod(2 * np.sqrt((a + 0.7) * (b + 0.7)) / (a + b + 1.4), axis=2),
        "skewed_intersection": np.prod(np.minimum(np.sqrt((a + 0.7) / (b + 0.7)), np.sqrt((b + 0.7) / (a + 0.7))), 2),
        "exponential_semigroup": np.exp(-0.8 * np.sqrt(a + b).sum(2)),
        "reciprocal_semigroup": np.prod(1.5 / (a + b + 1.5), axis=2),
    }
    params = {"skewed_chi2": {"skew": 0.7}, "skewed_intersection": {"skew": 0.7},
              "exponential_semigroup": {"beta": 0.8}, "reciprocal_semigroup": {"scale": 1.5}}
    for name, K in want.items():
        got = kernel_instance(REG.get("kernel", name), **params.get(name, {})).exact(X, Y)
        np.testing.assert_allclose(got, K, rtol=1e-9, err_msg=name)


def test_skewed_chi2_stable_far_apart():
    k = REG.get("kernel", "skewed_chi2")(skew=1e-3)
    K = k.exact(np.array([[0.0, 1e6]]), np.array([[1e6, 0.0]]))
    assert np.isfinite(K).all() and 0.0 <= K[0, 0] < 1e-5


@pytest.mark.parametrize("rows", ["dense", "sparse"])
@pytest.mark.parametrize("scale, bandwidth", [(1.0, 2.6), (1.0, 0.3), (10.0, 1.0), (1e4, 1e-2)])
def test_gaussian_values_stay_within_the_rounding_of_one_clipped_only_where_needed(scale, bandwidth, rows):
    """The Gaussian's exponents are clipped at 0 only where the augmented GEMM's rounding could lift a value past
    1 + CLIP_ABOVE: every value is finite, at most 1 + CLIP_ABOVE, and within float32 rounding of the float64 kernel,
    on rows near the bandwidth's scale (no clip) and on rows far larger than it (the clip keeps exp finite).  Sparse
    rows (the sparse product's route) follow the same rule."""
    import scipy.sparse as sp

    from kopt_plugins.kernels import shift_invariant as si

    rng = np.random.default_rng(3)
    X = (scale * rng.standard_normal((400, 6))).astype(np.float32)
    if rows == "sparse":
        X[rng.random(X.shape) < 0.5] = 0.0
    k = REG.get("kernel", "gaussian")(bandwidth=bandwidth)
    Xk = sp.csr_matrix(X) if rows == "sparse" else X
    K = k.exact(Xk, X[:100])
    bound = k.bind(X[:100])(Xk)
    np.testing.assert_array_equal(K, bound)  # one rule for exact and the bound centers
    assert np.isfinite(K).all() and K.max() <= 1.0 + si.CLIP_ABOVE
    truth = np.exp(-cdist(X.astype(np.float64), X[:100].astype(np.float64), "sqeuclidean") / (2 * bandwidth ** 2))
    A = si._augmented(np, X, bandwidth, left=True)
    B = si._augmented(np, X[:100], bandwidth, left=False)
    lift = 1.5 * 8 * float(np.finfo(np.float32).eps) * (si._height(A, True) + si._height(B, False))
    if lift <= si.CLIP_ABOVE:  # unclipped: each value within the exponent's rounding bound of the truth
        assert np.all(np.abs(K - truth) <= truth * np.expm1(lift) + 1e-7)
    else:
        assert np.all(K <= 1.0)


def test_float32_exact_keeps_dtype():
    X = _X().astype(np.float32)
    for name in ("gaussian", "laplacian", "matern"):
        assert REG.get("kernel", name)(bandwidth=1.0).exact(X, X).dtype == np.float32


# -- linear kernel (ADSG on raw sparse features) ---------------------------------
def test_linear_kernel_dense_and_csr():
    lin = REG.get("kernel", "linear")()
    assert lin.has_features is False and lin.bandwidth_metric is None
    rng = np.random.default_rng(0)
    D = rng.standard_normal((6, 9)) * (rng.uniform(size=(6, 9)) < 0.3)
    S = sp.csr_matrix(D)
    for A, B in ((S, S), (S, D), (D, S), (D, D)):
        K = lin.exact(A, B)
        assert isinstance(K, np.ndarray)
        np.testing.assert_allclose(K, D @ D.T, atol=1e-12)
    np.testing.assert_allclose(lin.diag(S), (D * D).sum(1))
    np.testing.assert_allclose(lin.diag(D), (D * D).sum(1))
    with pytest.raises(NotImplementedError):
        lin.sample(rng, 9, 4)


# -- metadata: bandwidth metrics and domains ------------------------------------
def test_bandwidth_metric_and_params():
    metric = {n: REG.get("kernel", n).bandwidth_metric for n in NAMES}
    assert metric["gaussian"] == "l2" and metric["laplacian"] == "l1"
    assert metric["cauchy"] == "l2" and metric["matern"] == "l2"
    for n in NAMES:
        has_bw = "bandwidth" in REG.get("kernel", n).params
        assert has_bw == (metric[n] is not None), n


@pytest.mark.parametrize("name", [n for n in NAMES if REG.get("kernel", n).input_domain != "real"])
def test_restricted_domains_raise_data_error(name):
    kernel = kernel_instance(REG.get("kernel", name))
    X = sample_inputs(kernel, 4, 3, np.random.default_rng(0))
    bad = X - 5.0
    with pytest.raises(DataError, match="standardize"):
        kernel.exact(bad, X)
    with pytest.raises(DataError):
        kernel.check_input(np.array([[np.nan, 1.0]]))


def test_unresolved_median_bandwidth_is_a_clear_error():
    k = REG.get("kernel", "gaussian")(bandwidth="median")
    with pytest.raises(ValueError, match="build_kernel"):
        k.exact(_X(), _X())


# -- the checks fail on broken kernels -------------------------------------------
def _broken(base, **overrides):
    return type("Broken" + base.__name__, (base,), {"name": "broken", **overrides})


def test_checks_catch_a_wrong_sampler():
    Gauss = REG.get("kernel", "gaussian")
    wrong = _broken(Gauss, sample_omega=lambda self, rng, d, c: 1.3 * rng.standard_normal((d, c)) / self.bandwidth)
    X = _X(3, 2) * 0.7
    with pytest.raises(AssertionError, match="standard errors"):
        check_unbiased(wrong(bandwidth=1.0), X)
    with pytest.raises(AssertionError, match="doubly stochastic"):
        check_dsg_gradient(wrong(bandwidth=1.0), X, np.array([1.0, -1.0, 0.5]))


def test_checks_catch_missing_phase_and_non_psd():
    Gauss = REG.get("kernel", "gaussian")

    def no_phase(self, rng, d, c):  # cos(ωᵀx) without the random phase: biased feature by feature
        p = Gauss.sample(self, rng, d, c)
        p["Wb"][-1] = 0.0
        return p

    with pytest.raises(AssertionError):
        check_unbiased(_broken(Gauss, sample=no_phase)(bandwidth=1.0, sincos=False), _X(3, 2))
    neg = _broken(Gauss, exact=lambda self, X, Y: -Gauss.exact(self, X, Y))
    with pytest.raises(AssertionError, match="semidefinite"):
        check_psd(neg(bandwidth=1.0), _X(6, 2))


def test_checks_catch_unchecked_domain():
    from kopt.testing.kernels import check_domain

    Chi2 = REG.get("kernel", "chi2")
    lax = _broken(Chi2, check_input=lambda self, X: None, exact=lambda self, X, Y: Chi2.k1(self, np, 1.0, 1.0) + 0 * (X @ Y.T))
    with pytest.raises(AssertionError, match="DataError"):
        check_domain(lax(), _X(3, 2, positive=True))


def test_table1_lévy_scale_rederived():
    """Dai et al. (2014) Table 1 prints exp(−β/(4ω)); only β²/(4ω) reproduces exp(−β√s) (so kopt uses the latter, and tests it)."""
    rng = np.random.default_rng(0)
    beta, s = 2.0, 0.3
    z = rng.standard_normal(2_000_000)
    ours = np.exp(-s * beta**2 / (2 * z * z)).mean()
    table = np.exp(-s * beta / (2 * z * z)).mean()  # Lévy scale β/2 as the printed density implies
    assert abs(ours - math.exp(-beta * math.sqrt(s))) < 3e-3
    assert abs(table - math.exp(-beta * math.sqrt(s))) > 5e-2


def _global_rng_gaussian():
    """A sampler that ignores the generator it is given (draws from NumPy's global RNG)."""
    Gauss = REG.get("kernel", "gaussian")
    return _broken(Gauss, sample_omega=lambda self, rng, d, c: np.random.standard_normal((d, c)) / self.bandwidth)


def test_check_kernel_reports_a_global_rng_sampler_as_not_regenerated():
    with pytest.raises(AssertionError, match="not regenerated from its seed"):
        check_kernel(_global_rng_gaussian()(bandwidth=1.0), n=4, d=2)
    # the statistical checks alone would blame the features (what the check reported before)
    with pytest.raises(AssertionError, match="standard errors"):
        check_kernel(_global_rng_gaussian()(bandwidth=1.0), n=4, d=2, skip=("regeneration",))


def test_check_kernel_skip():
    from kopt.testing import KERNEL_CHECKS

    kernel = kernel_instance(REG.get("kernel", "gaussian"))
    ran = check_kernel(kernel, n=4, d=2, skip=("unbiased", "dsg_gradient"))
    assert ran == [c for c in KERNEL_CHECKS if c not in ("unbiased", "dsg_gradient")]
    with pytest.raises(ValueError, match="unknown kernel checks.*known: exact, psd"):
        check_kernel(kernel, skip=("unbiasedness",))
