"""The contract every cluster environment fulfils, and the readers they share.

A training process learns where it stands (its rank, the world size, which node it is on, where
rank 0 listens) from variables its launcher or platform sets. Each platform spells them
differently; one subclass per platform reads its own spelling and answers the same questions.

Environments only read. The mapping they are given is never written: a default (a port, an
address) is a returned value, logged once so that a surprising value can be traced to its
source, never a variable planted for someone else to find.
"""

from __future__ import annotations

import json
import logging
import os
from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import Any, ClassVar

logger = logging.getLogger("smdist.runtime.environments")

_logged_defaults: set[str] = set()


DEFAULT_MAIN_ADDRESS = "127.0.0.1"
DEFAULT_MAIN_PORT = 29500  # torch.distributed's own default


class ClusterEnvironmentError(ValueError):
    """A variable describing the cluster is missing or malformed; the message says which."""


def invalid_variable(variable: str, value: object, expected: str) -> ClusterEnvironmentError:
    return ClusterEnvironmentError(f"{variable}={value!r} is not valid: expected {expected}.")


def missing_variable(variable: str, environment: str, expected: str) -> ClusterEnvironmentError:
    return ClusterEnvironmentError(
        f"{variable} is not set, but the {environment} environment needs it: expected {expected}."
    )


def log_default_once(environment: str, what: str, value: object, reason: str) -> None:
    """Log a chosen default once per process, so repeated getters do not flood the log."""
    message = f"{environment}: {what} not announced ({reason}); using {value!r}"
    if message not in _logged_defaults:
        _logged_defaults.add(message)
        logger.info(message)


def read_int(
    environ: Mapping[str, str],
    variable: str,
    *,
    environment: str,
    minimum: int = 0,
    default: int | None = None,
) -> int:
    """An integer variable; a missing one falls back to ``default`` or is an error."""
    raw = environ.get(variable)
    if raw is None or raw.strip() == "":
        if default is None:
            raise missing_variable(variable, environment, f"an integer >= {minimum}")
        return default
    try:
        value = int(raw.strip())
    except ValueError:
        raise invalid_variable(variable, raw, f"an integer >= {minimum}") from None
    if value < minimum:
        raise invalid_variable(variable, raw, f"an integer >= {minimum}")
    return value


def read_port(environ: Mapping[str, str], variable: str) -> int | None:
    """A TCP port variable, or None when it is not set."""
    raw = environ.get(variable)
    if raw is None or raw.strip() == "":
        return None
    try:
        port = int(raw.strip())
    except ValueError:
        raise invalid_variable(variable, raw, "a TCP port number between 1 and 65535") from None
    if not 1 <= port <= 65535:
        raise invalid_variable(variable, raw, "a TCP port number between 1 and 65535")
    return port


def parse_host_list(variable: str, raw: str) -> list[str]:
    """A JSON list of distinct, non-empty host names (how SageMaker spells SM_HOSTS)."""
    expected = 'a JSON list of distinct host names, e.g. \'["algo-1", "algo-2"]\''
    try:
        hosts: Any = json.loads(raw)
    except json.JSONDecodeError:
        raise invalid_variable(variable, raw, expected) from None
    if (
        not isinstance(hosts, list)
        or not hosts
        or not all(isinstance(host, str) and host.strip() for host in hosts)
        or len(set(hosts)) != len(hosts)
    ):
        raise invalid_variable(variable, raw, expected)
    return list(hosts)


