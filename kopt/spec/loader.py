"""YAML text -> (dict, node positions); ``--set`` overrides; ``${VAR}`` expansion."""
from __future__ import annotations

import os
import re
import stat

import yaml

from ..errors import SpecError
from .bounds import MAX_BYTES, check_yaml_size


class Positions:
    """Maps key paths of a YAML document to (line, column), 1-based."""

    def __init__(self, root=None, overrides=()):
        self.root = root
        self.overrides = [tuple(p) for p in overrides]

    def override_for(self, path):
        for p in self.overrides:
            if tuple(path[: len(p)]) == p:
                return p
        return None

    def locate(self, path, *, key=False):
        """Line and column of the value at ``path`` (of its key when ``key``),
        or of the deepest existing ancestor; ``(None, None)`` without YAML."""
        node = self.root
        if node is None:
            return None, None
        mark = node.start_mark
        for part in path:
            if isinstance(node, yaml.MappingNode):
                for k, v in node.value:
                    if k.value == part:
                        mark = k.start_mark if (key and part == path[-1]) else v.start_mark
                        node = v
                        break
                else:
                    break
            elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) and part < len(node.value):
                node = node.value[part]
                mark = node.start_mark
            else:
                break
        return mark.line + 1, mark.column + 1


class _UniqueKeyLoader(yaml.SafeLoader):
    """SafeLoader that rejects duplicate mapping keys (a silent YAML footgun)."""


def _construct_mapping(loader, node, deep=False):
    seen = {}
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if key in seen:
            raise yaml.constructor.ConstructorError(
                "while constructing a mapping", node.start_mark, f"found duplicate key {key!r}", key_node.start_mark
            )
        seen[key] = True
    return yaml.SafeLoader.construct_mapping(loader, node, deep=deep)


_UniqueKeyLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def parse_yaml(text: str, source: str):
    """Parse YAML text; return ``(document, Positions)``. Errors become SpecError.

    The text's size, nesting depth and alias expansion are bounded (:mod:`kopt.spec.bounds`)
    before any node is built."""
    try:
        too_big = check_yaml_size(text, _UniqueKeyLoader)
        if too_big:
            raise SpecError(too_big, source=source)
        root = yaml.compose(text, Loader=_UniqueKeyLoader)
        doc = yaml.load(text, Loader=_UniqueKeyLoader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line, col = (mark.line + 1, mark.column + 1) if mark else (None, None)
        what = exc.problem or str(exc)
        if exc.context:
            what = f"{exc.context}: {what}"
        raise SpecError(f"invalid YAML: {what}", source=source, line=line, column=col) from None
    except yaml.YAMLError as exc:
        raise SpecError(f"invalid YAML: {exc}", source=source) from None
    if doc is None:
        raise SpecError("the spec is empty; expected a mapping with keys model, solver, data", source=source)
    if not isinstance(doc, dict):
        raise SpecError(
            f"a spec must be a mapping (key: value lines), got a {type(doc).__name__}", source=source, line=1, column=1
        )
    return doc, Positions(root)


def read_spec_file(path: str):
    try:
        info = os.stat(path)
        if stat.S_ISDIR(info.st_mode):
            raise IsADirectoryError(path)
        if not stat.S_ISREG(info.st_mode):
            raise SpecError("not a regular file (a pipe or a device?); expected a YAML spec file", source=str(path))
        if info.st_size > MAX_BYTES:
            raise SpecError(f"the spec file is {info.st_size:,} bytes; a spec may hold at most {MAX_BYTES:,}",
                            source=str(path))
        with open(path, encoding="utf-8") as fh:
            text = fh.read(MAX_BYTES + 1)
    except FileNotFoundError:
        raise SpecError("spec file not found", source=str(path)) from None
    except IsADirectoryError:
        raise SpecError("is a directory, expected a YAML spec file", source=str(path)) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise SpecError(f"cannot read spec file: {exc}", source=str(path)) from None
    return parse_yaml(text, str(path))


def parse_override(item: str, source="--set"):
    """``'a.b=value'`` -> (('a', 'b'), parsed YAML scalar/flow value)."""
    if "=" not in item:
        raise SpecError(f"expected KEY.PATH=VALUE, got {item!r}", source=source)
    key, _, raw = item.partition("=")
    parts = tuple(p for p in key.strip().split("."))
    if not key.strip() or any(not p for p in parts):
        raise SpecError(f"expected KEY.PATH=VALUE with a dotted key path, got {item!r}", source=source)
    try:
        too_big = check_yaml_size(raw, yaml.SafeLoader)
        if too_big:
            raise SpecError(f"the value of {key.strip()!r}: {too_big}", source=source)
        value = yaml.safe_load(raw) if raw.strip() else ""
    except yaml.YAMLError as exc:
        raise SpecError(f"cannot parse the value of {key!r}: {exc}", source=source) from None
    return parts, value


def apply_overrides(doc: dict, overrides):
    """Apply ``--set`` items in place; returns the list of overridden key paths."""
    paths = []
    for item in overrides:
        parts, value = parse_override(item)
        node = doc
        for i, p in enumerate(parts[:-1]):
            nxt = node.get(p) if isinstance(node, dict) else None
            if nxt is None:
                nxt = node[p] = {}
            if not isinstance(nxt, dict):
                raise SpecError(
                    f"cannot set {'.'.join(parts)}: {'.'.join(parts[: i + 1])} is a {type(nxt).__name__}, not a mapping",
                    source=f"--set {item}",
                )
            node = nxt
        node[parts[-1]] = value
        paths.append(parts)
    return paths


_VAR = re.compile(r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}|([A-Za-z_][A-Za-z0-9_]*))")


def expand_vars(value: str, defaults: dict):
    """Expand ``$VAR``, ``${VAR}`` and ``${VAR:-default}``; unknown variables raise KeyError(name)."""

    def sub(m):
        name = m.group(1) or m.group(3)
        if name in os.environ:
            return os.environ[name]
        if m.group(2) is not None:
            return m.group(2)
        if name in defaults:
            return defaults[name]()
        raise KeyError(name)

    return _VAR.sub(sub, value)
