"""A KMS key for the storage volume of an instance type that has no EBS volume to encrypt.

Instance types with NVMe instance storage (ml.g5, ml.p4d, ...) train on that storage, encrypted
by a hardware module on the instance, and SageMaker attaches no EBS volume. CreateTrainingJob
refuses ``ResourceConfig.VolumeKmsKeyId`` for them (the API reference, ResourceConfig). smdist
never leaves out a value the user set, so the job is refused here, before any AWS call, instead
of by the service after the code upload. Nothing here performs I/O.
"""

from __future__ import annotations

from smdist.errors import Problem
from smdist.spec.job import JobSpec


def check_volume_encryption(spec: JobSpec) -> list[Problem]:
    """A refusal when ``kms.volume_key_id`` is set for an instance type with NVMe storage."""
    info = spec.cluster.info
    key = spec.kms.volume_key_id if spec.kms is not None else None
    if key is None or info is None or info.instance_storage != "nvme":
        return []
    return [
        Problem(
            "kms.volume_key_id",
            f"{info.instance_type} trains on NVMe instance storage, which its own hardware "
            "encrypts; SageMaker attaches no EBS volume and refuses a volume KMS key for it",
            key,
            "remove kms.volume_key_id (kms.output_key_id still encrypts the model and output), "
            "or choose an instance type with an EBS volume (ml.p3, ml.c5, ml.m5, ...)",
        )
    ]
