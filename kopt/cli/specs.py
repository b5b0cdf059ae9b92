"""``kopt specs list|show|copy``: the example specs shipped with kopt."""
from __future__ import annotations

import sys

from ..errors import KoptError


def cmd_specs_list(args):
    from ..spec import packaged as specfiles

    d = specfiles.specs_dir()
    if d is None:
        raise KoptError("no packaged specs found (a broken installation?)")
    names = specfiles.names()
    if args.names:
        print("\n".join(names))
        return 0
    rows = [(n, specfiles.data_source(d / f"{n}.yaml") or "-", specfiles.summary(d / f"{n}.yaml")) for n in names]
    w0, w1 = max(len(r[0]) for r in rows), max(len(r[1]) for r in rows)
    print(f"{'SPEC'.ljust(w0)}  {'DATA'.ljust(w1)}  SUMMARY")
    for n, src, text in rows:
        print(f"{n.ljust(w0)}  {src.ljust(w1)}  {text[:100]}")
    print(f"\n{len(rows)} specs in {d}; run one with: kopt solve NAME")
    return 0


def cmd_specs_show(args):
    from ..spec import packaged as specfiles

    sys.stdout.write(specfiles.path_of(args.name).read_text(encoding="utf-8"))
    return 0


def cmd_specs_copy(args):
    from ..spec import packaged as specfiles

    names = specfiles.names() if args.names == ["all"] else args.names
    for name in names:
        try:
            print(f"wrote {specfiles.copy(name, args.dest)}")
        except OSError as exc:  # a folder that cannot be made or written: the user's to fix, not a bug
            from ..errors import OutputError

            raise OutputError(f"{args.dest}: cannot copy spec {name!r} there ({exc.strerror or exc}); give a folder "
                              "you can write") from None
    return 0

