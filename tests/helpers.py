"""Test helpers: in-process registration of test-only components, the demo plugin on disk."""
from __future__ import annotations

import contextlib
import importlib
import io
import math
import shutil
import sys
import zipfile
from pathlib import Path

import numpy as np

from kopt.contract.components import Kernel, Loss
from kopt.contract.hookspecs import hookimpl
from kopt.contract.registry import registry
from kopt.numerics.backend import get_namespace
from kopt.numerics.prox import newton_prox

HERE = Path(__file__).resolve().parent


class NonsmoothLoss(Loss):
    name = "test_nonsmooth"
    target = "binary"
    smooth = False

    def value(self, u, y):
        return get_namespace(u).maximum(0.0, 1.0 - y * u)


class BinarySquare(Loss):
    name = "test_binary_square"
    target = "binary"
    smooth = True
    has_conjugate = True

    def value(self, u, y):
        return 0.5 * (u - y) ** 2

    def grad(self, u, y):
        return u - y

    def conj(self, v, y):
        return 0.5 * v * v + v * y


class MulticlassLoss(Loss):
    name = "test_multiclass"
    target = "multiclass"
    smooth = True
    has_conjugate = True


class ExactOnlyKernel(Kernel):
    name = "test_exact_only"
    has_features = False
    bandwidth_metric = None

    def exact(self, X, Y):
        return X @ Y.T


class _TestComponents:
    @hookimpl
    def kopt_register_losses(self, register):
        for cls in (NonsmoothLoss, BinarySquare, MulticlassLoss):
            register(cls)

    @hookimpl
    def kopt_register_kernels(self, register):
        register(ExactOnlyKernel)


@contextlib.contextmanager
def registered(plugin, name):
    """Register an in-process plugin for the duration of a block (unregistered in ``finally``)."""
    reg = registry()
    reg.register_plugin(plugin, name=name, distribution="kopt-tests")
    try:
        yield reg
    finally:
        reg.unregister_plugin(name)


def extra_components():
    return registered(_TestComponents(), "kopt-test-components")


def _registered_module(module, name):
    sys.path.insert(0, str(HERE / "thirdparty"))
    try:
        mod = importlib.import_module(module)
    finally:
        sys.path.pop(0)
    return registered(mod, name)


def demo_plugin():
    """The demo third-party plugin module, registered in-process."""
    return _registered_module("kopt_demo_plugin", "demo")


def install_plugin(root: Path, package: str, distribution: str, version: str, entry_points: dict) -> Path:
    """Copy ``tests/thirdparty/<package>`` into ``root`` with its dist-info, as pip would install it.

    ``entry_points`` maps entry-point names of the ``kopt`` group to modules.
    """
    shutil.copytree(HERE / "thirdparty" / package, root / package)
    dist = root / f"{distribution.replace('-', '_')}-{version}.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {distribution}\nVersion: {version}\n")
    (dist / "entry_points.txt").write_text("[kopt]\n" + "".join(f"{k} = {v}\n" for k, v in entry_points.items()))
    return root


def install_demo_plugin(root: Path, *, broken=False) -> Path:
    """Install the demo plugin into ``root`` (``broken``: with an entry point whose module is missing)."""
    eps = {"demo": "kopt_demo_plugin"}
    if broken:
        eps["broken"] = "kopt_missing_module_xyz"
    return install_plugin(root, "kopt_demo_plugin", "kopt-demo-plugin", "0.3.1", eps)


def install_gd_solver(root: Path) -> Path:
    """Install the example solver package of docs/plugin-guide.md ("Writing a solver") into ``root``."""
    return install_plugin(root, "kopt_gd_solver", "kopt-gd-solver", "0.1.0", {"gd": "kopt_gd_solver"})


def gd_solver():
    """The example solver package, registered in-process."""
    return _registered_module("kopt_gd_solver", "gd")


