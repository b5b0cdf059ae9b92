"""The ```python examples of the docs run as tests, so an example cannot drift from the code.

Each document's blocks run in order, in one namespace, from a scratch folder (the repository's
``specs/`` and ``docs/`` linked into it, the folder on ``sys.path``); a block that defines ``test_*``
functions has them called (with ``tmp_path`` when they take it).  Each block is one test, named by its
line.  Conventions, on the line just above a block's opening fence (an HTML comment, invisible on the
rendered page):

* ``<!-- example: file PATH -->``: the block is the file PATH of the reader's package, written into the
  scratch folder before any block runs (and not run itself): the guide's ``kopt_mylosses`` is two blocks;
* ``<!-- example: skip (REASON) -->``: the block does not run -- a fragment of a class, a template
  with ``...`` to fill in, or a run of minutes on a full data set.  Keep these few; the reason is required.

Names an example takes from the reader's own session (``X``, ``y``, ``X_new``, ``X_test``, ``y_test``:
a small seeded binary problem; the guide's ``MyDualLoss`` and ``"mysolver"``) are set up by
:func:`_reader_names`.  A block that needs a data set absent here (a preset that cannot download, a
file under ``KOPT_SHARED_DATA``) is skipped, never failed.  :data:`SKIPPED` lists the blocks of
documents this suite does not own that do not run, by a piece of their text.
"""
from __future__ import annotations

import inspect
import os
import re
import sys
import traceback
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ("docs/plugin-guide.md", "docs/plugin-example-gd.md", "docs/plugin-example-nystrom.md", "README.md", "docs/sklearn.md")
MARKER = re.compile(r"^<!--\s*example:\s*(file|skip)\s*(.*?)\s*-->$")

#: blocks that do not run, in documents whose markers belong to others: (document, a piece of the block, why)
SKIPPED = [
    ("docs/sklearn.md", "ijcnn1_trval.libsvm.bz2",
     "GridSearchCV on 10,000 ijcnn1 rows (a minute); tests/docs/test_sklearn_docs.py keeps it equal to "
     "docs/benchmarks/sklearn_gridsearch.py"),
]


@dataclass
class Block:
    doc: str
    line: int  # the opening fence's line (1-based)
    code: str
    marker: tuple | None  # ("file", PATH) or ("skip", REASON)

    @property
    def id(self):
        return f"{self.doc}:{self.line}"


def python_blocks(doc):
    """The ```python blocks of ``doc`` (a path under the repository root), with their markers."""
    lines = (ROOT / doc).read_text(encoding="utf-8").splitlines()
    out, i = [], 0
    while i < len(lines):
        if lines[i].strip() == "```python":
            start, body = i, []
            i += 1
            while i < len(lines) and lines[i].strip() != "```":
                body.append(lines[i])
                i += 1
            above = next((ln.strip() for ln in reversed(lines[:start]) if ln.strip()), "")
            m = MARKER.match(above)
            marker = (m.group(1), m.group(2).strip("() ")) if m else None
            if marker and marker[0] == "skip" and not marker[1]:
                raise AssertionError(f"{doc}:{start + 1}: a skip marker gives its reason: <!-- example: skip (why) -->")
            out.append(Block(doc, start + 1, "\n".join(body) + "\n", marker))
        i += 1
    return out


def _data_absent(exc):
    """Whether ``exc`` says a data set is missing here (not that the example is wrong)."""
    from kopt.errors import DataError

    text = str(exc)
    return isinstance(exc, FileNotFoundError) or (
        isinstance(exc, DataError) and any(s in text for s in ("cannot download", "not found", "No such file")))


def _reader_names():
    """The names the examples take from the reader's session."""
    from sklearn.datasets import make_classification

    X_all, y_all = make_classification(n_samples=260, n_features=4, n_informative=3, n_redundant=0, random_state=0)
    return {"X": X_all[:200], "y": y_all[:200], "X_test": X_all[200:250], "y_test": y_all[200:250],
            "X_new": X_all[250:]}


