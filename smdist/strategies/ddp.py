"""PyTorch DistributedDataParallel, started by torchrun on every host.

Two ways to get torchrun onto SageMaker hosts:

- ``torchrun`` (default): smdist's launcher entry point runs as the job's program on every host,
  reads the SageMaker environment and starts ``torch.distributed.run`` with its rendezvous on
  the first host (c10d when ``max_restarts`` asks for restarts, static otherwise). No
  ``distribution`` dict is needed, so it works with any PyTorch container, on CPU instances,
  with any processes per host and with ``max_restarts``. The user's training script travels
  as the ``smdist_training_script`` hyperparameter.
- ``torch_distributed``: SageMaker's own ``torch_distributed`` distribution; the container runs
  torchrun with one process per GPU.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import Field

from smdist import catalog
from smdist.cluster import Cluster
from smdist.errors import Problem
from smdist.strategies.base import ProcessesPerHost, Strategy

LAUNCHER_SCRIPT = "launch_torchrun.py"


class PyTorchDDP(Strategy):
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
    def launcher_name(self) -> str:  # type: ignore[override]
        if self.launcher == "torchrun":
            return "smdist torchrun launcher on every host"
        return "SageMaker torch_distributed (torchrun)"

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

    def distribution_hyperparameters(self, cluster: Cluster) -> dict[str, Any]:
        if self.launcher == "torchrun":
            return {}
        return {
            "sagemaker_torch_distributed_enabled": True,
            "sagemaker_instance_type": cluster.instance_type,
        }

    def smdist_hyperparameters(self, cluster: Cluster) -> dict[str, Any]:
        values: dict[str, Any] = {"smdist_backend": self.backend}
        values.update(super().smdist_hyperparameters(cluster))
        return values

    def launcher_hyperparameters(self, entry_point: str) -> dict[str, Any]:
        """The torchrun launcher's own hyperparameters (it strips them before the script)."""
        if self.launcher != "torchrun":
            return {}
        return {
            "smdist_training_script": entry_point,
            "smdist_processes_per_host": self.processes_per_host,
            "smdist_max_restarts": self.max_restarts,
        }

    def check(self, cluster, framework_version=None, hyperparameters=None) -> list[Problem]:
        problems = super().check(cluster, framework_version, hyperparameters)
        gpus = cluster.gpus_per_host
        info = cluster.info
        if self.backend == "nccl" and gpus == 0 and not cluster.is_local_mode:
            problems.append(
                Problem(
                    "strategy.backend",
                    f"NCCL needs GPUs and {cluster.instance_type} has none",
                    "nccl",
                    "auto, gloo",
                )
            )
        if self.backend == "gloo" and gpus > 0:
            problems.append(
                Problem(
                    "strategy.backend",
                    "gloo on GPU instances is much slower than NCCL",
                    "gloo",
                    "auto, nccl",
                    severity="warning",
                )
            )
        if self.launcher == "torch_distributed":
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
        if cluster.instance_count == 1 and self.resolve_processes_per_host(cluster) == 1:
            problems.append(
                Problem(
                    "cluster",
                    "one host with one process: DDP adds synchronisation and no parallelism",
                    severity="warning",
                )
            )
        return problems
