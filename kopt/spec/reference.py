"""Render the composed spec schema as a Markdown reference (docs/spec-reference.md)."""
from __future__ import annotations

from .messages import describe
from .schema import COMPONENT_SECTIONS, CORE_SCHEMA


def _rows(schema, prefix):
    rows = []
    for key, sub in schema.get("properties", {}).items():
        path = f"{prefix}.{key}" if prefix else key
        default = sub.get("default", "")
        if isinstance(default, dict):
            default = "" if not default else str(default)
        rows.append((path, describe(sub) if "properties" not in sub else "mapping", default, sub.get("description", "")))
        if "properties" in sub and key not in ("loss", "kernel", "regularizer", "solver"):
            rows.extend(_rows(sub, path))
    return rows


def _table(rows):
    out = ["| key | allowed | default | meaning |", "| --- | --- | --- | --- |"]
    for path, allowed, default, text in rows:
        d = f"`{default}`" if default != "" else ""
        out.append(f"| `{path}` | {allowed.replace('|', '/')} | {d} | {text.replace('|', '/')} |")
    return "\n".join(out)


def render_markdown(reg) -> str:
    parts = [
        "# Spec reference",
        "",
        "Generated from the composed schema by `kopt validate --schema --markdown`; every registered component",
        "adds its parameters. Unknown keys are errors. Paths in `data` are relative to the spec file;",
        "`${VAR}` and `${VAR:-default}` are expanded (`KOPT_DATA` defaults to the user cache directory).",
        "",
        "## Core keys",
        "",
        _table(_rows(CORE_SCHEMA, "")),
    ]
    titles = {"loss": "Losses (`model.loss`)", "kernel": "Kernels (`model.kernel`)",
              "regularizer": "Regularizers (`model.regularizer`)", "solver": "Solvers (`solver`)",
              "dataset": "Dataset presets (`data.source`, parameters under `data.options`)"}
    for kind in [*COMPONENT_SECTIONS.values(), "dataset"]:
        parts += ["", f"## {titles[kind]}", ""]
        for name in reg.names(kind):
            e = reg.components[kind][name]
            cls = e.cls
            parts += [f"### `{name}`", "", f"{cls.summary or (cls.__doc__ or '').strip().splitlines()[0]}",
                      f"(from {e.distribution}; supports: {cls.supports() or '-'})", ""]
            rows = _rows({"properties": cls.params}, "")
            parts.append(_table(rows) if rows else "No parameters.")
            parts.append("")
    return "\n".join(parts) + "\n"
