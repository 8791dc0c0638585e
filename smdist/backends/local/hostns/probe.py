"""Whether this machine can give emulated hosts namespaces of their own, and if not, why."""

from __future__ import annotations

import os
import shutil
import subprocess
from functools import lru_cache

TOOLS = ("unshare", "nsenter", "setpriv", "mount", "ip")
SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


@lru_cache(maxsize=1)
def namespace_problem() -> str | None:
    """None when hosts can be made here; else what is missing, in words."""
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        return "Linux namespaces for the hosts need root here"
    missing = [tool for tool in TOOLS if shutil.which(tool, path=SYSTEM_PATH) is None]
    if missing:
        return f"{', '.join(missing)} not found (util-linux, iproute2)"
    if not os.path.isdir("/opt"):
        return "/opt does not exist: a host's /opt/ml is mounted in it"
    probe = subprocess.run(
        ["unshare", "--mount", "--uts", "--net", "--pid", "--fork", "--mount-proc", "--",
         "ip", "link", "add", "br0", "type", "bridge"],
        capture_output=True, text=True, env={"PATH": SYSTEM_PATH},
    )  # fmt: skip
    if probe.returncode != 0:
        return f"the kernel refused the namespaces or a bridge: {probe.stderr.strip()}"
    return None
