"""docs/benchmarks/ holds what the docs read: every result file a page or a script names exists, every result file
is named by one and records its run (date, commit, machine, command), docs/benchmarks.md is what
docs/benchmarks/render.py makes of the result files, and no page names a run by anything but its date and commit."""
from __future__ import annotations

import importlib.util
import json
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


def _render():
    spec = importlib.util.spec_from_file_location("kopt_docs_render", BENCH / "render.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_named_result_file_exists():
    missing = []
    for path, text in _texts(PAGES + SCRIPTS).items():
        for name in re.findall(rf"benchmarks/((?:gpu/)?{RESULT})", text):
            if not (BENCH / name).is_file():
                missing.append(f"{path.relative_to(ROOT)}: docs/benchmarks/{name}")
    assert not missing, "named but not in docs/benchmarks/: " + ", ".join(missing)


def test_every_result_file_is_read_by_a_page_or_a_script():
    """A result file nothing names is a superseded run: git keeps it, docs/benchmarks/ does not.  The generated page's
    list of every file does not count: something else must read the file."""
    texts = "\n".join(t.split("## Every result file")[0] for t in _texts(PAGES + SCRIPTS).values())
    results = [p for p in BENCH.rglob("*") if p.is_file() and p.suffix != ".py"]
    unread = [str(p.relative_to(BENCH)) for p in results if p.name not in texts]
    assert not unread, f"docs/benchmarks/ files no page or script names: {unread}"


def test_runs_are_named_by_date_and_commit():
    found = [f"{path.relative_to(ROOT)}: {m.group(0)!r}" for path, text in _texts(PAGES + SCRIPTS + OTHERS).items()
             for m in SEQUENCE.finditer(text)]
    assert not found, "runs named by a sequence number (name them by date and commit): " + "; ".join(found)


def test_the_page_is_rendered_from_the_result_files():
    """docs/benchmarks.md is docs/benchmarks/render.py's output: a figure on the page is a figure in a result file."""
    page = (ROOT / "docs" / "benchmarks.md").read_text(encoding="utf-8")
    assert page == _render().render(), "docs/benchmarks.md differs from its result files: python docs/benchmarks/render.py"


def test_every_result_file_records_its_run():
    """Each record of a result file says when (date), at which commit, on which machine and by which command."""
    render = _render()
    missing = []
    for path in render.result_files():
        for i, rec in enumerate(render.records(path)):
            lacks = [k for k in ("date", "commit", "command") if not rec.get(k)]
            if not any(rec.get(k) for k in ("machine", "blas")):
                lacks.append("machine")
            if lacks:
                missing.append(f"{path.relative_to(BENCH)} record {i}: {lacks}")
    assert not missing, "result records without their run: " + "; ".join(missing[:10])


def test_the_renderer_reads_what_a_benchmark_writes():
    """The words of a record written by today's benchmark code (kopt.cli.bench.roofline.run_record)."""
    from kopt.cli.bench.roofline import run_record

    render = _render()
    rec = run_record()
    words = render.run_words(rec)
    assert rec["date"] in words and "cores" in words
    assert json.loads(json.dumps(rec)) == rec
