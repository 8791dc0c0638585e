"""The SageMaker training container's contract: config files, SM_* environment, arguments.

One module, standard library only, used on both sides: the local backend writes each emulated
host's config files and environment with it, ``smdist plan --hosts`` shows them, and it ships
with the job's code (under ``smdist.runtime``) so smdist's SDK v3 driver gives a rank in a real
container what the training toolkit would.

The SageMaker training toolkit reads three files under ``/opt/ml/input/config`` and derives
every ``SM_*`` variable and the ``--name value`` arguments from them. The local backend writes
the same files for each emulated host and derives the same values here, the way the toolkit
does (sagemaker-training 5.x, ``Environment().to_env_vars()``; a recorded reference lives in
the tests):

- each wire hyperparameter is ``json.loads``-ed, the raw string kept when that fails;
- ``sagemaker_*`` names (and a few reserved ones) are the toolkit's own: they stay out of
  ``SM_HPS`` / ``SM_HP_*`` / the arguments, and those not in the reserved list become
  ``SM_FRAMEWORK_PARAMS``;
- values that are not strings are rendered as compact, key-sorted JSON;
- arguments are sorted by name, ``-k`` for one-letter names, values built with ``str()``
  (``True``, ``[64, 32]``) and mappings as ``a=1,b=2``.

Pure: no files are read and nothing is started.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .groups import HOMOGENEOUS_GROUP, HostGroup, group_resource_config, toolkit_instance_groups

SAGEMAKER_PREFIX = "sagemaker_"
# Reserved names the toolkit keeps for itself without passing them as framework parameters.
RESERVED_HYPERPARAMETERS = frozenset(
    {
        "sagemaker_program",
        "sagemaker_submit_directory",
        "sagemaker_enable_cloudwatch_metrics",
        "sagemaker_region",
        "sagemaker_container_log_level",
        "sagemaker_job_name",
        "default_user_module_name",
        "_tuning_objective_metric",
        "sagemaker_s3_output",
    }
)
INSTANCE_GROUP = HOMOGENEOUS_GROUP
DEFAULT_LOG_LEVEL = 20
# SAGEMAKER_TRAINING_MODULE of the Deep Learning Containers, reported as SM_FRAMEWORK_MODULE.
FRAMEWORK_MODULES = {
    "pytorch": "sagemaker_pytorch_container.training:main",
    "tensorflow": "sagemaker_tensorflow_container.training:main",
}


def decode_hyperparameters(wire: Mapping[str, str]) -> dict[str, Any]:
    """What the container makes of hyperparameters.json: JSON where it parses, else the string."""
    decoded: dict[str, Any] = {}
    for name, value in wire.items():
        try:
            decoded[name] = json.loads(value)
        except (TypeError, ValueError):
            decoded[name] = value
    return decoded


def split_hyperparameters(decoded: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(the script's hyperparameters, the toolkit's ``sagemaker_*`` ones)."""
    user, toolkit = {}, {}
    for name, value in decoded.items():
        if name in RESERVED_HYPERPARAMETERS or name.startswith(SAGEMAKER_PREFIX):
            toolkit[name] = value
        else:
            user[name] = value
    return user, toolkit


def render_value(value: Any) -> str:
    """An environment value as the toolkit writes it."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True)


def argument_value(value: Any) -> str:
    """One argument's text as the toolkit builds it from a decoded hyperparameter."""
    if value is None:
        return ""
    if isinstance(value, Mapping):
        return ",".join(f"{key}={item}" for key, item in sorted(value.items()))
    return str(value)


def command_line_arguments(hyperparameters: Mapping[str, Any]) -> list[str]:
    """``--name value`` pairs, sorted by name, values built with ``str()`` as the toolkit does."""
    arguments: list[str] = []
    for name in sorted(hyperparameters):
        text = str(name)
        arguments.append(f"--{text}" if len(text) > 1 else f"-{text}")
        arguments.append(argument_value(hyperparameters[name]))
    return arguments


@dataclass(frozen=True)
class HostConfig:
    """The three files SageMaker writes into ``/opt/ml/input/config`` of one host."""

    hyperparameters: dict[str, str]  # wire values: JSON-encoded strings
    resource_config: dict[str, Any]
    input_data_config: dict[str, Any]


def resource_config(
    hosts: list[str],
    current_host: str,
    instance_type: str,
    network_interface: str,
    groups: Sequence[HostGroup] = (),
) -> dict[str, Any]:
    """``resourceconfig.json`` of ``current_host``: on a cluster of ``groups`` (heterogeneous),
    else of ``hosts`` of ``instance_type``, SageMaker's one ``homogeneousCluster`` group."""
    if groups:
        return group_resource_config(groups, current_host, network_interface)
    return group_resource_config(
        [HostGroup(INSTANCE_GROUP, instance_type, tuple(hosts))], current_host, network_interface
    )


