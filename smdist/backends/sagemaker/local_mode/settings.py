"""What a local-mode job keeps of the user's settings, and what it says it replaces.

Local mode runs containers on this machine, not a SageMaker job: settings that only a
SageMaker job has (VPC, spot, KMS, tags, S3 checkpoints) cannot apply, and an ``s3://``
``output_path`` is replaced by a directory here. Each is named when the job starts; none is
dropped silently. The container settings SDK v2 reads from ``~/.sagemaker/config.yaml``
(``local.container_config``, the usual way to raise ``/dev/shm`` above Docker's 64 MB for NCCL
and DataLoader workers) reach Compose under both SDK lines, with the ``container_config`` and
``shm_size`` options on top.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from smdist.errors import OPTION, Problem, SpecError
from smdist.planning.plan import Plan

SDK_LOCAL_CONFIG = Path("~/.sagemaker/config.yaml")  # where SDK v2's LocalSession reads local:
# Estimator arguments that describe cloud resources local mode has no use for.
CLOUD_ONLY = (
    "subnets",
    "security_group_ids",
    "enable_network_isolation",
    "encrypt_inter_container_traffic",
    "use_spot_instances",
    "max_wait",
    "keep_alive_period_in_seconds",
    "volume_kms_key",
    "output_kms_key",
    "checkpoint_s3_uri",
    "checkpoint_local_path",
    "tags",
)
# Compose keys the SDKs write themselves: a container_config naming one is refused, not merged.
SDK_OWNED_KEYS = frozenset(
    {"image", "volumes", "environment", "command", "entrypoint", "networks", "container_name"}
)


def sdk_local_config(path: Path = SDK_LOCAL_CONFIG) -> dict[str, Any]:
    """The ``local:`` section of the SDK's local-mode config file ({} when there is none)."""
    import yaml

    file = path.expanduser()
    if not file.is_file():
        return {}
    try:
        data = yaml.safe_load(file.read_text())
    except (OSError, yaml.YAMLError) as error:
        raise SpecError(
            [Problem(str(file), f"cannot be read as YAML: {error}", None, "fix or remove it")],
            OPTION,
        ) from None
    local = data.get("local") if isinstance(data, dict) else None
    return dict(local) if isinstance(local, dict) else {}


def container_config(
    sdk_config: dict[str, Any], option: dict[str, Any] | None, shm_size: str | None
) -> dict[str, Any]:
    """The Compose service settings for every container: the SDK config's, then the options'."""
    merged: dict[str, Any] = {}
    from_file = sdk_config.get("container_config") or {}
    for source, values in (
        ("~/.sagemaker/config.yaml local.container_config", from_file),
        ("options.container_config", option or {}),
    ):
        if not isinstance(values, dict):
            raise SpecError(
                [
                    Problem(
                        source,
                        "is not a mapping of Compose service settings",
                        values,
                        "e.g. {shm_size: 2gb}",
                    )
                ],
                OPTION,
            )
        owned = sorted(SDK_OWNED_KEYS & set(values))
        if owned:
            raise SpecError(
                [
                    Problem(
                        f"{source}.{key}",
                        "is set by the SageMaker SDK for every container",
                        values[key],
                        "other Compose service settings (shm_size, ulimits, ...)",
                    )
                    for key in owned
                ],
                OPTION,
            )
        merged.update(values)
    if shm_size is not None:
        merged["shm_size"] = shm_size
    return merged


def replaced_settings(plan: Plan, output_dir: Path, sdk_config: dict[str, Any]) -> list[str]:
    """One line per setting local mode replaces or cannot apply."""
    lines = []
    output_path = plan.spec.output_path
    if output_path and output_path.startswith("s3://"):
        lines.append(
            f"output_path {output_path} is replaced by {output_dir}: local mode keeps "
            "model.tar.gz on this machine"
        )
    ignored = [key for key in CLOUD_ONLY if plan.estimator_kwargs.get(key)]
    if ignored:
        lines.append(
            "ignoring cloud-only settings (local mode runs no SageMaker job): " + ", ".join(ignored)
        )
    if sdk_config.get("container_root"):
        lines.append(
            f"local.container_root {sdk_config['container_root']} (~/.sagemaker/config.yaml) "
            "is replaced by the job's own temporary directory, removed when the job ends"
        )
    return [f"sagemaker-local: {line}" for line in lines]
