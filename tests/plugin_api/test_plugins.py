"""Plugins: a third-party package installed with its entry points, broken plugins, `kopt plugins`."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest
from helpers import HERE, install_demo_plugin, install_gd_solver, regression_csv

from kopt.contract.registry import registry

DEMO_SPEC = """\
name: demo
data: {train: data.csv, test: test.csv, label: 0}
model:
  loss: {name: demo_logcosh, scale: 1.0}
  kernel: {name: gaussian, bandwidth: median}
  features: {count: 512, block_size: 256}
  regularizer: {name: l2, lambda: 1.0e-4}
solver: {name: demo_gd, iterations: 40, step: 1.0, batch_size: 128}
backend: numpy
"""


def _kopt(args, env_path, cwd):
    env = dict(os.environ, PYTHONPATH=str(env_path))
    return subprocess.run([sys.executable, "-m", "kopt", *args], capture_output=True, text=True, env=env, cwd=cwd,
                          timeout=120)


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    root = tmp_path_factory.mktemp("site")
    install_demo_plugin(root, broken=True)
    return root


def test_builtins_come_through_the_entry_point_group():
    reg = registry()
    assert reg.components["loss"]["square"].distribution == "kopt"
    assert reg.components["solver"]["krr_exact"].plugin == "krr_exact"


@pytest.mark.slow
def test_third_party_plugin_listed_with_origin_and_broken_one_reported(installed, tmp_path):
    out = _kopt(["plugins"], installed, tmp_path)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    demo = [ln for ln in lines if "demo_logcosh" in ln]
    assert demo and "kopt-demo-plugin 0.3.1" in demo[0] and demo[0].split()[0] == "loss"
    assert any("demo_gd" in ln and "solver" in ln for ln in lines)
    assert any(ln.split()[:2] == ["solver", "krr_exact"] for ln in lines)  # built-ins still there
    assert "failed to load" in out.stdout
    assert "broken = kopt_missing_module_xyz" in out.stdout and "ModuleNotFoundError" in out.stdout


@pytest.mark.slow
def test_third_party_plugin_solves_end_to_end(installed, tmp_path):
    regression_csv(tmp_path / "data.csv", n=600, seed=1)
    regression_csv(tmp_path / "test.csv", n=200, seed=2)
    (tmp_path / "spec.yaml").write_text(DEMO_SPEC)
    out = _kopt(["solve", "spec.yaml", "--quiet"], installed, tmp_path)
    assert out.returncode == 0, out.stderr
    report = json.loads((tmp_path / "runs" / "demo" / "report.json").read_text())
    trace = [r["objective"] for r in report["trace"]]
    assert len(trace) == 40 and np.mean(trace[-5:]) < 0.5 * trace[0]
    assert report["metrics"]["rmse"] < 0.6  # the target's std is ~0.9
    pred = _kopt(["predict", "runs/demo/model.json", "test.csv", "--out", "pred.csv"], installed, tmp_path)
    assert pred.returncode == 0, pred.stderr
    assert "rmse" in pred.stderr
    P = np.loadtxt(tmp_path / "pred.csv", delimiter=",", skiprows=1)
    assert P.shape == (200, 2)


@pytest.mark.slow
def test_unknown_component_without_the_plugin(tmp_path):
    regression_csv(tmp_path / "data.csv", n=50)
    regression_csv(tmp_path / "test.csv", n=20)
    (tmp_path / "spec.yaml").write_text(DEMO_SPEC)
    out = subprocess.run([sys.executable, "-m", "kopt", "validate", "spec.yaml"], capture_output=True, text=True,
                         cwd=tmp_path, timeout=60)
    assert out.returncode == 2
    assert "unknown loss 'demo_logcosh'" in out.stderr and "Traceback" not in out.stderr


def test_register_rejects_wrong_kinds():
    from kopt.contract.hookspecs import hookimpl

    class Bad:
        @hookimpl
        def kopt_register_losses(self, register):
            register(dict)

    reg = registry()
    before = len(reg.errors)
    reg.register_plugin(Bad(), name="bad-plugin")
    try:
        assert len(reg.errors) == before + 1
        assert "expects a subclass of Loss" in str(reg.errors[-1])
    finally:
        reg.unregister_plugin("bad-plugin")
        del reg.errors[before:]


def test_third_party_loss_passes_the_public_check_suite():
    from helpers import demo_plugin

    from kopt.testing import check_loss

    with demo_plugin() as reg:
        loss = reg.get("loss", "demo_logcosh")(scale=0.7)
        ran = check_loss(loss)
    assert {"gradients", "dtypes", "convexity"} <= set(ran)


@pytest.mark.slow
def test_kopt_plugins_lists_predictors_with_their_plugin(installed, tmp_path):
    out = _kopt(["plugins"], installed, tmp_path)
    assert out.returncode == 0, out.stderr
    rows = [ln.split() for ln in out.stdout.splitlines()]
    predictors = {r[1]: r for r in rows if r[:1] == ["predictor"]}
    for name in ("kernel_expansion", "feature_expansion", "linear"):
        assert predictors[name][2:5] == ["kopt", "0.1.0", "predictors"], predictors[name]
    assert predictors["gp_posterior"][4] == "gp"
    assert predictors["demo_expansion"][2:5] == ["kopt-demo-plugin", "0.3.1", "demo"]


@pytest.mark.slow
def test_unknown_component_mentions_the_plugin_that_failed_to_load(installed, tmp_path):
    regression_csv(tmp_path / "data.csv", n=50)
    regression_csv(tmp_path / "test.csv", n=20)
    (tmp_path / "spec.yaml").write_text(DEMO_SPEC.replace("name: gaussian", "name: demo_rbf"))
    out = _kopt(["validate", "spec.yaml"], installed, tmp_path)
    assert out.returncode == 2, out.stderr
    err = out.stderr
    assert "unknown kernel 'demo_rbf'" in err and "registered kernels: " in err and "Traceback" not in err
    assert "note: plugin 'broken' (broken = kopt_missing_module_xyz, from kopt-demo-plugin) failed to load " \
           "(ModuleNotFoundError: " in err
    assert "which may provide it" in err


# -- the example solver of docs/plugin-guide.md, installed as a third party installs it ---------------

GD_CHECK = """\
from kopt.testing import check_solver
out = check_solver("gd", out_dir="runs", spec_overrides={"model": {"regularizer": {"lambda": 0.01}},
                                                         "solver": {"iterations": 400}})
