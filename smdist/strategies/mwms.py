"""TensorFlow MultiWorkerMirroredStrategy: synchronous data parallelism, one process per host.

Each host runs one worker that mirrors the model over all of its GPUs; workers find each other
through ``TF_CONFIG``, which the SageMaker TensorFlow container builds from the host list when
the ``multi_worker_mirrored_strategy`` distribution is enabled (TensorFlow >= 2.9).
"""

from typing import Any, ClassVar, Literal

from pydantic import Field, field_validator

from smdist import catalog
from smdist.contract.launch import Launcher
from smdist.errors import Problem
from smdist.spec.cluster import Cluster
from smdist.strategies.base import Strategy
from smdist.strategies.neuron import refuse_tensorflow_on_neuron


class MWMS(Strategy):
    """``tf.distribute.MultiWorkerMirroredStrategy`` across every host of the cluster.

    communication: the collective implementation — ``auto`` lets TensorFlow choose, ``ring``
    uses gRPC ring all-reduce (works everywhere), ``nccl`` needs GPUs.
    """

    kind: Literal["mwms"] = "mwms"
    communication: Literal["auto", "ring", "nccl"] = Field(
        "auto", description="collective implementation: auto | ring | nccl (GPUs only)"
    )

    frameworks: ClassVar[tuple[str, ...]] = ("tensorflow",)
    ready_entry_point: ClassVar[str] = "tensorflow_mwms.py"
    container_launcher: ClassVar[Launcher] = Launcher.TF_CONFIG

    @field_validator("communication", mode="before")
    @classmethod
    def _lower(cls, value: Any) -> Any:
        # TensorFlow spells these as enum members (RING, NCCL); accept that spelling too.
        return value.lower() if isinstance(value, str) else value

    def render_distribution(self, cluster: Cluster) -> dict[str, Any]:
        return {"multi_worker_mirrored_strategy": {"enabled": True}}

    def toolkit_hyperparameters(self, cluster: Cluster) -> dict[str, Any]:
        return {"sagemaker_multi_worker_mirrored_strategy_enabled": True}

    def smdist_environment(self, cluster: Cluster, entry_point: str) -> dict[str, str]:
        return {
            "SMDIST_COMMUNICATION": self.communication,
            **super().smdist_environment(cluster, entry_point),
        }

    def check(self, cluster, framework_version=None, hyperparameters=None) -> list[Problem]:
        problems = super().check(cluster, framework_version, hyperparameters)
        problems += refuse_tensorflow_on_neuron(cluster, "MultiWorkerMirroredStrategy")
        if (
            self.communication == "nccl"
            and cluster.gpus_per_host == 0
            and not cluster.is_local_mode
        ):
            problems.append(
                Problem(
                    "strategy.communication",
                    f"NCCL needs GPUs and {cluster.instance_type} has none",
                    "nccl",
                    "auto, ring",
                )
            )
        minimum = catalog.minimum_version("mwms_distribution", "tensorflow") or "2.9"
        if framework_version and catalog.compare_versions(framework_version, minimum) < 0:
            problems.append(
                Problem(
                    "code.framework_version",
                    "the multi_worker_mirrored_strategy distribution needs TensorFlow "
                    f">= {minimum}",
                    framework_version,
                    f">= {minimum}",
                )
            )
        if cluster.instance_count == 1:
            problems.append(
                Problem(
                    "cluster.instance_count",
                    "MultiWorkerMirroredStrategy on one instance pays for worker coordination "
                    "with nothing to coordinate; MirroredStrategy does the same on one host",
                    severity="warning",
                )
            )
        return problems
