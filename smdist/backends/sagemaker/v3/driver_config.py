"""Which SDK v3 driver starts a plan's launch, and the settings it gets (``distributed.json``).

How the job is launched is the plan's launch (``Launch.v3_driver``, ``driver_config``): v3's
torchrun driver for PyTorch DDP and SMP v2, smdist's own for the rest: TensorFlow
MultiWorkerMirrored and ParameterServer (TF_CONFIG), smddp (the SMDataParallelRunner's
mpirun), Horovod / SMP v1 (the MPIRunner's mpirun) and DDP with restarts (smdist's torchrun
launcher on every host: v3's driver cannot restart). Horovod does not use v3's ``MPI``: its
driver passes the per-host process count as ``-np`` (3.27), so a multi-host job would run on
the first host only.

On a heterogeneous cluster (``cluster.instance_groups``) every job runs through smdist's driver:
v3's Torchrun driver starts torchrun on every host of ``SM_HOSTS``, every group's, where only the
hosts of the strategy's groups may join the program. smdist's driver hands the container
contract those groups as the training toolkit gets them from SDK v2's ``distribution``: the
``sagemaker_distribution_instance_groups`` hyperparameter.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from smdist.catalog import wire
from smdist.contract.commands import Launch, Launcher
from smdist.contract.groups import DISTRIBUTION_GROUPS
from smdist.planning.plan import Plan
from smdist.runtime.smp_v2 import SMP_V2_PARAMETERS
from smdist.spec.job import JobSpec

SMDIST_DRIVER_SCRIPT = "smdist_driver.py"
TORCHRUN_DRIVER_SCRIPT = "torchrun_driver.py"


@dataclass(frozen=True)
class DriverConfig:
    """Which driver ``sm_train.sh`` starts, and its ``distributed.json`` (v3's model_dump)."""

    name: str  # v3's class name: the line sm_train.sh echoes
    script: str
    settings: dict[str, Any]

    @property
    def smdist(self) -> bool:
        return self.script == SMDIST_DRIVER_SCRIPT


def smp_v2_parameters(launch: Launch) -> dict[str, Any] | None:
    """SMP v2's settings as v3's ``SMP`` config takes them (torchrun with mp_parameters)."""
    if launch.launcher is not Launcher.TORCHRUN or not launch.mp_parameters:
        return None
    given = launch.mp_parameters
    return {name: given[name] for name in SMP_V2_PARAMETERS if given.get(name) is not None}


def distribution_groups(spec: JobSpec) -> list[str]:
    """The instance groups whose hosts run the distributed program: the strategy's, else the
    first group (as ``Cluster`` derives the hosts); none on a cluster of one instance type."""
    groups = spec.cluster.instance_groups
    if not groups:
        return []
    return list(spec.strategy.instance_groups) or [groups[0].name]


def driver_config(launch: Launch, framework: str, groups: Sequence[str] = ()) -> DriverConfig:
    """The v3 driver that starts ``launch``: v3's Torchrun, or smdist's own driver (always on
    a heterogeneous cluster, whose distribution ``groups`` it is given)."""
    per_host = launch.processes_per_host
    if launch.v3_driver == "torchrun" and not groups:
        settings = {"process_count_per_node": per_host, "smp": smp_v2_parameters(launch)}
        return DriverConfig("Torchrun", TORCHRUN_DRIVER_SCRIPT, settings)
    toolkit = {
        k: v for k, v in launch.toolkit_hyperparameters.items() if k.startswith("sagemaker_")
    }
    toolkit["sagemaker_program"] = launch.program
    if groups:
        toolkit.setdefault(DISTRIBUTION_GROUPS, list(groups))
    return DriverConfig(
        "SmdistDriver",
        SMDIST_DRIVER_SCRIPT,
        {
            "launcher": launch.launcher.value,
            "process_count_per_node": per_host,
            "launch": launch.to_dict(),
            "framework": framework,
            "toolkit_hyperparameters": wire.encode_hyperparameters(toolkit),
        },
    )


def plan_driver_config(plan: Plan) -> DriverConfig:
    return driver_config(plan.launch, plan.framework, distribution_groups(plan.spec))
