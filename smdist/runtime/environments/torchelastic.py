"""A worker started by torchrun (torch.distributed.run / TorchElastic).

torchrun sets RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, GROUP_RANK (the node rank),
GROUP_WORLD_SIZE, MASTER_ADDR, MASTER_PORT and TORCHELASTIC_RUN_ID for every worker it
starts. It announces the main address only, not the other hosts.
"""

from __future__ import annotations

from collections.abc import Mapping

from .base import ClusterEnvironment, ClusterEnvironmentError, read_int


class TorchElasticEnvironment(ClusterEnvironment):
    name = "torchelastic"

    REQUIRED = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "GROUP_RANK")

    @staticmethod
    def detect(environ: Mapping[str, str]) -> bool:
        # RANK/WORLD_SIZE alone are also set by other platforms for their nodes; the local and
        # group ranks together are torchrun's signature.
        return all(key in environ for key in TorchElasticEnvironment.REQUIRED)

    def _int(self, variable: str, minimum: int = 0) -> int:
        return read_int(self.environ, variable, environment=self.name, minimum=minimum)

    def world_size(self) -> int:
        return self._int("WORLD_SIZE", minimum=1)

    def global_rank(self) -> int:
        return self._int("RANK")

    def local_rank(self) -> int:
        return self._int("LOCAL_RANK")

    def node_rank(self) -> int:
        return self._int("GROUP_RANK")

    def local_world_size(self) -> int:
        return self._int("LOCAL_WORLD_SIZE", minimum=1)

    def num_nodes(self) -> int:
        if self.environ.get("GROUP_WORLD_SIZE"):
            return self._int("GROUP_WORLD_SIZE", minimum=1)
        return -(-self.world_size() // self.local_world_size())

    def restart_count(self) -> int:
        """How often torchrun has restarted the workers (``--max_restarts``)."""
        return read_int(
            self.environ, "TORCHELASTIC_RESTART_COUNT", environment=self.name, default=0
        )

    @property
    def run_id(self) -> str | None:
        return self.environ.get("TORCHELASTIC_RUN_ID")

    @property
    def hosts(self) -> list[str]:
        return []

    @property
    def main_address(self) -> str:
        return self._master_addr(None, "not set")

    @property
    def main_port(self) -> int:
        return self._master_port("not set")

    @property
    def devices_per_node(self) -> int:
        return self.local_world_size()

    def validate_settings(self) -> None:
        super().validate_settings()
        local_rank, local_world_size = self.local_rank(), self.local_world_size()
        if local_rank >= local_world_size:
            raise ClusterEnvironmentError(
                f"LOCAL_RANK={local_rank} is not valid: expected 0..{local_world_size - 1} "
                f"(LOCAL_WORLD_SIZE={local_world_size})."
            )
