"""``--instance-type`` on the local backend: it picks the instance preference the hosts
emulate (planned as SageMaker would run the job on it), or, without preferences, a type
emulated instead of ``cluster.instance_type``; what the job cannot take is refused naming
the option and what is valid."""

from __future__ import annotations

from typing import Any

import pytest

from smdist.backends.local.preparation.instance_choice import emulated_plan
from smdist.errors import SpecError
from smdist.planning.plan import Plan, plan

# Types with one GPU each: every preference starts the same processes per host.
PREFERENCES = [
    {"instance_type": "ml.g5.xlarge", "instance_count": 2},
    {"instance_type": "ml.g4dn.xlarge", "instance_count": 1},
    {"instance_type": "ml.p3.2xlarge", "instance_count": 3},
]


def planned(**cluster: Any) -> Plan:
    return plan({"name": "pick", "strategy": {"kind": "pytorch_ddp"}, "cluster": cluster})


def test_without_the_option_the_plan_is_the_jobs():
    original = planned(instance_preferences=PREFERENCES)
    assert emulated_plan(original, None) == (original, None)
    assert emulated_plan(original, "ml.g5.xlarge") == (original, None)  # the first already


def test_a_later_preference_is_planned_as_sagemaker_would_run_it():
    original = planned(instance_preferences=PREFERENCES)
    chosen, note = emulated_plan(original, "ml.p3.2xlarge")
    cluster = chosen.spec.cluster
    assert (cluster.instance_type, cluster.instance_count) == ("ml.p3.2xlarge", 3)
    assert chosen.topology.world_size == 3  # its count of hosts, one process each
    assert [p.instance_type for p in cluster.instance_preferences] == [
        "ml.p3.2xlarge", "ml.g5.xlarge", "ml.g4dn.xlarge",
    ]  # fmt: skip
    assert note is not None and "cluster.instance_preferences[2]" in note
    assert original.spec.cluster.instance_type == "ml.g5.xlarge"  # the job itself unchanged


def test_a_type_that_is_no_preference_is_refused_listing_the_preferences():
    with pytest.raises(SpecError) as error:
        emulated_plan(planned(instance_preferences=PREFERENCES), "ml.p4d.24xlarge")
    problem = error.value.problems[0]
    assert problem.path == "options.instance_type (--instance-type)"
    assert problem.value == "ml.p4d.24xlarge"
    assert problem.valid == (
        "ml.g5.xlarge (instance_preferences[0]), ml.g4dn.xlarge (instance_preferences[1]), "
        "ml.p3.2xlarge (instance_preferences[2])"
    )


def test_without_preferences_the_type_is_emulated_instead_of_the_clusters():
    chosen, note = emulated_plan(
        planned(instance_type="ml.c5.xlarge", instance_count=2), "ml.g5.12xlarge"
    )
    cluster = chosen.spec.cluster
    assert (cluster.instance_type, cluster.instance_count) == ("ml.g5.12xlarge", 2)
    assert note is not None and "instead of the job's cluster.instance_type ml.c5.xlarge" in note


def test_an_unknown_type_is_refused_naming_the_option():
    with pytest.raises(SpecError) as error:
        emulated_plan(planned(instance_type="ml.c5.xlarge"), "ml.nope.large")
    problem = error.value.problems[0]
    assert problem.path.startswith("options.instance_type")
    assert "smdist instances" in (problem.valid or "")


def test_instance_groups_state_their_own_types_and_refuse_the_option():
    groups = [
        {"name": "train", "instance_type": "ml.g5.xlarge", "instance_count": 2},
        {"name": "data", "instance_type": "ml.c5.xlarge", "instance_count": 1},
    ]
    with pytest.raises(SpecError, match="instance_groups"):
        emulated_plan(planned(instance_groups=groups), "ml.c5.xlarge")
