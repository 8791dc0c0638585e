"""The fallback: a single process that no launcher started (``python train.py``).

It is a world of one. MASTER_ADDR / MASTER_PORT are honoured when set, so a script that creates
a process group of one (to exercise distributed code paths) can still choose its port.
"""

from __future__ import annotations

from collections.abc import Mapping

from .base import ClusterEnvironment


class LocalEnvironment(ClusterEnvironment):
    name = "local"

    @staticmethod
    def detect(environ: Mapping[str, str]) -> bool:
        return True

    def world_size(self) -> int:
        return 1

    def global_rank(self) -> int:
        return 0

    def local_rank(self) -> int:
        return 0

    def node_rank(self) -> int:
        return 0

    @property
    def hosts(self) -> list[str]:
        return [self.main_address]

    @property
    def main_address(self) -> str:
        return self._master_addr(None, "single process")

    @property
    def main_port(self) -> int:
        return self._master_port("single process")

    @property
    def devices_per_node(self) -> int:
        return 1
