"""Sphinx configuration: the Markdown pages of docs/ (MyST) and the API reference built from the docstrings.

Build offline from the repository root (``pip install -e ".[docs]"``)::

    python -m sphinx -W --keep-going -c docs -b html . docs/_build/html

The source folder is the repository root so that README.md, CHANGELOG.md and CONTRIBUTING.md are pages of the site and
the links between them and docs/*.md resolve both on a code host and in the HTML; ``include_patterns`` keeps every
other file of the repository out.  A page links a source file through its API page, never by a path outside docs/.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
# the build reads no data and starts no worker pool: importing kopt is enough for autodoc
os.environ.setdefault("KOPT_OFFLINE", "1")

import kopt  # noqa: E402

project = "kopt"
author = "the kopt authors"
copyright = "the kopt authors"
release = kopt.__version__
version = release

extensions = [
    "myst_parser",
    "numpydoc",
    "sphinx.ext.autodoc",
    "sphinx.ext.mathjax",
    "sphinx.ext.viewcode",
]

root_doc = "docs/index"
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
include_patterns = ["README.md", "CHANGELOG.md", "CONTRIBUTING.md", "plugins/datasets/data/ATTRIBUTION.md", "docs/*.md",
                    "docs/api/*.rst", "docs/design/*.md"]
exclude_patterns = ["docs/_build"]
templates_path: list[str] = []

# MyST: GitHub-style anchors for every heading level, so a page's "#section" links resolve and are checked
myst_heading_anchors = 6
myst_enable_extensions = ["dollarmath", "colon_fence"]
# a link to a file that is not a page (a benchmark script, a result file, a figure) becomes a download of that file

# autodoc and numpydoc: the signature carries the type hints; numpydoc renders the sections
autodoc_typehints = "signature"
autodoc_member_order = "bysource"
autodoc_default_options = {"show-inheritance": True}
autodoc_preserve_defaults = True
# the signature names NumPy's alias, not the union it stands for
autodoc_type_aliases = {"ArrayLike": "numpy.typing.ArrayLike"}
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False
numpydoc_validation_checks: set[str] = set()
# every cross-reference in a docstring or a page must resolve; types from other projects are not linked (the build
# is offline, without intersphinx), so their names are let through
nitpicky = True
nitpick_ignore_regex = [
    ("py:.*", r"(numpy|np|scipy|sklearn|pandas|dask|distributed|cupy|pluggy|pathlib|os|contextlib|types|collections\.abc|typing)(\..*)?"),
    ("py:class", r"(Path|Callable|Iterable|Iterator|Mapping|Sequence|ArrayLike|NDArray|Any|Literal|Optional|Union|TypeAliasForwardRef)"),
]
html_theme = "alabaster"
html_title = f"kopt {release}"
html_static_path: list[str] = []
html_show_sourcelink = False


def _index_toctree(app, docname, source):
    """Append a hidden toctree to index.md (and to design/index.md): the pages in the order it lists them, then,
    for the docs index, the design records' index and the API reference.

    index.md stays plain Markdown that reads the same on a code host; the site's navigation comes from its links.
    """
    if docname not in ("docs/index", "docs/design/index"):
        return
    import re

    pages = []
    for name in re.findall(r"\]\(([\w-]+)\.md\)", source[0]):
        if name != "index" and name not in pages:
            pages.append(name)
    if docname == "docs/index":
        pages += ["design/index", "api/index", "/README", "/CONTRIBUTING", "/CHANGELOG", "/plugins/datasets/data/ATTRIBUTION"]
    else:  # every design record is in the site, listed or not
        pages += sorted(p.stem for p in Path(app.srcdir, "docs", "design").glob("*.md")
                        if p.stem != "index" and p.stem not in pages)
    entries = "\n".join(pages)
    source[0] += f"\n\n```{{toctree}}\n:hidden:\n:maxdepth: 2\n\n{entries}\n```\n"


def _root_redirect(app, exception):
    """Write index.html at the top of the HTML output, sending the reader to the docs index (docs/index.html)."""
    if exception is None and app.builder.format == "html":
        Path(app.outdir, "index.html").write_text(
            '<!DOCTYPE html>\n<meta charset="utf-8">\n<meta http-equiv="refresh" content="0; url=docs/index.html">\n'
            '<a href="docs/index.html">kopt documentation</a>\n', encoding="utf-8")


def setup(app):
    app.connect("source-read", _index_toctree)
    app.connect("build-finished", _root_redirect)
