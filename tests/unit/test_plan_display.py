"""A Plan shows itself: notebook HTML with a topology picture, and a readable summary."""

from __future__ import annotations

import pytest

import smdist
import smdist.catalog
from smdist import Cluster, JobSpec
from smdist.planning.display import summary_rows
from smdist.strategies import SDMP, Horovod


def test_notebook_html_has_a_table_and_one_box_per_rank():
    plan = smdist.plan(smdist.load("examples/smp_v1.yaml"))
    html = plan._repr_html_()
    assert "<table>" in html and "<svg" in html
    assert html.count("<rect") == plan.world_size
    assert "model-parallel group" in html


def test_topology_picture_colours_ranks_by_their_group():
    plan = smdist.plan(smdist.load("examples/smp_v1.yaml"))
    html = plan._repr_html_()
    # ranks 0 and 1 share a replica (cluster placement), rank 2 starts the next one
    fill = {}
    for chunk in html.split("<rect")[1:]:
        rank = int(chunk.split("<title>rank ")[1].split(" ")[0])
        fill[rank] = chunk.split('fill="')[1].split('"')[0]
    assert fill[0] == fill[1] != fill[2]


def test_summary_names_strategy_cluster_world_size_and_cost():
    spec = JobSpec(
        name="s",
        strategy=Horovod(processes_per_host=4),
        cluster=Cluster(instance_type="ml.g5.12xlarge", instance_count=3),
    )
    rows = dict(summary_rows(smdist.plan(spec)))
    assert rows["cluster"].startswith("3 x ml.g5.12xlarge")
    assert "world size 12" in rows["processes"]
    assert "$" in rows["cost"] or "unknown" in rows["cost"]


def test_large_jobs_draw_a_bounded_picture():
    spec = JobSpec(
        name="big",
        strategy=SDMP(version=2),
        cluster=Cluster(instance_type="ml.p4d.24xlarge", instance_count=64),
    )
    html = smdist.plan(spec)._repr_html_()
    assert html.count("<rect") == 16 * 8
    assert "48 more hosts" in html


def test_instance_types_botocore_knows_are_accepted_with_a_warning():
    pytest.importorskip("botocore")
    from smdist.spec.instance_types import botocore_training_instance_types

    extra = sorted(
        t for t in botocore_training_instance_types() if smdist.catalog.instance(t) is None
    )
    assert extra, "botocore lists no instance type beyond the catalogue"
    spec = JobSpec(name="x", strategy=Horovod(), cluster=Cluster(instance_type=extra[0]))
    plan = smdist.plan(spec)
    assert any("no facts" in str(w) for w in plan.warnings)
    assert plan.topology.processes_per_host == 1
