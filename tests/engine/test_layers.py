"""The engine's import graph: no circle, no private name imported, no import up the layers of
docs/architecture.md ("Layers").  Run it alone: ``python -m pytest tests/engine/test_layers.py``."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

KOPT = Path(__file__).resolve().parent.parent.parent / "kopt"

#: module prefix -> layer (docs/architecture.md, "Layers"); a module imports only its own layer or lower
LAYERS = {
    "kopt": 4, "kopt.__main__": 4, "kopt.cli": 4, "kopt.sklearn": 4, "kopt.bench": 4, "kopt.testing": 4, "kopt.tune_report": 4,
    "kopt.tune": 3, "kopt.tune_nystrom": 3,
    "kopt.api": 2,
    "kopt.assemble": 1, "kopt.selection": 1, "kopt.distributed.assemble": 1,
}


pytestmark = pytest.mark.slow  # every test here: out of the fast loop, pytest -m "not slow"


def layer(module: str) -> int:
    """The layer of ``module``: its longest listed prefix's (0, the engine's services, otherwise)."""
    best = ""
    for prefix in LAYERS:
        if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > len(best):
            best = prefix
    if best == "kopt" and module != "kopt":
        return 0
    return LAYERS.get(best, 0)


def modules() -> dict:
    out = {}
    for path in KOPT.rglob("*.py"):
        parts = path.relative_to(KOPT.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = path
    return out


def imports(mods: dict):
    """Every ``(importer, imported module, name)`` of kopt's own modules, lazy imports included."""
    for name, path in mods.items():
        package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")
                    base = base[:len(base) - (node.level - 1)]
                    target = ".".join(base + ([node.module] if node.module else []))
                else:
                    target = node.module or ""
                if not target.startswith("kopt"):
                    continue
                for alias in node.names:
                    full = f"{target}.{alias.name}"
                    yield (name, full, None) if full in mods else (name, target, alias.name)
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.split(".")[0] == "kopt":
                        yield name, alias.name, None


def test_no_module_imports_up_the_layers():
    mods = modules()
    up = [f"{a} (layer {layer(a)}) imports {b} (layer {layer(b)})" for a, b, _ in imports(mods)
          if b in mods and layer(b) > layer(a)]
    assert not up, "\n".join(up)


def test_no_private_name_crosses_a_module():
    mods = modules()
    private = [f"{a} imports {name} from {b}" for a, b, name in imports(mods)
               if name and name.startswith("_") and not name.startswith("__") and b != a]
    assert not private, "\n".join(private)


def test_the_import_graph_has_no_circle():
    mods = modules()
    graph = {m: set() for m in mods}
    for a, b, _ in imports(mods):
        if b in mods and b != a:
            graph[a].add(b)
    state, stack, circles = {}, [], []

    def visit(m):
        state[m] = "open"
        stack.append(m)
        for n in sorted(graph[m]):
            if state.get(n) == "open":
                circles.append(" -> ".join(stack[stack.index(n):] + [n]))
            elif n not in state:
                visit(n)
        stack.pop()
        state[m] = "done"

    for m in sorted(graph):
        if m not in state:
            visit(m)
    assert not circles, "\n".join(circles)


def test_the_checker_sees_a_planted_upward_import_and_circle(tmp_path):
    """The checks above cannot pass vacuously: the layer rule and the circle finder on known cases."""
    assert layer("kopt.api") == 2 and layer("kopt.distributed.assemble") == 1 and layer("kopt.rows") == 0
    assert layer("kopt.tune") > layer("kopt.api") > layer("kopt.assemble") > layer("kopt.problem")
    mods = modules()
    assert "kopt.assemble" in mods and ("kopt.api", "kopt.assemble", "assemble") in set(imports(mods))
