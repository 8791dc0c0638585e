"""SMP v1's ranks and groups in the stand-in equal the library's, for every placement strategy.

The documented examples these tests hold the stand-in to:

- Ranking basics, without tensor parallelism
  (https://sagemaker.readthedocs.io/en/stable/api/training/smd_model_parallel_general.html,
  "Ranking Basics without Tensor Parallelism"): one node, 8 processes, ``partitions=2``.
  With ``spread`` the model-parallel groups are [0, 4], [1, 5], [2, 6], [3, 7]; processes 0-3
  have mp_rank 0 and 4-7 mp_rank 1; the data-parallel groups are [0, 1, 2, 3] and
  [4, 5, 6, 7], and process 6 has dp_rank 2. With ``cluster`` the model-parallel groups are
  [0, 1], [2, 3], [4, 5], [6, 7] and the data-parallel groups [0, 2, 4, 6] and [1, 3, 5, 7].
- Placement with tensor parallelism (same page, "Placement Strategy with Tensor
  Parallelism"): a permutation of D (reduced data), P (pipeline) and T (tensor); the rightmost
  letter varies first over ascending global ranks, the leftmost is spread farthest; ``spread``
  is ``"TPD"`` and ``cluster`` is ``"DPT"``. Two tables for 8 devices with tp_size, pp_size
  and rdp_size 2, giving (rdp_rank, pp_rank, tp_rank) for ranks 0-7:
  ``"DPT"``: (0,0,0) (0,0,1) (0,1,0) (0,1,1) (1,0,0) (1,0,1) (1,1,0) (1,1,1);
  ``"PTD"``: (0,0,0) (1,0,0) (0,0,1) (1,0,1) (0,1,0) (1,1,0) (0,1,1) (1,1,1).
- The developer guide's ranking mechanism
  (https://docs.aws.amazon.com/sagemaker/latest/dg/model-parallel-extended-features-pytorch-ranking-mechanism.html):
  dp degree = processes / pp degree and rdp degree x tp degree = dp degree; the data-parallel
  group holds the tensor-parallel ranks. Its example, 8 GPUs with tp 2, pp 2 and dp 4, lists
  (pp_rank, tp_rank, rdp_rank, dp_rank, mp_rank) for GPUs 0-7: (0,0,0,0,0) (1,0,0,0,1)
  (0,1,0,1,2) (1,1,0,1,3) (0,0,1,2,0) (1,0,1,2,1) (0,1,1,3,2) (1,1,1,3,3), pipelines over
  (0,1) (2,3) (4,5) (6,7), data-parallel allreduce over 0, 2, 4, 6 and over 1, 3, 5, 7,
  tensor parallelism over (0,2) (1,3) (4,6) (5,7). The page names no placement strategy; its
  numbers are the ``"DTP"`` ordering (pipeline ranks adjacent), not the default ``cluster``.

The larger cases (pipeline degree 4, world 16) are worked out by the same rule.
"""

from __future__ import annotations

import textwrap
from itertools import permutations

import pytest
from gloo_ranks import run_ranks

from smdist.runtime.smp.config import parse_mp_parameters
from smdist.runtime.smp.topology import Position, Topology, placement_order

KINDS = ("dp", "mp", "pp", "tp", "rdp")


def groups_of(topology: Topology) -> dict[str, list[list[int]]]:
    return {kind: getattr(topology, f"{kind}_groups")() for kind in KINDS}


def singles(*ranks: int) -> list[list[int]]:
    """Tensor groups of one rank each (tensor degree 1), in the order given."""
    return [[rank] for rank in ranks]


