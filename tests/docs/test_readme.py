"""The README's runtime dependencies and extras are pyproject.toml's: one table, checked here, and no second list."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

try:
    import tomllib
except ImportError:  # Python 3.10
    tomllib = pytest.importorskip("tomli")

ROOT = Path(__file__).resolve().parents[2]
TABLE_HEAD = "| package | at least | what kopt uses it for |"


def _project():
    with open(ROOT / "pyproject.toml", "rb") as f:
        return tomllib.load(f)["project"]


def _paragraphs():
    return (ROOT / "README.md").read_text(encoding="utf-8").split("\n\n")


def _minimums(requirements):
    """``{"numpy": "1.24", ...}`` from ``["numpy>=1.24", ...]``: every runtime dependency states a minimum."""
    out = {}
    for req in requirements:
        m = re.fullmatch(r"\s*([A-Za-z0-9_.-]+)\s*>=\s*([0-9.]+)\s*", req)
        assert m, f"pyproject.toml: dependency {req!r} is not NAME>=VERSION, the form the README's table states"
        out[m.group(1).lower()] = m.group(2)
    return out


def _readme_table():
    tables = [p for p in _paragraphs() if TABLE_HEAD in p]
    assert len(tables) == 1, f"README.md: expected one runtime-dependency table headed {TABLE_HEAD!r}"
    rows = [line for line in tables[0].splitlines() if line.startswith("|")][2:]
    return {cells[0].lower(): cells[1] for cells in ([c.strip() for c in r.strip("|").split("|")] for r in rows)}


def test_readme_table_is_pyprojects_dependencies():
    assert _readme_table() == _minimums(_project()["dependencies"])


def test_readme_lists_every_extra():
    extras = [p for p in _paragraphs() if p.startswith("Extras (")]
    assert len(extras) == 1, "README.md: expected one paragraph starting 'Extras ('"
    named = set(re.findall(r"`([a-z-]+)`\s+\(", extras[0]))
    assert named == set(_project()["optional-dependencies"])


def test_no_second_list_of_runtime_dependencies():
    """A paragraph naming four or more runtime dependencies outside the table is a second list to drift."""
    names = set(_minimums(_project()["dependencies"]))
    for paragraph in _paragraphs():
        if TABLE_HEAD in paragraph:
            continue
        found = {n for n in names if re.search(rf"(?<![\w-]){re.escape(n)}(?![\w-])", paragraph, re.IGNORECASE)}
        assert len(found) < 4, f"README.md lists runtime dependencies outside its table: {sorted(found)}\n{paragraph}"
