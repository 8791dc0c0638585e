"""Bad job specs are rejected before anything runs, naming the field (and value) to fix."""

from __future__ import annotations

import copy

import pytest

import smdist
from smdist.errors import SpecError
from smdist.spec.job import JobSpec

BASE = {
    "name": "job",
    "strategy": {"kind": "pytorch_ddp"},
    "cluster": {"instance_type": "ml.p3.16xlarge", "instance_count": 2},
    "code": {"framework_version": "2.3.0", "py_version": "py311"},
    "role": "arn:aws:iam::123456789012:role/SageMakerRole",
    "region": "us-west-2",
}


def spec_with(changes: dict) -> dict:
    data = copy.deepcopy(BASE)
    for dotted, value in changes.items():
        target = data
        *parents, last = dotted.split(".")
        for key in parents:
            target = target.setdefault(key, {})
        target[last] = value
    return data


# (id, changes, field path named in the error, text the message must contain)
BAD = [
    (
        "ppp-above-gpus",
        {"strategy": {"kind": "horovod", "processes_per_host": 16}},
        "strategy.processes_per_host",
        "16",
    ),
    (
        "ppp-zero",
        {"strategy": {"kind": "horovod", "processes_per_host": 0}},
        "strategy.processes_per_host",
        "0",
    ),
    (
        "ppp-negative",
        {"strategy": {"kind": "horovod", "processes_per_host": -1}},
        "strategy.processes_per_host",
        "-1",
    ),
    (
        "ppp-word",
        {"strategy": {"kind": "horovod", "processes_per_host": "eight"}},
        "strategy.processes_per_host",
        "eight",
    ),
    (
        "ppp-float",
        {"strategy": {"kind": "horovod", "processes_per_host": 2.5}},
        "strategy.processes_per_host",
        "2.5",
    ),
    (
        "ppp-typo",
        {"strategy": {"kind": "horovod", "process_per_host": 8}},
        "strategy.process_per_host",
        "processes_per_host",
    ),
    ("unknown-kind", {"strategy": {"kind": "deepspeed"}}, "strategy", "deepspeed"),
    ("missing-kind", {"strategy": {"processes_per_host": 1}}, "strategy", "kind"),
    (
        "mwms-on-pytorch",
        {"strategy": {"kind": "mwms"}, "code.framework": "pytorch"},
        "code.framework",
        "pytorch",
    ),
    (
        "smp-v2-on-tensorflow",
        {
            "strategy": {"kind": "sdmp", "version": 2, "framework": "tensorflow"},
            "cluster.instance_type": "ml.p4d.24xlarge",
        },
        "strategy.framework",
        "tensorflow",
    ),
    (
        "sddp-on-tensorflow-code",
        {
            "strategy": {"kind": "sddp"},
            "code.framework": "tensorflow",
            "cluster.instance_type": "ml.p4d.24xlarge",
        },
        "code.framework",
        "tensorflow",
    ),
    (
        "sddp-unsupported-instance",
        {"strategy": {"kind": "sddp"}, "cluster.instance_type": "ml.g5.12xlarge"},
        "cluster.instance_type",
        "ml.g5.12xlarge",
    ),
    (
        "sddp-unsupported-version",
        {
            "strategy": {"kind": "sddp"},
            "cluster.instance_type": "ml.p4d.24xlarge",
            "code.framework_version": "1.4.0",
        },
        "code.framework_version",
        "1.4.0",
    ),
    (
        "smp-v1-unsupported-instance",
        {"strategy": {"kind": "sdmp", "partitions": 2}, "cluster.instance_type": "ml.c5.xlarge"},
        "cluster.instance_type",
        "ml.c5.xlarge",
    ),
    (
        "smp-v1-unsupported-version",
        {"strategy": {"kind": "sdmp", "partitions": 2}, "code.framework_version": "1.4.0"},
        "code.framework_version",
        "1.4.0",
    ),
    (
        "smp-v1-partitions-missing",
        {"strategy": {"kind": "sdmp"}, "code.framework_version": None},
        "strategy.partitions",
        "partitions",
    ),
    (
        "smp-partitions-dont-divide",
        {
            "strategy": {"kind": "sdmp", "partitions": 3, "processes_per_host": 8},
            "code.framework_version": None,
        },
        "strategy.partitions",
        "3",
    ),
    (
        "smp-tp-doesnt-divide",
        {
            "strategy": {"kind": "sdmp", "version": 2, "tensor_parallel_degree": 3},
            "cluster.instance_type": "ml.p4d.24xlarge",
            "code.framework_version": None,
        },
        "strategy.tensor_parallel_degree",
        "3",
    ),
    (
        "smp-hybrid-shard-doesnt-divide",
        {
            "strategy": {"kind": "sdmp", "version": 2, "hybrid_shard_degree": 3},
            "cluster.instance_type": "ml.p4d.24xlarge",
            "code.framework_version": None,
        },
        "strategy.hybrid_shard_degree",
        "3",
    ),
    (
        "smp-tp-zero",
        {"strategy": {"kind": "sdmp", "version": 2, "tensor_parallel_degree": 0}},
        "strategy.tensor_parallel_degree",
        "0",
    ),
    (
        "smp-microbatches-dont-divide-batch",
        {
            "strategy": {"kind": "sdmp", "partitions": 2, "microbatches": 8},
            "code.framework_version": None,
            "hyperparameters": {"batch_size": 20},
        },
        "strategy.microbatches",
        "8",
    ),
    (
        "smp-bad-placement",
        {"strategy": {"kind": "sdmp", "partitions": 2, "placement_strategy": "random"}},
        "strategy.placement_strategy",
        "random",
    ),
    ("smp-bad-version", {"strategy": {"kind": "sdmp", "version": 3}}, "strategy.version", "3"),
    (
        "smp-v2-param-on-v1",
        {
            "strategy": {"kind": "sdmp", "partitions": 2, "hybrid_shard_degree": 2},
            "code.framework_version": None,
        },
        "strategy.hybrid_shard_degree",
        "2",
    ),
    ("instance-count-zero", {"cluster.instance_count": 0}, "cluster.instance_count", "0"),
    ("instance-count-negative", {"cluster.instance_count": -2}, "cluster.instance_count", "-2"),
    (
        "unknown-instance",
        {"cluster.instance_type": "ml.p9.mega"},
        "cluster.instance_type",
        "ml.p9.mega",
    ),
    (
        "instance-without-ml-prefix",
        {"cluster.instance_type": "p3.2xlarge"},
        "cluster.instance_type",
        "ml.p3.2xlarge",
    ),
    (
        "instance-typo",
        {"cluster.instance_type": "ml.p3.2xlarg"},
        "cluster.instance_type",
        "ml.p3.2xlarge",
    ),
    ("cluster-typo", {"cluster.instances": 2}, "cluster.instances", "instance_count"),
    ("top-level-typo", {"hyperparameter": {"epochs": 1}}, "hyperparameter", "hyperparameters"),
    (
        "mpi-options-semicolon",
        {"strategy": {"kind": "horovod", "custom_mpi_options": "-x A=1; rm -rf /"}},
        "strategy.custom_mpi_options",
        "rm",
    ),
    (
        "mpi-options-subshell",
        {
            "strategy": {"kind": "sddp", "custom_mpi_options": "-x A=$(id)"},
            "cluster.instance_type": "ml.p4d.24xlarge",
        },
        "strategy.custom_mpi_options",
        "$(id)",
    ),
    (
        "mpi-options-not-a-flag",
        {"strategy": {"kind": "horovod", "custom_mpi_options": "verbose"}},
        "strategy.custom_mpi_options",
        "verbose",
    ),
    (
        "mpi-options-backtick",
        {"strategy": {"kind": "horovod", "custom_mpi_options": "-x `id`"}},
        "strategy.custom_mpi_options",
        "`id`",
    ),
    ("bad-output-s3", {"output_path": "s3:/bucket/x"}, "output_path", "s3:/bucket/x"),
    ("bad-bucket-name", {"output_path": "s3://B/x"}, "output_path", "s3://B/x"),
    (
        "bad-checkpoint-uri",
        {"checkpoint": {"s3_uri": "https://bucket/x"}},
        "checkpoint.s3_uri",
        "https://bucket/x",
    ),
    ("bad-input-uri", {"inputs": {"train": "/data/train"}}, "inputs.train.uri", "/data/train"),
    ("bad-channel-name", {"inputs": {"tr ain": "s3://bucket-name/x"}}, "inputs", "tr ain"),
    ("bad-role-arn", {"role": "SageMakerRole"}, "role", "SageMakerRole"),
    (
        "role-arn-short-account",
        {"role": "arn:aws:iam::123:role/R"},
        "role",
        "arn:aws:iam::123:role/R",
    ),
    (
        "hyperparameter-too-long",
        {"hyperparameters": {"prompt": "x" * 2600}},
        "hyperparameters.prompt",
        "2500",
    ),
    (
        "hyperparameter-reserved",
        {"hyperparameters": {"sagemaker_program": "x.py"}},
        "hyperparameters.sagemaker_program",
        "reserved",
    ),
    (
        "hyperparameter-credential",
        {"hyperparameters": {"aws_secret_access_key": "abc"}},
        "hyperparameters.aws_secret_access_key",
        "credential",
    ),
    (
        "hyperparameter-access-key-value",
        {"hyperparameters": {"note": "AKIAABCDEFGHIJKLMNOP"}},
        "hyperparameters.note",
        "credential",
    ),
    (
        "env-credential",
        {"environment": {"AWS_SECRET_ACCESS_KEY": "abc"}},
        "environment.AWS_SECRET_ACCESS_KEY",
        "credential",
    ),
    (
        "nccl-on-cpu",
        {
            "strategy": {"kind": "pytorch_ddp", "backend": "nccl"},
            "cluster.instance_type": "ml.c5.xlarge",
        },
        "strategy.backend",
        "nccl",
    ),
    (
        "mwms-nccl-on-cpu",
        {
            "strategy": {"kind": "mwms", "communication": "nccl"},
            "cluster.instance_type": "ml.m5.xlarge",
            "code.framework_version": "2.14",
        },
        "strategy.communication",
        "nccl",
    ),
    (
        "mwms-old-tf",
        {"strategy": {"kind": "mwms"}, "code.framework_version": "2.8"},
        "code.framework_version",
        "2.8",
    ),
    (
        "mwms-bad-communication",
        {"strategy": {"kind": "mwms", "communication": "grpc"}},
        "strategy.communication",
        "grpc",
    ),
    (
        "td-with-processes",
        {
            "strategy": {
                "kind": "pytorch_ddp",
                "launcher": "torch_distributed",
                "processes_per_host": 2,
            }
        },
        "strategy.processes_per_host",
        "2",
    ),
    (
        "td-with-restarts",
        {"strategy": {"kind": "pytorch_ddp", "launcher": "torch_distributed", "max_restarts": 3}},
        "strategy.max_restarts",
        "3",
    ),
    (
        "td-on-cpu",
        {
            "strategy": {"kind": "pytorch_ddp", "launcher": "torch_distributed"},
            "cluster.instance_type": "ml.c5.xlarge",
        },
        "strategy.launcher",
        "torch_distributed",
    ),
    (
        "bad-launcher",
        {"strategy": {"kind": "pytorch_ddp", "launcher": "mpirun"}},
        "strategy.launcher",
        "mpirun",
    ),
    (
        "negative-restarts",
        {"strategy": {"kind": "pytorch_ddp", "max_restarts": -1}},
        "strategy.max_restarts",
        "-1",
    ),
    (
        "spot-wait-below-max-run",
        {"spot": {"enabled": True, "max_wait": 60}, "max_run": 3600},
        "spot.max_wait",
        "3600",
    ),
    ("max-wait-without-spot", {"spot": {"max_wait": 90000}}, "spot.max_wait", "90000"),
    ("max-run-zero", {"max_run": 0}, "max_run", "0"),
    ("keep-alive-too-long", {"keep_alive": 21601}, "keep_alive", "21601"),
    ("keep-alive-with-spot", {"keep_alive": 600, "spot": {"enabled": True}}, "keep_alive", "600"),
    ("bad-job-name", {"name": "my_job!"}, "name", "my_job!"),
    ("bad-region", {"region": "us-west"}, "region", "us-west"),
    ("bad-subnet", {"network": {"subnets": ["net-1"]}}, "network.subnets", "net-1"),
    (
        "bad-security-group",
        {"network": {"security_group_ids": ["group-1"]}},
        "network.security_group_ids",
        "group-1",
    ),
    (
        "bad-framework-version",
        {"code.framework_version": "latest"},
        "code.framework_version",
        "latest",
    ),
    ("bad-py-version", {"code.py_version": "3.11"}, "code.py_version", "3.11"),
    (
        "collective-timeout-zero",
        {"strategy": {"kind": "pytorch_ddp", "collective_timeout": 0}},
        "strategy.collective_timeout",
        "0",
    ),
]


@pytest.mark.parametrize(("changes", "path", "text"), [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_bad_input_is_rejected_naming_the_field(changes, path, text):
    with pytest.raises(SpecError) as caught:
        smdist.plan(JobSpec.from_dict(spec_with(changes)))
    problems = caught.value.problems
    assert any(p.path == path or (path and p.path.startswith(path)) for p in problems), [
        str(p) for p in problems
    ]
    assert text in str(caught.value), str(caught.value)


def test_there_are_at_least_forty_bad_inputs():
    assert len(BAD) >= 40


def test_the_base_spec_is_valid():
    smdist.plan(JobSpec.from_dict(spec_with({})))


def test_all_problems_are_reported_at_once():
    data = spec_with({"cluster.instance_count": 0, "role": "nope", "max_run": -1})
    with pytest.raises(SpecError) as caught:
        JobSpec.from_dict(data)
    assert {p.path for p in caught.value.problems} >= {"cluster.instance_count", "role", "max_run"}
