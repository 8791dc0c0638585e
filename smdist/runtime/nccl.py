"""NCCL / libfabric settings for smdist's launcher on a GPU host, as defaults.

Without them NCCL may pick the wrong network interface, probe InfiniBand that is not there, or
ignore the EFA adapter of p4d/p5-class instances. What each instance type needs is decided once,
in ``smdist.contract.fabric``, from the plan's launch that ships with the job (its EFA and RDMA
facts come from smdist's catalogue); this module only applies it on the host. These are defaults:
a variable the user (or the container image) already set is never replaced. The result is
returned; the launcher passes it in the child's environment.

SMDIST_EFA=1/0 overrides the EFA the launch says. Run outside a job smdist planned (no launch
shipped), EFA is what the host has (adapters bound to the ``efa`` driver under
/sys/class/infiniband) and RDMA is not forced.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from ..contract.fabric import efa_environment
from ..contract.launch import Launch
from .environments.sagemaker import SageMakerEnvironment

INFINIBAND_CLASS_DIR = Path("/sys/class/infiniband")
EFA_OVERRIDE_ENV = "SMDIST_EFA"


def efa_devices(class_dir: Path = INFINIBAND_CLASS_DIR) -> list[str]:
    """Names of the RDMA devices driven by AWS's ``efa`` driver (empty off EFA instances)."""
    if not class_dir.is_dir():
        return []
    found = []
    for device in sorted(class_dir.iterdir()):
        driver = device / "device" / "driver"
        driver_name = driver.resolve().name if driver.exists() else ""
        if driver_name == "efa" or (not driver_name and device.name.startswith(("efa", "rdmap"))):
            found.append(device.name)
    return found


def _efa_enabled(environ: Mapping[str, str], launch: Launch | None, class_dir: Path) -> bool:
    override = environ.get(EFA_OVERRIDE_ENV, "").strip().lower()
    if override in {"1", "true", "yes", "on"}:
        return True
    if override in {"0", "false", "no", "off"}:
        return False
    if override:
        raise ValueError(f"{EFA_OVERRIDE_ENV}={override!r} is not valid: expected 1 or 0.")
    return launch.efa if launch is not None else bool(efa_devices(class_dir))


def nccl_defaults(
    environ: Mapping[str, str] | None = None,
    launch: Launch | None = None,
    *,
    efa: bool | None = None,
    class_dir: Path = INFINIBAND_CLASS_DIR,
) -> dict[str, str]:
    """The variables to add for NCCL on a GPU host of ``launch`` (None: the job's launch was not
    shipped); none of those already present in ``environ``."""
    environ = os.environ if environ is None else environ
    sagemaker = SageMakerEnvironment(environ) if SageMakerEnvironment.detect(environ) else None
    interface = sagemaker.network_interface_name if sagemaker else None
    use_efa = _efa_enabled(environ, launch, class_dir) if efa is None else efa
    rdma = use_efa and launch is not None and launch.efa_rdma

    defaults = {"NCCL_DEBUG": "WARN"}
    if interface:
        defaults["NCCL_SOCKET_IFNAME"] = interface
    defaults.update(efa_environment(use_efa, rdma, gpus=1))
    return {name: value for name, value in defaults.items() if name not in environ}
