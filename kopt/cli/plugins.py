"""``kopt plugins``: every registered component, and the plugins that failed or registered nothing."""
from __future__ import annotations


def cmd_plugins(args):
    from ..contract.registry import registry

    reg = registry()
    rows = [("KIND", "NAME", "ORIGIN", "PLUGIN", "SUPPORTS")]
    for kind in ("loss", "kernel", "regularizer", "solver", "dataset", "predictor"):
        for name in reg.names(kind):
            e = reg.components[kind][name]
            origin = f"{e.distribution} {e.version}".strip()
            supports = e.cls.supports() if kind != "predictor" else ""
            rows.append((kind, name, origin, e.plugin, supports))
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    for r in rows:
        print("  ".join(r[i].ljust(widths[i]) for i in range(4)) + "  " + r[4])
    if reg.errors:
        print("\nplugins that failed to load:")
        for e in reg.errors:
            print(f"  {e}")
    if reg.empty:
        print("\nplugins that registered nothing (their hooks are module-level functions decorated with "
              "kopt.contract.hookspecs.hookimpl, in the module the entry point names):")
        for text in reg.empty:
            print(f"  {text}")
    return 0

