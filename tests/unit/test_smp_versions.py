"""SMP v1 and v2 are two models under one ``kind: sdmp``: every setting reaches the job or is
refused, naming the version it belongs to; none is dropped."""

from __future__ import annotations

import json

import pytest

import smdist
from smdist import Cluster, JobSpec
from smdist.errors import SpecError
from smdist.spec.job import json_schema
from smdist.strategies import SDMP, ModelParallel, SMPv1, SMPv2

V1_ONLY = sorted(set(SMPv1.model_fields) - set(SMPv2.model_fields))
V2_ONLY = sorted(set(SMPv2.model_fields) - set(SMPv1.model_fields))

# A valid value other than the default, for every setting of each version.
V1_VALUES = {
    "collective_timeout": 600,
    "framework_name": "tensorflow",
    "processes_per_host": 4,
    "custom_mpi_options": "-verbose",
    "partitions": 4,
    "microbatches": 2,
    "pipeline": "simple",
    "optimize": "memory",
    "placement_strategy": "spread",
    "auto_partition": False,
    "default_partition": 1,
    "ddp": True,
    "active_microbatches": 3,
    "fp16": True,
    "bf16": False,
    "shard_optimizer_state": True,
    "prescaled_batch": True,
    "delayed_parameter_initialization": True,
    "offload_activations": True,
    "activation_loading_horizon": 2,
    "sharded_data_parallel_degree": 2,
    "horovod": True,
    "tensor_parallel_degree": 2,
}
V2_VALUES = {
    "collective_timeout": 600,
    "framework_name": "tensorflow",  # refused: v2 is PyTorch only
    "processes_per_host": 4,  # local runs only (a warning): SageMaker runs one per GPU
    "tensor_parallel_degree": 2,
    "activation_loading_horizon": 2,
    "hybrid_shard_degree": 2,
    "sm_activation_offloading": True,
    "expert_parallel_degree": 2,
    "random_seed": 7,
}
# Settings that are not SMP library parameters: they go to mpirun, the estimator or the env.
NOT_MP_PARAMETERS = {"collective_timeout", "framework_name", "processes_per_host"}
NOT_MP_PARAMETERS |= {"custom_mpi_options"}


def job(strategy, instance_type: str) -> JobSpec:
    return JobSpec(
        name="smp",
        strategy=strategy,
        cluster=Cluster(instance_type=instance_type, instance_count=2),
        region="us-west-2",
    )


def v1(**settings) -> JobSpec:
    return job(SMPv1(**{"partitions": 2, **settings}), "ml.p3.16xlarge")


def v2(**settings) -> JobSpec:
    return job(SMPv2(**settings), "ml.p4d.24xlarge")


def test_sdmp_builds_the_model_of_its_version():
    assert type(SDMP()) is SMPv1
    assert type(SDMP(version=1, partitions=2)) is SMPv1
    two = SDMP(version=2, hybrid_shard_degree=8, framework="pytorch")
    assert type(two) is SMPv2 and two.hybrid_shard_degree == 8
    assert all(isinstance(s, ModelParallel) for s in (SDMP(), two))


def test_a_job_file_without_a_version_means_version_1():
    spec = JobSpec.from_dict(
        {
            "name": "smp",
            "strategy": {"kind": "sdmp", "partitions": 2},
            "cluster": {"instance_type": "ml.p3.16xlarge"},
        }
    )
    assert type(spec.strategy) is SMPv1


@pytest.mark.parametrize("name", V1_ONLY)
def test_a_v1_setting_on_v2_is_refused_naming_its_version(name):
    expected = f"strategy.{name}: is an SMP v1 setting; remove it or set version: 1"
    key = SMPv1.model_fields[name].alias or name
    # Even the library's default value: the user wrote it, so it must not be dropped.
    value = SMPv1.model_fields[name].default
    value = V1_VALUES[name] if value is None else value
    with pytest.raises(SpecError) as caught:
        SDMP(version=2, **{key: value})
    assert str(caught.value) == f"invalid job spec: {expected}"
    with pytest.raises(SpecError) as caught:
        JobSpec.from_dict(
            {
                "name": "smp",
                "strategy": {"kind": "sdmp", "version": 2, key: value},
                "cluster": {"instance_type": "ml.p4d.24xlarge"},
            }
        )
    assert [str(p) for p in caught.value.problems] == [expected]


