"""Names for emulated hosts: ``algo-1`` resolves to its own loopback address.

Scripts written for SageMaker connect to ``SM_HOSTS[0]`` by name. Without editing
``/etc/hosts``, ``libnss_wrapper`` (preloaded, reading the file named by ``NSS_WRAPPER_HOSTS``)
makes ``algo-1``, ``algo-2``, ... resolve to 127.0.0.11, 127.0.0.12, ... for the job's
processes only; other names still resolve through the system. The file needs an IPv4 line and
an IPv4-mapped IPv6 line per host, or torch's c10d store retries forever on the missing family.

Where the library is missing (another OS, or not installed), hosts are named by their address
literals instead, which every resolver understands; the caller says so once.

Hosts in namespaces of their own need none of this: each has its ``eth0`` address on the job's
network and ``/etc/hosts`` names them all (``hosts.namespaced.switch``).

Ports are chosen free per job (``ports.free_ports``), because two local jobs must never collide
and TensorFlow's workers bind every interface.
"""

from __future__ import annotations

import ctypes.util
import os
import subprocess
import tempfile
from functools import lru_cache
from pathlib import Path

from smdist.backends.local.hosts.names import HostNames
from smdist.spec.topology import host_names

NSS_WRAPPER_VARIABLE = "SMDIST_NSS_WRAPPER"  # an explicit path to libnss_wrapper.so
_SEARCH_DIRS = (
    "/usr/lib/x86_64-linux-gnu",
    "/usr/lib/aarch64-linux-gnu",
    "/usr/lib64",
    "/usr/lib",
    "/usr/local/lib",
    "/opt/homebrew/lib",
)
FIRST_ADDRESS = 11  # algo-1 -> 127.0.0.11
MAX_HOSTS = 240


@lru_cache(maxsize=1)
def nss_wrapper_library() -> str | None:
    """Path of libnss_wrapper.so, or None when this machine has none that works."""
    candidates = []
    explicit = os.environ.get(NSS_WRAPPER_VARIABLE)
    if explicit:
        candidates.append(explicit)
    candidates += [os.path.join(d, "libnss_wrapper.so") for d in _SEARCH_DIRS]
    found = ctypes.util.find_library("nss_wrapper")
    if found:
        candidates += [os.path.join(d, found) for d in _SEARCH_DIRS]
    for candidate in candidates:
        if os.path.isfile(candidate) and _resolves_with(candidate):
            return candidate
    return None


def _resolves_with(library: str) -> bool:
    """Check once that the preloaded library really answers for a test name."""
    handle, name = tempfile.mkstemp(prefix="smdist-nss-probe-")
    probe = Path(name)
    try:
        with os.fdopen(handle, "w") as stream:
            stream.write("127.0.0.99 smdist-probe-host\n")
        environ = {**os.environ, "LD_PRELOAD": library, "NSS_WRAPPER_HOSTS": str(probe)}
        getent = "/usr/bin/getent" if os.path.exists("/usr/bin/getent") else "getent"
        result = subprocess.run(
            [getent, "hosts", "smdist-probe-host"],
            env=environ,
            capture_output=True,
            text=True,
            timeout=10,
        )
        return "127.0.0.99" in result.stdout
    except (OSError, subprocess.SubprocessError):
        return False
    finally:
        probe.unlink(missing_ok=True)


def names_environment(names: HostNames, hosts_file: Path) -> dict[str, str]:
    """Variables that make the names resolve in a process (empty without the library)."""
    if names.library is None:
        return {}
    preload = os.environ.get("LD_PRELOAD", "")
    parts = [names.library] + [p for p in preload.split(":") if p and p != names.library]
    return {"LD_PRELOAD": ":".join(parts), "NSS_WRAPPER_HOSTS": str(hosts_file)}


def host_addresses(count: int) -> list[str]:
    if count > MAX_HOSTS:
        raise ValueError(f"{count} emulated hosts is more than the {MAX_HOSTS} this backend names")
    return [f"127.0.0.{FIRST_ADDRESS + index}" for index in range(count)]


def choose_host_names(count: int) -> HostNames:
    """``algo-K`` on loopback addresses of their own where libnss_wrapper can name them, else
    the addresses themselves."""
    addresses = host_addresses(count)
    library = nss_wrapper_library()
    names = host_names(count) if library else list(addresses)
    return HostNames(names, addresses, by_name=library is not None, library=library)
