"""PyTorch DistributedDataParallel, started by torchrun on every host.

Two ways to get torchrun onto SageMaker hosts:

- ``torchrun`` (default): smdist's launcher entry point runs as the job's program on every host,
  reads the SageMaker environment and starts ``torch.distributed.run`` with its rendezvous on
  the first host (c10d when ``max_restarts`` asks for restarts, static otherwise). No
  ``distribution`` dict is needed, so it works with any PyTorch container, on CPU instances,
  with any processes per host and with ``max_restarts``. The user's training script and the
  launcher's settings travel in the job's environment (``SMDIST_TRAINING_SCRIPT``, ...), so
  the script's arguments are exactly its hyperparameters.
- ``torch_distributed``: SageMaker's own ``torch_distributed`` distribution; the container runs
  torchrun with one process per GPU.
"""

from typing import Any, ClassVar, Literal

from pydantic import Field

from smdist import catalog
from smdist.contract.launch import Launcher
from smdist.errors import Problem
from smdist.spec.cluster import Cluster
from smdist.strategies.base import ProcessesPerHost, Strategy
from smdist.strategies.instance_groups import InstanceGroupsMixin

LAUNCHER_SCRIPT = "launch_torchrun.py"


class PyTorchDDP(InstanceGroupsMixin, Strategy):
    """PyTorch DDP with torchrun on every host.

    launcher: ``torchrun`` (smdist's launcher; any instance) or ``torch_distributed``
    (SageMaker's; GPU and Trainium instances, one process per device).
    backend: process-group backend — ``auto`` picks nccl on GPUs and gloo on CPUs.
    processes_per_host: ranks per host for the ``torchrun`` launcher.
    max_restarts: times torchrun restarts the workers after a failure (``torchrun`` launcher).
    """

    kind: Literal["pytorch_ddp"] = "pytorch_ddp"
    launcher: Literal["torchrun", "torch_distributed"] = "torchrun"
    backend: Literal["auto", "nccl", "gloo"] = "auto"
    processes_per_host: ProcessesPerHost = "auto"
    max_restarts: int = Field(0, ge=0, le=100, description="torchrun --max-restarts")

    ready_entry_point: ClassVar[str] = "pytorch_ddp.py"

    @property
    def container_launcher(self) -> Launcher:  # type: ignore[override]
        # smdist's launcher is the program, run once per host: it starts torchrun itself.
        return Launcher.PROGRAM if self.launcher == "torchrun" else Launcher.TORCHRUN

    def v3_driver(self) -> str:
        # v3's Torchrun driver starts torchrun without --max-restarts: with restarts smdist's
        # launcher runs on every host instead, started by smdist's driver.
        return "smdist" if self.max_restarts else "torchrun"

    @property
    def one_process_per_gpu(self) -> bool:  # type: ignore[override]
        return self.launcher == "torch_distributed"

    def requested_processes_per_host(self):
        return self.processes_per_host

    def program(self, entry_point: str) -> str:
        return LAUNCHER_SCRIPT if self.launcher == "torchrun" else entry_point

    def render_distribution(self, cluster: Cluster) -> dict[str, Any]:
        if self.launcher == "torchrun":
            return {}
        return {"torch_distributed": {"enabled": True}}

    def toolkit_hyperparameters(self, cluster: Cluster) -> dict[str, Any]:
        if self.launcher == "torchrun":
            return {}
        return {
            "sagemaker_torch_distributed_enabled": True,
            "sagemaker_instance_type": cluster.instance_type,
        }

    def smdist_environment(self, cluster: Cluster, entry_point: str) -> dict[str, str]:
        """The backend for the ready script, and the torchrun launcher's own settings (its
        processes per host it reads from the shipped launch)."""
        values = {"SMDIST_BACKEND": self.backend}
        values.update(super().smdist_environment(cluster, entry_point))
        if self.launcher == "torchrun":
            values.update(
                {
                    "SMDIST_TRAINING_SCRIPT": entry_point,
                    "SMDIST_MAX_RESTARTS": str(self.max_restarts),
                }
            )
        return values

    def check(self, cluster, framework_version=None, hyperparameters=None) -> list[Problem]:
        problems = super().check(cluster, framework_version, hyperparameters)
        problems += self._backend_problems(cluster)
        if self.launcher == "torch_distributed":
            problems += self._torch_distributed_problems(cluster, framework_version)
        if cluster.instance_count == 1 and self.resolve_processes_per_host(cluster) == 1:
            problems.append(
                Problem(
                    "cluster",
                    "one host with one process: DDP adds synchronisation and no parallelism",
                    severity="warning",
                )
            )
        return problems

    def _backend_problems(self, cluster: Cluster) -> list[Problem]:
        """NCCL without GPUs (an error), gloo on GPUs (a warning)."""
        gpus = cluster.gpus_per_host
        if self.backend == "nccl" and gpus == 0 and not cluster.is_local_mode:
            return [
                Problem(
                    "strategy.backend",
                    f"NCCL needs GPUs and {cluster.instance_type} has none",
                    "nccl",
                    "auto, gloo",
                )
            ]
        if self.backend == "gloo" and gpus > 0:
            return [
                Problem(
                    "strategy.backend",
                    "gloo on GPU instances is much slower than NCCL",
                    "gloo",
                    "auto, nccl",
                    severity="warning",
                )
            ]
        return []

    def _torch_distributed_problems(
        self, cluster: Cluster, framework_version: str | None
    ) -> list[Problem]:
        """What SageMaker's torch_distributed launcher cannot do: a process count, restarts,
        CPU instances, PyTorch older than the catalogue's minimum."""
        problems = []
        if self.processes_per_host != "auto":
            problems.append(
                Problem(
                    "strategy.processes_per_host",
                    "the torch_distributed launcher always starts one process per GPU",
                    self.processes_per_host,
                    "'auto', or launcher 'torchrun' for another count",
                )
            )
        if self.max_restarts:
            problems.append(
                Problem(
                    "strategy.max_restarts",
                    "SageMaker's torch_distributed launcher does not restart workers",
                    self.max_restarts,
                    "0, or launcher 'torchrun'",
                )
            )
        info = cluster.info
        if info is not None and info.accelerator == "cpu":
            problems.append(
                Problem(
                    "strategy.launcher",
                    f"torch_distributed runs on GPU and Trainium instances only, "
                    f"not {cluster.instance_type}",
                    "torch_distributed",
                    "torchrun",
                )
            )
        minimum = catalog.minimum_version("torch_distributed", "pytorch")
        if (
            minimum
            and framework_version
            and catalog.compare_versions(framework_version, minimum) < 0
        ):
            problems.append(
                Problem(
                    "code.framework_version",
                    f"the torch_distributed distribution needs PyTorch >= {minimum}",
                    framework_version,
                    f">= {minimum}",
                )
            )
        return problems
