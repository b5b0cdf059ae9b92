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
        c = schema["const"]
        return repr(c) if isinstance(c, str) else _fmt(c)
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
    """A spec value as YAML writes it: true, false, null."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if v is None:
        return "null"
    return str(v)


_SHORT = reprlib.Repr()
_SHORT.maxstring = _SHORT.maxother = 60
_SHORT.maxlevel, _SHORT.maxdict, _SHORT.maxlist = 2, 4, 4


def show(value):
    """A short repr of a spec value (bounded work, whatever the value's size); true, false and null as YAML
    spells them."""
    if isinstance(value, bool) or value is None:
        return _fmt(value)
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
        return path, _expected(schema, inst, with_type=True), False
    if v in ("minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum"):
        return path, _expected(schema, inst), False
    if v in ("enum", "const"):
        allowed = schema["enum"] if v == "enum" else [schema["const"]]
        hint = difflib.get_close_matches(str(inst), [str(a) for a in allowed], n=1, cutoff=0.6)
        text = f"got {show(inst)}; allowed: {', '.join(_fmt(a) for a in allowed)}"
        if hint:
            text += f" (did you mean {hint[0]!r}?)"
        return path, text, False
    if v in ("oneOf", "anyOf"):
        return _alternatives(error, path)
    if v == "pattern" and path == ["name"]:
        return path, f"expected a run name without '/' or '\\' (not '.' or '..'): it names the folder runs/NAME; got {show(inst)}", False
    if v == "minLength":
        return path, "must not be empty", False
    if v == "minItems":
        return path, f"expected a list of at least {schema['minItems']} item(s), got {show(inst)}", False
    return path, f"{error.message}", False


def _expected(schema, inst, *, with_type=False):
    """'a class weight must be a number >= 0, got -1.0' where the schema has a ``title``, else 'expected a number
    >= 0, got -1.0' (with the value's type after a type mismatch)."""
    got = f"{show(inst)} ({type_of(inst)})" if with_type else show(inst)
    if schema.get("title"):
        return f"{schema['title']} must be {describe(schema)}, got {got}"
    return f"expected {describe(schema)}, got {got}"


#: a value's JSON-schema type (a bool is not an integer; an integer is also a number)
def _json_type(value):
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    return {float: "number", str: "string", dict: "object", list: "array"}.get(type(value), "?")


def _branch_types(schema):
    """The JSON types an alternative of an ``anyOf``/``oneOf`` takes (None: any)."""
    if "type" in schema:
        t = schema["type"]
        return set(t) if isinstance(t, list) else {t}
    if "enum" in schema or "const" in schema:
        return {_json_type(v) for v in (schema["enum"] if "enum" in schema else [schema["const"]])}
    for key in ("anyOf", "oneOf"):
        if key in schema:
            out = set()
            for sub in schema[key]:
                types = _branch_types(sub)
                if types is None:
                    return None
                out |= types
            return out
    return None


def _takes(schema, value) -> bool:
    types = _branch_types(schema)
    t = _json_type(value)
    return types is None or t in types or (t == "integer" and "number" in types)


#: the checks that judge a value itself (not a key inside it): where one fails, the other alternatives are other ways
#: to write the value
_ON_THE_VALUE = ("type", "minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum", "enum", "const", "minLength",
                 "minItems", "maxItems", "pattern")


def _alternatives(error, path):
    """An ``anyOf``/``oneOf`` the value fails: where one alternative takes the value's type, what that alternative
    says is wrong (the inner key and its range), with the other alternatives where the value itself is at fault;
    else the whole rule."""
    branches = error.schema[error.validator]
    inst = error.instance
    whole = f"expected {describe(error.schema)}, got {show(inst)}"
    if error.schema.get("title"):
        whole = f"{error.schema['title']} must be {describe(error.schema)}, got {show(inst)}"
    taking = [i for i, b in enumerate(branches) if _takes(b, inst)]
    if len(taking) != 1 or not error.context:
        return path, whole, False
    i = taking[0]
    inner = [e for e in error.context if e.relative_schema_path and e.relative_schema_path[0] == i]
    if not inner:
        return path, whole, False
    first = sorted(inner, key=lambda e: (len(e.absolute_path), list(map(str, e.absolute_path))))[0]
    sub_path, text, key = message(first)
    others = [describe(b) for j, b in enumerate(branches) if j != i]
    if sub_path == path and others and first.validator in _ON_THE_VALUE:
        text += f" (or {' or '.join(others)})"
    return sub_path, text, key
