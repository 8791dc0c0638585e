"""The instance types a SageMaker HyperPod cluster can have (CreateCluster's
``ClusterInstanceType``), as dated data for both HyperPod backends: a job planned for another
type cannot run on one (a Slurm partition has no such nodes; a pod's node selector would wait
for nodes that never come).

Taken 2026-11-29 from botocore 1.44.8's SageMaker service model (``ClusterInstanceType``, 209
types); ``tests/unit/test_hyperpod_slurm_checks.py`` compares it with the installed botocore.
"""

from __future__ import annotations

SOURCE = "botocore 1.44.8, SageMaker ClusterInstanceType (read 2026-11-29)"
BOTOCORE_VERSION = "1.44.8"

# family -> its sizes
_FAMILIES = {
    "c5": "large xlarge 2xlarge 4xlarge 9xlarge 12xlarge 18xlarge 24xlarge",
    "c5n": "large 2xlarge 4xlarge 9xlarge 18xlarge",
    "c6a": "large xlarge 2xlarge 4xlarge 8xlarge 12xlarge 16xlarge 24xlarge 32xlarge 48xlarge",
    "c6g": "medium large xlarge 2xlarge 4xlarge 8xlarge 12xlarge 16xlarge",
    "c6i": "large xlarge 2xlarge 4xlarge 8xlarge 12xlarge 16xlarge 24xlarge 32xlarge",
    "c7g": "medium large xlarge 2xlarge 4xlarge 8xlarge 12xlarge 16xlarge",
    "c8a": "16xlarge",
    "c8g": "medium large xlarge 2xlarge 4xlarge 8xlarge 12xlarge 16xlarge 24xlarge 48xlarge",
    "g4dn": "xlarge 2xlarge 4xlarge 8xlarge 12xlarge 16xlarge",
    "g5": "xlarge 2xlarge 4xlarge 8xlarge 12xlarge 16xlarge 24xlarge 48xlarge",
    "g6": "xlarge 2xlarge 4xlarge 8xlarge 16xlarge 12xlarge 24xlarge 48xlarge",
    "g6e": "xlarge 2xlarge 4xlarge 8xlarge 16xlarge 12xlarge 24xlarge 48xlarge",
    "g7": "2xlarge 4xlarge 8xlarge 12xlarge 24xlarge 48xlarge",
    "g7e": "2xlarge 4xlarge 8xlarge 12xlarge 24xlarge 48xlarge",
    "gr6": "4xlarge 8xlarge",
    "i3en": "large xlarge 2xlarge 3xlarge 6xlarge 12xlarge 24xlarge",
    "m5": "large xlarge 2xlarge 4xlarge 8xlarge 12xlarge 16xlarge 24xlarge",
    "m6a": "large xlarge 2xlarge 4xlarge 8xlarge 12xlarge 16xlarge 24xlarge 32xlarge 48xlarge",
    "m6g": "medium large xlarge 2xlarge 4xlarge 8xlarge 12xlarge 16xlarge",
    "m6i": "large xlarge 2xlarge 4xlarge 8xlarge 12xlarge 16xlarge 24xlarge 32xlarge",
    "m7g": "medium large xlarge 2xlarge 4xlarge 8xlarge 12xlarge 16xlarge",
    "m7i": "large xlarge 2xlarge 4xlarge 8xlarge 12xlarge 16xlarge 24xlarge 48xlarge",
    "m8a": "16xlarge",
    "m8g": "medium large xlarge 2xlarge 4xlarge 8xlarge 12xlarge 16xlarge 24xlarge 48xlarge",
    "p4d": "24xlarge",
    "p4de": "24xlarge",
    "p5": "48xlarge 4xlarge",
    "p5e": "48xlarge",
    "p5en": "48xlarge",
    "p6-b200": "48xlarge",
    "p6-b300": "48xlarge",
    "p6e-gb200": "36xlarge",
    "r5d": "16xlarge",
    "r6i": "large xlarge 2xlarge 4xlarge 8xlarge 12xlarge 16xlarge 24xlarge 32xlarge",
    "r7i": "large xlarge 2xlarge 4xlarge 8xlarge 12xlarge 16xlarge 24xlarge 48xlarge",
    "t3": "medium large xlarge 2xlarge",
    "trn1": "32xlarge",
    "trn1n": "32xlarge",
    "trn2": "3xlarge 48xlarge",
}

CLUSTER_INSTANCE_TYPES = frozenset(
    f"ml.{family}.{size}" for family, sizes in _FAMILIES.items() for size in sizes.split()
)


def hyperpod_has(instance_type: str) -> bool:
    """Whether a HyperPod cluster can have nodes of ``instance_type``."""
    return instance_type in CLUSTER_INSTANCE_TYPES


def same_family(instance_type: str) -> list[str]:
    """HyperPod's types of ``instance_type``'s family, for a message (none: other families)."""
    family = instance_type.split(".")[1] if instance_type.count(".") == 2 else ""
    sizes = _FAMILIES.get(family, "")
    return [f"ml.{family}.{size}" for size in sizes.split()]
