"""Which way the job's hosts are made, decided before anything starts: in namespaces of their
own (a host: ``/opt/ml`` at its real path, its hostname, its ``eth0`` and ports), or, where this
machine cannot make them or the user turned them off, sharing this machine's files and
network; with what the shared way does not reproduce, said in the log.
"""

from __future__ import annotations

from smdist.backends.local.hosts.base import HostSet
from smdist.backends.local.hosts.namespaced.host_set import NamespacedHosts
from smdist.backends.local.hosts.namespaced.probe import namespace_support
from smdist.backends.local.hosts.namespaced.switch import router_path
from smdist.backends.local.hosts.shared.host_set import SharedMachineHosts

SHARED_LIMITS = (
    "the hosts share this machine's files and network, so a script's literal /opt/ml paths "
    "are this machine's /opt/ml, not its host's folder (SM_MODEL_DIR, SM_CHANNEL_* and the "
    "other SM_* variables are right), and each host gets other ports than SageMaker's fixed "
    "ones (a port or TF_CONFIG the script fixes itself collides between hosts)"
)
NO_ROUTE = (
    "the hosts reach only each other: slirp4netns, which gives them this machine's outbound "
    "network, is not installed (Debian/Ubuntu: apt-get install slirp4netns)"
)


class HostModeError(RuntimeError):
    """Namespaces were asked for where this machine cannot make them."""


def choose_hosts(wanted: bool | None, isolated: bool) -> HostSet:
    """``wanted``: True insists on namespaces, False turns them off, None uses them where this
    machine can make them; ``isolated``: the job's ``network.isolation``."""
    if wanted is False:
        return SharedMachineHosts(notes=(f"namespaces turned off: {SHARED_LIMITS}",))
    support = namespace_support()
    if support.mode is None:
        if wanted:
            raise HostModeError(f"the hosts cannot have namespaces here: {support.problem}")
        return SharedMachineHosts(notes=(f"{support.problem}: {SHARED_LIMITS}",))
    route_out = not isolated and router_path() is not None
    notes = () if isolated or route_out else (NO_ROUTE,)
    return NamespacedHosts(
        user_namespace=bool(support.user_namespace), route_out=route_out, notes=notes
    )
