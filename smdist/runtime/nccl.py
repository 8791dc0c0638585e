"""NCCL / libfabric settings that multi-host GPU training on SageMaker needs, as defaults.

Without them NCCL may pick the wrong network interface, probe InfiniBand that is not there, or
ignore the EFA adapter of p4d/p5-class instances. These are defaults only: a variable the user
(or the container image) already set is never replaced. The result is returned; the launcher
passes it in the child's environment.

- NCCL_SOCKET_IFNAME: the interface SageMaker announces (SM_NETWORK_INTERFACE_NAME or
  resourceconfig.json), so NCCL does not bind to docker0 or lo.
- With EFA: FI_PROVIDER=efa, and FI_EFA_USE_DEVICE_RDMA=1 on instance families whose EFA
  supports RDMA (libfabric refuses to start when it is set on one that does not).
- Without EFA: NCCL_IB_DISABLE=1 (what SageMaker's PyTorch toolkit sets too).
- NCCL_DEBUG=WARN: NCCL reports why it fails instead of failing silently.

SMDIST_EFA=1/0 overrides the EFA detection, which looks for adapters bound to the ``efa``
driver under /sys/class/infiniband.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from .environments.sagemaker import SageMakerEnvironment

INFINIBAND_CLASS_DIR = Path("/sys/class/infiniband")
EFA_OVERRIDE_ENV = "SMDIST_EFA"
# Families whose EFA supports RDMA read (FI_EFA_USE_DEVICE_RDMA=1), the instance name's second
# part. A copy of the catalogue's `efa_rdma` facts (instances.yaml, sources dated there): the
# runtime ships without the catalogue, and a unit test keeps the two equal.
RDMA_INSTANCE_FAMILIES = frozenset(
    {
        "g6",
        "g6e",
        "p4d",
        "p4de",
        "p5",
        "p5e",
        "p5en",
        "p6-b200",
        "p6e-gb200",
        "trn1",
        "trn1n",
        "trn2",
    }
)


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


def _efa_enabled(environ: Mapping[str, str], class_dir: Path) -> bool:
    override = environ.get(EFA_OVERRIDE_ENV, "").strip().lower()
    if override in {"1", "true", "yes", "on"}:
        return True
    if override in {"0", "false", "no", "off"}:
        return False
    if override:
        raise ValueError(f"{EFA_OVERRIDE_ENV}={override!r} is not valid: expected 1 or 0.")
    return bool(efa_devices(class_dir))


def supports_efa_rdma(instance_type: str | None) -> bool:
    """``ml.p4d.24xlarge`` -> True; unknown or other families -> False."""
    if not instance_type:
        return False
    parts = instance_type.split(".")
    family = parts[1] if parts[0] == "ml" and len(parts) > 2 else parts[0]
    return family in RDMA_INSTANCE_FAMILIES


def nccl_defaults(
    environ: Mapping[str, str] | None = None,
    *,
    efa: bool | None = None,
    class_dir: Path = INFINIBAND_CLASS_DIR,
) -> dict[str, str]:
    """The variables to add for NCCL; none of those already present in ``environ``."""
    environ = os.environ if environ is None else environ
    sagemaker = SageMakerEnvironment(environ) if SageMakerEnvironment.detect(environ) else None
    interface = sagemaker.network_interface_name if sagemaker else None
    instance_type = sagemaker.instance_type if sagemaker else None
    use_efa = _efa_enabled(environ, class_dir) if efa is None else efa

    defaults = {"NCCL_DEBUG": "WARN"}
    if interface:
        defaults["NCCL_SOCKET_IFNAME"] = interface
    if use_efa:
        defaults["FI_PROVIDER"] = "efa"
        if supports_efa_rdma(instance_type):
            defaults["FI_EFA_USE_DEVICE_RDMA"] = "1"
    else:
        defaults["NCCL_IB_DISABLE"] = "1"
    return {name: value for name, value in defaults.items() if name not in environ}
