"""The Python API takes typed objects, dicts, or a mix, wherever a JobSpec is built.

One case per strategy class as a notebook writes it, through ``smdist.plan``, ``JobSpec(...)``,
``JobSpec.from_dict``, ``fit``'s keyword fields, ``model_copy`` and a YAML round trip; each must
give the same plan as the job written as plain dicts.
"""

from __future__ import annotations

import pytest
import yaml

import smdist
from smdist import Checkpoint, Cluster, Code, JobSpec
from smdist.checks.reading import as_job_spec
from smdist.errors import SpecError
from smdist.fitting import _spec_from
from smdist.spec.job import Input
from smdist.strategies import MWMS, SDDP, SDMP, Horovod, PyTorchDDP, SMPv1, SMPv2

# (id, typed strategy, the same strategy as a job file writes it, instance type, framework version)
CASES = [
    (
        "mwms",
        MWMS(communication="ring"),
        {"kind": "mwms", "communication": "ring"},
        "ml.g5.xlarge",
        "2.14",
    ),
    (
        "horovod-tensorflow",
        Horovod(framework="tensorflow", processes_per_host=1),
        {"kind": "horovod", "framework": "tensorflow", "processes_per_host": 1},
        "ml.g5.xlarge",
        "2.12.0",
    ),
    ("ddp-torchrun", PyTorchDDP(), {"kind": "pytorch_ddp"}, "ml.g5.xlarge", "2.3.0"),
    (
        "ddp-torch_distributed",
        PyTorchDDP(launcher="torch_distributed"),
        {"kind": "pytorch_ddp", "launcher": "torch_distributed"},
        "ml.g5.xlarge",
        "2.3.0",
    ),
    ("sddp", SDDP(), {"kind": "sddp"}, "ml.p4d.24xlarge", "2.2.0"),
    (
        "smp-v1",
        SDMP(version=1, partitions=2, microbatches=4, ddp=True),
        {"kind": "sdmp", "version": 1, "partitions": 2, "microbatches": 4, "ddp": True},
        "ml.p3.16xlarge",
        "1.13.1",
    ),
    (
        "smp-v2",
        SDMP(version=2, hybrid_shard_degree=4),
        {"kind": "sdmp", "version": 2, "hybrid_shard_degree": 4},
        "ml.p4d.24xlarge",
        "2.3.1",
    ),
]
IDS = [case[0] for case in CASES]
PARAMS = [case[1:] for case in CASES]


def fields(strategy, instance_type: str, version: str) -> dict:
    """A job's fields the way a notebook writes them: every part a typed object."""
    return {
        "name": "typed",
        "strategy": strategy,
        "cluster": Cluster(instance_type=instance_type, instance_count=2),
        "code": Code(framework_version=version),
        "inputs": {"train": Input(uri="s3://bucket-a/train"), "test": "s3://bucket-a/test"},
        "checkpoint": Checkpoint(s3_uri="s3://bucket-a/checkpoints"),
        "region": "us-west-2",
    }


def as_dicts(data: dict, plain_strategy: dict) -> dict:
    """The same job written as plain dicts, as a job file is."""
    return {
        **data,
        "strategy": plain_strategy,
        "cluster": data["cluster"].model_dump(exclude_unset=True),
        "code": {"framework_version": data["code"].framework_version},
        "inputs": {"train": "s3://bucket-a/train", "test": {"uri": "s3://bucket-a/test"}},
        "checkpoint": {"s3_uri": "s3://bucket-a/checkpoints"},
    }


def same_plan(a, b) -> None:
    assert a.to_dict() == b.to_dict()
    assert a.spec == b.spec


@pytest.mark.parametrize(("strategy", "plain", "instance_type", "version"), PARAMS, ids=IDS)
def test_typed_objects_plan_like_the_same_job_written_as_dicts(
    strategy, plain, instance_type, version
):
    data = fields(strategy, instance_type, version)
    reference = smdist.plan(JobSpec.from_dict(as_dicts(data, plain)))
    assert reference.spec.strategy == strategy
    same_plan(smdist.plan(JobSpec(**data)), reference)
    same_plan(smdist.plan(JobSpec.from_dict(data)), reference)
    same_plan(smdist.plan(data), reference)  # plan takes the fields themselves too
    same_plan(smdist.plan(_spec_from(None, data)), reference)  # what fit(**fields) runs
    # A mix: typed strategy with a dict cluster, and the other way round.
    mixed = {**data, "cluster": as_dicts(data, plain)["cluster"]}
    same_plan(smdist.plan(JobSpec(**mixed)), reference)
    same_plan(smdist.plan(JobSpec(**{**data, "strategy": plain})), reference)