def regression_csv(path: Path, n=400, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    y = np.sin(X[:, 0]) + 0.5 * X[:, 1] ** 2 + 0.1 * rng.standard_normal(n)
    np.savetxt(path, np.column_stack([y, X]), delimiter=",", fmt="%.6f")
    return path


def smooth_rows(n, d=3, seed=0, task="real"):
    """Rows X (n × d, standard normal) and a smooth target sin(1.5 x₀) + x₁x₂/2: real (noise 0.2) or ±1 labels
    of it (noise 0.3, ``task="binary"``): the joker tests' data."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    f = np.sin(1.5 * X[:, 0]) + 0.5 * X[:, 1] * X[:, 2]
    if task == "binary":
        return X, np.where(f + 0.3 * rng.standard_normal(n) > 0, 1.0, -1.0)
    return X, f + 0.2 * rng.standard_normal(n)


def non_regular_path(kind: str, folder: Path, name: str):
    """A path kopt must refuse without reading: a FIFO, ``/dev/zero`` (None where it is missing) or a folder."""
    import os

    if kind == "fifo":
        path = folder / name
        os.mkfifo(path)
        return path
    if kind == "dev-zero":
        return "/dev/zero" if os.path.exists("/dev/zero") else None
    path = folder / name
    path.mkdir()
    return path


class KillWorker:
    """A progress hook that kills the Dask worker process holding partition 0's rows once, after iteration
    (or round) ``at``; the worker's nanny starts a new one."""

    def __init__(self, client, at):
        self.client, self.at, self.done = client, at, False

    @hookimpl
    def kopt_iteration(self, run, record):
        import os

        if record.iteration == self.at and not self.done:
            self.done = True
            victim = sorted(self.client.nthreads())[0]
            self.client.run(os._exit, 1, workers=[victim], on_error="ignore")


def signal_at_first_checkpoint(cmd, env, checkpoint, signum, timeout=60):
    """Start ``kopt solve`` (``cmd``), send ``signum`` once ``checkpoint`` exists; returns ``(returncode, stderr)``."""
    import subprocess
    import time

    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + timeout
    while not checkpoint.exists() and time.time() < deadline and proc.poll() is None:
        time.sleep(0.05)
    assert checkpoint.exists(), proc.communicate()[1]
    proc.send_signal(signum)
    _, err = proc.communicate(timeout=timeout)
    return proc.returncode, err


def example_solver():
    """The plugin guide's example solver class (tests/thirdparty/kopt_gd_solver), imported without registering it."""
    sys.path.insert(0, str(HERE / "thirdparty"))
    try:
        return importlib.import_module("kopt_gd_solver").GradientDescent
    finally:
        sys.path.pop(0)


def curved_classes(n=600, d=3, seed=0, classes=2, noise=0.3):
    """Rows X (n × d, standard normal) and labels of a curved boundary, sin(2 x₀) + x₁² − 1 plus noise: ±1 for two
    classes, else ids 0..classes−1 by the score's quantiles (the auto and svm_nystrom tests' data)."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    score = np.sin(2 * X[:, 0]) + X[:, 1] ** 2 - 1 + noise * rng.standard_normal(n)
    if classes == 2:
        return X, np.where(score > 0, 1, -1)
    return X, np.digitize(score, np.quantile(score, np.linspace(0, 1, classes + 1)[1:-1]))


# -- shared by several test files ------------------------------------------------------------------------------
#: a gibibyte
GIB = 2**30


class LogCosh(Loss):
    """ℓ(y, u) = log cosh((u − y)/s); ℓ*(v) = vy + h(vs) on |v| ≤ 1/s, h(w) = ((1+w)log(1+w) + (1−w)log(1−w))/2."""

    name = "m_logcosh"
    summary = "log-cosh robust regression (mutation tests)"
    target = "real"
    smooth = True
    has_conjugate = True
    params = {"scale": {"type": "number", "exclusiveMinimum": 0, "default": 1.0}}

    def value(self, u, y):
        xp = get_namespace(u)
        r = (u - xp.asarray(y, dtype=u.dtype)) / self.options.scale
        a = xp.abs(r)
        return a + xp.log1p(xp.exp(-2 * a)) - u.dtype.type(math.log(2.0))

    def grad(self, u, y):
        xp = get_namespace(u)
        s = self.options.scale
        return xp.tanh((u - xp.asarray(y, dtype=u.dtype)) / s) / s

    def curvature(self, u, y):
        s = self.options.scale
        t = self.grad(u, y) * s
        return (1 - t * t) / s**2

    def grad_bound(self):
        return 1.0 / self.options.scale

    def smoothness(self):
        return 1.0 / self.options.scale**2

    def prox(self, u, y, step):
        return newton_prox(self, u, y, step)

    def conj_box(self, y):
        y = np.asarray(y, dtype=np.float64)
        b = 1.0 / self.options.scale
        return np.full(y.shape, -b), np.full(y.shape, b)

    def conj(self, v, y):
        xp = get_namespace(v)
        inside = xp.abs(v) <= v.dtype.type(1.0 / self.options.scale)  # the box in v's dtype
        wc = xp.clip(v * v.dtype.type(self.options.scale), -1, 1)
        h = 0.5 * (_xlog1p(xp, wc) + _xlog1p(xp, -wc))
        return xp.where(inside, v * xp.asarray(y, dtype=v.dtype) + h, v.dtype.type(np.inf))

    def conj_grad(self, v, y):
        xp = get_namespace(v)
        s = v.dtype.type(self.options.scale)
        return xp.asarray(y, dtype=v.dtype) + s * xp.arctanh(v * s)

    def conj_curvature(self, v, y):
        s = v.dtype.type(self.options.scale)
        w = v * s
        return s * s / (1 - w * w)


def _xlog1p(xp, w):
    """(1 + w) log(1 + w), 0 at w = −1."""
    with np.errstate(divide="ignore", invalid="ignore"):  # the w = −1 entries, replaced by 0
        return xp.where(w > -1, (1 + w) * xp.log1p(w), w.dtype.type(0.0))


def npy_bytes(a) -> bytes:
    buf = io.BytesIO()
    np.save(buf, a)
    return buf.getvalue()


def npz_with_header(name, header: dict, payload=b"") -> bytes:
    """An .npz whose member ``name`` has a hand-written .npy header (crafted dtype or shape)."""
    text = repr(header).encode("latin1")
    pad = 64 - (10 + len(text) + 1) % 64
    npy = b"\x93NUMPY\x01\x00" + (len(text) + pad + 1).to_bytes(2, "little") + text + b" " * pad + b"\n" + payload
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr(f"{name}.npy", npy)
        zf.writestr("y.npy", npy_bytes(np.zeros(2)))
    return buf.getvalue()


def check_error(argv, capsys, phrases=()):
    """``kopt ARGV`` exits 2 with one ``kopt: error:`` line (warnings aside) and no traceback."""
    from kopt.cli import main

    status = main(argv)
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if not ln.startswith("kopt: warning:")]
    assert status == 2, err
    assert "Traceback" not in err and "internal error" not in err, err
    assert len(lines) == 1 and lines[0].startswith("kopt: error: "), err
    for phrase in phrases:
        assert phrase in err, f"{phrase!r} not in {err!r}"
    return err


def clustered_rows(n, seed=0):
    """Rows of two columns, 90% of them in three tight clusters and the rest spread over a square, and a smooth
    low-noise target: uniform Nyström centers crowd the clusters (the center-rule tests' data)."""
    rng = np.random.default_rng(seed)
    tight = rng.random(n) < 0.9
    middles = np.array([[-1.5, 0.5], [1.0, -1.0], [0.5, 1.5]])
    X = np.where(tight[:, None], middles[rng.integers(0, 3, n)] + 0.05 * rng.standard_normal((n, 2)),
                 rng.uniform(-3, 3, (n, 2)))
    return X, np.sin(2 * X[:, 0]) * np.cos(2 * X[:, 1]) + 0.01 * rng.standard_normal(n)
