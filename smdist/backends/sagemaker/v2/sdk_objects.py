"""SDK v2's objects for an estimator call's plain values (``estimator_call.EstimatorCall``).

Imported only where SDK v2 is (the send path and local mode): the call itself stays plain
values, so a dry run needs no SDK.
"""

from __future__ import annotations

from typing import Any


def estimator_arguments(arguments: dict[str, Any]) -> dict[str, Any]:
    """``arguments`` with ``instance_groups`` as ``InstanceGroup`` objects, the distribution's
    groups as those same objects (``fw_utils.validate_distribution`` tests membership with
    ``in``, and ``InstanceGroup`` has no equality but identity), and
    ``tensorboard_output_config`` as a ``TensorBoardOutputConfig``."""
    made = dict(arguments)
    if arguments.get("instance_groups"):
        from sagemaker.instance_group import InstanceGroup

        given = arguments["instance_groups"]
        groups = {group["instance_group_name"]: InstanceGroup(**group) for group in given}
        made["instance_groups"] = list(groups.values())
        distribution = arguments.get("distribution")
        if distribution and "instance_groups" in distribution:
            named = [groups[name] for name in distribution["instance_groups"]]
            made["distribution"] = {**distribution, "instance_groups": named}
    if arguments.get("tensorboard_output_config"):
        from sagemaker.debugger import TensorBoardOutputConfig

        made["tensorboard_output_config"] = TensorBoardOutputConfig(
            **arguments["tensorboard_output_config"]
        )
    return made


def fit_inputs(inputs: dict[str, dict[str, Any]] | None) -> dict[str, Any] | None:
    """``fit``'s inputs: a ``FileSystemInput`` for a file system channel, a ``TrainingInput``
    for an S3 one."""
    if not inputs:
        return None
    from sagemaker.inputs import FileSystemInput, TrainingInput

    return {
        name: FileSystemInput(**arguments)
        if "file_system_id" in arguments
        else TrainingInput(**arguments)
        for name, arguments in inputs.items()
    }


__all__ = ["estimator_arguments", "fit_inputs"]
