"""What a job must be to run on a HyperPod Slurm cluster: every refusal names its field, the
value and what is valid; settings without effect there are said, not dropped silently."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

import smdist
from smdist.backends.hyperpod_slurm.checks import differences, refusals
from smdist.catalog import hyperpod_instance_types as instance_types

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
DDP = {"kind": "pytorch_ddp"}


def plan(**fields):
    spec = {
        "name": "hp",
        "strategy": DDP,
        "cluster": {"instance_type": "ml.g5.xlarge", "instance_count": 2},
        "code": {"framework_version": "2.13.0", "py_version": "py312"},
        **fields,
    }
    return smdist.plan(spec)


def problems(**fields) -> dict[str, str]:
    return {p.path: p.message + f" (valid: {p.valid})" for p in refusals(plan(**fields))}


@pytest.mark.parametrize(
    ("example", "runs"),
    [
        ("pytorch_ddp.yaml", True),
        ("pytorch_ddp_torch_distributed.yaml", True),
        ("smp_v2.yaml", True),
        ("sddp.yaml", False),
        ("smp_v1.yaml", False),
        ("horovod_pytorch.yaml", False),
        ("horovod_tensorflow.yaml", False),
        ("mwms.yaml", False),
        ("tf_parameter_server.yaml", False),
    ],
)
def test_the_launchers_torchrun_starts_run_and_the_others_are_refused_saying_why(example, runs):
    found = refusals(smdist.plan(yaml.safe_load((EXAMPLES / example).read_text())))
    if runs:
        assert found == []
        return
    (strategy,) = [p for p in found if p.path == "strategy.kind"]
    assert strategy.message.startswith("does not run on hyperpod-slurm: ")
    assert "pytorch_ddp (launcher torchrun or torch_distributed), or sdmp version 2" in (
        strategy.valid or ""
    )


def test_a_type_hyperpod_cannot_have_is_refused_naming_its_familys_types():
    found = problems(cluster={"instance_type": "ml.p3.16xlarge", "instance_count": 2}, code={})
    assert (
        "not an instance type a SageMaker HyperPod cluster can have"
        in found["cluster.instance_type"]
    )
    found = problems(cluster={"instance_type": "ml.c5n.xlarge", "instance_count": 2})
    assert "(valid: ml.c5n.large, ml.c5n.2xlarge" in found["cluster.instance_type"]


def test_instance_groups_and_preferences_are_refused():
    groups = [
        {"name": "train", "instance_type": "ml.g5.xlarge", "instance_count": 2},
        {"name": "data", "instance_type": "ml.c5.xlarge", "instance_count": 1},
    ]
    strategy = {"kind": "pytorch_ddp", "instance_groups": ["train"]}
    found = problems(cluster={"instance_groups": groups}, strategy=strategy)
    assert "one partition's nodes" in found["cluster.instance_groups"]
    preferences = [
        {"instance_type": "ml.g5.xlarge", "instance_count": 2},
        {"instance_type": "ml.g6.xlarge", "instance_count": 2},
    ]
    found = problems(cluster={"instance_preferences": preferences})
    assert "no instance type is chosen" in found["cluster.instance_preferences"]


def test_channels_must_be_folders_of_the_shared_file_system():
    found = problems(
        inputs={
            "train": {"uri": "s3://bucket/train"},
            "eval": {"uri": "file:///fsx/data/eval", "distribution": "ShardedByS3Key"},
            "ok": {"uri": "file:///fsx/data/ok"},
        }
    )
    assert set(found) == {"inputs.train.uri", "inputs.eval.distribution"}
    assert "S3 data is not staged by this backend" in found["inputs.train.uri"]
    assert "aws s3 sync s3://bucket/train" in found["inputs.train.uri"]
    assert "file:///fsx/data/train" in found["inputs.train.uri"]
    assert "(valid: FullyReplicated)" in found["inputs.eval.distribution"]


def test_settings_of_a_training_job_without_effect_are_said():
    notes = differences(
        plan(
            checkpoint={"s3_uri": "s3://bucket/ckpt"},
            spot={"enabled": True, "max_wait": 7200},
            max_run=3600,
            output_path="s3://bucket/out",
        )
    )
    assert any(
        note.startswith("checkpoint.s3_uri (s3://bucket/ckpt) is not synced") for note in notes
    )
    assert any(note.startswith("output_path (s3://bucket/out) is not written") for note in notes)
    assert any(
        note.startswith("spot.enabled: settings of a SageMaker training job") for note in notes
    )


def test_the_instance_types_match_botocores_cluster_instance_types():
    loaders = pytest.importorskip("botocore.loaders")
    botocore = pytest.importorskip("botocore")

    model = loaders.Loader().load_service_model("sagemaker", "service-2")
    known = set(model["shapes"]["ClusterInstanceType"]["enum"])
    if botocore.__version__ == instance_types.BOTOCORE_VERSION:
        assert instance_types.CLUSTER_INSTANCE_TYPES == known
    else:  # another botocore: none of the recorded types may have gone
        assert instance_types.CLUSTER_INSTANCE_TYPES <= known, (
            "HyperPod dropped types: retake the list from this botocore"
        )