# (placement_strategy, world, pp, tp) -> every group of each kind, in the library's order
# (dp by pp_rank, mp by rdp_rank, pp by dp_rank, tp by (pp, rdp), rdp by (pp, tp)).
GROUP_TABLES = {
    # Ranking basics, documented.
    ("spread", 8, 2, 1): {
        "dp": [[0, 1, 2, 3], [4, 5, 6, 7]],
        "mp": [[0, 4], [1, 5], [2, 6], [3, 7]],
        "pp": [[0, 4], [1, 5], [2, 6], [3, 7]],
        "tp": singles(0, 1, 2, 3, 4, 5, 6, 7),
        "rdp": [[0, 1, 2, 3], [4, 5, 6, 7]],
    },
    ("cluster", 8, 2, 1): {
        "dp": [[0, 2, 4, 6], [1, 3, 5, 7]],
        "mp": [[0, 1], [2, 3], [4, 5], [6, 7]],
        "pp": [[0, 1], [2, 3], [4, 5], [6, 7]],
        "tp": singles(0, 2, 4, 6, 1, 3, 5, 7),
        "rdp": [[0, 2, 4, 6], [1, 3, 5, 7]],
    },
    # Developer guide example: tp 2, pp 2, dp 4 on 8 GPUs ("DTP").
    ("DTP", 8, 2, 2): {
        "dp": [[0, 2, 4, 6], [1, 3, 5, 7]],
        "mp": [[0, 1, 2, 3], [4, 5, 6, 7]],
        "pp": [[0, 1], [2, 3], [4, 5], [6, 7]],
        "tp": [[0, 2], [4, 6], [1, 3], [5, 7]],
        "rdp": [[0, 4], [2, 6], [1, 5], [3, 7]],
    },
    # Pipeline degree 4, tensor degree 1.
    ("cluster", 8, 4, 1): {
        "dp": [[0, 4], [1, 5], [2, 6], [3, 7]],
        "mp": [[0, 1, 2, 3], [4, 5, 6, 7]],
        "pp": [[0, 1, 2, 3], [4, 5, 6, 7]],
        "tp": singles(0, 4, 1, 5, 2, 6, 3, 7),
        "rdp": [[0, 4], [1, 5], [2, 6], [3, 7]],
    },
    ("spread", 8, 4, 1): {
        "dp": [[0, 1], [2, 3], [4, 5], [6, 7]],
        "mp": [[0, 2, 4, 6], [1, 3, 5, 7]],
        "pp": [[0, 2, 4, 6], [1, 3, 5, 7]],
        "tp": singles(0, 1, 2, 3, 4, 5, 6, 7),
        "rdp": [[0, 1], [2, 3], [4, 5], [6, 7]],
    },
    # Pipeline degree 2, tensor degree 2, 16 ranks (rdp 4).
    ("cluster", 16, 2, 2): {
        "dp": [[0, 1, 4, 5, 8, 9, 12, 13], [2, 3, 6, 7, 10, 11, 14, 15]],
        "mp": [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11], [12, 13, 14, 15]],
        "pp": [[0, 2], [1, 3], [4, 6], [5, 7], [8, 10], [9, 11], [12, 14], [13, 15]],
        "tp": [[0, 1], [4, 5], [8, 9], [12, 13], [2, 3], [6, 7], [10, 11], [14, 15]],
        "rdp": [[0, 4, 8, 12], [1, 5, 9, 13], [2, 6, 10, 14], [3, 7, 11, 15]],
    },
    ("spread", 16, 2, 2): {
        "dp": [[0, 1, 2, 3, 8, 9, 10, 11], [4, 5, 6, 7, 12, 13, 14, 15]],
        "mp": [[0, 4, 8, 12], [1, 5, 9, 13], [2, 6, 10, 14], [3, 7, 11, 15]],
        "pp": [[0, 4], [1, 5], [2, 6], [3, 7], [8, 12], [9, 13], [10, 14], [11, 15]],
        "tp": [[0, 8], [1, 9], [2, 10], [3, 11], [4, 12], [5, 13], [6, 14], [7, 15]],
        "rdp": [[0, 1, 2, 3], [8, 9, 10, 11], [4, 5, 6, 7], [12, 13, 14, 15]],
    },
    # Pipeline degree 4, tensor degree 2, 16 ranks (rdp 2).
    ("cluster", 16, 4, 2): {
        "dp": [[0, 1, 8, 9], [2, 3, 10, 11], [4, 5, 12, 13], [6, 7, 14, 15]],
        "mp": [list(range(8)), list(range(8, 16))],
        "pp": [[0, 2, 4, 6], [1, 3, 5, 7], [8, 10, 12, 14], [9, 11, 13, 15]],
        "tp": [[0, 1], [8, 9], [2, 3], [10, 11], [4, 5], [12, 13], [6, 7], [14, 15]],
        "rdp": [[0, 8], [1, 9], [2, 10], [3, 11], [4, 12], [5, 13], [6, 14], [7, 15]],
    },
    ("spread", 16, 4, 2): {
        "dp": [[0, 1, 8, 9], [2, 3, 10, 11], [4, 5, 12, 13], [6, 7, 14, 15]],
        "mp": [list(range(0, 16, 2)), list(range(1, 16, 2))],
        "pp": [[0, 2, 4, 6], [1, 3, 5, 7], [8, 10, 12, 14], [9, 11, 13, 15]],
        "tp": [[0, 8], [1, 9], [2, 10], [3, 11], [4, 12], [5, 13], [6, 14], [7, 15]],
        "rdp": [[0, 1], [8, 9], [2, 3], [10, 11], [4, 5], [12, 13], [6, 7], [14, 15]],
    },
}


