"""What both HyperPod backends check alike: a cluster's nodes are already there, of types a
HyperPod cluster can have, and a training job's service settings have no effect on them.

Each backend says in its own words what it runs on (one partition's nodes, one replica set's
pods) and where checkpoints and the model stay; the rules are these. Pure: no file is read.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from smdist.catalog.hyperpod_instance_types import hyperpod_has, same_family
from smdist.errors import Problem

if TYPE_CHECKING:
    from smdist.spec.cluster import Cluster
    from smdist.spec.job import JobSpec

_TYPE_EXAMPLES = "e.g. ml.p5.48xlarge, ml.g5.12xlarge, ml.trn1.32xlarge, ml.c5.xlarge"


def cluster_problems(cluster: Cluster, *, one_type: str, nodes: str) -> list[Problem]:
    """Instance groups (``one_type``: why the job runs on one type), preferences (``nodes``:
    what ``cluster.instance_type`` names there) and a type no HyperPod cluster has."""
    problems = []
    if cluster.instance_groups:
        names = [group.name for group in cluster.instance_groups]
        problems.append(
            Problem(
                "cluster.instance_groups", one_type, names,
                f"cluster.instance_type and cluster.instance_count ({nodes})",
            )
        )  # fmt: skip
    if cluster.instance_preferences:
        problems.append(
            Problem(
                "cluster.instance_preferences",
                "a HyperPod cluster's nodes are already there: no instance type is chosen "
                "when a job starts",
                [p.instance_type for p in cluster.instance_preferences],
                f"cluster.instance_type: the type of {nodes}",
            )
        )
    kind = cluster.instance_type
    if kind and not cluster.instance_groups and not hyperpod_has(kind):
        family = same_family(kind)
        problems.append(
            Problem(
                "cluster.instance_type",
                "is not an instance type a SageMaker HyperPod cluster can have",
                kind,
                ", ".join(family) if family else _TYPE_EXAMPLES,
            )
        )
    return problems


def distribution_problems(channel: str, distribution: str, readers: str) -> list[Problem]:
    """A channel every one of the ``readers`` (nodes, pods) reads whole where it lies: S3's
    sharding by key has nothing to split."""
    if distribution == "FullyReplicated":
        return []
    why = (
        f"every {readers[:-1]} reads the same shared folder: S3 keys are not split among "
        f"{readers} (shard by rank in the script instead)"
    )
    return [Problem(f"inputs.{channel}.distribution", why, distribution, "FullyReplicated")]


def service_setting_notes(spec: JobSpec, *, checkpoints: str, model: str, on: str) -> list[str]:
    """Notes for the settings of a SageMaker training job that a HyperPod cluster does not
    act on: ``checkpoints`` and ``model`` say where those stay instead, ``on`` what runs."""
    notes = []
    if spec.checkpoint is not None and spec.checkpoint.s3_uri:
        notes.append(
            f"checkpoint.s3_uri ({spec.checkpoint.s3_uri}) is not synced: checkpoints stay in "
            f"{checkpoints}"
        )
    if spec.output_path:
        notes.append(
            f"output_path ({spec.output_path}) is not written: the model stays in {model} "
            "(no model.tar.gz)"
        )
    ignored = [
        ("spot.enabled", spec.spot.enabled),
        ("keep_alive", spec.keep_alive),
        ("network", spec.network.subnets or spec.network.security_group_ids),
        ("network.isolation", spec.network.isolation),
        ("retry", spec.retry),
        ("infra_check", spec.infra_check),
        ("tensorboard", spec.tensorboard),
        ("mlflow", spec.mlflow),
    ]
    named = [name for name, value in ignored if value]
    if named:
        notes.append(
            f"{', '.join(named)}: settings of a SageMaker training job, without effect on {on}"
        )
    return notes
