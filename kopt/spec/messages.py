"""jsonschema errors -> sentences a person can act on."""
from __future__ import annotations

import difflib
import reprlib

_TYPE_NAMES = {
    "integer": "an integer",
    "number": "a number",
    "string": "a string",
    "boolean": "true or false",
    "object": "a mapping",
    "array": "a list",
    "null": "null",
}


#: the words for a YAML value's type, first match wins (a bool is an int to Python: it comes first)
TYPE_WORDS = ((type(None), "null"), (bool, "boolean"), (int, "integer"), (float, "number"), (str, "string"),
              (dict, "mapping"), (list, "list"))


def type_of(value):
    return next((word for cls, word in TYPE_WORDS if isinstance(value, cls)), type(value).__name__)


def describe(schema: dict) -> str:
    """'a number > 0', 'one of: a, b', 'a positive number or 'median''."""
    if "const" in schema:
        return repr(schema["const"])
    if "enum" in schema:
        return "one of: " + ", ".join(_fmt(v) for v in schema["enum"])
    for key in ("oneOf", "anyOf"):
        if key in schema:
            return " or ".join(describe(s) for s in schema[key])
    t = schema.get("type")
    if isinstance(t, list):
        text = " or ".join(_TYPE_NAMES.get(x, x) for x in t)
    else:
        text = _TYPE_NAMES.get(t, "a value")
    bounds = []
    if "minimum" in schema:
        bounds.append(f">= {schema['minimum']}")
    if "exclusiveMinimum" in schema:
        bounds.append(f"> {schema['exclusiveMinimum']}")
    if "maximum" in schema:
        bounds.append(f"<= {schema['maximum']}")
    if "exclusiveMaximum" in schema:
        bounds.append(f"< {schema['exclusiveMaximum']}")
    if bounds:
        text += " " + " and ".join(bounds)
    return text


def _fmt(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


_SHORT = reprlib.Repr()
_SHORT.maxstring = _SHORT.maxother = 60
_SHORT.maxlevel, _SHORT.maxdict, _SHORT.maxlist = 2, 4, 4


def show(value):
    """A short repr of a spec value (bounded work, whatever the value's size)."""
    text = _SHORT.repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def message(error) -> tuple[list, str, bool]:
    """(path, sentence, point_at_key) for one jsonschema ValidationError."""
    path = list(error.absolute_path)
    v = error.validator
    inst = error.instance
    schema = error.schema
    if v == "additionalProperties":
        allowed = sorted(schema.get("properties", {}))
        extras = [k for k in inst if k not in schema.get("properties", {})]
        key = extras[0] if extras else "?"
        hint = difflib.get_close_matches(str(key), allowed, n=1, cutoff=0.6)
        text = f"unknown key {key!r}"
        if hint:
            text += f" (did you mean {hint[0]!r}?)"
        text += f"; allowed keys here: {', '.join(allowed)}"
        return path + [key], text, True
    if v == "required":
        missing = error.message.split("'")[1] if "'" in error.message else error.message
        props = schema.get("properties", {})
        want = props.get(missing, {})
        extra = f" ({describe(want)})" if want else ""
        return path, f"missing required key {missing!r}{extra}", False
    if v == "type":
        return path, f"expected {describe(schema)}, got {show(inst)} ({type_of(inst)})", False
    if v in ("minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum"):
        return path, f"expected {describe(schema)}, got {show(inst)}", False
    if v in ("enum", "const"):
        allowed = schema["enum"] if v == "enum" else [schema["const"]]
        hint = difflib.get_close_matches(str(inst), [str(a) for a in allowed], n=1, cutoff=0.6)
        text = f"got {show(inst)}; allowed: {', '.join(_fmt(a) for a in allowed)}"
        if hint:
            text += f" (did you mean {hint[0]!r}?)"
        return path, text, False
    if v in ("oneOf", "anyOf"):
        return path, f"expected {describe(schema)}, got {show(inst)}", False
    if v == "pattern" and path == ["name"]:
        return path, f"expected a run name without '/' or '\\' (not '.' or '..'): it names the folder runs/NAME; got {show(inst)}", False
    if v == "minLength":
        return path, "must not be empty", False
    return path, f"{error.message}", False
