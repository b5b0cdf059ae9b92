"""The built wheel: code, specs, the packaged sample, LICENSE, metadata, one plugin namespace.

Builds the wheel from a copy of the source tree into tmp_path (``pip wheel --no-build-isolation``, no
network: the ``test`` extra installs setuptools >= 77); about 2 s.
"""
from __future__ import annotations

import configparser
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PLUGINS = sorted(p.parent.name for p in (REPO / "plugins").glob("*/__init__.py"))


pytestmark = pytest.mark.slow  # every test here: out of the fast loop, pytest -m "not slow"


def _setuptools_ok():
    try:
        import setuptools
    except ImportError:
        return False
    return int(setuptools.__version__.split(".")[0]) >= 77


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    if not _setuptools_ok():
        pytest.skip("needs setuptools >= 77 (pip install -e '.[test]')")
    src = tmp_path_factory.mktemp("src")
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(REPO / name, src / name)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info")
    for name in ("kopt", "plugins", "specs"):
        shutil.copytree(REPO / name, src / name, ignore=ignore)
    out = tmp_path_factory.mktemp("wheel")
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                           str(src), "-w", str(out)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    (path,) = out.glob("kopt-*.whl")
    return zipfile.ZipFile(path)


def test_wheel_holds_code_specs_sample_and_license(wheel):
    names = set(wheel.namelist())
    dist = next(n.split("/")[0] for n in names if n.endswith(".dist-info/METADATA"))
    for spec in sorted((REPO / "specs").glob("*.yaml")):
        assert f"kopt/specs/{spec.name}" in names, spec.name
    for f in ("higgs_lightgbm_train.tsv.xz", "higgs_lightgbm_test.tsv.xz", "higgs_h2o_test_5k.csv.xz",
              "ATTRIBUTION.md"):
        assert f"kopt_plugins/datasets/data/{f}" in names
    assert f"{dist}/licenses/LICENSE" in names
    assert "kopt/py.typed" in names  # PEP 561: type checkers read the package's hints
    for path in sorted(REPO.glob("kopt/**/*.py")):  # every module of the engine and of the plugins
        assert path.relative_to(REPO).as_posix() in names, path
    for path in sorted(REPO.glob("plugins/**/*.py")):
        assert "kopt_plugins/" + path.relative_to(REPO / "plugins").as_posix() in names, path
    tops = {n.split("/")[0] for n in names}
    assert tops == {"kopt", "kopt_plugins", dist}, tops  # one plugin namespace, no stray top-level modules
    assert wheel.read(f"{dist}/top_level.txt").decode().split() == ["kopt", "kopt_plugins"]
    # every packaged file comes from the checkout (no stray build leftovers)
    assert not [n for n in names if n.endswith((".pyc", ".tmp", ".part"))]


def test_wheel_metadata_and_entry_points(wheel):
    names = wheel.namelist()
    dist = next(n.split("/")[0] for n in names if n.endswith(".dist-info/METADATA"))
    meta = wheel.read(f"{dist}/METADATA").decode()
    assert "License-Expression: MIT" in meta and "License-File: LICENSE" in meta
    assert meta.count("Classifier: ") >= 8 and "Classifier: Programming Language :: Python :: 3" in meta
    assert "Provides-Extra: plot" in meta
    ep = configparser.ConfigParser()
    ep.read_string(wheel.read(f"{dist}/entry_points.txt").decode())
    assert dict(ep["kopt"]) == {p: f"kopt_plugins.{p}" for p in PLUGINS}
    assert ep["console_scripts"]["kopt"] == "kopt.cli:main"
