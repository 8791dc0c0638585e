"""A TensorFlow task described by the TF_CONFIG variable (one process per task).

TF_CONFIG is JSON: ``{"cluster": {"chief": [...], "worker": ["host:port", ...], "ps": [...]},
"task": {"type": "worker", "index": 0}}``. The collective (MultiWorkerMirroredStrategy) spans
the chief and the workers; the chief, when there is one, is rank 0 and workers follow.
Parameter servers and evaluators take no part in it and have no rank.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from functools import cached_property
from typing import Any

from ...contract.parameter_server import split_address
from .base import ClusterEnvironment, ClusterEnvironmentError, invalid_variable

COLLECTIVE_TASK_TYPES = ("chief", "worker")
_EXPECTED = (
    'JSON like {"cluster": {"worker": ["host-1:8890", "host-2:8890"]}, '
    '"task": {"type": "worker", "index": 0}}'
)


def cluster_address(address: str) -> tuple[str, int]:
    """A TF_CONFIG cluster address as host and port (the contract's ``split_address``); a bad one
    is a ClusterEnvironmentError naming it."""
    try:
        return split_address(address)
    except ValueError:
        raise invalid_variable("TF_CONFIG cluster address", address, "'host:port'") from None


class TFConfigEnvironment(ClusterEnvironment):
    name = "tf_config"

    @staticmethod
    def detect(environ: Mapping[str, str]) -> bool:
        return bool(environ.get("TF_CONFIG", "").strip())

    @cached_property
    def config(self) -> dict[str, Any]:
        raw = self.environ.get("TF_CONFIG", "")
        try:
            config = json.loads(raw)
        except json.JSONDecodeError:
            raise invalid_variable("TF_CONFIG", raw, _EXPECTED) from None
        if (
            not isinstance(config, dict)
            or not isinstance(config.get("cluster"), dict)
            or not isinstance(config.get("task"), dict)
        ):
            raise invalid_variable("TF_CONFIG", raw, _EXPECTED)
        for task_type, addresses in config["cluster"].items():
            if not isinstance(addresses, list) or not all(isinstance(a, str) for a in addresses):
                raise invalid_variable(
                    f"TF_CONFIG cluster[{task_type!r}]", addresses, "a list of 'host:port' strings"
                )
        return config

    @property
    def collective_addresses(self) -> list[str]:
        """The chief (if any) then the workers: the processes of the collective, in rank order."""
        cluster = self.config["cluster"]
        return [address for kind in COLLECTIVE_TASK_TYPES for address in cluster.get(kind, [])]

    @property
    def task_type(self) -> str:
        return str(self.config["task"].get("type", ""))

    @property
    def task_index(self) -> int:
        index = self.config["task"].get("index")
        if not isinstance(index, int) or isinstance(index, bool) or index < 0:
            raise invalid_variable("TF_CONFIG task.index", index, "an integer >= 0")
        return index

    def world_size(self) -> int:
        return len(self.collective_addresses)

    def global_rank(self) -> int:
        task_type, index = self.task_type, self.task_index
        cluster = self.config["cluster"]
        if task_type not in COLLECTIVE_TASK_TYPES:
            raise ClusterEnvironmentError(
                f"TF_CONFIG task.type={task_type!r} takes no part in the collective, so it has "
                f"no rank: expected one of {list(COLLECTIVE_TASK_TYPES)}."
            )
        members = cluster.get(task_type, [])
        if index >= len(members):
            raise invalid_variable(
                "TF_CONFIG task.index", index, f"0..{len(members) - 1} ({task_type} tasks)"
            )
        offset = len(cluster.get("chief", [])) if task_type == "worker" else 0
        return offset + index

    def local_rank(self) -> int:
        return 0

    def node_rank(self) -> int:
        return self.global_rank()

    @property
    def hosts(self) -> list[str]:
        return [cluster_address(address)[0] for address in self.collective_addresses]

    @property
    def main_address(self) -> str:
        return self._main()[0]

    @property
    def main_port(self) -> int:
        return self._main()[1]

    def _main(self) -> tuple[str, int]:
        addresses = self.collective_addresses
        if not addresses:
            raise invalid_variable(
                "TF_CONFIG cluster", self.config["cluster"], "at least one 'chief' or 'worker'"
            )
        return cluster_address(addresses[0])

    def num_nodes(self) -> int:
        return max(self.world_size(), 1)

    @property
    def devices_per_node(self) -> int:
        return 1