@pytest.mark.parametrize(("case", "expected"), GROUP_TABLES.items(), ids=str)
def test_every_group_matches_the_table(case, expected):
    topology = Topology(*case[1:], placement_strategy=case[0])
    assert groups_of(topology) == expected


@pytest.mark.parametrize("case", GROUP_TABLES, ids=str)
def test_a_ranks_group_ranks_are_its_places_in_its_groups(case):
    topology = Topology(*case[1:], placement_strategy=case[0])
    for rank in range(topology.world_size):
        pp, tp, rdp, dp, mp = topology.position(rank)
        assert topology.dp_group(pp).index(rank) == dp
        assert topology.mp_group(rdp).index(rank) == mp
        assert topology.pp_group(dp).index(rank) == pp
        assert topology.tp_group(pp, rdp).index(rank) == tp
        assert topology.rdp_group(pp, tp).index(rank) == rdp


@pytest.mark.parametrize(
    ("world", "pp", "tp", "sizes"),
    [(8, 2, 1, (2, 4, 4)), (8, 2, 2, (4, 4, 2)), (16, 4, 2, (8, 4, 2)), (16, 2, 2, (4, 8, 4))],
)
def test_sizes_follow_the_documented_relations(world, pp, tp, sizes):
    topology = Topology(world, pp, tp)
    assert (topology.mp_size, topology.dp_size, topology.rdp_size) == sizes
    assert topology.rdp_size * topology.tp_size == topology.dp_size == world // pp


def test_ranking_basics_ranks():
    spread = Topology(8, 2, placement_strategy="spread")
    assert [spread.mp_rank(rank) for rank in range(8)] == [0, 0, 0, 0, 1, 1, 1, 1]
    assert spread.dp_rank(6) == 2
    cluster = Topology(8, 2)
    assert [cluster.mp_rank(rank) for rank in range(8)] == [0, 1] * 4
    assert [cluster.dp_rank(rank) for rank in range(8)] == [0, 0, 1, 1, 2, 2, 3, 3]


@pytest.mark.parametrize(
    ("placement", "table"),  # rdp_rank, pp_rank, tp_rank of ranks 0-7
    [("DPT", "000 001 010 011 100 101 110 111"), ("PTD", "000 100 001 101 010 110 011 111")],
)
def test_the_documented_tensor_parallel_placement_tables(placement, table):
    topology = Topology(8, 2, 2, placement)
    rows = [(topology.rdp_rank(r), topology.pp_rank(r), topology.tp_rank(r)) for r in range(8)]
    assert rows == [tuple(int(digit) for digit in row) for row in table.split()]


def test_the_developer_guide_example_is_the_dtp_ordering():
    topology = Topology(8, 2, 2, "DTP")
    assert [topology.position(rank) for rank in range(8)] == [
        Position(0, 0, 0, 0, 0),
        Position(1, 0, 0, 0, 1),
        Position(0, 1, 0, 1, 2),
        Position(1, 1, 0, 1, 3),
        Position(0, 0, 1, 2, 0),
        Position(1, 0, 1, 2, 1),
        Position(0, 1, 1, 3, 2),
        Position(1, 1, 1, 3, 3),
    ]