print(",".join(out.ran), out.result.status, out.result.n_iter)
"""


@pytest.fixture(scope="module")
def gd_site(tmp_path_factory):
    return install_gd_solver(tmp_path_factory.mktemp("gd-site"))


@pytest.mark.slow
def test_example_solver_is_listed_and_passes_check_solver_when_installed(gd_site, tmp_path):
    out = _kopt(["plugins"], gd_site, tmp_path)
    assert out.returncode == 0, out.stderr
    gd = [ln.split() for ln in out.stdout.splitlines() if ln.split()[:2] == ["solver", "gd"]]
    assert gd and gd[0][2:5] == ["kopt-gd-solver", "0.1.0", "gd"], out.stdout
    check = subprocess.run([sys.executable, "-c", GD_CHECK], capture_output=True, text=True, cwd=tmp_path,
                           env=dict(os.environ, PYTHONPATH=str(gd_site)), timeout=120)
    assert check.returncode == 0, check.stderr
    ran, status, n_iter = check.stdout.split()
    assert ran.split(",")[-2:] == ["reproducible", "resume"] and status == "converged" and int(n_iter) > 1


def test_plugin_guide_shows_the_example_solver_whole():
    """The guide's code block is the package file itself, so the two cannot drift apart."""
    guide = (HERE.parent / "docs" / "plugin-example-gd.md").read_text(encoding="utf-8")
    marker = "<!-- the file tests/thirdparty/kopt_gd_solver/__init__.py, checked by tests/plugin_api/test_plugins.py -->"
    assert guide.count(marker) == 1
    block = guide.split(marker, 1)[1].split("```python\n", 1)[1].split("\n```\n", 1)[0] + "\n"
    source = (HERE / "thirdparty" / "kopt_gd_solver" / "__init__.py").read_text(encoding="utf-8")
    assert block == source
