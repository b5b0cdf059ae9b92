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
        "adds its parameters. Unknown keys are errors.",
        "",
        "**Paths.** In `data.train`, `data.test` and `output.dir`, and in no other key, `$VAR`, `${VAR}` and",
        "`${VAR:-default}` are replaced by environment variables (an unset variable without a default is an error;",
        "`KOPT_DATA` defaults to the user cache folder), then a leading `~` or `~user` becomes that home folder",
        "(`~/runs/x`). Nothing else is expanded and nothing is executed: `$(...)` and backquotes stay as written, so",
        "such a path is not found. Relative paths in `data` are relative to the spec file, `output.dir` to the",
        "current folder.",
        "",
        "**Numbers.** A spec's numbers are read by YAML 1.2's float rule wherever a key takes a number: `1e-6`, `1E+3`,",
        "`2.5e6` and `-2.5e-3` are numbers (not text, as YAML 1.1 would have them), and a whole number written as",
        "a float (`1e4`, `3.0`) is an integer where a key takes one; a key that takes text keeps what was written.",
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
        if kind == "loss":
            choosers = ", ".join(f"`{n}`" for n in reg.names("solver") if reg.get("solver", n).auto_loss is not None)
            parts += ["### `auto`", "", "the solver chooses the loss (`KernelClassifier()`'s default): a solver that "
                      f"chooses one ({choosers or 'none registered'}) is checked and assembled with its own loss "
                      "section and says in its report which loss it solved (docs/defaults.md, \"`loss: auto`\"); any "
                      "other solver refuses it", "", "No parameters (name the loss to set its options).", ""]
        for name in reg.names(kind):
            e = reg.components[kind][name]
            cls = e.cls
            parts += [f"### `{name}`", "", f"{cls.summary or (cls.__doc__ or '').strip().splitlines()[0]}",
                      f"(from {e.distribution}; supports: {cls.supports() or '-'})", ""]
            rows = _rows({"properties": cls.params}, "")
            parts.append(_table(rows) if rows else "No parameters.")
            parts.append("")
    return "\n".join(parts) + "\n"
