"""SMP v1's ranks and groups: where the library places each process of a job.

SMP v1 lays the processes out on a grid of three axes: ``D`` (reduced data parallelism,
``rdp_size()`` copies of each model slice), ``P`` (pipeline parallelism, ``pp_size()`` stages)
and ``T`` (tensor parallelism, ``tp_size()`` slices). ``placement_strategy`` orders the axes from
outermost to innermost: a global rank reads as a mixed-radix number whose last letter varies
fastest, so that axis's groups are neighbouring ranks (one instance, NVLink). ``"cluster"`` is
``"DPT"`` and ``"spread"`` is ``"TPD"``, as the SageMaker Python SDK documents them
(smd_model_parallel_general, "Placement Strategy with Tensor Parallelism").

The groups a rank belongs to:

- TP group: the ranks with its D and P coordinates; PP group: its D and T; RDP group: its P and T;
- DP group: its P coordinate. SMP's data-parallel group holds the tensor-parallel ranks, so
  ``dp_size() == size() // pp_size()`` and ``rdp_size() == dp_size() // tp_size()``;
- MP group (the ranks that hold one whole model between them): its D coordinate, so
  ``mp_size() == pp_size() * tp_size()``.

Groups list global ranks in ascending order and a rank's place in a group is its rank there
(``dp_rank()``, ``mp_rank()``...), as in the library. Plain Python, so it is testable without
torch or processes; the stand-in's API is built on it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from itertools import product
from typing import NamedTuple

AXES = "DPT"
NAMED_ORDERS = {"cluster": "DPT", "spread": "TPD"}


def placement_order(placement_strategy: str) -> str:
    """The axis order, outermost first, that a ``placement_strategy`` value names."""
    order = NAMED_ORDERS.get(placement_strategy, placement_strategy)
    if sorted(order) != sorted(AXES):
        raise ValueError(
            f"placement_strategy={placement_strategy!r} must be 'cluster', 'spread', or an "
            "ordering of the letters D, P and T such as 'DPT'"
        )
    return order


class Position(NamedTuple):
    """One rank's place in every dimension."""

    pp_rank: int
    tp_rank: int
    rdp_rank: int
    dp_rank: int
    mp_rank: int


