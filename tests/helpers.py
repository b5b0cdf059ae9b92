"""Test helpers: in-process registration of test-only components, the demo plugin on disk."""
from __future__ import annotations

import contextlib
import importlib
import shutil
import sys
from pathlib import Path

import numpy as np

from kopt.backend import get_namespace
from kopt.components import Kernel, Loss
from kopt.hookspecs import hookimpl
from kopt.plugins import registry

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


def demo_plugin():
    """The demo third-party plugin module, registered in-process."""
    sys.path.insert(0, str(HERE / "thirdparty"))
    try:
        mod = importlib.import_module("kopt_demo_plugin")
    finally:
        sys.path.pop(0)
    return registered(mod, "demo")


def install_demo_plugin(root: Path, *, broken=False) -> Path:
    """Copy the demo plugin into ``root`` with entry-point metadata, as pip would install it."""
    shutil.copytree(HERE / "thirdparty" / "kopt_demo_plugin", root / "kopt_demo_plugin")
    dist = root / "kopt_demo_plugin-0.3.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: kopt-demo-plugin\nVersion: 0.3.1\n")
    eps = "[kopt]\ndemo = kopt_demo_plugin\n"
    if broken:
        eps += "broken = kopt_missing_module_xyz\n"
    (dist / "entry_points.txt").write_text(eps)
    return root


def regression_csv(path: Path, n=400, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    y = np.sin(X[:, 0]) + 0.5 * X[:, 1] ** 2 + 0.1 * rng.standard_normal(n)
    np.savetxt(path, np.column_stack([y, X]), delimiter=",", fmt="%.6f")
    return path
