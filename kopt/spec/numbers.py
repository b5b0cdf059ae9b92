"""Numbers as people write them: YAML 1.2's float rule, and whole numbers where the spec wants an integer.

PyYAML reads YAML 1.1, where a float needs a dot and a signed exponent (``1.0e-6``): ``1e-6``, ``1E+3``,
``2.5e6`` and ``-2.5e-3`` stay strings there, while YAML 1.2, JSON and Python read them as numbers.  A spec read
from a file, a ``--set`` value or a dict built from either therefore holds such strings where a number is meant.
:func:`read_numbers` turns them into numbers wherever the composed schema wants a number and not that string, so a
key that takes a string (a file name, a column name) keeps what was written.  Where the schema wants an integer, a
whole number written as a float (``iterations: 1e4``, ``seed: 1.0``: JSON Schema's integers) becomes an ``int``,
so no component is handed ``10000.0`` for a count.
"""
from __future__ import annotations

import re

import jsonschema

#: YAML 1.2 core schema's float with an exponent: the forms YAML 1.1 (PyYAML) leaves as strings
YAML12_EXPONENT = re.compile(r"^[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)[eE][-+]?[0-9]+$")


def _is_int(checker, instance):
    """JSON Schema's ``integer`` as kopt reads it: a Python int (not a bool); whole floats are made ints first."""
    return isinstance(instance, int) and not isinstance(instance, bool)


#: the validator every spec is checked with: ``integer`` is an int (``read_numbers`` converts whole floats)
SpecValidator = jsonschema.validators.extend(
    jsonschema.Draft202012Validator,
    type_checker=jsonschema.Draft202012Validator.TYPE_CHECKER.redefine("integer", _is_int))


def _candidates(value):
    """What ``value`` may be read as, in order: a YAML 1.2 float string as its float (and as an int when whole),
    a whole float as an int."""
    if isinstance(value, str) and YAML12_EXPONENT.match(value.strip()):
        number = float(value)
        out = [number]
        if number.is_integer() and abs(number) < 2**63:
            out.insert(0, int(number))
        return out
    if isinstance(value, float) and not isinstance(value, bool) and value.is_integer() and abs(value) < 2**63:
        return [int(value)]
    return []


def _takes(schema):
    """``(numbers, text)``: whether ``schema`` takes numbers (of any range), and free text (a ``type: string``; the
    words of an ``enum`` or ``const`` are not free text)."""
    numbers = text = False
    todo = [schema]
    while todo:
        node = todo.pop()
        if not isinstance(node, dict):
            continue
        t = node.get("type")
        types = set(t) if isinstance(t, list) else {t}
        numbers |= bool(types & {"number", "integer"})
        text |= "string" in types
        for value in node.get("enum", [node["const"]] if "const" in node else []):
            numbers |= isinstance(value, (int, float)) and not isinstance(value, bool)
        for key in ("anyOf", "oneOf"):
            todo.extend(node.get(key, ()))
    return numbers, text


def _leaves(errors):
    """Every error and the errors of the alternatives (``anyOf``/``oneOf``) it holds."""
    todo = list(errors)
    while todo:
        error = todo.pop()
        yield error
        todo.extend(error.context or ())


def read_numbers(doc, schema, *, max_rounds=8):
    """Convert, in place, the values of ``doc`` that :mod:`this module <kopt.spec.numbers>` reads as numbers,
    where ``schema`` (the composed spec schema) accepts the number and not the value as written.  Returns the key
    paths converted."""
    validator = SpecValidator(schema)
    done = []
    for _ in range(max_rounds):  # a conversion may let a branch be chosen that reveals another
        changes = {}
        for error in _leaves(validator.iter_errors(doc)):
            path = tuple(error.absolute_path)
            if path in changes or not _candidates(error.instance):
                continue
            sub = SpecValidator(error.schema)
            for value in _candidates(error.instance):
                if sub.is_valid(value):
                    changes[path] = value
                    break
            else:  # a number out of range is still a number: the range check then names it
                numbers, text = _takes(error.schema)
                if numbers and not text and isinstance(error.instance, str):
                    changes[path] = _candidates(error.instance)[0]
        changes = {p: v for p, v in changes.items() if p}
        if not changes:
            return done
        for path, value in changes.items():
            node = doc
            for part in path[:-1]:
                node = node[part]
            node[path[-1]] = value
            done.append(path)
    return done
