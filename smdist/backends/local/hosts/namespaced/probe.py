"""Whether this machine can give emulated hosts namespaces of their own, how, and if not, why.

As root the hosts are kernel namespaces made directly. Without root they live in one user
namespace of the job's (``unshare --user --map-root-user``, as rootless containers do) where
the kernel allows unprivileged user namespaces; in it the job's user is root, so it may mount
and cable the hosts' network.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from functools import lru_cache

TOOLS = ("unshare", "nsenter", "setpriv", "mount", "ip")
SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
ROOT, USER = "root", "user namespace"
# Set to 1: make the hosts in a user namespace even as root, as without root (for tests).
FORCE_USER_NAMESPACE = "SMDIST_USER_NAMESPACE"


@dataclass(frozen=True)
class Support:
    """How hosts get namespaces here (``ROOT``, ``USER``), or None with the ``problem``."""

    mode: str | None
    problem: str | None = None

    @property
    def user_namespace(self) -> bool:
        return self.mode == USER


def _try(user: bool) -> subprocess.CompletedProcess:
    prefix = ["unshare", "--user", "--map-root-user"] if user else ["unshare"]
    return subprocess.run(
        [*prefix, "--mount", "--uts", "--net", "--pid", "--fork", "--mount-proc", "--",
         "ip", "link", "add", "br0", "type", "bridge"],
        capture_output=True, text=True, env={"PATH": SYSTEM_PATH},
    )  # fmt: skip


@lru_cache(maxsize=1)
def namespace_support() -> Support:
    """Probed once per process: a trial host's namespaces and a bridge in them. Standard
    library only, so that it can be run by itself."""
    if not hasattr(os, "geteuid"):
        return Support(None, "Linux namespaces are not available on this system")
    missing = [tool for tool in TOOLS if shutil.which(tool, path=SYSTEM_PATH) is None]
    if missing:
        return Support(None, f"{', '.join(missing)} not found (util-linux, iproute2)")
    if not os.path.isdir("/opt"):
        return Support(None, "/opt does not exist: a host's /opt/ml is mounted in it")
    as_root = os.geteuid() == 0 and os.environ.get(FORCE_USER_NAMESPACE) != "1"
    trial = _try(user=not as_root)
    if trial.returncode == 0:
        return Support(ROOT if as_root else USER)
    if as_root:
        return Support(None, f"the kernel refused the namespaces or a bridge: "
                             f"{trial.stderr.strip()}")  # fmt: skip
    return Support(None, "without root, hosts need unprivileged user namespaces, which this "
                         f"kernel refused ({trial.stderr.strip()}); run as root or allow them "
                         "(sysctl kernel.unprivileged_userns_clone=1)")  # fmt: skip


def namespace_problem() -> str | None:
    """None when hosts can be made here; else what is missing, in words."""
    return namespace_support().problem
