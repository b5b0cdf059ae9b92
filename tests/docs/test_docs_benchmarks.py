"""docs/benchmarks/ holds what the docs read: every result file a page or a script names exists, every result file
is named by one and records its run (date, commit, machine, command), every script that writes records stamps them
with run_record(), docs/benchmarks.md is what docs/benchmarks/render.py makes of the result files, and no page names
a run by anything but its date and commit."""
from __future__ import annotations

import ast
import importlib.util
import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "docs" / "benchmarks"
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), *sorted((ROOT / "docs" / "design").glob("*.md"))]
SCRIPTS = sorted(BENCH.glob("*.py")) + sorted((ROOT / "kopt").rglob("*.py")) + sorted((ROOT / "tests").rglob("*.sh"))
#: every other file a run could be named in
OTHERS = sorted((ROOT / "plugins").rglob("*.py")) + sorted((ROOT / "specs").glob("*.yaml"))
RESULT = r"[A-Za-z0-9_.-]+\.(?:jsonl|json|png|txt|log)"
#: ``kopt bench``'s modules: a script's records may come from one of their functions or commands, stamped there
BENCH_PACKAGE = ROOT / "kopt" / "cli" / "bench"
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


def _calls(tree: ast.AST) -> set[str]:
    """The names a module calls: ``f(...)`` and ``x.f(...)`` give ``f``; ``json.dump(...)`` also ``json.dump``."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Name):
                out.add(func.id)
            elif isinstance(func, ast.Attribute):
                out.add(func.attr)
                if isinstance(func.value, ast.Name):
                    out.add(f"{func.value.id}.{func.attr}")
    return out


def _writes_records(tree: ast.AST) -> bool:
    """Whether a script makes JSON (``json.dump``, ``json.dumps``: printed or written, a record) or writes a file."""
    if _calls(tree) & {"json.dump", "json.dumps", "write_text", "write_bytes"}:
        return True
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "open":
            modes = [*node.args[1:2], *(k.value for k in node.keywords if k.arg == "mode")]
            if any(isinstance(m, ast.Constant) and str(m.value)[:1] in ("w", "a") for m in modes):
                return True
    return False


def _bench_function_stamps(module: str, name: str) -> bool:
    """Whether ``kopt.cli.bench.<module>.<name>`` calls run_record() itself."""
    path = BENCH_PACKAGE / f"{module}.py"
    if not path.is_file():
        return False
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.FunctionDef) and node.name == name:
            return "run_record" in _calls(node)
    return False


def _stamped_by(tree: ast.AST) -> list[str]:
    """How a script's records carry run_record()'s stamp: its own call, a ``kopt bench`` function it calls that
    stamps what it returns, or a ``kopt bench`` command it runs whose module stamps its lines."""
    calls, ways = _calls(tree), []
    if "run_record" in calls:
        ways.append("run_record()")
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("kopt.cli.bench."):
            module = node.module.rsplit(".", 1)[1]
            ways += [f"kopt.cli.bench.{module}.{a.name}" for a in node.names
                     if a.name in calls and _bench_function_stamps(module, a.name)]
        elif isinstance(node, ast.List):
            words = [e.value for e in node.elts if isinstance(e, ast.Constant)]
            if "kopt" in words and "bench" in words[words.index("kopt"):]:
                command = words[words.index("bench") + 1] if len(words) > words.index("bench") + 1 else ""
                path = BENCH_PACKAGE / f"{command}.py"
                if path.is_file() and "run_record" in _calls(ast.parse(path.read_text(encoding="utf-8"))):
                    ways.append(f"kopt bench {command}")
    return ways


def test_every_benchmark_script_stamps_its_records():
    """A script of docs/benchmarks/ that writes records stamps each with run_record() (date, commit, machine, BLAS,
    command), directly or through the ``kopt bench`` function or command that makes them.  render.py writes the
    page, not records."""
    unstamped = []
    for path in sorted(BENCH.glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        if path.name != "render.py" and _writes_records(tree) and not _stamped_by(tree):
            unstamped.append(path.name)
    assert not unstamped, ("benchmark scripts that write records without run_record()'s stamp "
                           f"(kopt.cli.bench.roofline.run_record): {unstamped}")


@pytest.mark.parametrize("source, stamped", [
    ("import json\nwith open('x.json', 'w') as fh:\n    json.dump({'a': 1}, fh)\n", False),
    ("import json\nprint(json.dumps({'a': 1}))\n", False),
    ("from kopt.cli.bench.roofline import run_record\nimport json\nprint(json.dumps({'a': 1, **run_record()}))\n",
     True),
    ("from kopt.cli.bench.roofline import cpu_flags\nimport json\nprint(json.dumps({'flags': cpu_flags()}))\n",
     False),
    ("from kopt.cli.bench.features import run_features\nimport json\nprint(json.dumps(run_features()))\n", True),
    ("import subprocess, sys\nout = subprocess.run([sys.executable, '-m', 'kopt', 'bench', 'peers']).stdout\n"
     "open('p.jsonl', 'w').write(out)\n", True),
])
def test_the_stamp_check_tells_a_stamped_script(source, stamped):
    """The static check above on scripts made for it: a writer with and without the stamp."""
    tree = ast.parse(source)
    assert _writes_records(tree)
    assert bool(_stamped_by(tree)) is stamped


def test_the_stamp_names_the_run_the_machine_and_the_blas():
    """run_record(): the date, the commit, the command and the machine: CPU model and flags, and each BLAS library
    threadpoolctl sees with its kernel set (architecture), version and threads."""
    from kopt.cli.bench.roofline import run_record

    rec = run_record()
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", rec["date"]) and rec["command"].startswith(("python", "kopt"))
    assert "commit" in rec
    machine = rec["machine"]
    assert machine["cpu"] and isinstance(machine["cpu_flags"], list)
    assert machine["blas"], "threadpoolctl found no BLAS library"
    for lib in machine["blas"]:
        assert set(lib) >= {"library", "kernel", "version", "threads"}
