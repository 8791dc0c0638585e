"""Which ranks shard and which replicate the weights for a ``hybrid_shard_degree``: the FSDP
device mesh and SMP v2's shard and replication groups."""

from __future__ import annotations

from dataclasses import dataclass


def mesh_shape(hybrid_shard_degree: int, world_size: int) -> tuple[int, ...]:
    """The FSDP device mesh: (shard,) or (replicate, shard)."""
    if hybrid_shard_degree in (0, world_size):
        return (world_size,)
    return (world_size // hybrid_shard_degree, hybrid_shard_degree)


@dataclass(frozen=True)
class HybridShardLayout:
    """Which ranks hold one copy of the weights between them (a shard group: ``shard_size``
    consecutive ranks) and which hold the same shard (a replication group), for
    ``hybrid_shard_degree`` with tensor, context and expert parallel degrees 1.

    0 is native FSDP's FULL_SHARD (one shard group of every rank); 1 is NO_SHARD (every rank a
    replica). It is the stand-in's ``state.ranker``, with the methods AWS's SMP v2 example
    scripts call.
    """

    hybrid_shard_degree: int
    world_size: int

    @property
    def smp_active(self) -> bool:
        """False where SMP falls back to native PyTorch FSDP (degree 0 or 1)."""
        return self.hybrid_shard_degree >= 2

    @property
    def shard_size(self) -> int:
        return self.hybrid_shard_degree or self.world_size

    @property
    def replicas(self) -> int:
        return self.world_size // self.shard_size

    def shard_groups(self) -> list[list[int]]:
        size = self.shard_size
        return [list(range(start, start + size)) for start in range(0, self.world_size, size)]

    def get_rep_groups(self) -> list[list[int]]:
        """The replication groups: the ranks holding the same shard, one per shard rank."""
        return [
            list(range(shard, self.world_size, self.shard_size)) for shard in range(self.shard_size)
        ]

    def get_rep_rank(self, rank: int) -> int:
        """Which copy of the weights ``rank`` helps hold (its replication rank)."""
        return rank // self.shard_size

    def get_shard_rank(self, rank: int) -> int:
        return rank % self.shard_size
