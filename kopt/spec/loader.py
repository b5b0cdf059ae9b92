"""YAML text -> (dict, node positions); ``--set`` overrides; ``${VAR}`` expansion."""
from __future__ import annotations

import os
import re
import stat

import yaml

from ..errors import SpecError
from .bounds import MAX_BYTES, check_yaml_size


class Face:
    """How the user gave the spec keys under ``prefix``: the words a message about them uses.

    ``source`` is what the user wrote (``--set solver.tol``, ``--scheduler local:1``, ``KernelClassifier``);
    ``name`` the parameter a key path is shown as (``class_weight``: ``$.data.class_weight[0]`` becomes
    ``class_weight[0]``), or None to show the spec's key path (``--set``), or ``""`` to show none (a flag that
    names no key, such as ``--scheduler``)."""

    def __init__(self, prefix, source, name=None):
        self.prefix = tuple(prefix)
        self.source = source
        self.name = name

    def covers(self, path) -> bool:
        return tuple(path[: len(self.prefix)]) == self.prefix

    def shown(self, path, spec_path: str):
        """The key path as this face shows it (None: none)."""
        if self.name is None:
            return spec_path
        if self.name == "":
            return None
        rest = tuple(path[len(self.prefix):])
        return self.name + "".join(f"[{p!r}]" if isinstance(p, str) and not p.lstrip("-").isdigit() else f"[{p}]"
                                   for p in rest)

    def __repr__(self):
        return f"Face({self.prefix!r}, {self.source!r}, {self.name!r})"


class Override(str):
    """A ``KEY.PATH=VALUE`` item that another flag or parameter stands for: ``face`` (a ``Face`` source and
    name) says what the user wrote, so a message about the key names that instead of ``--set``.  ``face=None``:
    kopt's own override (a value it chose), which keeps the words of the spec it changes."""

    def __new__(cls, item, face=None, name=""):
        obj = super().__new__(cls, item)
        obj.face = face
        obj.name = name
        return obj


class Positions:
    """Maps key paths of a YAML document to (line, column), 1-based, and to the ``Face`` the user gave them
    through (``--set`` and the flags and parameters that stand for spec keys)."""

    def __init__(self, root=None, overrides=(), faces=()):
        self.root = root
        self.faces = [f if isinstance(f, Face) else Face(f, f"--set {'.'.join(map(str, f))}") for f in overrides]
        self.faces += list(faces)

    @property
    def overrides(self):
        """The key paths given on the command line (``--set`` and the flags that set spec keys)."""
        return [f.prefix for f in self.faces]

    @overrides.setter
    def overrides(self, paths):
        self.faces = [p if isinstance(p, Face) else Face(p, f"--set {'.'.join(map(str, p))}") for p in paths]

    def face_for(self, path):
        """The :class:`Face` the key ``path`` was given through (the longest prefix that covers it), or None
        (the spec's own text)."""
        found = [f for f in self.faces if f.covers(path)]
        if not found:  # a key the user set part of (--set data.held_out.rows for a message about data.held_out)
            found = [f for f in self.faces if f.prefix[: len(path)] == tuple(path)]
            return found[0] if len(found) == 1 else None
        return max(found, key=lambda f: len(f.prefix))

    def override_for(self, path):
        face = self.face_for(path)
        return None if face is None else face.prefix

    def copy(self):
        out = Positions(self.root)
        out.faces = list(self.faces)
        return out

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
    """Apply ``--set`` items in place; returns the :class:`Face` of each item the user gave (an
    :class:`Override`'s own, ``--set KEY`` for a plain item; none for kopt's own overrides)."""
    faces = []
    for item in overrides:
        face = getattr(item, "face", False)
        parts, value = parse_override(item, source=face or "--set")
        node = doc
        for i, p in enumerate(parts[:-1]):
            nxt = node.get(p) if isinstance(node, dict) else None
            if nxt is None:
                nxt = node[p] = {}
            if not isinstance(nxt, dict):
                raise SpecError(
                    f"cannot set {'.'.join(parts)}: {'.'.join(parts[: i + 1])} is a {type(nxt).__name__}, not a mapping",
                    source=face or f"--set {item}",
                )
            node = nxt
        node[parts[-1]] = value
        if face is False:
            faces.append(Face(parts, f"--set {'.'.join(parts)}"))
        elif face is not None:
            faces.append(Face(parts, face, item.name))
    return faces


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
