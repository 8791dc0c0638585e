"""Which cluster is this process part of, and where does it stand in it?

``detect()`` walks one ordered list and returns the first environment whose variables are
present. Process-level launchers come first: a worker started by torchrun or mpirun inside a
SageMaker container sees both its launcher's variables and SageMaker's, and its rank is the
launcher's. Platform-level descriptions (TF_CONFIG, Slurm, OpenPAI, SageMaker) follow, and a
single local process is the fallback.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from .base import ClusterEnvironment, ClusterEnvironmentError
from .local import LocalEnvironment
from .mpi import MPIEnvironment
from .openpai import OpenPAIEnvironment
from .sagemaker import SageMakerEnvironment
from .slurm import SlurmEnvironment
from .tf_config import TFConfigEnvironment
from .torchelastic import TorchElasticEnvironment

ENVIRONMENTS: tuple[type[ClusterEnvironment], ...] = (
    TorchElasticEnvironment,
    MPIEnvironment,
    TFConfigEnvironment,
    SlurmEnvironment,
    OpenPAIEnvironment,
    SageMakerEnvironment,
    LocalEnvironment,
)


def detect(
    environ: Mapping[str, str] | None = None, *, validate: bool = True
) -> ClusterEnvironment:
    """The first environment in ``ENVIRONMENTS`` that recognises ``environ`` (default os.environ).

    With ``validate`` (the default) a malformed variable raises ClusterEnvironmentError here,
    naming the variable, its value and what was expected, instead of surfacing later as a hang.
    """
    environ = os.environ if environ is None else environ
    for environment_class in ENVIRONMENTS:
        if environment_class.detect(environ):
            environment = environment_class(environ)
            if validate:
                environment.validate_settings()
            return environment
    raise AssertionError("LocalEnvironment always matches")  # pragma: no cover


def torch_env(environment: ClusterEnvironment) -> dict[str, str]:
    """The variables ``torch.distributed.init_process_group("env://")`` reads, as a new dict.

    Nothing is written: a caller that starts a process passes them in its environment, or an
    entry point applies them itself.
    """
    return {
        "RANK": str(environment.global_rank()),
        "WORLD_SIZE": str(environment.world_size()),
        "LOCAL_RANK": str(environment.local_rank()),
        "MASTER_ADDR": environment.main_address,
        "MASTER_PORT": str(environment.main_port),
    }


__all__ = [
    "ENVIRONMENTS",
    "ClusterEnvironment",
    "ClusterEnvironmentError",
    "LocalEnvironment",
    "MPIEnvironment",
    "OpenPAIEnvironment",
    "SageMakerEnvironment",
    "SlurmEnvironment",
    "TFConfigEnvironment",
    "TorchElasticEnvironment",
    "detect",
    "torch_env",
]
