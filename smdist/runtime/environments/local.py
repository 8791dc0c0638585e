"""The fallback: a single process that no launcher started (``python train.py``).

It is a world of one. MASTER_ADDR / MASTER_PORT are honoured when set, so a script that creates
a process group of one (to exercise distributed code paths) can still choose its port.
"""

from __future__ import annotations

from collections.abc import Mapping

from .base import ClusterEnvironment, log_default_once, read_port

DEFAULT_MAIN_ADDRESS = "127.0.0.1"
DEFAULT_MAIN_PORT = 29500


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
        address = self.environ.get("MASTER_ADDR", "").strip()
        if not address:
            log_default_once(self.name, "MASTER_ADDR", DEFAULT_MAIN_ADDRESS, "single process")
            return DEFAULT_MAIN_ADDRESS
        return address

    @property
    def main_port(self) -> int:
        port = read_port(self.environ, "MASTER_PORT")
        if port is None:
            log_default_once(self.name, "MASTER_PORT", DEFAULT_MAIN_PORT, "single process")
            return DEFAULT_MAIN_PORT
        return port

    @property
    def devices_per_node(self) -> int:
        return 1
