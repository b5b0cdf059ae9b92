"""The import graph of the engine and the built-in plugins.

The layers are the folders of ``kopt/`` (docs/architecture.md, "Layout"): the graph of imports between them must
have no circle, so the folders stand in an order and a module imports only its own folder or the ones below.  Within
the engine no two modules import each other, and no private name crosses a module.  The engine imports no plugin,
and no built-in plugin imports another: they meet only through the engine's public modules, as a third party's
plugin does.  Lazy imports count.  Run it alone: ``python -m pytest tests/engine/test_layers.py``.
"""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
KOPT = ROOT / "kopt"
PLUGINS = ROOT / "plugins"
ARCHITECTURE = ROOT / "docs" / "architecture.md"


def modules(package_dir: Path = KOPT, package: str = "kopt") -> dict:
    """``{module name: path}`` of every module under ``package_dir`` (importable as ``package``)."""
    out = {}
    for path in package_dir.rglob("*.py"):
        parts = (package, *path.relative_to(package_dir).with_suffix("").parts)
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


def imports(mods: dict):
    """Every ``(importer, imported module, name)`` of ``mods``, lazy imports included; ``name`` is None where the
    import names a module."""
    everything = {**modules(), **modules(PLUGINS, "kopt_plugins")}
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
                for alias in node.names:
                    full = f"{target}.{alias.name}"
                    yield (name, full, None) if full in everything else (name, target, alias.name)
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    yield name, alias.name, None


def folder(module: str) -> str:
    """The layer of an engine module: its folder under kopt/ (``kopt.nystrom.cg`` -> ``nystrom``), or the module
    itself for a module at the root (``kopt.api`` -> ``api``; the package's face ``kopt`` -> ``kopt``)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def circles(graph: dict) -> list:
    """Every circle a depth-first walk of ``graph`` (node -> set of nodes) finds, as 'a -> b -> a'."""
    state, stack, found = {}, [], []

    def visit(m):
        state[m] = "open"
        stack.append(m)
        for n in sorted(graph.get(m, ())):
            if state.get(n) == "open":
                found.append(" -> ".join(stack[stack.index(n):] + [n]))
            elif n not in state:
                visit(n)
        stack.pop()
        state[m] = "done"

    for m in sorted(graph):
        if m not in state:
            visit(m)
    return found


def folder_graph(mods: dict) -> dict:
    graph = {}
    for a, b, _ in imports(mods):
        if b in mods and b.startswith("kopt") and folder(a) != folder(b):
            graph.setdefault(folder(a), set()).add(folder(b))
    return graph


def test_the_folders_stand_in_an_order():
    found = circles(folder_graph(modules()))
    assert not found, "folders that import each other:\n" + "\n".join(found)


def test_no_module_of_the_engine_imports_itself_through_others():
    mods = modules()
    graph = {m: set() for m in mods}
    for a, b, _ in imports(mods):
        if b in mods and b != a:
            graph[a].add(b)
    found = circles(graph)
    assert not found, "\n".join(found)


def test_no_private_name_crosses_a_module():
    """Within the engine, and from a plugin into the engine (a plugin's own modules may share their private names)."""
    mods = {**modules(), **modules(PLUGINS, "kopt_plugins")}
    private = [f"{a} imports {name} from {b}" for a, b, name in imports(mods)
               if name and name.startswith("_") and not name.startswith("__") and b != a
               and (b.split(".")[0] == "kopt" or a.split(".")[0] == "kopt")]
    assert not private, "\n".join(private)


def test_the_engine_imports_no_plugin():
    found = [f"{a} imports {b}" for a, b, _ in imports(modules())
             if b.split(".")[0] == "kopt_plugins" and a != "kopt.contract.registry"]
    assert not found, "\n".join(found)


def cross_plugin_imports(mods: dict) -> list:
    found = []
    for a, b, _ in imports(mods):
        mine, theirs = a.split("."), b.split(".")
        if theirs[0] == "kopt_plugins" and len(theirs) > 1 and len(mine) > 1 and theirs[1] != mine[1]:
            found.append(f"{a} imports {b}")
    return found


def test_no_plugin_imports_another():
    found = cross_plugin_imports(modules(PLUGINS, "kopt_plugins"))
    assert not found, "\n".join(found)


def test_the_architecture_page_describes_every_folder():
    text = ARCHITECTURE.read_text(encoding="utf-8")
    folders = sorted(p.name for p in KOPT.iterdir() if p.is_dir() and (p / "__init__.py").exists())
    missing = [f for f in folders if f"{f}/" not in text]
    assert not missing, f"docs/architecture.md does not describe kopt/{missing}"


def test_the_checks_see_a_planted_circle_and_cross_import(tmp_path):
    """The checks above cannot pass vacuously: known edges of today's code, and planted faults."""
    mods = modules()
    assert ("kopt.api", "kopt.running.assemble", "assemble") in set(imports(mods))
    graph = folder_graph(mods)
    assert "running" in graph["api"] and "numerics" in graph["nystrom"]
    assert circles({**graph, "numerics": graph.get("numerics", set()) | {"nystrom"}})
    plugin = tmp_path / "kopt_plugins" / "alpha"
    plugin.mkdir(parents=True)
    (plugin / "__init__.py").write_text("from kopt_plugins.beta.solver import Beta\nfrom ._own import x\n")
    planted = {"kopt_plugins.alpha": plugin / "__init__.py"}
    assert cross_plugin_imports(planted) == ["kopt_plugins.alpha imports kopt_plugins.beta.solver"]
