"""The SMP v2 stand-in's ``tsm.state`` and FSDP sharding, as ``torch.sagemaker`` sets them.

What AWS documents (https://docs.aws.amazon.com/sagemaker/latest/dg/distributed-model-parallel-v2-reference.html):

- ``hybrid_shard_degree``: 0 falls back to native PyTorch FSDP (FULL_SHARD over every GPU);
  1 falls back to native NO_SHARD; from 2 to the world size, sharding happens across that many
  GPUs, and FSDP's strategy becomes HYBRID_SHARD unless the script set _HYBRID_SHARD_ZERO2;
- ``torch.sagemaker.state`` holds ``hybrid_shard_degree``, ``rank``, ``world_size``,
  ``tensor_parallel_degree``, ``tp_size`` (its alias), ``tp_rank``, ``tp_process_group`` and
  ``rep_rank_process_group`` (the devices with the same replication rank); the two groups are
  None when SMP falls back to native PyTorch.

AWS's SMP v2 example scripts (amazon-sagemaker-examples, sm-distributed_model_parallel_v2/
shared-scripts) also read ``tsm.state.context_parallel_degree``, ``cp_size``, ``cp_rank``,
``expert_parallel_degree``, ``ep_rank``, ``world_process_group``, ``sm_activation_offloading``,
``state.ranker.get_rep_rank(global_rank)`` (0 for the ranks that write a sharded checkpoint)
and ``state.ranker.get_rep_groups()``.

Example: 8 ranks with ``hybrid_shard_degree`` 2 hold 4 copies of the weights; shard groups
[0, 1] [2, 3] [4, 5] [6, 7]; replication groups [0, 2, 4, 6] and [1, 3, 5, 7]; rank 5 has
replication rank 2.
"""

from __future__ import annotations

import pytest
from gloo_ranks import run_ranks

from smdist.runtime.smp_v2 import (
    HybridShardLayout,
    SMPv2ConfigError,
    mesh_shape,
    parse_v2_config,
    state_for,
)


@pytest.mark.parametrize(
    ("degree", "shard_groups", "rep_groups", "active"),
    [
        (2, [[0, 1], [2, 3], [4, 5], [6, 7]], [[0, 2, 4, 6], [1, 3, 5, 7]], True),
        (4, [[0, 1, 2, 3], [4, 5, 6, 7]], [[0, 4], [1, 5], [2, 6], [3, 7]], True),
        (8, [list(range(8))], [[rank] for rank in range(8)], True),
        (0, [list(range(8))], [[rank] for rank in range(8)], False),  # native FULL_SHARD
        (1, [[rank] for rank in range(8)], [list(range(8))], False),  # native NO_SHARD
    ],
)
def test_shard_and_replication_groups(degree, shard_groups, rep_groups, active):
    layout = HybridShardLayout(degree, 8)
    assert layout.shard_groups() == shard_groups
    assert layout.get_rep_groups() == rep_groups
    assert layout.smp_active is active
    for rank in range(8):
        assert rank in shard_groups[layout.get_rep_rank(rank)]
        assert rank in rep_groups[layout.get_shard_rank(rank)]


def test_the_documented_example_rank():
    layout = HybridShardLayout(2, 8)
    assert (layout.get_rep_rank(5), layout.get_shard_rank(5), layout.replicas) == (2, 1, 4)


@pytest.mark.parametrize(("degree", "world"), [(1, 4), (2, 4), (2, 8), (4, 8), (0, 8), (8, 8)])
def test_the_fsdp2_mesh_rows_are_the_shard_groups(degree, world):
    shape = mesh_shape(degree, world)
    rows = [list(range(start, start + shape[-1])) for start in range(0, world, shape[-1])]
    assert rows == HybridShardLayout(degree, world).shard_groups()


def test_the_state_reports_the_degrees_and_this_ranks_ranks():
    config = parse_v2_config({"hybrid_shard_degree": 2, "sm_activation_offloading": False})
    state = state_for(config, rank=5, world_size=8)
    assert (state.hybrid_shard_degree, state.rank, state.world_size) == (2, 5, 8)
    assert (state.tensor_parallel_degree, state.tp_size, state.tp_rank) == (1, 1, 0)
    assert (state.context_parallel_degree, state.cp_size, state.cp_rank) == (1, 1, 0)
    assert (state.expert_parallel_degree, state.ep_size, state.ep_rank) == (1, 1, 0)
    assert state.sm_activation_offloading is False
    assert state.ranker == HybridShardLayout(2, 8) and state.ranker.get_rep_rank(5) == 2
    assert state.config is config
    # Process groups come from init(); scripts may also reset degrees, as AWS's examples do.
    assert state.tp_process_group is None and state.rep_rank_process_group is None
    state.tensor_parallel_degree = 1


