"""Property checks for :class:`kopt.contract.components.Kernel` plugins (built-in or third-party).

Every ``check_*`` function takes a kernel *instance* (bandwidth already a number)
and points in the kernel's domain, raises ``AssertionError`` naming the kernel,
the property and the worst point, and returns None.  :func:`check_kernel` draws
its own points and runs them all::

    from kopt.testing import check_kernel
    check_kernel(MyKernel(bandwidth=1.5))      # raises AssertionError on the first violation

What is checked (docs/kernels.md):

* ``exact`` is symmetric, finite, agrees with ``diag`` and gives positive semidefinite Gram matrices;
* unbiasedness: the mean of φ_ω(x)φ_ω(x') over 2^15 features lies within 5 standard errors
  of k(x, x') (the standard error is taken over block means, so features may be dependent
  inside a block, as sin/cos pairs and TensorSketch coordinates are);
* the doubly stochastic functional gradient ℓ'(f(x), y) φ_ω(x) φ_ω(·) averages to
  ℓ'(f(x), y) k(x, ·) (square loss by default), through the engine's adjoint and predict;
* blocks regenerate bit-identically in any order, from fresh maps and caches, and differ
  between block indices; on CuPy (``xp=cupy``) the device gets the host's draw;
* the engine's ``predict``/``adjoint``/``predict_adjoint`` equal products with the dense
  ``transform``, in float64 and (to float32 accuracy) in float32;
* a kernel with a restricted ``input_domain`` raises :class:`kopt.errors.DataError` outside it.
"""
from __future__ import annotations

from types import ModuleType
from typing import Iterable

import numpy as np

from kopt.errors import DataError

from ..contract.components import Kernel, Loss
from ..numerics.backend import to_numpy
from ..numerics.features import FeatureMap
from ._variants import KERNEL_VALUES, run_at_other_values

F64 = np.float64


def _name(kernel):
    return kernel.name or type(kernel).__name__


def kernel_instance(cls: type, **params: object) -> Kernel:
    """``cls`` built from its schema defaults, with ``bandwidth`` 1.0 unless given.

    Parameters
    ----------
    cls : type
        A kernel class.
    **params
        Parameters that replace the defaults.

    Returns
    -------
    Kernel
        The instance.

    Examples
    --------
    >>> import numpy as np
    >>> import kopt.testing as kt
    >>> from kopt.contract.registry import registry
    >>> kt.kernel_instance(registry().get("kernel", "laplacian")).options.bandwidth
    1.0
    """
    args = {k: s["default"] for k, s in cls.params.items() if isinstance(s, dict) and "default" in s}
    if "bandwidth" in cls.params:
        args["bandwidth"] = 1.0
    args.update(params)
    return cls(**args)


def sample_inputs(kernel, n, d, rng, scale=1.0):
    """``(n, d)`` float64 points in the kernel's domain (positive data for restricted domains)."""
    if kernel.input_domain == "real":
        return scale * rng.standard_normal((n, d))
    X = scale * rng.exponential(size=(n, d))
    X[rng.uniform(size=X.shape) < 0.15] = 0.0  # exact zeros: the edge of the domain
    return X


def _fmap(kernel, d, *, seed=0, block_size=256, count=None, dtype="float64", xp=np, **kw):
    return FeatureMap(kernel, d, seed=seed, block_size=block_size, count=count, dtype=dtype, xp=xp, **kw)


