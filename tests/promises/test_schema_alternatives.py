"""Every alternative of the spec schema answered in one line that names the failing part.

The schema is composed at run time (the core schema plus each registered component's fragment), so this test walks
the composed schema itself: for every ``oneOf``/``anyOf``, each alternative's constraints are broken one at a time
(a bound, a required or unknown key, an empty string or list, a near-miss of an allowed word, a bad item or
entry) with a value of the alternative's own type, and the spec's error must name the key path of the part that
failed and the constraint it broke (the bound, the key, the allowed words) -- not only the list of alternatives."""
from __future__ import annotations

import copy

import pytest

from kopt.contract.registry import registry
from kopt.errors import SpecError
from kopt.spec import load_spec
from kopt.spec import schema as schemas

BASE = {"model": {"loss": {"name": "square"}, "kernel": {"name": "gaussian"},
                  "regularizer": {"name": "l2", "lambda": 0.001}},
        "solver": {"name": "krr_exact"}, "data": {"train": "train.csv"}, "backend": "numpy"}


def _alternatives(node, path=(), where=(), context=()):
    """``(instance path, schema path, keyword, branches, context)`` for every anyOf/oneOf under ``node``;
    ``context``: ``(instance path, value)`` pairs that make the if/then fragment holding it apply."""
    if not isinstance(node, dict):
        return
    for key in ("anyOf", "oneOf"):
        if key in node:
            yield path, where, key, node[key], context
    for name, sub in node.get("properties", {}).items():
        yield from _alternatives(sub, path + (name,), where + ("properties", name), context)
    for i, part in enumerate(node.get("allOf", [])):
        cond = part.get("if", {}).get("properties", {})
        ctx = context + tuple((path + (k,), v["const"]) for k, v in cond.items() if "const" in v)
        yield from _alternatives(part.get("then", {}), path, where + ("allOf", i, "then"), ctx)
    if isinstance(node.get("additionalProperties"), dict):
        yield from _alternatives(node["additionalProperties"], path + ("entry",), where + ("additionalProperties",),
                                 context)
    if isinstance(node.get("items"), dict):
        yield from _alternatives(node["items"], path + (0,), where + ("items",), context)


def valid(schema):
    """A value ``schema`` accepts."""
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        return schema["enum"][0]
    for key in ("anyOf", "oneOf"):
        if key in schema:
            return valid(schema[key][0])
    t = schema.get("type")
    t = t[0] if isinstance(t, list) else t
    if t in ("number", "integer"):
        lo = schema.get("minimum", schema.get("exclusiveMinimum", 0))
        return (int(lo) + 1) if t == "integer" else float(lo) + 0.5
    if t == "string":
        return "a"
    if t == "boolean":
        return True
    if t == "null":
        return None
    if t == "array":
        return [valid(schema.get("items", {"type": "number"}))] * max(1, schema.get("minItems", 1))
    if t == "object":
        return {k: valid(schema["properties"][k]) for k in schema.get("required", [])}
    return 1.0


def breakings(schema):
    """``(value, inner path, phrases)``: values of ``schema``'s own type that break one of its constraints each,
    where the part that fails sits (relative to the value) and what the message must say about it."""
    out = []
    t = schema.get("type")
    number = t in ("number", "integer") or (isinstance(t, list) and {"number", "integer"} & set(t))
    whole = t == "integer" or (isinstance(t, list) and "integer" in t and "number" not in t)
    if number:
        step = 1 if whole else 0.5
        if "minimum" in schema:
            out.append((schema["minimum"] - step, (), [f">= {schema['minimum']}"]))
        if "exclusiveMinimum" in schema:
            out.append((schema["exclusiveMinimum"], (), [f"> {schema['exclusiveMinimum']}"]))
        if "maximum" in schema:
            out.append((schema["maximum"] + step, (), [f"<= {schema['maximum']}"]))
        if "exclusiveMaximum" in schema:
            out.append((schema["exclusiveMaximum"], (), [f"< {schema['exclusiveMaximum']}"]))
        if whole:
            out.append((2.5, (), ["an integer", "2.5"]))
    if t == "string" and schema.get("minLength"):
        out.append(("", (), ["must not be empty"]))
    words = [v for v in schema.get("enum", [schema["const"]] if "const" in schema else []) if isinstance(v, str)]
    for word in words:
        out.append((word + "x", (), [f"{w}" for w in words] + [repr(word + "x")]))
    if t == "array":
        if schema.get("minItems"):
            out.append(([], (), [f"at least {schema['minItems']}"]))
        for value, inner, phrases in breakings(schema.get("items", {})):
            out.append(([value], (0,) + inner, phrases))
    if t == "object":
        props = schema.get("properties", {})
        base = valid(schema)
        for key in schema.get("required", []):
            out.append(({k: v for k, v in base.items() if k != key}, (), [f"missing required key {key!r}"]))
        if schema.get("additionalProperties") is False:
            out.append(({**base, "zz_unknown": 1}, ("zz_unknown",), ["unknown key 'zz_unknown'"]
                        + [k for k in props]))
        elif isinstance(schema.get("additionalProperties"), dict):
            for value, inner, phrases in breakings(schema["additionalProperties"]):
                out.append(({"entry": value}, ("entry",) + inner, phrases))
        for key, sub in props.items():
            for value, inner, phrases in breakings(sub):
                out.append(({**base, key: value}, (key,) + inner, phrases))
    for key in ("anyOf", "oneOf"):
        for branch in schema.get(key, []):
            out.extend(breakings(branch))
    return out


