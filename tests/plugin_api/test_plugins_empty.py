"""An entry point that loads but registers nothing is reported, not silent (issue 25)."""
from __future__ import annotations

import os
import subprocess
import sys
import types

import pytest

from kopt.contract.hookspecs import hookimpl
from kopt.contract.registry import empty_plugins, registry

UNDECORATED = '''\
"""A plugin whose hook lacks @hookimpl: pluggy never calls it, so its solver is never registered."""


def kopt_register_solvers(register):
    raise AssertionError("never called")
'''

SPEC = """\
name: empty
data: {train: data.csv}
model: {loss: {name: square}, kernel: {name: gaussian, bandwidth: 1.0}, regularizer: {name: l2, lambda: 0.01}}
solver: {name: mysolver}
"""


def _install(root, module, source, entry_point):
    (root / module).mkdir()
    (root / module / "__init__.py").write_text(source)
    dist = root / "kopt_empty-0.1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: kopt-empty\nVersion: 0.1.0\n")
    (dist / "entry_points.txt").write_text(f"[kopt]\n{entry_point} = {module}\n")


def _kopt(args, site, cwd):
    return subprocess.run([sys.executable, "-m", "kopt", *args], capture_output=True, text=True, cwd=cwd,
                          env=dict(os.environ, PYTHONPATH=str(site)), timeout=120)


@pytest.mark.slow
def test_kopt_plugins_reports_an_entry_point_that_registered_nothing(tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    _install(site, "kopt_empty", UNDECORATED, "mysolver")
    out = _kopt(["plugins"], site, tmp_path)
    assert out.returncode == 0, out.stderr
    assert "plugins that registered nothing" in out.stdout
    assert "entry point 'mysolver = kopt_empty' (from kopt-empty 0.1.0) loaded but registered no components" \
        in out.stdout
    # and a spec naming the solver says where it might have come from
    (tmp_path / "spec.yaml").write_text(SPEC)
    (tmp_path / "data.csv").write_text("1,2\n3,4\n")
    val = _kopt(["validate", "spec.yaml"], site, tmp_path)
    assert val.returncode == 2 and "unknown solver 'mysolver'" in val.stderr
    assert "note: entry point 'mysolver = kopt_empty' (from kopt-empty 0.1.0) loaded but registered no components, " \
           "and may be meant to provide it" in val.stderr


def test_plugins_that_register_or_only_observe_are_not_reported():
    reg = registry()
    assert reg.empty == []  # every built-in registers components
    observer = types.SimpleNamespace(kopt_iteration=hookimpl(lambda run, record: None))
    silent = types.SimpleNamespace()
    reg.pm.register(observer, name="t-observer")
    reg.pm.register(silent, name="t-silent")
    try:
        found = empty_plugins(reg, {"t-observer": "t-observer = obs", "t-silent": "t-silent = sil",
                                    "krr_exact": "krr_exact = kopt_plugins.krr_exact"})
    finally:
        reg.pm.unregister(name="t-observer")
        reg.pm.unregister(name="t-silent")
    assert found == ["entry point 't-silent = sil' (from <unknown>) loaded but registered no components"]
