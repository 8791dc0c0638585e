"""A SageMaker training host: one process per host, started by the container's toolkit.

SageMaker announces the cluster twice: as variables (SM_HOSTS, SM_CURRENT_HOST, SM_NUM_GPUS,
SM_RESOURCE_CONFIG, ...) set by the training toolkit for the user's process, and as the file
``/opt/ml/input/config/resourceconfig.json`` that every container gets, toolkit or not. The
variables win; the file fills in what they leave out. The process on each host is rank
``hosts.index(current_host)``; it is usually a launcher (torchrun, mpirun) that starts the
per-device workers, which then see their own launcher's environment instead.

On a heterogeneous cluster only the distribution instance groups' hosts take part
(``SM_DISTRIBUTION_INSTANCE_GROUPS``, as the toolkit sets it, or the groups the caller names):
they are ``hosts``, the ranks count over them and the first is the main address; a host of any
other group is not ``in_distribution`` and has no rank (``all_hosts`` lists every host).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from functools import cached_property
from pathlib import Path
from typing import Any

from ...contract.groups import rank_hosts
from ...contract.program import TORCHRUN_PORT
from .base import (
    ClusterEnvironment,
    ClusterEnvironmentError,
    invalid_variable,
    log_default_once,
    parse_host_list,
    read_int,
)

DEFAULT_BASE_DIR = "/opt/ml"
BASE_DIR_ENV = "SAGEMAKER_BASE_DIR"  # the training toolkit's override of /opt/ml
RESOURCE_CONFIG_RELATIVE = Path("input/config/resourceconfig.json")
# The port the SageMaker PyTorch toolkit gives torchrun's master; used when MASTER_PORT is unset.
DEFAULT_MAIN_PORT = TORCHRUN_PORT


def resource_config_path(environ: Mapping[str, str]) -> Path:
    return Path(environ.get(BASE_DIR_ENV) or DEFAULT_BASE_DIR) / RESOURCE_CONFIG_RELATIVE


class SageMakerEnvironment(ClusterEnvironment):
    name = "sagemaker"
    default_main_port = DEFAULT_MAIN_PORT

    def __init__(
        self, environ: Mapping[str, str] | None = None, distribution_groups: Sequence[str] = ()
    ) -> None:
        """``distribution_groups``: the groups that run the distributed program, where the
        environment does not say (SM_DISTRIBUTION_INSTANCE_GROUPS)."""
        super().__init__(environ)
        self._distribution_groups = list(distribution_groups)

    @staticmethod
    def detect(environ: Mapping[str, str]) -> bool:
        if any(key in environ for key in ("SM_HOSTS", "SM_CURRENT_HOST", "SM_RESOURCE_CONFIG")):
            return True
        return resource_config_path(environ).is_file()

    @cached_property
    def resource_config(self) -> dict[str, Any]:
        """resourceconfig.json as SM_RESOURCE_CONFIG or the file gives it; {} when neither."""
        raw = self.environ.get("SM_RESOURCE_CONFIG")
        source = "SM_RESOURCE_CONFIG"
        if raw is None:
            path = resource_config_path(self.environ)
            if not path.is_file():
                return {}
            raw, source = path.read_text(encoding="utf-8"), str(path)
        expected = 'a JSON object such as {"current_host": "algo-1", "hosts": ["algo-1"]}'
        try:
            config = json.loads(raw)
        except json.JSONDecodeError:
            raise invalid_variable(source, raw, expected) from None
        if not isinstance(config, dict):
            raise invalid_variable(source, raw, expected)
        return config

    @cached_property
    def _hosts(self) -> list[str]:
        raw = self.environ.get("SM_HOSTS")
        if raw is not None:
            return parse_host_list("SM_HOSTS", raw)
        hosts = self.resource_config.get("hosts")
        if hosts is None:
            raise ClusterEnvironmentError(
                "SM_HOSTS is not set and no resource config gives 'hosts': expected SM_HOSTS "
                'as a JSON list such as \'["algo-1", "algo-2"]\' or the file '
                f"{resource_config_path(self.environ)}."
            )
        return parse_host_list("resourceconfig.json 'hosts'", json.dumps(hosts))

    @property
    def all_hosts(self) -> list[str]:
        """Every host of the job, in every instance group."""
        return list(self._hosts)

    @cached_property
    def distribution_groups(self) -> list[str]:
        """The instance groups that run the distributed program (empty: every host does)."""
        raw = self.environ.get("SM_DISTRIBUTION_INSTANCE_GROUPS", "").strip()
        try:
            named = json.loads(raw) if raw else []
        except json.JSONDecodeError:
            raise invalid_variable(
                "SM_DISTRIBUTION_INSTANCE_GROUPS", raw, 'a JSON list such as ["gpu"]'
            ) from None
        return list(named) or list(self._distribution_groups)

    @cached_property
    def _rank_hosts(self) -> list[str]:
        if not self.distribution_groups or "instance_groups" not in self.resource_config:
            return list(self._hosts)
        return rank_hosts({**self.resource_config, "hosts": self._hosts}, self.distribution_groups)

    @property
    def hosts(self) -> list[str]:
        """The hosts that take part in the distributed program (every host without groups)."""
        return list(self._rank_hosts)

    @property
    def in_distribution(self) -> bool:
        """Whether this host runs the distributed program (else: its script, once)."""
        return self.current_host in self._rank_hosts

    @property
    def current_host(self) -> str:
        host = self.environ.get("SM_CURRENT_HOST") or self.resource_config.get("current_host")
        if not host:
            raise ClusterEnvironmentError(
                "SM_CURRENT_HOST is not set and no resource config gives 'current_host': "
                f"expected one of the hosts {self._hosts}."
            )
        if host not in self._hosts:
            variable = "SM_CURRENT_HOST" if "SM_CURRENT_HOST" in self.environ else "current_host"
            raise invalid_variable(variable, host, f"one of the hosts {self._hosts}")
        return host

    def node_rank(self) -> int:
        host = self.current_host
        if host not in self._rank_hosts:
            raise ClusterEnvironmentError(
                f"{host} is a host of an instance group outside the distribution's "
                f"{self.distribution_groups}: it has no rank"
            )
        return self._rank_hosts.index(host)

    def global_rank(self) -> int:
        return self.node_rank()

    def local_rank(self) -> int:
        return 0

    def world_size(self) -> int:
        return len(self._rank_hosts)

    @property
    def main_address(self) -> str:
        return self._rank_hosts[0]

    @property
    def main_port(self) -> int:
        return self._master_port("SageMaker's default")

    def announced_gpus(self) -> int | None:
        """SM_NUM_GPUS, or None when the host does not say (the caller may ask the driver)."""
        if not self.environ.get("SM_NUM_GPUS", "").strip():
            return None
        return read_int(self.environ, "SM_NUM_GPUS", environment=self.name)

    @property
    def devices_per_node(self) -> int:
        gpus = self.announced_gpus()
        if gpus is None:
            log_default_once(self.name, "SM_NUM_GPUS", 0, "no GPU count given")
            return 0
        return gpus

    @property
    def network_interface_name(self) -> str | None:
        return self.environ.get("SM_NETWORK_INTERFACE_NAME") or self.resource_config.get(
            "network_interface_name"
        )

    @property
    def instance_type(self) -> str | None:
        return self.environ.get("SM_CURRENT_INSTANCE_TYPE") or self.resource_config.get(
            "current_instance_type"
        )

    @property
    def job_name(self) -> str | None:
        """The training job's name: the same on every host, so usable as a rendezvous id."""
        name = self.environ.get("TRAINING_JOB_NAME")
        if name:
            return name
        training_env = self.environ.get("SM_TRAINING_ENV")
        if training_env:
            try:
                parsed = json.loads(training_env)
            except json.JSONDecodeError:
                raise invalid_variable(
                    "SM_TRAINING_ENV", training_env, "a JSON object written by SageMaker"
                ) from None
            if isinstance(parsed, dict) and parsed.get("job_name"):
                return str(parsed["job_name"])
        return None

    def validate_settings(self) -> None:
        self.current_host  # noqa: B018 - raises when it is not one of the hosts
        self.devices_per_node  # noqa: B018
        super().validate_settings()
