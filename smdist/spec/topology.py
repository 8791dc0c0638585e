"""Who runs where: hosts, ranks, and the data- and model-parallel groups of a job.

Ranks are laid out as mpirun and torchrun lay them out on SageMaker: host ``i`` holds global
ranks ``i*P .. i*P+P-1`` for ``P`` processes per host. Groups are lists of global ranks.
"""

from dataclasses import dataclass, field
from itertools import product


@dataclass(frozen=True)
class Rank:
    rank: int
    host: str
    node_rank: int
    local_rank: int


@dataclass(frozen=True)
class Topology:
    hosts: list[str]
    processes_per_host: int
    ranks: list[Rank]
    # group kind ("data_parallel", "model_parallel", "pipeline", "tensor", "shard", ...) -> groups
    groups: dict[str, list[list[int]]] = field(default_factory=dict)

    @property
    def world_size(self) -> int:
        return len(self.ranks)

    def group_of(self, kind: str, rank: int) -> int | None:
        """Index of the ``kind`` group that holds ``rank``."""
        for index, members in enumerate(self.groups.get(kind, [])):
            if rank in members:
                return index
        return None

    def to_dict(self) -> dict:
        return {
            "hosts": self.hosts,
            "processes_per_host": self.processes_per_host,
            "world_size": self.world_size,
            "groups": self.groups,
        }


def host_names(count: int) -> list[str]:
    """SageMaker's host names: algo-1, algo-2, ..."""
    return [f"algo-{i + 1}" for i in range(count)]


def layout(host_count: int, processes_per_host: int) -> list[Rank]:
    hosts = host_names(host_count)
    return [
        Rank(node * processes_per_host + local, hosts[node], node, local)
        for node in range(host_count)
        for local in range(processes_per_host)
    ]


def data_parallel(host_count: int, processes_per_host: int) -> Topology:
    ranks = layout(host_count, processes_per_host)
    return Topology(
        host_names(host_count),
        processes_per_host,
        ranks,
        {"data_parallel": [[r.rank for r in ranks]]},
    )


def ordered_grid(order: str, sizes: dict[str, int]) -> dict[tuple[int, ...], int]:
    """Map (d, p, t) coordinates to a global rank, with ``order`` outermost to innermost.

    ``order`` is a permutation of "DPT"; the last letter varies fastest between adjacent ranks.
    """
    letters = list(order)
    coordinates: dict[tuple[int, ...], int] = {}
    for rank, indices in enumerate(product(*(range(sizes[letter]) for letter in letters))):
        position = dict(zip(letters, indices, strict=True))
        coordinates[(position["D"], position["P"], position["T"])] = rank
    return coordinates


def model_parallel(
    host_count: int,
    processes_per_host: int,
    pipeline_degree: int,
    tensor_degree: int,
    order: str = "DPT",
) -> Topology:
    """SMP-style grid: D data-parallel replicas of a P-stage pipeline, T-way tensor split."""
    ranks = layout(host_count, processes_per_host)
    world = len(ranks)
    model_degree = pipeline_degree * tensor_degree
    data_degree = world // model_degree
    grid = ordered_grid(order, {"D": data_degree, "P": pipeline_degree, "T": tensor_degree})
    dims = range(data_degree), range(pipeline_degree), range(tensor_degree)
    groups = {
        "model_parallel": [
            sorted(grid[(d, p, t)] for p in dims[1] for t in dims[2]) for d in dims[0]
        ],
        "data_parallel": [
            sorted(grid[(d, p, t)] for d in dims[0]) for p in dims[1] for t in dims[2]
        ],
        "pipeline": [sorted(grid[(d, p, t)] for p in dims[1]) for d in dims[0] for t in dims[2]],
        "tensor": [sorted(grid[(d, p, t)] for t in dims[2]) for d in dims[0] for p in dims[1]],
    }
    if pipeline_degree == 1:
        del groups["pipeline"]
    if tensor_degree == 1:
        del groups["tensor"]
    return Topology(host_names(host_count), processes_per_host, ranks, groups)


def sharded(
    host_count: int, processes_per_host: int, tensor_degree: int, shard_degree: int
) -> Topology:
    """SMP v2 / hybrid FSDP: tensor groups innermost, parameters sharded over ``shard_degree``
    data-parallel ranks (0 = all of them) and replicated across shard groups."""
    ranks = layout(host_count, processes_per_host)
    world = len(ranks)
    data_degree = world // tensor_degree
    shard = shard_degree or data_degree
    grid = ordered_grid("DPT", {"D": data_degree, "P": 1, "T": tensor_degree})
    groups: dict[str, list[list[int]]] = {
        "data_parallel": [
            sorted(grid[(d, 0, t)] for d in range(data_degree)) for t in range(tensor_degree)
        ],
        "shard": [
            sorted(grid[(d, 0, t)] for d in range(start, start + shard))
            for t in range(tensor_degree)
            for start in range(0, data_degree, shard)
        ],
    }
    if tensor_degree > 1:
        groups["tensor"] = [
            sorted(grid[(d, 0, t)] for t in range(tensor_degree)) for d in range(data_degree)
        ]
    return Topology(host_names(host_count), processes_per_host, ranks, groups)