@pytest.mark.parametrize("name", V2_ONLY)
def test_a_v2_setting_on_v1_is_refused_naming_its_version(name):
    with pytest.raises(SpecError) as caught:
        SDMP(version=1, partitions=2, **{name: V2_VALUES[name]})
    assert [str(p) for p in caught.value.problems] == [
        f"strategy.{name}: is an SMP v2 setting; remove it or set version: 2"
    ]


def test_random_seed_is_a_v2_setting_smp_v1_has_no_such_parameter():
    assert "random_seed" in V2_ONLY
    with pytest.raises(SpecError, match="random_seed: is an SMP v2 setting"):
        SDMP(partitions=2, random_seed=1)


def test_several_settings_of_the_other_version_are_named_together():
    with pytest.raises(SpecError) as caught:
        SDMP(version=2, microbatches=4, fp16=True, pipeline="simple")
    assert str(caught.value.problems[0]) == (
        "strategy.microbatches: is an SMP v1 setting (so are fp16, pipeline); remove them or "
        "set version: 1"
    )


def test_an_unknown_version_is_named():
    with pytest.raises(SpecError) as caught:
        SDMP(version=3)
    (problem,) = caught.value.problems
    assert problem.path == "strategy.version" and "got 3" in problem.message
    assert "1" in problem.message and "2" in problem.message


def test_a_typo_still_suggests_the_setting_of_the_right_version():
    with pytest.raises(SpecError, match="did you mean 'hybrid_shard_degree'"):
        SDMP(version=2, hybrid_shard_degre=2)


def test_every_setting_has_a_test_value():
    assert set(V1_VALUES) == set(SMPv1.model_fields) - {"kind", "version"}
    assert set(V2_VALUES) == set(SMPv2.model_fields) - {"kind", "version"}


@pytest.mark.parametrize(
    ("make", "name", "value"),
    [(v1, n, v) for n, v in V1_VALUES.items()] + [(v2, n, v) for n, v in V2_VALUES.items()],
    ids=[f"v1-{n}" for n in V1_VALUES] + [f"v2-{n}" for n in V2_VALUES],
)
def test_no_setting_is_dropped(make, name, value):
    """Each setting either reaches mp_parameters (as the library spells it) or changes what
    the job runs with (mpirun, estimator, environment), or the job is refused."""
    baseline = smdist.plan(make()).to_dict()
    key = (SMPv1 if make is v1 else SMPv2).model_fields[name].alias or name
    try:
        plan = smdist.plan(make(**{key: value}))
    except SpecError as refused:
        assert any(p.path == f"strategy.{key}" for p in refused.problems), refused
        assert name in {"framework_name", "processes_per_host"} and make is v2
        return
    parameters = plan.distribution["smdistributed"]["modelparallel"]["parameters"]
    assert json.loads(plan.wire_hyperparameters["mp_parameters"]) == parameters
    if name in NOT_MP_PARAMETERS:
        assert name not in parameters
        assert plan.to_dict() != baseline
    else:
        assert parameters[name] == value


def test_v1_renders_its_fixed_parameters_even_when_left_at_their_defaults():
    parameters = smdist.plan(v1()).distribution["smdistributed"]["modelparallel"]["parameters"]
    assert parameters == {
        "partitions": 2,
        "microbatches": 1,
        "pipeline": "interleaved",
        "optimize": "speed",
        "placement_strategy": "cluster",
        "auto_partition": True,
        "ddp": False,
    }


def test_the_schema_offers_both_versions_under_one_kind():
    text = json.dumps(json_schema())
    for name in ("microbatches", "hybrid_shard_degree", "random_seed", "sm_activation_offloading"):
        assert f'"{name}"' in text


def test_the_schema_tells_the_versions_apart_as_loading_does():
    jsonschema = pytest.importorskip("jsonschema")
    schema = json_schema()
    base = {"name": "smp", "cluster": {"instance_type": "ml.p4d.24xlarge"}}
    for strategy in (
        {"kind": "sdmp"},  # no version: version 1, as when loading
        {"kind": "sdmp", "tensor_parallel_degree": 2},
        {"kind": "sdmp", "version": 2, "hybrid_shard_degree": 2},
    ):
        jsonschema.validate({**base, "strategy": strategy}, schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(
            {**base, "strategy": {"kind": "sdmp", "version": 2, "microbatches": 2}}, schema
        )
