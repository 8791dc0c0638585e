"""``custom_mpi_options``: the field of the MPI-launched strategies, its plain-flags check, and
the ``mpi`` distribution with the toolkit's hyperparameters for it."""

import re
import shlex
from typing import Any

from pydantic import Field, field_validator

from smdist.spec.base import StrictModel
from smdist.spec.cluster import Cluster

# A plain mpirun flag or value: no quoting, no shell metacharacters, nothing a shell would expand.
_MPI_TOKEN = re.compile(r"^[A-Za-z0-9_.,:/@%+=^-]+$")


def check_custom_mpi_options(value: str) -> str:
    """Reject anything but plain mpirun flags: the container pastes them into a command line."""
    if not value:
        return value
    control = [char for char in value if ord(char) < 32 or ord(char) == 127]
    if control:
        raise ValueError(
            f"{value!r} holds a control character ({control[0]!r}); custom MPI options are "
            "plain mpirun flags on one line, such as '-x NCCL_DEBUG=INFO'"
        )
    try:
        tokens = shlex.split(value)
    except ValueError as exc:
        raise ValueError(f"cannot split {value!r} into mpirun flags: {exc}") from exc
    bad = [token for token in tokens if not _MPI_TOKEN.match(token)]
    if bad or tokens != value.split():
        shown = bad[0] if bad else value
        raise ValueError(
            f"{shown!r} is not a plain mpirun flag; use flags such as "
            "'-x NCCL_DEBUG=INFO --mca btl_tcp_if_include eth0' without quotes or shell "
            "characters (; & | $ ` < > ( ) { } * ? ! ~ \\ quotes)"
        )
    if not tokens[0].startswith("-"):
        raise ValueError(f"custom MPI options must start with a flag such as '-x', got {value!r}")
    return value


def mpi_options_field() -> Any:
    return Field("", description="extra mpirun flags, e.g. '-x NCCL_DEBUG=INFO'")


class MPIOptionsMixin(StrictModel):
    custom_mpi_options: str = mpi_options_field()

    def mpi_distribution(self, cluster: Cluster) -> dict[str, Any]:
        """The ``mpi`` part of the distribution: mpirun's processes per host and flags."""
        return {
            "enabled": True,
            "processes_per_host": self.resolve_processes_per_host(cluster),  # type: ignore[attr-defined]
            "custom_mpi_options": self.custom_mpi_options,
        }

    @field_validator("custom_mpi_options")
    @classmethod
    def _plain_mpi_flags(cls, value: str) -> str:
        return check_custom_mpi_options(value)


def mpi_hyperparameters(mpi: dict[str, Any]) -> dict[str, Any]:
    """What SDK v2 sends for an ``mpi`` distribution (processes only when given)."""
    values: dict[str, Any] = {"sagemaker_mpi_enabled": True}
    if mpi.get("processes_per_host") is not None:
        values["sagemaker_mpi_num_of_processes_per_host"] = mpi["processes_per_host"]
    values["sagemaker_mpi_custom_mpi_options"] = mpi.get("custom_mpi_options", "")
    return values
