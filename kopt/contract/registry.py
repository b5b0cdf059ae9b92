"""The plugin manager: entry points of the ``kopt`` group -> a component registry.

Built-in components (``plugins/``) and third-party ones are loaded the same
way: every entry point of the group is imported and registered with pluggy,
then its ``kopt_register_*`` hooks are called with a ``register`` callback.
A plugin that fails to import or register is recorded (``registry().errors``)
and everything else keeps working.  An entry point that loads but registers no
component and implements no run-time hook is recorded too (``registry().empty``):
otherwise its components are just "unknown".
"""
from __future__ import annotations

import difflib
import importlib.metadata as md
from dataclasses import dataclass, field

import jsonschema
import pluggy

from ..errors import PluginLoadError, UnknownComponentError
from . import hookspecs
from .components import KINDS, Component

GROUP = "kopt"

#: registration hook -> the kind of component its ``register`` callback accepts
REGISTER_HOOKS = {
    "kopt_register_losses": "loss",
    "kopt_register_kernels": "kernel",
    "kopt_register_regularizers": "regularizer",
    "kopt_register_solvers": "solver",
    "kopt_register_predictors": "predictor",
    "kopt_register_datasets": "dataset",
}


@dataclass
class Entry:
    kind: str
    name: str
    cls: type
    plugin: str
    distribution: str
    version: str


@dataclass
class Registry:
    pm: pluggy.PluginManager
    components: dict = field(default_factory=lambda: {k: {} for k in KINDS})
    errors: list = field(default_factory=list)
    origins: dict = field(default_factory=dict)  # plugin name -> (distribution, version)
    #: one message per entry point that loaded but registered no components (:func:`empty_plugins`)
    empty: list = field(default_factory=list)

    def names(self, kind):
        return sorted(self.components[kind])

    def entry(self, kind, name, *, path=None, source=None):
        try:
            return self.components[kind][name]
        except KeyError:
            raise unknown_component(kind, name, self.names(kind), path=path, source=source,
                                    failed=self.errors, empty=self.empty) from None

    def get(self, kind, name, **where):
        return self.entry(kind, name, **where).cls

    def register_plugin(self, plugin, name=None, distribution="<local>", version=""):
        """Register an in-process plugin object/module (tests, notebooks)."""
        name = self.pm.register(plugin, name=name)
        self.origins[name] = (distribution, version)
        self.pm.check_pending()
        self._collect(only=name)
        return name

    def unregister_plugin(self, name):
        plugin = self.pm.get_plugin(name)
        if plugin is not None:
            self.pm.unregister(plugin)
        for table in self.components.values():
            for cname in [n for n, e in table.items() if e.plugin == name]:
                del table[cname]

    # -- internals ---------------------------------------------------------
    def _collect(self, only=None):
        for hook_name, kind in REGISTER_HOOKS.items():
            caller = getattr(self.pm.hook, hook_name)
            for impl in caller.get_hookimpls():
                if only is not None and impl.plugin_name != only:
                    continue
                dist, version = self.origins.get(impl.plugin_name, ("<local>", ""))
                register = self._make_register(hook_name, kind, impl.plugin_name, dist, version)
                try:
                    impl.function(register=register)
                except Exception as exc:  # a broken plugin must not break the others
                    self.errors.append(PluginLoadError(impl.plugin_name, dist, exc))

    def _make_register(self, hook_name, kind, plugin, dist, version):
        base = KINDS[kind]

        def register(cls):
            if not (isinstance(cls, type) and issubclass(cls, base)):
                raise TypeError(_wrong_kind(hook_name, base, cls))
            if not cls.name:
                raise TypeError(f"{cls.__name__} has no 'name'")
            problem = schema_problem(cls)
            if problem is not None:  # refuse this component, keep the plugin's others
                self.errors.append(PluginLoadError(plugin, dist, problem, plugin=plugin, kind=kind,
                                                   component=cls.name))
                return cls
            previous = self.components[kind].get(cls.name)
            if previous is not None and previous.cls is not cls:
                raise ValueError(
                    f"{kind} {cls.name!r} is already registered by {previous.plugin} "
                    f"({previous.distribution})"
                )
            self.components[kind][cls.name] = Entry(kind, cls.name, cls, plugin, dist, version)
            return cls

        return register


def _wrong_kind(hook_name, base, cls):
    msg = f"{hook_name}: register() expects a subclass of {base.__name__}, got {cls!r}"
    if isinstance(cls, type):
        right = [h for h, k in REGISTER_HOOKS.items() if issubclass(cls, KINDS[k])]
        if right:
            msg += f" (register it through {right[0]})"
    return msg


