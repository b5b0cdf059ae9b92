"""docs/benchmarks/ holds what the docs read: every result file a page or a script names exists, every result file
is named by one, and no page names a run by anything but its date and commit."""
from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "docs" / "benchmarks"
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), *sorted((ROOT / "docs" / "design").glob("*.md"))]
SCRIPTS = sorted(BENCH.glob("*.py")) + sorted((ROOT / "kopt").rglob("*.py")) + sorted((ROOT / "tests").rglob("*.sh"))
#: every other file a run could be named in
OTHERS = sorted((ROOT / "plugins").rglob("*.py")) + sorted((ROOT / "specs").glob("*.yaml"))
RESULT = r"[A-Za-z0-9_.-]+\.(?:jsonl|json|png|txt|log)"
#: the word for a work period, which no page may name a run by
PERIOD = "session"
#: a run named by a work period's number instead of its date and commit, or a result file with an "_s<N>" suffix
SEQUENCE = re.compile(rf"\b{PERIOD}s? \d+|\b(?:this|previous|earlier|that) {PERIOD}\b|_s\d+(?:_\w+)?\.(?:jsonl|json|png)",
                      re.IGNORECASE)


def _texts(paths):
    return {p: p.read_text(encoding="utf-8") for p in paths}


def test_every_named_result_file_exists():
    missing = []
    for path, text in _texts(PAGES + SCRIPTS).items():
        for name in re.findall(rf"benchmarks/((?:gpu/)?{RESULT})", text):
            if not (BENCH / name).is_file():
                missing.append(f"{path.relative_to(ROOT)}: docs/benchmarks/{name}")
    assert not missing, "named but not in docs/benchmarks/: " + ", ".join(missing)


def test_every_result_file_is_read_by_a_page_or_a_script():
    """A result file nothing names is a superseded run: git keeps it, docs/benchmarks/ does not."""
    texts = "\n".join(_texts(PAGES + SCRIPTS).values())
    results = [p for p in BENCH.rglob("*") if p.is_file() and p.suffix != ".py"]
    unread = [str(p.relative_to(BENCH)) for p in results if p.name not in texts]
    assert not unread, f"docs/benchmarks/ files no page or script names: {unread}"


def test_runs_are_named_by_date_and_commit():
    found = [f"{path.relative_to(ROOT)}: {m.group(0)!r}" for path, text in _texts(PAGES + SCRIPTS + OTHERS).items()
             for m in SEQUENCE.finditer(text)]
    assert not found, "runs named by a sequence number (name them by date and commit): " + "; ".join(found)