def _fmt(path):
    return "$" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path)


def _cases():
    cases = []
    for path, where, key, branches, context in _alternatives(schemas.compose(registry())):
        if "entry" in path:  # an alternative inside a mapping's entries: reached through its parent's cases
            continue
        for b, branch in enumerate(branches):
            for value, inner, phrases in breakings(branch):
                names = ",".join(str(v) for _, v in context)
                ident = f"{_fmt(path)}{f'({names})' if names else ''}:{key}[{b}]:{_fmt(inner)}:{phrases[0]}"
                cases.append(pytest.param(path, context, value, inner, phrases, id=ident))
    return cases


CASES = _cases()


def test_the_walk_reaches_every_alternative():
    """Every anyOf/oneOf of the composed schema yields at least one broken case per alternative that has a
    constraint to break, and the walk finds the known ones (class_weight, held_out, bandwidth, lambda)."""
    found = {_fmt(p) for p, *_ in _alternatives(schemas.compose(registry()))}
    for known in ("$.data.class_weight", "$.data.held_out", "$.data.train", "$.data.label",
                  "$.model.kernel.bandwidth", "$.model.regularizer.lambda"):
        assert known in found
    ids = {c.id for c in CASES}
    assert any(i.startswith("$.data.class_weight:") for i in ids) and len(CASES) > 40


@pytest.mark.parametrize("path,context,value,inner,phrases", CASES)
def test_each_broken_alternative_is_named(path, context, value, inner, phrases, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    spec = copy.deepcopy(BASE)
    for where, const in context:
        _put(spec, where, const)
    _put(spec, path, value)
    with pytest.raises(SpecError) as caught:
        load_spec(spec, check_files=False)
    text = str(caught.value).splitlines()[0]
    leaf = path + inner
    assert f"{_fmt(leaf)}:" in text, (text, _fmt(leaf))
    for phrase in phrases:
        assert phrase in text, (phrase, text)
    assert "expected one of" not in text


def _put(spec, path, value):
    node = spec
    for p in path[:-1]:
        node = node.setdefault(p, {})
    node[path[-1]] = value


# -- the estimators share the schema: the same cases, from Python, name the parameter -------------------------------
#: spec key -> the KernelClassifier parameter that sets it (the estimator's defaults: kernel gaussian, regularizer l2)
ESTIMATOR_PARAMS = {("data", "class_weight"): "class_weight", ("model", "kernel", "bandwidth"): "bandwidth",
                    ("model", "regularizer", "lambda"): "lam"}
ESTIMATOR_CASES = [c for c in CASES if c.values[0] in ESTIMATOR_PARAMS
                   and all(v in ("gaussian", "l2") for _, v in c.values[1])]


def test_the_estimator_cases_cover_each_parameter():
    assert {c.values[0] for c in ESTIMATOR_CASES} == set(ESTIMATOR_PARAMS)


@pytest.mark.parametrize("path,context,value,inner,phrases", ESTIMATOR_CASES)
def test_each_broken_alternative_is_named_in_the_estimator_s_words(path, context, value, inner, phrases):
    import numpy as np

    from kopt.sklearn import KernelClassifier

    param = ESTIMATOR_PARAMS[path]
    X = np.random.default_rng(0).standard_normal((20, 2))
    y = (X[:, 0] > 0).astype(int)
    with pytest.raises(SpecError) as caught:
        KernelClassifier(**{param: value}).fit(X, y)
    text = str(caught.value).splitlines()[0]
    shown = param + "".join(f"[{p!r}]" if isinstance(p, str) else f"[{p}]" for p in inner)
    assert text.startswith(f"KernelClassifier: {shown}: "), (text, shown)
    for phrase in phrases:
        assert phrase in text, (phrase, text)
    assert "$." not in text