@pytest.mark.parametrize(("strategy", "plain", "instance_type", "version"), PARAMS, ids=IDS)
def test_a_typed_job_survives_yaml_and_partial_dumps(strategy, plain, instance_type, version):
    spec = JobSpec(**fields(strategy, instance_type, version))
    assert JobSpec.from_dict(yaml.safe_load(spec.to_yaml())) == spec
    # Dumps that leave defaults or unset fields out still name the strategy's kind (and version).
    for dump in (
        spec.model_dump(by_alias=True, exclude_unset=True),
        spec.model_dump(mode="json", by_alias=True, exclude_defaults=True),
    ):
        assert dump["strategy"]["kind"] == strategy.kind
        assert JobSpec.from_dict(dump) == spec


def test_the_headline_notebook_call_builds_its_job():
    """``fit(name=..., strategy=PyTorchDDP(), cluster=Cluster(...))``: fit's own spec seam."""
    spec = _spec_from(
        None,
        {
            "name": "x",
            "strategy": PyTorchDDP(),
            "cluster": Cluster(instance_type="ml.g5.xlarge", instance_count=2),
        },
    )
    assert isinstance(spec.strategy, PyTorchDDP)
    assert smdist.plan(spec).world_size == 2


def test_fit_checks_a_typed_job_before_running_it():
    # NCCL on a CPU instance: refused by planning, so nothing starts.
    with pytest.raises(SpecError, match="strategy.backend"):
        smdist.fit(
            name="x",
            strategy=PyTorchDDP(backend="nccl"),
            cluster=Cluster(instance_type="ml.c5.xlarge", instance_count=2),
        )


def test_fit_refuses_a_spec_and_fields_together():
    spec = JobSpec(name="x", strategy=PyTorchDDP(), cluster=Cluster(instance_type="ml.g5.xlarge"))
    with pytest.raises(TypeError, match="not both"):
        smdist.fit(spec, name="y")


def test_model_copy_validates_its_update():
    spec = JobSpec(name="x", strategy=PyTorchDDP(), cluster=Cluster(instance_type="ml.g5.xlarge"))
    changed = spec.model_copy(update={"strategy": {"kind": "horovod", "processes_per_host": 1}})
    assert isinstance(changed.strategy, Horovod)
    assert changed.cluster == spec.cluster
    assert isinstance(spec.model_copy(update={"strategy": SDMP(version=2)}).strategy, SMPv2)
    with pytest.raises(SpecError, match="strategy.microbatches: is an SMP v1 setting"):
        spec.model_copy(update={"strategy": {"kind": "sdmp", "version": 2, "microbatches": 2}})
    with pytest.raises(SpecError, match="unknown key 'regoin'"):
        spec.model_copy(update={"regoin": "us-west-2"})


def test_assignment_takes_typed_objects_and_dicts():
    spec = JobSpec(name="x", strategy=PyTorchDDP(), cluster=Cluster(instance_type="ml.g5.xlarge"))
    spec.strategy = {"kind": "sdmp", "version": 1, "partitions": 1}
    assert isinstance(spec.strategy, SMPv1)
    spec.cluster = {"instance_type": "ml.p3.16xlarge", "instance_count": 2}
    assert smdist.plan(spec).world_size == 16


def test_jobspec_construction_errors_name_the_field_as_a_job_file_would():
    with pytest.raises(SpecError) as caught:
        JobSpec(
            name="x",
            strategy={"kind": "sdmp", "version": 2, "partitions": 2},
            cluster=Cluster(instance_type="ml.p4d.24xlarge"),
        )
    assert [p.path for p in caught.value.problems] == ["strategy.partitions"]
    assert "SMP v1 setting" in str(caught.value)


def test_as_job_spec_names_what_it_cannot_use():
    with pytest.raises(SpecError, match="cannot make a job spec from a int"):
        as_job_spec(3)
