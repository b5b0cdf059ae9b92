"""Where kopt keeps downloaded and parsed data."""
from __future__ import annotations

import os
from pathlib import Path


def default_data_dir() -> Path:
    """``$KOPT_DATA``, else the user cache directory (``$XDG_CACHE_HOME/kopt`` or ``~/.cache/kopt``)."""
    env = os.environ.get("KOPT_DATA")
    if env:
        return Path(env).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "kopt"
