"""The example specs of ``specs/``, shipped inside the package (``kopt/specs/*.yaml`` in a wheel).

``kopt specs list|show|copy`` and ``kopt solve NAME`` find them here, so an
installed kopt runs every example without a checkout.  In a source checkout
(editable install) they are read from the top-level ``specs/`` folder.
"""
from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

from ..errors import SpecError

_HERE = Path(__file__).resolve().parent


def specs_dir() -> Path | None:
    """The folder of the packaged specs: ``kopt/specs`` in an installed wheel, ``<checkout>/specs`` otherwise."""
    for cand in (_HERE.parent / "specs", _HERE.parent.parent / "specs"):
        if cand.is_dir() and any(cand.glob("*.yaml")):
            return cand
    return None


def names() -> list:
    """The packaged spec names (file stems), sorted."""
    d = specs_dir()
    return sorted(p.stem for p in d.glob("*.yaml")) if d else []


def path_of(name: str) -> Path:
    """The file of the packaged spec ``name`` (``NAME`` or ``NAME.yaml``)."""
    stem = name[:-5] if name.endswith(".yaml") else name
    d = specs_dir()
    if d is not None and (d / f"{stem}.yaml").is_file():
        return d / f"{stem}.yaml"
    import difflib

    close = difflib.get_close_matches(stem, names(), n=3)
    hint = f"; did you mean {', '.join(close)}?" if close else f"; packaged specs: {', '.join(names())}"
    raise SpecError(f"no spec file {name!r} here and no packaged spec of that name{hint}", source=name)


def resolve_spec_arg(arg: str) -> str:
    """A spec argument of the CLI: an existing file, else the name of a packaged spec."""
    if os.path.exists(arg) or os.sep in arg or (os.altsep and os.altsep in arg):
        return arg
    return str(path_of(arg))


def summary(path: Path) -> str:
    """The first line of a spec's header comment."""
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            if line.startswith("#"):
                text = line.lstrip("#").strip()
                if text:
                    return re.sub(r"\s+", " ", text)
            elif line.strip():
                break
    return ""


def data_source(path: Path) -> str:
    """``data.source`` of a spec file (without validating it), or ''."""
    import yaml

    try:
        with open(path, encoding="utf-8") as fh:
            doc = yaml.safe_load(fh) or {}
        return str((doc.get("data") or {}).get("source", ""))
    except (OSError, yaml.YAMLError):
        return ""


def copy(name: str, dest) -> Path:
    """Copy a packaged spec into the folder ``dest`` (created); refuses to overwrite."""
    src = path_of(name)
    dest = Path(dest)
    target = dest / src.name if dest.is_dir() or not dest.suffix else dest
    if target.exists():
        raise SpecError(f"{target} exists; not overwritten", source=str(target))
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(src, target)
    return target
