"""TensorFlow ParameterServerStrategy: asynchronous training with a parameter server per host.

SageMaker's TensorFlow toolkit runs it when the estimator's ``parameter_server`` distribution
is enabled and the job has two or more hosts: on every host it starts a parameter server (a
``ps`` task on port 2223, CPU only), then the training script with a TF_CONFIG in which the
first host is the ``master`` (the coordinator) and the others are ``worker`` tasks
(``smdist.contract.parameter_server`` mirrors it outside the toolkit).
"""

from typing import Any, ClassVar, Literal

from smdist.contract.launch import Launcher
from smdist.errors import Problem
from smdist.spec.cluster import Cluster
from smdist.strategies.base import Strategy
from smdist.strategies.neuron import refuse_tensorflow_on_neuron


class ParameterServer(Strategy):
    """``tf.distribute.ParameterServerStrategy``: the first host coordinates, the others train,
    and every host holds a share of the variables in its parameter server."""

    kind: Literal["parameter_server"] = "parameter_server"

    frameworks: ClassVar[tuple[str, ...]] = ("tensorflow",)
    ready_entry_point: ClassVar[str] = "tensorflow_parameter_server.py"
    container_launcher: ClassVar[Launcher] = Launcher.PARAMETER_SERVER

    def render_distribution(self, cluster: Cluster) -> dict[str, Any]:
        return {"parameter_server": {"enabled": True}}

    def toolkit_hyperparameters(self, cluster: Cluster) -> dict[str, Any]:
        return {"sagemaker_parameter_server_enabled": True}

    def check(self, cluster, framework_version=None, hyperparameters=None) -> list[Problem]:
        problems = super().check(cluster, framework_version, hyperparameters)
        problems += refuse_tensorflow_on_neuron(cluster, "ParameterServerStrategy")
        if cluster.instance_count == 1:
            problems.append(
                Problem(
                    "cluster.instance_count",
                    "on one host the TensorFlow toolkit starts no parameter server and sets no "
                    "TF_CONFIG: the script trains alone",
                    1,
                    "2 or more hosts",
                    severity="warning",
                )
            )
        if cluster.gpus_per_host > 1:
            problems.append(
                Problem(
                    "cluster.instance_type",
                    f"each host runs one worker, whatever its {cluster.gpus_per_host} GPUs (the "
                    "SDK warns the same); the parameter servers run on CPU",
                    cluster.instance_type,
                    "one GPU or CPU instances",
                    severity="warning",
                )
            )
        return problems
