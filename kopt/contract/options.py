"""Typed options: a component's parameters as a frozen dataclass built from its schema fragment.

A component declares its parameters once, as JSON-schema ``properties`` (``params``,
with ``default`` where there is one).  ``options_type`` turns that fragment into a
frozen, keyword-only dataclass -- one field per parameter, typed from the schema, with
the schema's default -- so code reads ``self.options.batch_size`` and no default is
written twice.  A key that is a Python keyword gets a trailing underscore as its field
name (``lambda`` -> ``lambda_``); :meth:`OptionsBase.as_dict` gives the spec's keys back.

The spec engine validates a spec section before it builds a component from it; a
component built directly from Python (tests, notebooks) is validated here against the
same fragment, with the same kind of message.
"""
from __future__ import annotations

import copy
import dataclasses
import keyword
import typing

import jsonschema

_TYPES = {"integer": int, "number": float, "boolean": bool, "string": str, "array": list, "object": dict, "null": type(None)}


class OptionsBase:
    """Base of every generated options class: a component's parameters as a frozen, keyword-only dataclass.

    A component's ``options`` attribute is one of these, built from its ``params`` schema: one field per parameter,
    typed from the schema, with the schema's default.  A key that is a Python keyword gets a trailing underscore
    (``lambda`` is ``options.lambda_``).

    Attributes
    ----------
    <parameter>
        Each parameter of the component, under its field name.

    Examples
    --------
    >>> from kopt.contract.registry import registry
    >>> options = registry().get("regularizer", "l2")(**{"lambda": 0.1}).options
    >>> options.lambda_, options.as_dict()
    (0.1, {'lambda': 0.1})
    >>> options.replace(lambda_=0.2).lambda_
    0.2
    """

    #: field name -> the spec key it came from (differs only for Python keywords)
    _keys: typing.ClassVar[dict] = {}
    #: the component class the options belong to (pickling rebuilds the options type from it)
    _component: typing.ClassVar[type] = None

    def as_dict(self) -> dict:
        """The options under their spec keys (JSON values, copied).

        Returns
        -------
        dict
            Spec key to value (``lambda``, not the field ``lambda_``).

        Examples
        --------
        >>> from kopt.contract.registry import registry
        >>> registry().get("regularizer", "l2")(**{"lambda": 0.5}).options.as_dict()
        {'lambda': 0.5}
        """
        return {key: copy.deepcopy(getattr(self, f)) for f, key in self._keys.items()}

    def replace(self, **changes: object) -> OptionsBase:
        """A copy with some fields changed.

        Parameters
        ----------
        **changes
            Field names (``lambda_``, not ``lambda``) to their new values.

        Returns
        -------
        OptionsBase
            The copy; these options are unchanged (they are frozen).

        Examples
        --------
        >>> from kopt.contract.registry import registry
        >>> options = registry().get("regularizer", "l2")(**{"lambda": 0.5}).options
        >>> options.replace(lambda_=0.1).lambda_, options.lambda_
        (0.1, 0.5)
        """
        return dataclasses.replace(self, **changes)

    def __getitem__(self, key):
        raise TypeError(f"options are attributes: use .{field_name(key)} (not [{key!r}])")

    def __reduce__(self):
        # the class is generated at run time (make_dataclass), so pickle cannot find it by name:
        # rebuild it from the component class (importable) and the options' spec keys
        return _rebuild, (self._component, self.as_dict())


def _rebuild(component, values):
    """Unpickle an options object: ``options_type(component)`` built from spec keys (not re-validated)."""
    return options_type(component)(**{field_name(k): v for k, v in values.items()})


def field_name(key: str) -> str:
    return key + "_" if keyword.iskeyword(key) or not key.isidentifier() else key


def _annotation(schema: dict):
    """A Python type for a schema fragment (a readable approximation; validation is the schema's)."""
    if "const" in schema:
        return type(schema["const"])
    if "enum" in schema:
        kinds = {type(v) for v in schema["enum"]}
        return kinds.pop() if len(kinds) == 1 else typing.Any
    for alt in ("oneOf", "anyOf"):
        if alt in schema:
            parts = tuple(_annotation(s) for s in schema[alt])
            return typing.Union[parts] if len(set(parts)) > 1 else parts[0]
    t = schema.get("type")
    if isinstance(t, list):
        parts = tuple(_TYPES.get(x, typing.Any) for x in t)
        return typing.Union[parts]
    return _TYPES.get(t, typing.Any)


def options_type(cls) -> type:
    """The options dataclass of component class ``cls`` (built once per class)."""
    cached = cls.__dict__.get("_options_type")
    if cached is not None:
        return cached
    fields, keys = [], {}
    for key, schema in cls.params.items():
        name = field_name(key)
        keys[name] = key
        if "default" in schema:
            default = schema["default"]
            spec = (dataclasses.field(default_factory=lambda d=default: copy.deepcopy(d))
                    if isinstance(default, (list, dict)) else dataclasses.field(default=default))
        elif key in cls.required:
            spec = dataclasses.field()
        else:  # optional, no default: absent is None
            spec = dataclasses.field(default=None)
        fields.append((name, _annotation(schema), spec))
    typ = dataclasses.make_dataclass(f"{cls.__name__}Options", fields, bases=(OptionsBase,), frozen=True,
                                     kw_only=True)
    typ._keys = keys
    typ._component = cls
    typ.__doc__ = f"Options of {cls.kind} {cls.name!r} (built from its parameter schema)."
    cls._options_type = typ
    return typ


def build_options(cls, params: dict):
    """Validate ``params`` (spec keys, ``name`` excluded) against ``cls``'s schema and build its options."""
    unknown = sorted(set(params) - set(cls.params))
    what = f"{cls.kind} {cls.name!r}" if cls.name else cls.__name__
    if unknown:
        allowed = ", ".join(sorted(cls.params)) or "(none)"
        raise TypeError(f"{what} has no parameter {', '.join(map(repr, unknown))}; its parameters: {allowed}")
    schema = {k: v for k, v in cls.schema().items()}
    schema["required"] = [r for r in schema.get("required", ()) if r != "name"]
    schema["properties"] = {k: v for k, v in schema["properties"].items() if k != "name"}
    error = jsonschema.exceptions.best_match(_validator(cls, schema).iter_errors(params))
    if error is not None:
        where = ".".join(str(p) for p in error.absolute_path) or "parameters"
        raise ValueError(f"{what}: {where}: {error.message}")
    typ = options_type(cls)
    return typ(**{field_name(k): v for k, v in params.items()})


def _validator(cls, schema):
    v = cls.__dict__.get("_options_validator")
    if v is None:
        v = jsonschema.Draft202012Validator(schema)
        cls._options_validator = v
    return v
