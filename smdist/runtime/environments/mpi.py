"""A rank started by Open MPI's mpirun, or by horovodrun's gloo launcher.

Open MPI sets OMPI_COMM_WORLD_RANK / _SIZE / _LOCAL_RANK / _LOCAL_SIZE for every rank; Horovod's
gloo launcher (``horovodrun --gloo``) sets HOROVOD_RANK / _SIZE / _LOCAL_RANK / _LOCAL_SIZE and
HOROVOD_CROSS_RANK / _CROSS_SIZE (the node rank and node count). Where both are present the MPI
ones win: they come from the process manager itself.

Open MPI's OMPI_COMM_WORLD_NODE_RANK is *not* the node's index: it is the process's rank among
all processes on its node (0, 1, ... on every node), so it is not read here. Without Horovod's
cross rank, the node rank is ``rank // local_size``, which holds for mpirun's default by-slot
placement with the same number of processes per host. SM_CURRENT_HOST is no help under MPI:
SageMaker's MPI runner exports the launching host's value to every rank.
"""

from __future__ import annotations

from collections.abc import Mapping

from .base import (
    ClusterEnvironment,
    ClusterEnvironmentError,
    parse_host_list,
    read_int,
)


class MPIEnvironment(ClusterEnvironment):
    name = "mpi"

    @staticmethod
    def detect(environ: Mapping[str, str]) -> bool:
        open_mpi = "OMPI_COMM_WORLD_RANK" in environ and "OMPI_COMM_WORLD_SIZE" in environ
        horovod_gloo = "HOROVOD_RANK" in environ and "HOROVOD_SIZE" in environ
        return open_mpi or horovod_gloo

    def _int(self, suffix: str, minimum: int = 0) -> int:
        """OMPI_COMM_WORLD_<suffix>, else HOROVOD_<suffix>."""
        for variable in (f"OMPI_COMM_WORLD_{suffix}", f"HOROVOD_{suffix}"):
            if self.environ.get(variable, "").strip():
                return read_int(self.environ, variable, environment=self.name, minimum=minimum)
        raise ClusterEnvironmentError(
            f"Neither OMPI_COMM_WORLD_{suffix} nor HOROVOD_{suffix} is set, but the {self.name} "
            "environment needs one of them: expected an integer set by mpirun or horovodrun."
        )

    def world_size(self) -> int:
        return self._int("SIZE", minimum=1)

    def global_rank(self) -> int:
        return self._int("RANK")

    def local_rank(self) -> int:
        return self._int("LOCAL_RANK")

    def local_size(self) -> int:
        return self._int("LOCAL_SIZE", minimum=1)

    def node_rank(self) -> int:
        if self.environ.get("HOROVOD_CROSS_RANK", "").strip():
            return read_int(self.environ, "HOROVOD_CROSS_RANK", environment=self.name)
        return self.global_rank() // self.local_size()

    def num_nodes(self) -> int:
        if self.environ.get("HOROVOD_CROSS_SIZE", "").strip():
            return read_int(self.environ, "HOROVOD_CROSS_SIZE", environment=self.name, minimum=1)
        if self.hosts:
            return len(self.hosts)
        return -(-self.world_size() // self.local_size())

    @property
    def hosts(self) -> list[str]:
        raw = self.environ.get("SM_HOSTS")
        return parse_host_list("SM_HOSTS", raw) if raw is not None else []

    @property
    def main_address(self) -> str:
        return self._master_addr(self.hosts[0] if self.hosts else None, "no MASTER_ADDR, SM_HOSTS")

    @property
    def main_port(self) -> int:
        return self._master_port("not set")

    @property
    def devices_per_node(self) -> int:
        return self.local_size()

    def validate_settings(self) -> None:
        super().validate_settings()
        local_rank, local_size = self.local_rank(), self.local_size()
        if local_rank >= local_size:
            raise ClusterEnvironmentError(
                f"{self.name}: the local rank {local_rank} is not below the local size "
                f"{local_size} (valid: 0..{local_size - 1})."
            )