@pytest.mark.parametrize(("name", "letters"), [("cluster", "DPT"), ("spread", "TPD")])
def test_named_strategies_are_letter_orders(name, letters):
    assert placement_order(name) == letters
    for world, pp, tp in [(8, 2, 2), (16, 4, 2), (8, 4, 1)]:
        named, spelled = Topology(world, pp, tp, name), Topology(world, pp, tp, letters)
        assert groups_of(named) == groups_of(spelled)


@pytest.mark.parametrize("order", ["".join(letters) for letters in permutations("DPT")])
def test_every_letter_order_tiles_the_world_and_puts_its_last_axis_on_neighbours(order):
    topology = Topology(24, 2, 3, order)
    for kind, groups in groups_of(topology).items():
        assert sorted(rank for group in groups for rank in group) == list(range(24)), kind
    innermost = {"D": topology.rdp_groups(), "P": topology.pp_groups(), "T": topology.tp_groups()}
    for group in innermost[order[-1]]:
        assert group == list(range(group[0], group[0] + len(group)))


def test_mp_group_is_the_pipelines_of_its_tensor_group_and_tp_is_inside_dp_and_mp():
    topology = Topology(16, 2, 2, "spread")
    for rank in range(16):
        position = topology.position(rank)
        tp_group = topology.tp_group(position.pp_rank, position.rdp_rank)
        mp_group = topology.mp_group(position.rdp_rank)
        pipelines = {r for member in tp_group for r in topology.pp_group(topology.dp_rank(member))}
        assert pipelines == set(mp_group)
        assert set(tp_group) <= set(topology.dp_group(position.pp_rank)) & set(mp_group)


def test_the_config_reaches_the_topology():
    config = parse_mp_parameters({"partitions": 2, "placement_strategy": "spread"})
    topology = Topology(8, config.pipeline_parallel_degree, placement_strategy="spread")
    assert topology.mp_groups() == [[0, 4], [1, 5], [2, 6], [3, 7]]


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ((6, 4, 1, "cluster"), "does not divide world_size=6"),
        ((8, 2, 1, "DDP"), "placement_strategy='DDP'"),
        ((8, 0, 1, "cluster"), "must all be at least 1"),
    ],
)
def test_impossible_topologies_are_refused(arguments, message):
    with pytest.raises(ValueError, match=message):
        Topology(*arguments)


def test_group_arguments_out_of_range_are_refused():
    with pytest.raises(ValueError, match=r"pp_rank=2 is out of range: it must be in \[0, 2\)"):
        Topology(8, 2).dp_group(2)


# --- four real ranks ----------------------------------------------------------------------