class _Guide:
    """The guide's reader: ``MyDualLoss`` (a loss with a conjugate) and a registered solver ``"mysolver"``."""

    def __init__(self):
        from helpers import LogCosh, example_solver

        GD = example_solver()

        from kopt.contract.hookspecs import hookimpl
        from kopt.contract.registry import registry

        MySolver = type("MySolver", (GD,), {"name": "mysolver"})

        class Plugin:
            @hookimpl
            def kopt_register_solvers(self, register):
                register(MySolver)

        self.reg = registry()
        self.plugin = self.reg.register_plugin(Plugin(), name="docs-mysolver", distribution="<tests>")
        self.names = {"MyDualLoss": LogCosh}

    def close(self):
        self.reg.unregister_plugin(self.plugin)
        for name in ("mylosses",):  # what the guide's examples register
            if self.reg.pm.get_plugin(name) is not None:
                self.reg.unregister_plugin(name)


def _call_tests(ns, before, scratch):
    for name, fn in list(ns.items()):
        if name.startswith("test_") and callable(fn) and name not in before:
            kwargs = {"tmp_path": scratch / name} if "tmp_path" in inspect.signature(fn).parameters else {}
            if kwargs:
                kwargs["tmp_path"].mkdir()
            fn(**kwargs)


def run_document(doc, scratch):
    """``{line: (outcome, text)}`` for every block of ``doc``: "ok", "skip" (with the reason) or "error" (traceback)."""
    import warnings

    pytest.importorskip("sklearn")
    scratch.mkdir(parents=True, exist_ok=True)
    for name in ("specs", "docs"):
        if not (scratch / name).exists():
            (scratch / name).symlink_to(ROOT / name)
    outcomes, ns = {}, {"__name__": "__docs_example__", **_reader_names()}
    guide = _Guide() if doc == "docs/plugin-guide.md" else None
    if guide:
        ns.update(guide.names)
    cwd = os.getcwd()
    os.chdir(scratch)
    sys.path.insert(0, str(scratch))
    try:
        blocks = python_blocks(doc)
        for block in blocks:  # the reader's package exists before any of the page's code runs
            if block.marker and block.marker[0] == "file":
                path = scratch / block.marker[1]
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(block.code, encoding="utf-8")
                outcomes[block.line] = ("ok", "")
        for block in blocks:
            if block.line in outcomes:
                continue
            table = next((why for d, piece, why in SKIPPED if d == doc and piece in block.code), None)
            if block.marker and block.marker[0] == "skip" or table:
                outcomes[block.line] = ("skip", f"{block.id}: {table or block.marker[1]}")
                continue
            before = set(ns)
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    exec(compile(block.code, block.id, "exec"), ns)
                    _call_tests(ns, before, scratch)
                outcomes[block.line] = ("ok", "")
            except Exception as exc:
                if _data_absent(exc):
                    outcomes[block.line] = ("skip", f"{block.id} needs data absent here: {str(exc).splitlines()[0]}")
                else:
                    outcomes[block.line] = ("error", "".join(traceback.format_exception(exc)))
    finally:
        sys.path.remove(str(scratch))
        for mod in [m for m in sys.modules if m.split(".")[0] == "kopt_mylosses"]:
            del sys.modules[mod]
        os.chdir(cwd)
        if guide:
            guide.close()
    return outcomes


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory):
    cache = {}

    def get(doc):
        if doc not in cache:
            cache[doc] = run_document(doc, tmp_path_factory.mktemp(Path(doc).stem))
        return cache[doc]

    return get


BLOCKS = [b for doc in DOCS for b in python_blocks(doc)]


@pytest.mark.slow
@pytest.mark.parametrize("block", BLOCKS, ids=[b.id for b in BLOCKS])
def test_the_example_runs(block, outcomes):
    outcome, text = outcomes(block.doc)[block.line]
    if outcome == "skip":
        pytest.skip(text)
    assert outcome == "ok", f"the example at {block.id} fails:\n{text}"


def test_skips_are_few_and_say_why():
    skipped = [b for b in BLOCKS if b.marker and b.marker[0] == "skip"]
    assert len(skipped) <= 4, [b.id for b in skipped]
    assert all(len(b.marker[1]) > 10 for b in skipped)


def test_the_extractor():
    text = "a\n<!-- example: skip (a fragment) -->\n```python\nx = 1\n```\n\n```python\ny = 2\n```\n"
    path = ROOT / "tests" / "_extractor_sample.md"
    path.write_text(text, encoding="utf-8")
    try:
        blocks = python_blocks("tests/_extractor_sample.md")
    finally:
        path.unlink()
    assert [(b.line, b.code, b.marker) for b in blocks] == [(3, "x = 1\n", ("skip", "a fragment")), (7, "y = 2\n", None)]
    assert _data_absent(FileNotFoundError("x")) and not _data_absent(ValueError("not found"))
