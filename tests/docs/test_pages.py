"""The user pages say what is, the measurements live in the design records, and the project cites only what a user
of the package can open.

* A page a user reads (docs/*.md but the two generated ones) is at most about 300 lines of prose (its code blocks
  aside: the plugin guide's complete examples are files of the test suite), docs/defaults.md about 200 in all, and
  no line of one names a date, a commit hash, or what was "tried and not adopted": that history is git's, and the
  figures behind a rule are its design record's.
* Each design record (docs/design/*.md) states its rule and the command that measures it again, and is listed in
  docs/design/index.md; every docs/design/ link in the code, the scripts and the pages leads to one.
* Nothing in the package, the plugins, the pages, the design records or the specs names a file a user does not
  have, and every paper cited by its authors and year has its full reference in docs/references.md.
"""
from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
DESIGN = DOCS / "design"
GENERATED = {"spec-reference.md", "benchmarks.md"}
USER_PAGES = [p for p in sorted(DOCS.glob("*.md")) if p.name not in GENERATED]
RECORDS = [p for p in sorted(DESIGN.glob("*.md")) if p.name != "index.md"]
#: a date, a short commit hash (hex with a letter and a digit), or a story of what was tried
HISTORY = re.compile(r"20[0-9]{2}-[01][0-9]-[0-3][0-9]|\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*[0-9])[0-9a-f]{7,12}\b"
                     r"|[Tt]ried and|not adopted")
#: files outside the repository, and the project's internal paper numbering
OUTSIDE = re.compile(r"BENCHMARKS\.md|ALGORITHMS\.md|\.\./shared|papers/00[0-9]")
#: a citation by authors and year: "Dai et al. (2014)", "Zhang & Lai 2025", "Lin, Lin & Weng (2007)"
CITATION = re.compile(r"\b([A-Z][\w\-é]+)(?: et al\.|,? & [A-Z][\w\-é]+) \(?((?:19|20)\d\d)\b")
MAX_PROSE = 320
MAX_DEFAULTS = 200


def _prose_lines(text: str) -> int:
    """Lines outside fenced code blocks."""
    inside, count = False, 0
    for line in text.splitlines():
        if line.strip().startswith("```"):
            inside = not inside
        elif not inside:
            count += 1
    return count


def _sources():
    """Every text a citation or a link may live in: the package, the plugins, the pages, the records, the specs."""
    paths = [*sorted((ROOT / "kopt").rglob("*.py")), *sorted((ROOT / "plugins").rglob("*.py")), *USER_PAGES,
             *sorted(DESIGN.glob("*.md")), *sorted((ROOT / "specs").glob("*.yaml")), ROOT / "README.md",
             *sorted((DOCS / "benchmarks").glob("*.py"))]
    return {p: p.read_text(encoding="utf-8") for p in paths}


def test_user_pages_are_short():
    long = {p.name: n for p in USER_PAGES if (n := _prose_lines(p.read_text(encoding="utf-8"))) > MAX_PROSE}
    assert not long, f"pages over {MAX_PROSE} lines of prose (move measurements to docs/design/): {long}"
    n = len((DOCS / "defaults.md").read_text(encoding="utf-8").splitlines())
    assert n <= MAX_DEFAULTS, f"docs/defaults.md has {n} lines: each default, its rule, its override, its report"


def test_user_pages_carry_no_history():
    found = [f"{p.relative_to(ROOT)}:{i}: {line.strip()[:100]}" for p in USER_PAGES
             for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1) if HISTORY.search(line)]
    assert not found, "dates, commit hashes or stories on a user page (they belong in git or a design record):\n" + \
        "\n".join(found)


def test_nothing_names_a_file_outside_the_repository():
    found = [f"{p.relative_to(ROOT)}: {m.group(0)}" for p, text in _sources().items() for m in OUTSIDE.finditer(text)]
    assert not found, "names of files a user of the package does not have: " + "; ".join(found[:20])


def test_every_cited_paper_has_its_reference():
    paragraphs = (DOCS / "references.md").read_text(encoding="utf-8").split("\n\n")
    missing = set()
    for path, text in _sources().items():
        for author, year in CITATION.findall(text):
            if not any(author in par and year in par for par in paragraphs):
                missing.add(f"{author} ({year}) in {path.relative_to(ROOT)}")
    assert not missing, "papers cited without an entry in docs/references.md: " + "; ".join(sorted(missing))


def test_design_records_state_their_rule_and_command_and_are_listed():
    index = (DESIGN / "index.md").read_text(encoding="utf-8")
    for record in RECORDS:
        text = record.read_text(encoding="utf-8")
        assert text.startswith("# "), f"{record.name}: a record opens with its title"
        assert "**Rule.**" in text, f"{record.name}: a record states the rule the code follows (**Rule.**)"
        assert "## Command" in text, f"{record.name}: a record gives the command that measures it again"
        assert f"]({record.name})" in index, f"docs/design/index.md does not list {record.name}"


def test_design_links_lead_to_records():
    names = {p.name for p in DESIGN.glob("*.md")}
    broken = [f"{p.relative_to(ROOT)}: docs/design/{name}" for p, text in _sources().items()
              for name in re.findall(r"design/([\w-]+\.md)", text) if name not in names]
    assert not broken, "links to design records that do not exist: " + "; ".join(broken)
