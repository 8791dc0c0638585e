"""A task started by Slurm's srun.

srun sets SLURM_PROCID (global rank), SLURM_NTASKS (world size), SLURM_LOCALID (local rank),
SLURM_NODEID (node rank) and SLURM_JOB_NODELIST, a compressed host list such as
``node[01-03,07],gpu-a``. The main address is the first host of that list unless MASTER_ADDR
says otherwise.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from .base import (
    ClusterEnvironment,
    ClusterEnvironmentError,
    invalid_variable,
    log_default_once,
    read_int,
    read_port,
)

_RANGE = re.compile(r"^(\d+)(?:-(\d+))?$")
# Spread concurrent jobs sharing a node over distinct ports, derived from the job id.
_PORT_BASE = 15000


def _split_top_level(text: str) -> list[str]:
    """Split on commas that are not inside brackets."""
    parts, depth, current = [], 0, []
    for char in text:
        if char == "[":
            depth += 1
        elif char == "]":
            depth -= 1
        if char == "," and depth == 0:
            parts.append("".join(current))
            current = []
        else:
            current.append(char)
    parts.append("".join(current))
    return parts


def _expand_one(pattern: str, variable: str, raw: str) -> list[str]:
    start = pattern.find("[")
    if start == -1:
        if "]" in pattern:
            raise invalid_variable(variable, raw, "a Slurm host list such as 'node[1-3,7]'")
        return [pattern]
    end = pattern.find("]", start)
    if end == -1:
        raise invalid_variable(variable, raw, "a Slurm host list such as 'node[1-3,7]'")
    prefix, body, rest = pattern[:start], pattern[start + 1 : end], pattern[end + 1 :]
    names: list[str] = []
    for item in body.split(","):
        match = _RANGE.match(item.strip())
        if not match:
            raise invalid_variable(variable, raw, "a Slurm host list such as 'node[1-3,7]'")
        first, last = match.group(1), match.group(2) or match.group(1)
        if int(last) < int(first):
            raise invalid_variable(variable, raw, "ranges that count up, such as 'node[1-3]'")
        width = len(first)  # keep zero padding: node[01-03] -> node01, node02, node03
        names.extend(f"{prefix}{number:0{width}d}" for number in range(int(first), int(last) + 1))
    suffixes = _expand_one(rest, variable, raw)
    return [name + suffix for name in names for suffix in suffixes]


def expand_nodelist(raw: str, variable: str = "SLURM_JOB_NODELIST") -> list[str]:
    """``node[01-02],gpu-a`` -> ``['node01', 'node02', 'gpu-a']``."""
    hosts: list[str] = []
    for part in _split_top_level(raw.strip()):
        if not part.strip():
            raise invalid_variable(variable, raw, "a Slurm host list such as 'node[1-3,7]'")
        hosts.extend(_expand_one(part.strip(), variable, raw))
    return hosts


class SlurmEnvironment(ClusterEnvironment):
    name = "slurm"

    @staticmethod
    def detect(environ: Mapping[str, str]) -> bool:
        return "SLURM_PROCID" in environ and "SLURM_NTASKS" in environ

    def _int(self, variable: str, minimum: int = 0, default: int | None = None) -> int:
        return read_int(
            self.environ, variable, environment=self.name, minimum=minimum, default=default
        )

    def world_size(self) -> int:
        return self._int("SLURM_NTASKS", minimum=1)

    def global_rank(self) -> int:
        return self._int("SLURM_PROCID")

    def local_rank(self) -> int:
        return self._int("SLURM_LOCALID")

    def node_rank(self) -> int:
        return self._int("SLURM_NODEID")

    @property
    def hosts(self) -> list[str]:
        for variable in ("SLURM_JOB_NODELIST", "SLURM_NODELIST"):
            raw = self.environ.get(variable, "").strip()
            if raw:
                return expand_nodelist(raw, variable)
        return []

    def num_nodes(self) -> int:
        for variable in ("SLURM_JOB_NUM_NODES", "SLURM_NNODES"):
            if self.environ.get(variable, "").strip():
                return self._int(variable, minimum=1)
        return max(len(self.hosts), 1)

    @property
    def main_address(self) -> str:
        address = self.environ.get("MASTER_ADDR", "").strip()
        if address:
            return address
        hosts = self.hosts
        if not hosts:
            raise ClusterEnvironmentError(
                "SLURM_JOB_NODELIST is not set and neither is MASTER_ADDR: expected a Slurm "
                "host list such as 'node[1-3]' (srun sets it) or MASTER_ADDR."
            )
        return hosts[0]

    @property
    def main_port(self) -> int:
        port = read_port(self.environ, "MASTER_PORT")
        if port is not None:
            return port
        job_id = self.environ.get("SLURM_JOB_ID", "").strip()
        if job_id.isdigit():
            port = _PORT_BASE + int(job_id[-4:])
            log_default_once(self.name, "MASTER_PORT", port, "derived from SLURM_JOB_ID")
            return port
        log_default_once(self.name, "MASTER_PORT", self.default_main_port, "no SLURM_JOB_ID")
        return self.default_main_port

    @property
    def devices_per_node(self) -> int:
        raw = self.environ.get("SLURM_NTASKS_PER_NODE", "").strip()
        if raw:
            # Slurm writes "4" or, for uneven allocations, "4(x2),3"; the first count is ours
            # on the first nodes, and training jobs use even allocations.
            match = re.match(r"^(\d+)", raw)
            if not match or int(match.group(1)) < 1:
                raise invalid_variable(
                    "SLURM_NTASKS_PER_NODE", raw, "a task count such as '4' or '4(x2)'"
                )
            return int(match.group(1))
        return -(-self.world_size() // self.num_nodes())

    def validate_settings(self) -> None:
        super().validate_settings()
        hosts = self.hosts
        if hosts and len(hosts) != self.num_nodes():
            raise ClusterEnvironmentError(
                f"SLURM_JOB_NODELIST lists {len(hosts)} hosts {hosts}, but the job has "
                f"{self.num_nodes()} nodes (SLURM_JOB_NUM_NODES): they must agree."
            )