@dataclass(frozen=True)
class Topology:
    """The SMP v1 grid of a job: ``world_size`` ranks, ``pp_size`` x ``tp_size`` per model."""

    world_size: int
    pp_size: int = 1
    tp_size: int = 1
    placement_strategy: str = "cluster"

    def __post_init__(self) -> None:
        placement_order(self.placement_strategy)
        if min(self.world_size, self.pp_size, self.tp_size) < 1:
            raise ValueError(
                f"world_size={self.world_size}, pp_size={self.pp_size} and "
                f"tp_size={self.tp_size} must all be at least 1"
            )
        if self.world_size % self.mp_size:
            raise ValueError(
                f"pp_size={self.pp_size} x tp_size={self.tp_size} = {self.mp_size} does not "
                f"divide world_size={self.world_size}"
            )

    # --- sizes -------------------------------------------------------------------------

    @property
    def order(self) -> str:
        return placement_order(self.placement_strategy)

    @property
    def mp_size(self) -> int:
        return self.pp_size * self.tp_size

    @property
    def dp_size(self) -> int:
        return self.world_size // self.pp_size

    @property
    def rdp_size(self) -> int:
        return self.world_size // self.mp_size

    def _size(self, axis: str) -> int:
        return {"D": self.rdp_size, "P": self.pp_size, "T": self.tp_size}[axis]

    # --- coordinates ---------------------------------------------------------------------

    def _stride(self, axis: str) -> int:
        """How far apart two ranks are whose ``axis`` coordinates differ by one."""
        stride = 1
        for inner in self.order[self.order.index(axis) + 1 :]:
            stride *= self._size(inner)
        return stride

    def coordinate(self, rank: int, axis: str) -> int:
        self._check(rank, self.world_size, "rank")
        return rank // self._stride(axis) % self._size(axis)

    def _rank_at(self, coordinates: Mapping[str, int]) -> int:
        return sum(value * self._stride(axis) for axis, value in coordinates.items())

    def _members(self, fixed: Mapping[str, int]) -> list[int]:
        """The ranks whose coordinates on the ``fixed`` axes are the given ones."""
        free = [axis for axis in AXES if axis not in fixed]
        ranges = [range(self._size(axis)) for axis in free]
        return sorted(
            self._rank_at({**fixed, **dict(zip(free, values))}) for values in product(*ranges)
        )

    @staticmethod
    def _check(value: int, size: int, what: str) -> int:
        if not 0 <= value < size:
            raise ValueError(f"{what}={value} is out of range: it must be in [0, {size})")
        return value

    # --- a rank's ranks ------------------------------------------------------------------

    def pp_rank(self, rank: int) -> int:
        return self.coordinate(rank, "P")

    def tp_rank(self, rank: int) -> int:
        return self.coordinate(rank, "T")

    def rdp_rank(self, rank: int) -> int:
        return self.coordinate(rank, "D")

    def dp_rank(self, rank: int) -> int:
        return self.dp_group(self.pp_rank(rank)).index(rank)

    def mp_rank(self, rank: int) -> int:
        return self.mp_group(self.rdp_rank(rank)).index(rank)

    def position(self, rank: int) -> Position:
        return Position(
            self.pp_rank(rank),
            self.tp_rank(rank),
            self.rdp_rank(rank),
            self.dp_rank(rank),
            self.mp_rank(rank),
        )

    # --- groups, addressed as the library's get_*_group arguments address them -----------

    def dp_group(self, pp_rank: int) -> list[int]:
        """The ranks that hold pipeline stage ``pp_rank`` (all its tensor slices)."""
        return self._members({"P": self._check(pp_rank, self.pp_size, "pp_rank")})

    def mp_group(self, rdp_rank: int) -> list[int]:
        """The ranks that hold model replica ``rdp_rank`` between them."""
        return self._members({"D": self._check(rdp_rank, self.rdp_size, "rdp_rank")})

    def pp_group(self, dp_rank: int) -> list[int]:
        """The pipeline through which the ranks of data-parallel rank ``dp_rank`` run."""
        # Every DP group orders its (D, T) pairs alike, so the one of stage 0 names the pair.
        representative = self.dp_group(0)[self._check(dp_rank, self.dp_size, "dp_rank")]
        return self._members(
            {"D": self.rdp_rank(representative), "T": self.tp_rank(representative)}
        )

    def tp_group(self, pp_rank: int, rdp_rank: int) -> list[int]:
        return self._members(
            {
                "P": self._check(pp_rank, self.pp_size, "pp_rank"),
                "D": self._check(rdp_rank, self.rdp_size, "rdp_rank"),
            }
        )

    def rdp_group(self, pp_rank: int, tp_rank: int) -> list[int]:
        return self._members(
            {
                "P": self._check(pp_rank, self.pp_size, "pp_rank"),
                "T": self._check(tp_rank, self.tp_size, "tp_rank"),
            }
        )

    # --- every group of a kind, in the order the library creates its process groups ------

    def dp_groups(self) -> list[list[int]]:
        return [self.dp_group(pp) for pp in range(self.pp_size)]

    def mp_groups(self) -> list[list[int]]:
        return [self.mp_group(rdp) for rdp in range(self.rdp_size)]

    def pp_groups(self) -> list[list[int]]:
        return [self.pp_group(dp) for dp in range(self.dp_size)]

    def tp_groups(self) -> list[list[int]]:
        return [
            self.tp_group(pp, rdp) for pp in range(self.pp_size) for rdp in range(self.rdp_size)
        ]

    def rdp_groups(self) -> list[list[int]]:
        return [self.rdp_group(pp, tp) for pp in range(self.pp_size) for tp in range(self.tp_size)]