def check_exact(kernel: Kernel, X: np.ndarray, Y: np.ndarray | None = None, rtol: float = 1e-6) -> None:
    """``exact`` is finite and symmetric, ``exact(X, Y)`` has shape (n, m), and ``diag`` is its diagonal.

    Parameters
    ----------
    kernel : Kernel
        A kernel instance with a numeric bandwidth.
    X : array of shape (n, d)
        Points in the kernel's domain.
    Y : array of shape (m, d), optional
        Other points (``X`` by default).
    rtol : float, optional
        Relative tolerance of the symmetry and the diagonal.

    Raises
    ------
    AssertionError
        The property fails; the message names the component, the property and the first offending point.

    Examples
    --------
    >>> import numpy as np
    >>> import kopt.testing as kt
    >>> from kopt.contract.registry import registry
    >>> kernel = kt.kernel_instance(registry().get("kernel", "gaussian"))
    >>> X = np.random.default_rng(0).normal(size=(6, 2))
    >>> kt.check_exact(kernel, X)
    """
    name = _name(kernel)
    X = np.asarray(X, dtype=F64)
    Y = X[::-1][: max(1, X.shape[0] // 2)] if Y is None else np.asarray(Y, dtype=F64)
    K = to_numpy(kernel.exact(X, X)).astype(F64)
    assert K.shape == (X.shape[0],) * 2, f"kernel {name!r}: exact(X, X) has shape {K.shape}"
    assert np.all(np.isfinite(K)), f"kernel {name!r}: exact(X, X) is not finite"
    scale = max(1.0, float(np.abs(K).max()))
    asym = np.abs(K - K.T).max()
    assert asym <= rtol * scale, f"kernel {name!r}: exact(X, X) is not symmetric (max |K − Kᵀ| = {asym:.3g})"
    D = to_numpy(kernel.diag(X)).astype(F64)
    err = np.abs(D - np.diag(K))
    assert err.max() <= 1e-5 * scale, (
        f"kernel {name!r}: diag(X) differs from exact(X, X) on the diagonal by {err.max():.3g} at row "
        f"{int(err.argmax())}")
    KY = to_numpy(kernel.exact(X, Y))
    assert KY.shape == (X.shape[0], Y.shape[0]), f"kernel {name!r}: exact(X, Y) has shape {KY.shape}"


def check_psd(kernel: Kernel, X: np.ndarray, tol: float = 1e-7) -> None:
    """The Gram matrix exact(X, X) has no eigenvalue below −tol · max(1, trace).

    Parameters
    ----------
    kernel : Kernel
        A kernel instance with a numeric bandwidth.
    X : array of shape (n, d)
        Points in the kernel's domain.
    tol : float, optional
        The tolerance.

    Raises
    ------
    AssertionError
        The property fails; the message names the component, the property and the first offending point.

    Examples
    --------
    >>> import numpy as np
    >>> import kopt.testing as kt
    >>> from kopt.contract.registry import registry
    >>> kernel = kt.kernel_instance(registry().get("kernel", "gaussian"))
    >>> X = np.random.default_rng(0).normal(size=(6, 2))
    >>> kt.check_psd(kernel, X)
    """
    K = to_numpy(kernel.exact(np.asarray(X, dtype=F64), np.asarray(X, dtype=F64))).astype(F64)
    K = 0.5 * (K + K.T)
    ev = np.linalg.eigvalsh(K)
    floor = -tol * max(1.0, float(np.trace(K)))
    assert ev[0] >= floor, (f"kernel {_name(kernel)!r}: Gram matrix of {K.shape[0]} points is not positive "
                            f"semidefinite (smallest eigenvalue {ev[0]:.3g} < {floor:.3g})")


def _block_means(kernel, A, B, n_features, block_size, seed, weights=None):
    """Per-block means of φ(a)φ(b) (``weights`` (n,) makes it Σ_i w_i φ(a_i)φ(b)): ``(nb, n, m)``."""
    d = A.shape[1]
    fm = _fmap(kernel, d, seed=seed, block_size=block_size, count=n_features)
    ZA, ZB = to_numpy(fm.transform(A)), to_numpy(fm.transform(B))
    nb = fm.n_blocks
    ZA = ZA.reshape(A.shape[0], nb, block_size).transpose(1, 0, 2)
    ZB = ZB.reshape(B.shape[0], nb, block_size).transpose(1, 0, 2)
    M = np.einsum("kif,kjf->kij", ZA, ZB) / block_size
    if weights is not None:
        M = np.einsum("i,kij->kj", np.asarray(weights, dtype=F64), M)[:, None, :]
    return fm, M


def _within(kernel, what, mean, se, target, z, atol):
    dev = np.abs(mean - target)
    bound = z * se + atol * (1.0 + np.abs(target))
    bad = dev > bound
    if np.any(bad):
        i = np.unravel_index(int(np.argmax(dev - bound)), dev.shape)
        raise AssertionError(
            f"kernel {_name(kernel)!r}: {what}: Monte-Carlo mean {mean[i]:.6g} vs exact {target[i]:.6g} "
            f"(|diff| {dev[i]:.3g} > {z:g} standard errors {se[i]:.3g}) at pair {tuple(int(k) for k in i)}")


def check_unbiased(kernel: Kernel, X: np.ndarray, Y: np.ndarray | None = None, *, n_features: int = 1 << 15,
                   block_size: int = 256, seed: int = 0, z: float = 5.0, atol: float = 1e-9) -> None:
    """The mean of φ_ω(x)φ_ω(y) over ``n_features`` random features is within ``z`` standard errors of k(x, y).

    Parameters
    ----------
    kernel : Kernel
        A kernel instance with a numeric bandwidth.
    X : array of shape (n, d)
        Points in the kernel's domain.
    Y : array of shape (m, d), optional
        Other points (``X`` by default).
    n_features : int, optional
        Random features averaged.
    block_size : int, optional
        Features per block.
    seed : int, optional
        The features' seed.
    z : float, optional
        Standard errors allowed.
    atol : float, optional
        Absolute slack.

    Raises
    ------
    AssertionError
        The property fails; the message names the component, the property and the first offending point.

    Examples
    --------
    >>> import numpy as np
    >>> import kopt.testing as kt
    >>> from kopt.contract.registry import registry
    >>> kernel = kt.kernel_instance(registry().get("kernel", "gaussian"))
    >>> X = np.random.default_rng(0).normal(size=(6, 2))
    >>> kt.check_unbiased(kernel, X, n_features=4096)
    """
    X = np.asarray(X, dtype=F64)
    Y = X if Y is None else np.asarray(Y, dtype=F64)
    _, M = _block_means(kernel, X, Y, n_features, block_size, seed)
    nb = M.shape[0]
    mean, se = M.mean(axis=0), M.std(axis=0, ddof=1) / np.sqrt(nb)
    K = to_numpy(kernel.exact(X, Y)).astype(F64)
    _within(kernel, "E[φ(x)φ(x')] ≠ k(x, x')", mean, se, K, z, atol)


def check_dsg_gradient(kernel: Kernel, X: np.ndarray, y: np.ndarray, *, loss: Loss | None = None,
                       f: np.ndarray | None = None, n_features: int = 1 << 15, block_size: int = 256, seed: int = 0,
                       z: float = 5.0, atol: float = 1e-9) -> None:
    """The doubly stochastic gradient (1/B) Σ_i ℓ'(f(x_i), y_i) φ_ω(x_i) φ_ω(·) averages to the stochastic one.

    Parameters
    ----------
    kernel : Kernel
        A kernel instance with a numeric bandwidth.
    X : array of shape (n, d)
        Points in the kernel's domain.
    y : array of shape (n,)
        Labels for the loss.
    loss : Loss, optional
        The loss (the square loss by default).
    f : array of shape (n,), optional
        Scores at ``X`` (zero by default).
    n_features, block_size, seed, z, atol
        As for :func:`check_unbiased`.

    Raises
    ------
    AssertionError
        The property fails; the message names the component, the property and the first offending point.

    Examples
    --------
    >>> import numpy as np
    >>> import kopt.testing as kt
    >>> from kopt.contract.registry import registry
    >>> kernel = kt.kernel_instance(registry().get("kernel", "gaussian"))
    >>> X = np.random.default_rng(0).normal(size=(6, 2))
    >>> kt.check_dsg_gradient(kernel, X, X[:, 0], n_features=4096)
    """
    from ..contract.registry import registry

    X = np.asarray(X, dtype=F64)
    y = np.asarray(y, dtype=F64)
    if loss is None:
        loss = registry().get("loss", "square")()
    if f is None:
        f = 0.5 * to_numpy(kernel.exact(X, X[:1]))[:, 0]
    g = np.asarray(loss.grad(np.asarray(f, dtype=F64), y), dtype=F64) / X.shape[0]
    fm, M = _block_means(kernel, X, X, n_features, block_size, seed, weights=g)
    nb = M.shape[0]
    mean, se = M.mean(axis=0)[0], M.std(axis=0, ddof=1)[0] / np.sqrt(nb)
    target = g @ to_numpy(kernel.exact(X, X)).astype(F64)
    _within(kernel, "doubly stochastic gradient ≠ ℓ'(f(x), y) k(x, ·)", mean[None], se[None], target[None], z, atol)
    # the engine computes the same average: predict(X, adjoint(X, g)) / M
    engine = to_numpy(fm.predict(X, fm.adjoint(X, g))) / fm.count
    err = np.abs(engine - mean).max()
    assert err <= 1e-8 * (1.0 + np.abs(mean).max()), (
        f"kernel {_name(kernel)!r}: predict(X, adjoint(X, g)) / M differs from the feature average by {err:.3g}")


def check_regeneration(kernel: Kernel, d: int, *, seed: int = 7, blocks: tuple[int, ...] = (0, 5, 2, 1),
                       block_size: int = 64, xp: ModuleType = np) -> None:
    """Block parameters and features are bit-identical across orders, fresh maps and caches, and blocks differ.

    Parameters
    ----------
    kernel : Kernel
        A kernel instance with a numeric bandwidth.
    d : int
        Input dimension.
    seed : int, optional
        The map's seed.
    blocks : tuple of int, optional
        The order blocks are drawn in.
    block_size : int, optional
        Features per block.
    xp : module, optional
        ``numpy`` or ``cupy``.

    Raises
    ------
    AssertionError
        The property fails; the message names the component, the property and the first offending point.

    Examples
    --------
    >>> import numpy as np
    >>> import kopt.testing as kt
    >>> from kopt.contract.registry import registry
    >>> kernel = kt.kernel_instance(registry().get("kernel", "gaussian"))
    >>> X = np.random.default_rng(0).normal(size=(6, 2))
    >>> kt.check_regeneration(kernel, 2)
    """
    name = _name(kernel)
    lost = f"kernel {name!r}: a block is not regenerated from its seed (does sample() draw from the rng it is given?)"
    rng = np.random.default_rng(seed)
    X = sample_inputs(kernel, 5, d, rng)
    a = _fmap(kernel, d, seed=seed, block_size=block_size, xp=xp)
    b = _fmap(kernel, d, seed=seed, block_size=block_size, xp=xp, cache_blocks=2)
    first = {j: a.host_params(j) for j in blocks}
    feats = {j: to_numpy(a.block(X, j)) for j in blocks}
    for j in reversed(blocks):  # other order, other map, through a cache
        for _ in range(2):
            p = b.block_params(j)
            for k, v in first[j].items():
                assert np.array_equal(np.asarray(v), b.host_params(j)[k]), \
                    f"{lost}: host parameter {k!r} of block {j} changed when drawn again"
                dev = to_numpy(p[k])
                ref = np.asarray(v, dtype=b.dtype) if np.asarray(v).dtype.kind == "f" else np.asarray(v)
                assert np.array_equal(dev, ref), f"kernel {name!r}: device parameter {k!r} of block {j} ≠ host draw"
            assert np.array_equal(to_numpy(b.block(X, j)), feats[j]), \
                f"{lost}: features of block {j} changed when regenerated in another order"
    j0, j1 = blocks[0], blocks[1]
    assert not np.array_equal(feats[j0], feats[j1]), f"kernel {name!r}: blocks {j0} and {j1} are identical"
    if xp is not np:  # same draw on the host: device features match NumPy's to float accuracy
        h = _fmap(kernel, d, seed=seed, block_size=block_size)
        for j in blocks:
            ref = to_numpy(h.block(X, j))
            err = np.abs(feats[j] - ref).max()
            assert err <= 1e-9 * (1.0 + np.abs(ref).max()), \
                f"kernel {name!r}: block {j} on the device differs from NumPy by {err:.3g}"


def check_engine(kernel: Kernel, X: np.ndarray, *, n_blocks: int = 3, block_size: int = 48, seed: int = 3,
                 n_out: int = 2, xp: ModuleType = np) -> None:
    """The feature engine's ``predict``, ``adjoint`` and ``predict_adjoint`` equal products with the dense features (float64 and float32).

    Parameters
    ----------
    kernel : Kernel
        A kernel instance with a numeric bandwidth.
    X : array of shape (n, d)
        Points in the kernel's domain.
    n_blocks, block_size : int, optional
        The map's size.
    seed : int, optional
        The map's seed.
    n_out : int, optional
        Output columns.
    xp : module, optional
        ``numpy`` or ``cupy``.

    Raises
    ------
    AssertionError
        The property fails; the message names the component, the property and the first offending point.

    Examples
    --------
    >>> import numpy as np
    >>> import kopt.testing as kt
    >>> from kopt.contract.registry import registry
    >>> kernel = kt.kernel_instance(registry().get("kernel", "gaussian"))
    >>> X = np.random.default_rng(0).normal(size=(6, 2))
    >>> kt.check_engine(kernel, X)
    """
    name = _name(kernel)
    X = np.asarray(X, dtype=F64)
    n, d = X.shape
    rng = np.random.default_rng(seed)
    count = n_blocks * block_size
    for dtype, rtol in (("float64", 1e-10), ("float32", 2e-4)):
        fm = _fmap(kernel, d, seed=seed, block_size=block_size, count=count, dtype=dtype, xp=xp)
        Z = to_numpy(fm.transform(X)).astype(F64)
        assert Z.shape == (n, count), f"kernel {name!r}: transform has shape {Z.shape}, expected {(n, count)}"
        assert np.all(np.isfinite(Z)), f"kernel {name!r}: non-finite features ({dtype})"
        for tail in ((), (n_out,)):
            coef = rng.standard_normal((n_blocks, block_size) + tail)
            v = rng.standard_normal((n,) + tail)
            want_p = Z @ coef.reshape(count, *tail)
            want_a = (Z.T @ v).reshape(coef.shape)
            got_p = to_numpy(fm.predict(X, coef))
            got_a = to_numpy(fm.adjoint(X, v))
            pred, grad = fm.predict_adjoint(X, coef, lambda f, lo, hi: v[lo:hi] if xp is np else xp.asarray(v[lo:hi]))
            scale_p = np.abs(Z).max() * np.abs(coef).sum(axis=(0, 1)).max() + 1e-300
            scale_a = np.abs(Z).max() * np.abs(v).sum(axis=0).max() + 1e-300
            for what, got, want, s in (("predict", got_p, want_p, scale_p), ("adjoint", got_a, want_a, scale_a),
                                       ("predict_adjoint (pred)", to_numpy(pred), want_p, scale_p),
                                       ("predict_adjoint (grad)", to_numpy(grad), want_a, scale_a)):
                assert got.shape == want.shape, f"kernel {name!r}: {what} has shape {got.shape}, want {want.shape}"
                err = np.abs(got - want).max() / s
                assert err <= rtol, f"kernel {name!r}: {what} ({dtype}, tail {tail}) differs from the dense product " \
                                    f"by {err:.3g} (relative)"
        if dtype == "float64":
            Z64 = Z
        else:
            err = np.abs(Z - Z64).max() / (np.abs(Z64).max() + 1e-300)
            assert err <= 1e-3, f"kernel {name!r}: float32 features differ from float64 by {err:.3g} (relative)"


def check_domain(kernel: Kernel, X: np.ndarray) -> None:
    """A kernel with a restricted ``input_domain`` rejects data outside it with ``kopt.DataError``.

    Parameters
    ----------
    kernel : Kernel
        A kernel instance with a numeric bandwidth.
    X : array of shape (n, d)
        Points in the kernel's domain.

    Raises
    ------
    AssertionError
        The property fails; the message names the component, the property and the first offending point.

    Examples
    --------
    >>> import numpy as np
    >>> import kopt.testing as kt
    >>> from kopt.contract.registry import registry
    >>> kernel = kt.kernel_instance(registry().get("kernel", "gaussian"))
    >>> X = np.random.default_rng(0).normal(size=(6, 2))
    >>> kt.check_domain(kernel, X)
    """
    X = np.asarray(X, dtype=F64)
    kernel.check_input(X)  # in the domain: accepted
    domain = kernel.input_domain
    if domain == "real":
        return
    bad = X.copy()
    bad[0, 0] = -1e6  # outside any domain "x ≥ a" with a > −1e6
    fm = _fmap(kernel, X.shape[1], block_size=8, count=8)
    for what, call in (("exact", lambda: kernel.exact(bad, X)), ("FeatureMap.predict",
                                                                 lambda: fm.predict(bad, np.ones((1, 8))))):
        try:
            call()
        except DataError:
            continue
        raise AssertionError(f"kernel {_name(kernel)!r} (input_domain {domain!r}): {what} accepted data outside "
                             "its domain instead of raising DataError")


#: the checks :func:`check_kernel` runs, in order (the last four need ``has_features``)
KERNEL_CHECKS = ("exact", "psd", "domain", "regeneration", "unbiased", "dsg_gradient", "engine")


def check_kernel(kernel: Kernel, X: np.ndarray | None = None, *, d: int = 3, n: int = 6, seed: int = 0,
                 n_features: int = 1 << 15, xp: ModuleType = np, skip: Iterable[str] = (),
                 vary: bool = True) -> list[str]:
    """Run the kernel checks on ``X`` (or on points drawn from ``seed``); returns the names of the checks run.

    The checks are :data:`~kopt.testing.KERNEL_CHECKS`, in that order; the feature checks run only for a kernel with
    ``has_features``.  Regeneration runs before the statistical checks, so a sampler that ignores the generator it is
    given is reported as such, not as biased.

    Parameters
    ----------
    kernel : Kernel
        An instance with a numeric bandwidth.
    X : array of shape (n, d), optional
        Points in the kernel's domain; drawn when omitted.
    d, n : int, optional
        Dimension and number of drawn points.
    seed : int, optional
        Seed of the drawn points and of the feature maps of the statistical checks.
    n_features : int, optional
        Features of the unbiasedness and doubly stochastic gradient checks.
    xp : module, optional
        ``numpy`` or ``cupy``: the array module of the regeneration and engine checks.
    skip : iterable of str, optional
        Names from :data:`~kopt.testing.KERNEL_CHECKS` to leave out (e.g. ``("unbiased", "dsg_gradient")`` while
        iterating on a sampler).
    vary : bool, optional
        Repeat the checks on the kernel rebuilt with each numeric parameter that is 1 (the bandwidth, typically) set
        to the values of :data:`~kopt.testing.KERNEL_VALUES`: at 1 a sampler drawing at the bandwidth σ instead of
        1/σ is exact.  A failure there names the value.

    Returns
    -------
    list of str
        The checks run, in order.

    Raises
    ------
    AssertionError
        A check fails; the message names the kernel, the check and the first offending point.
    ValueError
        ``skip`` names an unknown check.

    Examples
    --------
    >>> import numpy as np
    >>> import kopt.testing as kt
    >>> from kopt.contract.registry import registry
    >>> kernel = kt.kernel_instance(registry().get("kernel", "gaussian"))
    >>> X = np.random.default_rng(0).normal(size=(6, 2))
    >>> kt.check_kernel(kernel, n_features=4096)
    ['exact', 'psd', 'domain', 'regeneration', 'unbiased', 'dsg_gradient', 'engine']
    """
    unknown = set(skip) - set(KERNEL_CHECKS)
    if unknown:
        raise ValueError(f"unknown kernel checks {sorted(unknown)}; known: {', '.join(KERNEL_CHECKS)}")
    ran = _check_kernel(kernel, X, d, n, seed, n_features, xp, skip)
    if vary:
        run_at_other_values(kernel, KERNEL_VALUES,
                            lambda other: _check_kernel(other, X, d, n, seed, n_features, xp, skip), "check_kernel")
    return ran


def _check_kernel(kernel, X, d, n, seed, n_features, xp, skip):
    rng = np.random.default_rng(seed)
    if X is None:
        X = sample_inputs(kernel, n, d, rng)
    X = np.asarray(X, dtype=F64)
    more = sample_inputs(kernel, 20, X.shape[1], rng)
    y = rng.standard_normal(X.shape[0])
    steps = [
        ("exact", lambda: check_exact(kernel, X)),
        ("psd", lambda: check_psd(kernel, np.vstack([X, more]))),
        ("domain", lambda: check_domain(kernel, X)),
    ]
    if kernel.has_features:
        steps += [
            ("regeneration", lambda: check_regeneration(kernel, X.shape[1], xp=xp)),
            ("unbiased", lambda: check_unbiased(kernel, X, n_features=n_features, seed=seed)),
            ("dsg_gradient", lambda: check_dsg_gradient(kernel, X, y, n_features=n_features, seed=seed)),
            ("engine", lambda: check_engine(kernel, X, xp=xp)),
        ]
    ran = []
    for name, fn in steps:
        if name not in skip:
            fn()
            ran.append(name)
    return ran


__all__ = [
    "KERNEL_CHECKS",
    "check_domain",
    "check_dsg_gradient",
    "check_engine",
    "check_exact",
    "check_kernel",
    "check_psd",
    "check_regeneration",
    "check_unbiased",
    "kernel_instance",
    "sample_inputs",
]
