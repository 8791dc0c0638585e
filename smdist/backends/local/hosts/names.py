"""The job's host names and addresses, however the hosts are made."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class HostNames:
    """The hosts' names, their addresses, and whether processes reach them by name."""

    names: list[str]
    addresses: list[str]
    by_name: bool = True  # False: the names are the addresses themselves
    library: str | None = None  # libnss_wrapper.so, where it makes the names resolve

    def hosts_file_text(self) -> str:
        lines = []
        for name, address in zip(self.names, self.addresses, strict=True):
            lines.append(f"{address} {name}")
            lines.append(f"::ffff:{address} {name}")
        return "\n".join(lines) + "\n"
