"""Topology: where ranks live and which groups they form."""

from __future__ import annotations

import smdist
from smdist import Cluster, JobSpec
from smdist.spec.topology import data_parallel, model_parallel, sharded
from smdist.strategies import SDMP, Horovod


def test_ranks_fill_hosts_in_order():
    topo = data_parallel(2, 4)
    assert [(r.rank, r.host, r.local_rank) for r in topo.ranks[3:6]] == [
        (3, "algo-1", 3),
        (4, "algo-2", 0),
        (5, "algo-2", 1),
    ]
    assert topo.groups == {"data_parallel": [list(range(8))]}


def test_cluster_placement_keeps_a_replica_on_adjacent_ranks():
    topo = model_parallel(2, 8, pipeline_degree=2, tensor_degree=1, order="DPT")
    assert topo.groups["model_parallel"][:2] == [[0, 1], [2, 3]]
    assert topo.groups["data_parallel"][0] == [0, 2, 4, 6, 8, 10, 12, 14]


def test_spread_placement_interleaves_replicas():
    topo = model_parallel(2, 8, pipeline_degree=2, tensor_degree=1, order="TPD")
    assert topo.groups["model_parallel"][0] == [0, 8]
    assert topo.groups["data_parallel"][0] == list(range(8))


def test_tensor_and_pipeline_groups_partition_the_world():
    topo = model_parallel(1, 8, pipeline_degree=2, tensor_degree=2, order="DPT")
    for kind in ("model_parallel", "data_parallel", "pipeline", "tensor"):
        members = sorted(r for group in topo.groups[kind] for r in group)
        assert members == list(range(8)), kind
    assert topo.groups["tensor"][0] == [0, 1]
    assert topo.groups["pipeline"][0] == [0, 2]


def test_hybrid_sharding_groups_shard_within_and_replicate_across():
    topo = sharded(2, 8, tensor_degree=1, shard_degree=8)
    assert topo.groups["shard"] == [list(range(8)), list(range(8, 16))]


def test_plan_of_smp_v1_example_has_eight_replicas_of_two_stages():
    spec = smdist.load("examples/smp_v1.yaml")
    plan = smdist.plan(spec)
    assert plan.world_size == 16
    assert len(plan.topology.groups["model_parallel"]) == 8
    assert all(len(g) == 2 for g in plan.topology.groups["model_parallel"])


def test_plan_of_a_256_host_job_lists_every_rank():
    spec = JobSpec(
        name="big",
        strategy=Horovod(),
        cluster=Cluster(instance_type="ml.p4d.24xlarge", instance_count=256),
    )
    plan = smdist.plan(spec)
    assert plan.world_size == 2048
    assert plan.topology.ranks[-1].host == "algo-256"


def test_smp_v2_plan_has_shard_groups():
    spec = JobSpec(
        name="v2",
        strategy=SDMP(version=2, hybrid_shard_degree=4),
        cluster=Cluster(instance_type="ml.p4d.24xlarge", instance_count=2),
    )
    plan = smdist.plan(spec)
    assert len(plan.topology.groups["shard"]) == 4