def test_activation_offloading_defaults_on_and_must_be_a_boolean():
    assert parse_v2_config({}).sm_activation_offloading is True
    with pytest.raises(SMPv2ConfigError, match="sm_activation_offloading='yes'"):
        parse_v2_config({"sm_activation_offloading": "yes"})


# --- four real ranks ----------------------------------------------------------------------

WORKER = """
import json, sys
import torch
import torch.distributed as dist
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP, ShardingStrategy
from torch.distributed.fsdp.wrap import ModuleWrapPolicy
from smdist.runtime.smp_v2 import shard_model, stand_in

ranks = dist.get_process_group_ranks
dist.init_process_group("gloo")
tsm = stand_in()
tsm.init({"hybrid_shard_degree": 2})
state, rank = tsm.state, dist.get_rank()
report = {
    "state": [state.hybrid_shard_degree, state.rank, state.world_size, state.tp_size,
              state.tp_rank, state.ep_size, state.ep_rank, state.cp_size, state.cp_rank],
    "rep_rank": state.ranker.get_rep_rank(rank),
    "rep_rank_process_group": ranks(state.rep_rank_process_group),
    "tp_process_group": ranks(state.tp_process_group),
    "world_process_group": ranks(state.world_process_group),
}

# A SageMaker script's FSDP call: no group, no device; SMP's configuration decides.
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
fsdp = FSDP(model, use_orig_params=True, auto_wrap_policy=ModuleWrapPolicy({torch.nn.Linear}))
report["strategy"] = fsdp.sharding_strategy.name
report["shard_group"] = ranks(fsdp.process_group)
report["replicate_group"] = ranks(fsdp._inter_node_pg)
report["children"] = sorted(
    {(child.sharding_strategy.name, tuple(ranks(child.process_group)))
     for child in fsdp.modules() if isinstance(child, FSDP) and child is not fsdp}
)
optimizer = torch.optim.SGD(fsdp.parameters(), lr=0.1)
inputs = torch.randn(4, 8, generator=torch.Generator().manual_seed(rank))
(fsdp(inputs) - 1).pow(2).mean().backward()
optimizer.step()
with FSDP.summon_full_params(fsdp):
    report["weights"] = [p.detach().flatten().tolist() for p in fsdp.parameters()]

zero2 = FSDP(torch.nn.Linear(4, 4), sharding_strategy=ShardingStrategy._HYBRID_SHARD_ZERO2)
report["zero2"] = [zero2.sharding_strategy.name, ranks(zero2.process_group)]
explicit = FSDP(torch.nn.Linear(4, 4), process_group=dist.group.WORLD)
report["explicit"] = [explicit.sharding_strategy.name, ranks(explicit.process_group)]
fsdp2 = shard_model(torch.nn.Linear(4, 4), 2)
report["fsdp2_shard_group"] = ranks(fsdp2.weight.device_mesh.get_group("shard"))

tsm.init({"hybrid_shard_degree": 0})  # native fallback: FULL_SHARD over every rank
native = FSDP(torch.nn.Linear(4, 4))
report["native"] = [native.sharding_strategy.name, ranks(native.process_group)]
report["native_groups"] = [tsm.state.rep_rank_process_group, tsm.state.tp_process_group]
with open(sys.argv[1] + f"/rank{rank}.json", "w") as handle:
    json.dump(report, handle)
dist.destroy_process_group()
"""


@pytest.mark.torch
def test_four_ranks_shard_in_pairs_and_keep_equal_replicas(tmp_path):
    pytest.importorskip("torch")
    seen = run_ranks(WORKER, tmp_path)
    for rank, report in seen.items():
        shard_group = [0, 1] if rank < 2 else [2, 3]
        assert report["state"] == [2, rank, 4, 1, 0, 1, 0, 1, 0]
        assert report["rep_rank"] == rank // 2
        assert report["rep_rank_process_group"] == shard_group
        assert report["tp_process_group"] == [rank]
        assert report["world_process_group"] == [0, 1, 2, 3]
        assert report["strategy"] == "HYBRID_SHARD"
        assert report["shard_group"] == shard_group
        assert report["replicate_group"] == [rank % 2, rank % 2 + 2]
        assert report["children"] == [["HYBRID_SHARD", shard_group]]
        assert report["zero2"] == ["_HYBRID_SHARD_ZERO2", shard_group]
        assert report["explicit"] == ["FULL_SHARD", [0, 1, 2, 3]]
        assert report["fsdp2_shard_group"] == shard_group
        assert report["native"] == ["FULL_SHARD", [0, 1, 2, 3]]
        assert report["native_groups"] == [None, None]
    assert len({str(report["weights"]) for report in seen.values()}) == 1