class ClusterEnvironment(ABC):
    """Where this process stands in a distributed job, as one platform announces it.

    ``detect`` answers "am I running here?" from the variables alone; an instance then answers
    the rank questions. Ranks count processes that take part in the collective: the global rank
    over the whole job, the local rank on this node, and the node rank over the nodes.

    ``hosts`` lists the hosts the platform announces (empty where a launcher announces only the
    main address, as torchrun does). ``devices_per_node`` is how many devices each node trains
    on: for launchers that start one process per device (torchrun, MPI, Slurm) it is the
    processes per node; platforms that start one process per host (SageMaker, OpenPAI) report
    the GPUs the host announces, 0 for a CPU-only host.
    """

    name: ClassVar[str]
    default_main_port: ClassVar[int] = DEFAULT_MAIN_PORT

    def __init__(self, environ: Mapping[str, str] | None = None) -> None:
        self.environ: Mapping[str, str] = os.environ if environ is None else environ

    @staticmethod
    @abstractmethod
    def detect(environ: Mapping[str, str]) -> bool:
        """True when the variables show this process was started by this platform."""

    @abstractmethod
    def world_size(self) -> int: ...

    @abstractmethod
    def global_rank(self) -> int: ...

    @abstractmethod
    def local_rank(self) -> int: ...

    @abstractmethod
    def node_rank(self) -> int: ...

    @property
    @abstractmethod
    def hosts(self) -> list[str]: ...

    @property
    @abstractmethod
    def main_address(self) -> str: ...

    @property
    @abstractmethod
    def main_port(self) -> int: ...

    @property
    @abstractmethod
    def devices_per_node(self) -> int: ...

    def num_nodes(self) -> int:
        return max(len(self.hosts), 1)

    def _master_addr(self, fallback: str | None, reason: str) -> str:
        """MASTER_ADDR when set, else ``fallback``, else the loopback default (said once)."""
        address = self.environ.get("MASTER_ADDR", "").strip()
        if address:
            return address
        if fallback:
            return fallback
        log_default_once(self.name, "MASTER_ADDR", DEFAULT_MAIN_ADDRESS, reason)
        return DEFAULT_MAIN_ADDRESS

    def _master_port(self, reason: str) -> int:
        """MASTER_PORT when set, else the default port (said once, with ``reason``)."""
        port = read_port(self.environ, "MASTER_PORT")
        if port is None:
            log_default_once(self.name, "MASTER_PORT", self.default_main_port, reason)
            return self.default_main_port
        return port

    def is_main_process(self) -> bool:
        return self.global_rank() == 0

    def validate_settings(self) -> None:
        """Raise ClusterEnvironmentError when the announced values contradict each other."""
        world_size, rank = self.world_size(), self.global_rank()
        if world_size < 1:
            raise ClusterEnvironmentError(
                f"{self.name}: the world size is {world_size}; it must be at least 1."
            )
        if not 0 <= rank < world_size:
            raise ClusterEnvironmentError(
                f"{self.name}: the global rank {rank} is outside the world of {world_size} "
                f"processes (valid: 0..{world_size - 1})."
            )
        num_nodes, node_rank = self.num_nodes(), self.node_rank()
        if not 0 <= node_rank < num_nodes:
            raise ClusterEnvironmentError(
                f"{self.name}: the node rank {node_rank} is outside the {num_nodes} nodes "
                f"(valid: 0..{num_nodes - 1})."
            )
        if self.local_rank() < 0:
            raise ClusterEnvironmentError(
                f"{self.name}: the local rank {self.local_rank()} is negative."
            )
        self.main_address  # noqa: B018 - reading it raises when it is malformed
        self.main_port  # noqa: B018

    def describe(self) -> dict[str, Any]:
        """The answers in one dictionary, for logs and error reports."""
        return {
            "environment": self.name,
            "world_size": self.world_size(),
            "global_rank": self.global_rank(),
            "local_rank": self.local_rank(),
            "node_rank": self.node_rank(),
            "num_nodes": self.num_nodes(),
            "hosts": self.hosts,
            "main_address": self.main_address,
            "main_port": self.main_port,
            "devices_per_node": self.devices_per_node,
        }

    def __repr__(self) -> str:
        try:
            fields = ", ".join(f"{key}={value!r}" for key, value in self.describe().items())
        except ClusterEnvironmentError as error:
            fields = f"invalid: {error}"
        return f"{type(self).__name__}({fields})"
