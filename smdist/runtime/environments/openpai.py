"""A task of an OpenPAI job (one container per task, one process per container).

OpenPAI describes a job as task roles (e.g. ``worker``) with a number of tasks each, and gives
every container: PAI_CURRENT_TASK_ROLE_NAME, its index within the role
(PAI_CURRENT_TASK_ROLE_CURRENT_TASK_INDEX; older clusters: PAI_TASK_INDEX), the role's task
count (PAI_TASK_ROLE_TASK_COUNT_<role>), every task's address (PAI_HOST_IP_<role>_<index>), its
resources (PAI_RESOURCE_<role> = "gpuNumber,cpuNumber,memMB,shmMB") and the ports the job
reserved, by label: PAI_<role>_<index>_<label>_PORT (older) or
PAI_PORT_LIST_<role>_<index>_<label> (a comma-separated list). Task 0 of the role is the main
node; its port labelled ``SynPort`` (or SMDIST_PAI_PORT_LABEL) is the rendezvous port.
"""

from __future__ import annotations

from collections.abc import Mapping

from .base import (
    ClusterEnvironment,
    invalid_variable,
    log_default_once,
    missing_variable,
    read_int,
    read_port,
)

DEFAULT_ROLE = "worker"
DEFAULT_PORT_LABEL = "SynPort"
PORT_LABEL_ENV = "SMDIST_PAI_PORT_LABEL"
_INDEX_VARIABLES = ("PAI_CURRENT_TASK_ROLE_CURRENT_TASK_INDEX", "PAI_TASK_INDEX")


class OpenPAIEnvironment(ClusterEnvironment):
    name = "openpai"

    @staticmethod
    def detect(environ: Mapping[str, str]) -> bool:
        return any(variable in environ for variable in _INDEX_VARIABLES)

    @property
    def role(self) -> str:
        role = self.environ.get("PAI_CURRENT_TASK_ROLE_NAME", "").strip()
        if not role:
            log_default_once(self.name, "PAI_CURRENT_TASK_ROLE_NAME", DEFAULT_ROLE, "not set")
            return DEFAULT_ROLE
        return role

    def node_rank(self) -> int:
        for variable in _INDEX_VARIABLES:
            if self.environ.get(variable, "").strip():
                return read_int(self.environ, variable, environment=self.name)
        raise missing_variable(_INDEX_VARIABLES[0], self.name, "the task's index, an integer")

    def global_rank(self) -> int:
        return self.node_rank()

    def local_rank(self) -> int:
        return 0

    def world_size(self) -> int:
        return self.num_nodes()

    def num_nodes(self) -> int:
        count_variable = f"PAI_TASK_ROLE_TASK_COUNT_{self.role}"
        if self.environ.get(count_variable, "").strip():
            return read_int(self.environ, count_variable, environment=self.name, minimum=1)
        count = 0
        while f"PAI_HOST_IP_{self.role}_{count}" in self.environ:
            count += 1
        if count == 0:
            raise missing_variable(
                count_variable, self.name, f"the number of '{self.role}' tasks, an integer >= 1"
            )
        return count

    @property
    def hosts(self) -> list[str]:
        hosts = []
        for index in range(self.num_nodes()):
            variable = f"PAI_HOST_IP_{self.role}_{index}"
            address = self.environ.get(variable, "").strip()
            if not address:
                raise missing_variable(variable, self.name, f"the address of task {index}")
            hosts.append(address)
        return hosts

    @property
    def main_address(self) -> str:
        variable = f"PAI_HOST_IP_{self.role}_0"
        address = self.environ.get(variable, "").strip()
        if not address:
            raise missing_variable(variable, self.name, "the address of task 0, the main node")
        return address

    @property
    def main_port(self) -> int:
        role = self.role
        label = self.environ.get(PORT_LABEL_ENV, "").strip() or DEFAULT_PORT_LABEL
        port = read_port(self.environ, f"PAI_{role}_0_{label}_PORT")
        if port is not None:
            return port
        list_variable = f"PAI_PORT_LIST_{role}_0_{label}"
        raw_list = self.environ.get(list_variable, "").strip()
        if raw_list:
            first = raw_list.split(",")[0].strip()
            if not first.isdigit() or not 1 <= int(first) <= 65535:
                raise invalid_variable(list_variable, raw_list, "comma-separated port numbers")
            return int(first)
        port = read_port(self.environ, "MASTER_PORT")
        if port is not None:
            return port
        log_default_once(
            self.name,
            f"a port labelled {label!r} for task 0",
            self.default_main_port,
            "not reserved",
        )
        return self.default_main_port

    @property
    def devices_per_node(self) -> int:
        variable = f"PAI_RESOURCE_{self.role}"
        raw = self.environ.get(variable, "").strip()
        if not raw:
            log_default_once(self.name, variable, 0, "no GPU count given")
            return 0
        first = raw.split(",")[0].strip()
        if not first.isdigit():
            raise invalid_variable(
                variable, raw, "'gpuNumber,cpuNumber,memMB,shmMB', e.g. '4,8,16384,8192'"
            )
        return int(first)

    def validate_settings(self) -> None:
        super().validate_settings()
        self.hosts  # noqa: B018 - raises when a task's address is missing
        self.devices_per_node  # noqa: B018
