"""Rules for file system channels (``fsx://`` and ``efs://``) and for the tracking settings.

Sources: the API reference (FileSystemDataSource; "Amazon FSx for Lustre and Amazon EFS ...
require a VpcConfig"), the developer guide's data-source pages (a file system channel is
mounted in File mode; an FSx for Lustre DirectoryPath starts with the file system's mount name:
``/<mount name>/<path>``, the mount name being 8 lower-case characters, or ``fsx`` on scratch 1
file systems) and SDK v2's ``FileSystemInput`` (access mode ro or rw, File mode only).
"""

from __future__ import annotations

import re

from smdist.errors import Problem
from smdist.spec.job import JobSpec

FSX_MOUNT_NAME = re.compile(r"\A(?:[a-z0-9]{8}|fsx)\Z")


def check_file_systems(spec: JobSpec) -> list[Problem]:
    problems = []
    mounted = []
    for name, channel in spec.inputs.items():
        field = f"inputs.{name}"
        file_system = channel.file_system
        if file_system is None:
            if channel.access_mode is not None:
                problems.append(
                    Problem(
                        f"{field}.access_mode",
                        "applies to fsx:// and efs:// channels only",
                        channel.access_mode,
                        "leave access_mode out",
                    )
                )
            continue
        mounted.append(name)
        if channel.input_mode not in (None, "File"):
            problems.append(
                Problem(
                    f"{field}.input_mode",
                    "a file system is mounted in File mode only",
                    channel.input_mode,
                    "File (or leave input_mode out)",
                )
            )
        if channel.distribution != "FullyReplicated":
            problems.append(
                Problem(
                    f"{field}.distribution",
                    "a file system is mounted whole on every host; ShardedByS3Key applies to S3",
                    channel.distribution,
                    "FullyReplicated",
                )
            )
        mount = file_system.directory_path.strip("/").split("/")[0]
        if file_system.type == "FSxLustre" and not FSX_MOUNT_NAME.match(mount):
            problems.append(
                Problem(
                    f"{field}.uri",
                    f"{mount!r} does not look like an FSx for Lustre mount name (8 lower-case "
                    "letters and digits, or 'fsx'): the path must start with it",
                    channel.uri,
                    "fsx://<file-system-id>/<mount name>/<path>",
                    severity="warning",
                )
            )
    if mounted and not (spec.network.subnets and spec.network.security_group_ids):
        problems.append(
            Problem(
                "network.subnets",
                f"file system channels ({', '.join(mounted)}) are reached through the job's "
                "VPC: SageMaker needs subnets and security groups that reach the file system",
                spec.network.subnets,
                "network.subnets and network.security_group_ids",
            )
        )
    return problems


def check_tracking(spec: JobSpec) -> list[Problem]:
    """What the tracking settings cost or cannot do together with the rest of the job."""
    if spec.mlflow is not None and spec.network.isolation:
        return [
            Problem(
                "mlflow",
                "with network.isolation the training container has no network, so the script "
                "cannot reach the MLflow tracking server",
                valid="network.isolation: false, or no mlflow",
                severity="warning",
            )
        ]
    return []
