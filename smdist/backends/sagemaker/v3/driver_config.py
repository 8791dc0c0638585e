"""Which SDK v3 driver starts a plan's launch, and the settings it gets (``distributed.json``).

How the job is launched is the plan's launch (``Launch.v3_driver``, ``driver_config``): v3's
torchrun driver for PyTorch DDP and SMP v2, smdist's own for the rest: TensorFlow
MultiWorkerMirrored and ParameterServer (TF_CONFIG), smddp (the SMDataParallelRunner's
mpirun), Horovod / SMP v1 (the MPIRunner's mpirun) and DDP with restarts (smdist's torchrun
launcher on every host: v3's driver cannot restart). Horovod does not use v3's ``MPI``: its
driver passes the per-host process count as ``-np`` (3.27), so a multi-host job would run on
the first host only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from smdist.catalog import wire
from smdist.contract.commands import Launch, Launcher
from smdist.planning.plan import Plan
from smdist.runtime.smp_v2 import SMP_V2_PARAMETERS

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


def driver_config(launch: Launch, framework: str) -> DriverConfig:
    """The v3 driver that starts ``launch``: v3's Torchrun, or smdist's own driver."""
    per_host = launch.processes_per_host
    if launch.v3_driver == "torchrun":
        settings = {"process_count_per_node": per_host, "smp": smp_v2_parameters(launch)}
        return DriverConfig("Torchrun", TORCHRUN_DRIVER_SCRIPT, settings)
    toolkit = {
        k: v for k, v in launch.toolkit_hyperparameters.items() if k.startswith("sagemaker_")
    }
    toolkit["sagemaker_program"] = launch.program
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
    return driver_config(plan.launch, plan.framework)