def schema_problem(cls):
    """Why ``cls``'s parameter schema is not a valid JSON schema (a ValueError), or None.

    Components declare their parameters as JSON-schema ``properties`` (``params``); a typo
    there (``"type": "flaot"``) would otherwise surface as a raw SchemaError when a spec
    is validated.  Predictors have no parameters.
    """
    if not issubclass(cls, Component):
        return None
    try:
        jsonschema.Draft202012Validator.check_schema(cls.schema())
    except jsonschema.SchemaError as exc:
        where = list(exc.path)
        if where[:1] == ["properties"]:
            where[0] = "params"
        loc = ".".join(str(p) for p in where) or "its schema"
        msg = f"invalid parameter schema at {loc}: {exc.message}"
        if where[-1:] == ["type"]:
            msg += f" (JSON-schema types: {', '.join(JSON_TYPES)})"
        problem = ValueError(msg)
        problem.__cause__ = exc
        return problem
    except Exception as exc:  # params not a mapping, etc.
        problem = ValueError(f"cannot build its parameter schema: {type(exc).__name__}: {exc}")
        problem.__cause__ = exc
        return problem
    return None


JSON_TYPES = ("array", "boolean", "integer", "null", "number", "object", "string")
PLURAL = {"loss": "losses"}


def unknown_component(kind, name, allowed, *, path=None, source=None, failed=None, empty=None):
    """The error for a component name no plugin registers: close matches, the registered names, failed plugins.

    ``failed`` holds the :class:`PluginLoadError` records to mention (default: those of the
    process-wide registry, once loaded): a plugin that failed to load may be the one that
    provides ``name``.  ``empty`` holds the messages of entry points that registered nothing
    (default: the process-wide registry's), which may be meant to provide it.
    """
    hint = difflib.get_close_matches(str(name), allowed, n=3, cutoff=0.6)
    msg = f"unknown {kind} {name!r}"
    if hint:
        msg += f" (did you mean {' or '.join(repr(h) for h in hint)}?)"
    msg += f"; registered {PLURAL.get(kind, kind + 's')}: {', '.join(allowed) if allowed else '(none)'}"
    if failed is None:
        failed = _REGISTRY.errors if _REGISTRY is not None else ()
    if empty is None:
        empty = _REGISTRY.empty if _REGISTRY is not None else ()
    notes = [_failure_note(e, kind, name) for e in failed]
    notes = [n for n in notes if n] + [f"{text}, and may be meant to provide it" for text in empty]
    if notes:
        msg += "; note: " + "; ".join(notes)
    return UnknownComponentError(msg, path=path, source=source)


def _failure_note(error, kind, name):
    """A note on one failed plugin for an 'unknown kind name' error ('' when it cannot be relevant)."""
    if error.component is not None:
        if (error.kind, error.component) != (kind, name):
            return ""
        return f"plugin {error.plugin!r} registers {kind} {name!r} but it was refused: {error.error}"
    origin = f"from {error.distribution}"
    if error.entry_point != error.plugin:
        origin = f"{error.entry_point}, {origin}"
    cause = f"{type(error.error).__name__}: {error.error}"
    return f"plugin {error.plugin!r} ({origin}) failed to load ({cause}), which may provide it"


def _load() -> Registry:
    pm = pluggy.PluginManager(GROUP)
    pm.add_hookspecs(hookspecs)
    reg = Registry(pm)
    loaded = {}  # plugin name -> "name = module"
    for ep in sorted(md.entry_points(group=GROUP), key=lambda e: e.name):
        dist = getattr(ep, "dist", None)
        dist_name = dist.metadata["Name"] if dist is not None else "<unknown>"
        dist_version = dist.version if dist is not None else ""
        try:
            plugin = ep.load()
            if pm.is_registered(plugin):
                continue
            pm.register(plugin, name=ep.name)
            reg.origins[ep.name] = (dist_name, dist_version)
            loaded[ep.name] = f"{ep.name} = {ep.value}"
        except Exception as exc:
            reg.errors.append(PluginLoadError(f"{ep.name} = {ep.value}", dist_name, exc))
    try:
        pm.check_pending()
    except pluggy.PluginValidationError as exc:
        reg.errors.append(PluginLoadError(str(exc.plugin), "<unknown>", exc))
    reg._collect()
    reg.empty = empty_plugins(reg, loaded)
    return reg


def empty_plugins(reg, loaded):
    """Messages for the plugins of ``loaded`` (name -> ``"name = module"``) that registered nothing.

    A plugin counts as empty when no component of its is registered, none was refused (that is an
    error, listed with the errors) and it implements no hook at all, run-time hooks included: a
    module of only ``kopt_iteration`` observers registers nothing on purpose.
    """
    registered = {e.plugin for table in reg.components.values() for e in table.values()}
    refused = {e.plugin for e in reg.errors}
    out = []
    for name, entry_point in loaded.items():
        plugin = reg.pm.get_plugin(name)
        if name in registered or name in refused or plugin is None or reg.pm.get_hookcallers(plugin):
            continue
        dist, version = reg.origins.get(name, ("<unknown>", ""))
        out.append(f"entry point {entry_point!r} (from {f'{dist} {version}'.strip()}) loaded but registered no "
                   "components")
    return out


_REGISTRY: Registry | None = None


def registry() -> Registry:
    """The process-wide registry, loaded on first use."""
    global _REGISTRY
    if _REGISTRY is None:
        _REGISTRY = _load()
    return _REGISTRY