def input_data_config(channels: Mapping[str, str]) -> dict[str, Any]:
    """``channel -> S3DistributionType`` as inputdataconfig.json describes File-mode channels."""
    return {
        name: {
            "TrainingInputMode": "File",
            "S3DistributionType": distribution,
            "RecordWrapperType": "None",
        }
        for name, distribution in channels.items()
    }


@dataclass(frozen=True)
class Machine:
    """What the toolkit asks the machine: CPUs, GPUs, Neuron cores."""

    num_cpus: int
    num_gpus: int
    num_neurons: int = 0


def training_environment(
    base: Path,
    config: HostConfig,
    machine: Machine,
    *,
    job_name: str,
    framework_module: str | None,
) -> dict[str, Any]:
    """The toolkit's ``Environment`` as a dictionary (``SM_TRAINING_ENV``)."""
    decoded = decode_hyperparameters(config.hyperparameters)
    user, toolkit = split_hyperparameters(decoded)
    framework_params = {k: v for k, v in toolkit.items() if k not in RESERVED_HYPERPARAMETERS}
    resources = config.resource_config
    groups = toolkit_instance_groups(resources, framework_params)
    program = toolkit.get("sagemaker_program")
    values = {
        **groups,
        "additional_framework_parameters": framework_params,
        "channel_input_dirs": {
            name: str(base / "input" / "data" / name) for name in config.input_data_config
        },
        "current_host": resources["current_host"],
        "current_instance_type": resources.get("current_instance_type", "local"),
        "framework_module": framework_module,
        "hosts": list(resources["hosts"]),
        "hyperparameters": user,
        "input_config_dir": str(base / "input" / "config"),
        "input_data_config": config.input_data_config,
        "input_dir": str(base / "input"),
        "is_master": resources["current_host"] == groups["master_hostname"],
        # The toolkit computes this before SM_HP_MP_PARAMETERS exists, so it is always null.
        "is_modelparallel_enabled": None,
        "is_smddpmprun_installed": False,
        "is_smddprun_installed": False,
        "job_name": job_name,
        "log_level": toolkit.get("sagemaker_container_log_level", DEFAULT_LOG_LEVEL),
        "model_dir": str(base / "model"),
        "module_dir": str(toolkit.get("sagemaker_submit_directory", base / "code")),
        "module_name": program[:-3]
        if isinstance(program, str) and program.endswith(".py")
        else program,
        "network_interface_name": resources.get("network_interface_name", "eth0"),
        "num_cpus": machine.num_cpus,
        "num_gpus": machine.num_gpus,
        "num_neurons": machine.num_neurons,
        "output_data_dir": str(base / "output" / "data"),
        "output_dir": str(base / "output"),
        "output_intermediate_dir": str(base / "output" / "intermediate"),
        "resource_config": resources,
        "topology": resources.get("topology", []),
        "user_entry_point": program,
    }
    return dict(sorted(values.items()))  # by name, the order these keys have always had


def sm_variables(training_env: Mapping[str, Any]) -> dict[str, str]:
    """``SM_*`` variables from a training environment, as ``to_env_vars()`` renders them."""
    env = training_env
    values: dict[str, Any] = {
        "hosts": env["hosts"],
        "network_interface_name": env["network_interface_name"],
        "hps": env["hyperparameters"],
        "user_entry_point": env["user_entry_point"],
        "framework_params": env["additional_framework_parameters"],
        "resource_config": env["resource_config"],
        "input_data_config": env["input_data_config"],
        "output_data_dir": env["output_data_dir"],
        "channels": sorted(env["channel_input_dirs"]),
        "current_host": env["current_host"],
        "current_instance_type": env["current_instance_type"],
        "current_instance_group": env["current_instance_group"],
        "current_instance_group_hosts": env["current_instance_group_hosts"],
        "instance_groups": env["instance_groups"],
        "instance_groups_dict": env["instance_groups_dict"],
        "distribution_instance_groups": env["distribution_instance_groups"],
        "is_hetero": env["is_hetero"],
        "module_name": env["module_name"],
        "log_level": env["log_level"],
        "framework_module": env["framework_module"],
        "input_dir": env["input_dir"],
        "input_config_dir": env["input_config_dir"],
        "output_dir": env["output_dir"],
        "num_cpus": env["num_cpus"],
        "num_gpus": env["num_gpus"],
        "num_neurons": env["num_neurons"],
        "model_dir": env["model_dir"],
        "module_dir": env["module_dir"],
        "training_env": dict(env),
        "user_args": command_line_arguments(env["hyperparameters"]),
        "output_intermediate_dir": env["output_intermediate_dir"],
    }
    if env.get("topology"):
        values["topology"] = env["topology"]
    for name, path in env["channel_input_dirs"].items():
        values[f"channel_{name}"] = path
    for name, value in env["hyperparameters"].items():
        values[f"hp_{name}"] = value
    return {f"SM_{str(key).upper()}": render_value(value) for key, value in values.items()}
