"""The ``execution.scheduler`` values a spec accepts: ``local``, ``local:N`` or a scheduler address."""
from __future__ import annotations

import re

#: ``local`` or ``local:N``: a LocalCluster of N worker processes on this machine
LOCAL = re.compile(r"^local(?::(\d+))?$")


def check_address(value) -> str | None:
    """Why ``value`` is not a scheduler address the spec accepts (None when it is; None means 'local')."""
    if value is None:
        return None
    if not isinstance(value, str) or not value:
        return "a scheduler is 'local', 'local:N' (a LocalCluster of N worker processes) or an address 'tcp://HOST:PORT'"
    if LOCAL.match(value) or "://" in value:
        if LOCAL.match(value) and LOCAL.match(value).group(1) == "0":
            return "local:N needs N >= 1 worker processes"
        return None
    return (f"{value!r} is not a scheduler: use 'local', 'local:N' (N worker processes on this machine) or a "
            "scheduler address such as 'tcp://HOST:8786'")