WORKER = textwrap.dedent(
    """
    import json, sys
    import torch
    import torch.distributed as dist
    import torch.nn.functional as F
    from smdist.runtime.smp import api as smp

    smp.init({"partitions": 2, "ddp": True})
    rank = smp.rank()
    KINDS = ("dp", "rdp", "mp", "pp", "tp")
    report = {
        "sizes": [smp.size(), smp.mp_size(), smp.dp_size(), smp.rdp_size(), smp.pp_size(),
                  smp.tp_size()],
        "ranks": [smp.pp_rank(), smp.tp_rank(), smp.rdp_rank(), smp.dp_rank(), smp.mp_rank()],
        "groups": {kind: getattr(smp, f"get_{kind}_group")() for kind in KINDS},
        "process_groups": {
            kind: dist.get_process_group_ranks(getattr(smp, f"get_{kind}_process_group")())
            for kind in KINDS
        },
        "dp_allgather": smp.allgather(rank, smp.DP_GROUP),
    }
    # Point to point inside the model-parallel group: stage 0 sends to stage 1.
    if smp.mp_rank() == 0:
        smp.broadcast(f"from {rank}", smp.MP_GROUP)
    else:
        report["received"] = smp.recv_from(0, smp.RankType.MP_RANK)
    smp.barrier(smp.PP_GROUP)

    def batch(owner):
        generator = torch.Generator().manual_seed(100 + owner)
        return torch.randn(4, 3, generator=generator), torch.randn(4, 1, generator=generator)

    def local_gradients(owner):
        torch.manual_seed(0)
        model = torch.nn.Linear(3, 1)
        inputs, targets = batch(owner)
        F.mse_loss(model(inputs), targets).backward()
        return [parameter.grad for parameter in model.parameters()]

    def mean_gradients(owners):
        grads = [local_gradients(owner) for owner in owners]
        return [sum(parts) / len(owners) for parts in zip(*grads)]

    torch.manual_seed(0 if rank == 0 else 1000 + rank)  # rank 0's weights must win
    model = smp.DistributedModel(torch.nn.Linear(3, 1))
    optimizer = smp.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.5))

    @smp.step
    def train_step(model, inputs, targets):
        loss = F.mse_loss(model(inputs), targets)
        model.backward(loss)
        return loss

    train_step(model, *batch(rank))  # every rank its own data, so groups can differ
    grads = [parameter.grad for parameter in model.parameters()]
    close = lambda ours, theirs: all(torch.allclose(a, b, atol=1e-6) for a, b in zip(ours, theirs))
    report["grad_is_dp_mean"] = close(grads, mean_gradients(smp.get_dp_group()))
    report["grad_is_world_mean"] = close(grads, mean_gradients(range(smp.size())))
    optimizer.step()
    report["weights"] = [parameter.detach().flatten().tolist() for parameter in model.parameters()]
    # dp_rank() == 0 on both stages of the first replica; a full file still has one writer.
    if smp.dp_rank() == 0:
        smp.save({"writer": rank}, sys.argv[1] + "/full.pt", partial=False)
    smp.barrier()
    report["full_file_writer"] = smp.load(sys.argv[1] + "/full.pt", partial=False)["writer"]

    smp.init({"partitions": 2, "ddp": True, "placement_strategy": "spread"})
    report["spread"] = {kind: getattr(smp, f"get_{kind}_group")() for kind in KINDS}
    report["spread_ranks"] = [smp.pp_rank(), smp.dp_rank(), smp.mp_rank()]
    with open(sys.argv[1] + f"/rank{rank}.json", "w") as handle:
        json.dump(report, handle)
    smp.state.model = None
    dist.destroy_process_group()
    """
)


@pytest.mark.torch
def test_four_ranks_with_two_stages_average_within_their_data_parallel_group(tmp_path):
    pytest.importorskip("torch")
    seen = run_ranks(WORKER, tmp_path)
    # cluster ("DPT"), rdp 2 x pp 2: rank = 2 * rdp_rank + pp_rank.
    dp_groups, mp_groups = {0: [0, 2], 1: [1, 3]}, {0: [0, 1], 1: [2, 3]}
    for rank, report in seen.items():
        pp, rdp = rank % 2, rank // 2
        assert report["sizes"] == [4, 2, 2, 2, 2, 1]
        assert report["ranks"] == [pp, 0, rdp, rdp, pp]
        expected = {"dp": dp_groups[pp], "rdp": dp_groups[pp], "mp": mp_groups[rdp]}
        expected |= {"pp": mp_groups[rdp], "tp": [rank]}
        assert report["groups"] == expected
        assert report["process_groups"] == expected  # the torch groups hold the same ranks
        assert report["dp_allgather"] == dp_groups[pp]
        assert report["grad_is_dp_mean"] and not report["grad_is_world_mean"]
        # spread ("TPD"): rank = 2 * pp_rank + rdp_rank.
        spread_pp, spread_rdp = rank // 2, rank % 2
        assert report["spread"]["dp"] == [2 * spread_pp, 2 * spread_pp + 1]
        assert report["spread"]["mp"] == [spread_rdp, spread_rdp + 2]
        assert report["spread_ranks"] == [spread_pp, spread_rdp, spread_pp]
    assert seen[1]["received"] == "from 0" and seen[3]["received"] == "from 2"
    assert {report["full_file_writer"] for report in seen.values()} == {0}
    weights = {rank: report["weights"] for rank, report in seen.items()}
    assert weights[0] == weights[2] and weights[1] == weights[3]  # one dp group, one average
    assert weights[0] != weights[1]  # different data, different groups
