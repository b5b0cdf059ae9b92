"""The runtime dependencies and extras in docs/install.md are pyproject.toml's: one table, checked here, and no second
list (in docs/install.md or the README). The README stays a product page: short, its commands and links real, and no
user-facing page names an issue by number."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

try:
    import tomllib
except ImportError:  # Python 3.10
    tomllib = pytest.importorskip("tomli")

ROOT = Path(__file__).resolve().parents[2]
INSTALL = ROOT / "docs" / "install.md"
TABLE_HEAD = "| package | at least | what kopt uses it for |"


def _project():
    with open(ROOT / "pyproject.toml", "rb") as f:
        return tomllib.load(f)["project"]


def _paragraphs(path=INSTALL):
    return path.read_text(encoding="utf-8").split("\n\n")


def _minimums(requirements):
    """``{"numpy": "1.24", ...}`` from ``["numpy>=1.24", ...]``: every runtime dependency states a minimum."""
    out = {}
    for req in requirements:
        m = re.fullmatch(r"\s*([A-Za-z0-9_.-]+)\s*>=\s*([0-9.]+)\s*", req)
        assert m, f"pyproject.toml: dependency {req!r} is not NAME>=VERSION, the form docs/install.md's table states"
        out[m.group(1).lower()] = m.group(2)
    return out


def _readme_table():
    tables = [p for p in _paragraphs() if TABLE_HEAD in p]
    assert len(tables) == 1, f"docs/install.md: expected one runtime-dependency table headed {TABLE_HEAD!r}"
    rows = [line for line in tables[0].splitlines() if line.startswith("|")][2:]
    return {cells[0].lower(): cells[1] for cells in ([c.strip() for c in r.strip("|").split("|")] for r in rows)}


def test_install_table_is_pyprojects_dependencies():
    assert _readme_table() == _minimums(_project()["dependencies"])


def test_install_lists_every_extra():
    extras = [p for p in _paragraphs() if p.startswith("Extras (")]
    assert len(extras) == 1, "docs/install.md: expected one paragraph starting 'Extras ('"
    named = set(re.findall(r"`([a-z-]+)`\s+\(", extras[0]))
    assert named == set(_project()["optional-dependencies"])


def test_no_second_list_of_runtime_dependencies():
    """A paragraph naming four or more runtime dependencies outside the table is a second list to drift."""
    names = set(_minimums(_project()["dependencies"]))
    for path in (INSTALL, ROOT / "README.md"):
        for paragraph in _paragraphs(path):
            if TABLE_HEAD in paragraph:
                continue
            found = {n for n in names if re.search(rf"(?<![\w-]){re.escape(n)}(?![\w-])", paragraph, re.IGNORECASE)}
            assert len(found) < 4, f"{path.name} lists runtime dependencies outside its table: {sorted(found)}\n{paragraph}"


# -- the README as a product page, the docs index, no issue numbers ---------------------------------------

README = ROOT / "README.md"
TEST_COMMAND = 'python3 -m pip install -e ".[test]" && bash .ci/run'
#: a user-facing page citing an issue by number ("issue 12", "Issue 29", "issues 3"); result files named so are
#: excepted by FILE_WITH_NUMBER, since renaming them breaks what the pages name
ISSUE = re.compile(r"[Ii]ssues? ?#?[0-9]+")
FILE_WITH_NUMBER = re.compile(r"[\w.-]*issue\d+[\w.-]*\.(?:jsonl|json|png|txt)")


def test_readme_is_at_most_150_lines():
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 150, f"README.md has {len(lines)} lines: move the detail into docs/"


def test_readme_and_ci_run_the_same_test_command():
    blocks = re.findall(r"```bash\n(.*?)\n```", README.read_text(encoding="utf-8"), re.S)
    assert TEST_COMMAND in [b.strip() for b in blocks], "README.md: the install-and-test command is missing"
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    # CI installs the test extra (and the docs extra, for its docs build) and runs pytest
    assert re.search(r'pip install -q -e "\.\[test(,docs)?\]"', ci) and "pytest" in ci


def test_readme_links_exist():
    text = README.read_text(encoding="utf-8")
    links = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text)
    local = [link for link in links if "://" not in link]
    assert {"docs/index.md", "CHANGELOG.md", "docs/plugin-guide.md", "docs/benchmarks.md", "LICENSE"} <= set(local)
    missing = [link for link in local if not (ROOT / link).exists()]
    assert not missing, f"README.md links to files that do not exist: {missing}"
    assert "MIT" in text


def test_docs_index_lists_every_page():
    index = (ROOT / "docs" / "index.md").read_text(encoding="utf-8")
    listed = re.findall(r"^- \[[^\]]+\]\(([\w.-]+\.md)\) -- \S", index, re.M)
    pages = sorted(p.name for p in (ROOT / "docs").glob("*.md"))
    assert sorted(set(listed)) == pages, f"docs/index.md lists {sorted(set(listed))}, docs/ has {pages}"
    assert len(listed) == len(set(listed)), "docs/index.md lists a page twice"


def test_no_issue_numbers_where_users_read():
    paths = [README, ROOT / "CHANGELOG.md", *sorted((ROOT / "docs").glob("*.md")), *sorted((ROOT / "specs").glob("*.yaml"))]
    found = []
    for path in paths:
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if ISSUE.search(FILE_WITH_NUMBER.sub("", line)):
                found.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()[:100]}")
    assert not found, "issue numbers in user-facing text (name the section or feature instead):\n" + "\n".join(found)


def test_specs_open_with_at_most_five_comment_lines():
    long = {}
    for path in sorted((ROOT / "specs").glob("*.yaml")):
        lines = path.read_text(encoding="utf-8").splitlines()
        head = next((i for i, line in enumerate(lines) if not line.startswith("#")), len(lines))
        if head > 5:
            long[path.name] = head
    assert not long, f"specs whose opening comment exceeds 5 lines (move the measurements into docs/): {long}"
