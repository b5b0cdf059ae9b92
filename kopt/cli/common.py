"""What several commands share: ``--set`` paths relative to the current folder, ``--scheduler``'s overrides,
the optional dependencies a spec needs, the data reader's notes on stderr."""
from __future__ import annotations

import contextlib
import json
import logging
import os
import sys


def cwd_paths(overrides):
    """``--set data.train=FILE`` / ``data.test=FILE`` with a relative path mean a file in the current folder
    (a spec file's own paths are relative to the spec, which for a packaged spec is inside the package)."""
    import yaml

    out = []
    for item in overrides:
        key, sep, raw = item.partition("=")
        if sep and key.strip() in ("data.train", "data.test"):
            try:
                value = yaml.safe_load(raw)
            except yaml.YAMLError:
                value = None

            def fix(v):
                if isinstance(v, str) and v and not v.startswith(("$", "~")) and not os.path.isabs(v):
                    return os.path.abspath(v)
                return v

            if isinstance(value, str) or (isinstance(value, list) and all(isinstance(v, str) for v in value)):
                fixed = [fix(v) for v in value] if isinstance(value, list) else fix(value)
                item = f"{key}={json.dumps(fixed)}"
        out.append(item)
    return out


def check_extras(spec):
    """Optional dependencies a valid spec needs: output.plot needs matplotlib (the ``plot`` extra)."""
    import importlib.util

    if spec["output"].get("plot") and importlib.util.find_spec("matplotlib") is None:
        raise spec.error(("output", "plot"), "plot is true but matplotlib is not installed; install the plot extra "
                         "(pip install 'kopt[plot]') or set output.plot: false (--set output.plot=false)")


def scheduler_overrides(scheduler, flag="--scheduler"):
    """``--set`` items that run a spec on the Dask cluster ``scheduler`` (none without one), each saying it came
    from ``--scheduler ADDRESS`` (a message about execution.engine names that flag, not a --set never typed)."""
    from ..spec.loader import Override

    if not scheduler:
        return []
    face = f"{flag} {scheduler}"
    return [Override("execution.engine=dask", face), Override(f"execution.scheduler={json.dumps(scheduler)}", face)]


def flag_override(item, flag):
    """The ``--set`` item ``item`` that the command-line flag ``flag`` (as the user typed it) stands for."""
    from ..spec.loader import Override

    return Override(item, flag)


@contextlib.contextmanager
def data_lines(quiet):
    """The data reader's notes (which column is the label, when found by its header name) on stderr as
    ``kopt: ...`` lines while a command reads its data; none with --quiet."""
    if quiet:
        yield
        return
    logger = logging.getLogger("kopt.data")
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("kopt: %(message)s"))
    handler.setLevel(logging.INFO)
    level = logger.level
    logger.addHandler(handler)
    if logger.getEffectiveLevel() > logging.INFO:
        logger.setLevel(logging.INFO)
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)

