"""One instance type's facts (``InstanceInfo``), built and checked from its instances.yaml entry."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from smdist.catalog import compute_capability
from smdist.catalog.data_errors import CatalogError, require

INSTANCE_LIBRARIES = frozenset({"smddp", "smp_v1", "smp_v2", "nccl", "neuron"})
# CreateTrainingJob fields a family's entry may say SageMaker refuses (refused_request_fields):
# the ones smdist's requests know how to leave out.
REFUSABLE_REQUEST_FIELDS = frozenset({"VolumeSizeInGB"})
ACCELERATOR_KINDS = frozenset({"gpu", "cpu", "trainium", "inferentia"})
INSTANCE_STORAGE_KINDS = frozenset({"nvme", "ebs"})

INSTANCES_FILE = "instances.yaml"
_INSTANCE_KEYS = frozenset(
    {
        "vcpus",
        "memory_gib",
        "gpus",
        "gpu_model",
        "gpu_memory_gib",
        "gpu_arch",
        "gpu_compute_capability",
        "accelerator",
        "accelerators",
        "accelerators_unit",
        "neuron_cores",
        "efa",
        "efa_rdma",
        "efa_interfaces",
        "price_per_hour",
        "price_note",
        "libraries",
        "retired",
        "training",
        "refused_request_fields",
        "instance_storage",
        "instance_storage_gb",
        "note",
    }
)


@dataclass(frozen=True)
class InstanceInfo:
    """What one SageMaker training instance type offers.

    ``accelerators`` counts the NVIDIA GPUs on GPU instances and the Trainium chips (Neuron
    devices) on Trainium instances. ``bf16``/``tf32`` say whether the instance's NVIDIA GPUs
    support those precisions (Ampere or newer); they are False on CPU and Trainium instances.
    ``libraries`` names the distributed libraries that run there: ``nccl`` on any NVIDIA GPU,
    ``neuron`` on Trainium and Inferentia, and the SageMaker libraries where AWS documents
    support. ``training`` is False for instances CreateTrainingJob does not offer (Inferentia).
    ``gpu_compute_capability`` is the CUDA compute capability of its GPUs (``"7.0"`` for a
    V100), None without NVIDIA GPUs: a framework build runs there only if it carries kernels
    for it (``compute_capability.runs_on``).
    ``efa_rdma`` says whether the EFA supports RDMA read (FI_EFA_USE_DEVICE_RDMA=1 is safe);
    ``efa_interfaces`` is the most EFA interfaces it takes, None where undocumented;
    ``fabric`` is what collectives use of it. ``refused_request_fields`` names the
    CreateTrainingJob fields SageMaker refuses for it (``VolumeSizeInGB`` on instance types
    with only instance storage), which no request smdist renders carries.
    ``instance_storage`` is ``"nvme"`` where SageMaker trains on the instance's NVMe storage
    and attaches no EBS volume, ``"ebs"`` where it attaches one, None where not stated.
    """

    instance_type: str
    family: str
    vcpus: int
    memory_gib: float
    gpus: int
    gpu_model: str | None
    gpu_memory_gib: float | None
    gpu_compute_capability: str | None
    accelerator: str
    accelerators: int
    efa: bool
    efa_rdma: bool
    efa_interfaces: int | None
    price_per_hour: float | None
    retired: bool
    training: bool
    libraries: frozenset[str]
    bf16: bool
    tf32: bool
    note: str | None
    refused_request_fields: frozenset[str] = frozenset()
    instance_storage: str | None = None
    instance_storage_gb: int | None = None  # the NVMe store where SageMaker trains on it

    @property
    def fabric(self) -> tuple[bool, bool]:
        """(EFA, RDMA read) as a job's collectives use them: NCCL on GPUs, Neuron's collectives
        on Trainium. A CPU instance's EFA is left alone (no NCCL there, and SageMaker's own EFA
        lists name no CPU type), so CPU jobs get no fabric settings."""
        if self.accelerator == "cpu":
            return False, False
        return self.efa, self.efa_rdma


def _efa_values(where: str, values: dict[str, Any]) -> tuple[bool, int | None]:
    # RDMA must be stated for every EFA instance: guessing it wrong makes libfabric abort.
    efa, rdma, interfaces = values["efa"], values.get("efa_rdma"), values.get("efa_interfaces")
    require(isinstance(efa, bool), f"{where}: efa {efa!r} must be true or false.")
    require(not efa or isinstance(rdma, bool), f"{where}: efa_rdma must be true or false.")
    require(efa or not (rdma or interfaces), f"{where}: efa_rdma/efa_interfaces need efa.")
    require(
        interfaces is None or (isinstance(interfaces, int) and interfaces >= 1),
        f"{where}: efa_interfaces {interfaces!r} must be a positive integer or null.",
    )
    return bool(rdma), interfaces


def _check_entry(where: str, instance_type: str, family: str, values: dict[str, Any]) -> str:
    """The entry's keys, name and required facts hold; returns its accelerator kind."""
    unknown = set(values) - _INSTANCE_KEYS
    require(not unknown, f"{where}: unknown keys {sorted(unknown)}.")
    require(
        instance_type.startswith("ml.") and instance_type.split(".")[1] == family,
        f"{where}: listed under family {family!r} but its name says otherwise.",
    )
    accelerator = values.get("accelerator")
    require(
        accelerator in ACCELERATOR_KINDS,
        f"{where}: accelerator {accelerator!r} is not one of {sorted(ACCELERATOR_KINDS)}.",
    )
    for key in ("vcpus", "memory_gib", "efa"):
        require(key in values, f"{where}: missing {key!r}.")
    return accelerator


def _precisions(
    where: str, values: dict[str, Any], architectures: dict[str, Any]
) -> tuple[bool, bool]:
    """(bf16, tf32) of the entry's GPU architecture; both False without one."""
    arch = values.get("gpu_arch")
    if arch is None:
        return False, False
    require(arch in architectures, f"{where}: gpu_arch {arch!r} is not described.")
    return bool(architectures[arch]["bf16"]), bool(architectures[arch]["tf32"])


def _compute_capability(
    where: str, accelerator: str, values: dict[str, Any], architectures: dict[str, Any]
) -> str | None:
    """The GPU's compute capability: required on GPU instances, one its architecture has."""
    capability = values.get("gpu_compute_capability")
    if accelerator != "gpu":
        require(capability is None, f"{where}: gpu_compute_capability without GPUs.")
        return None
    require(
        isinstance(capability, str), f"{where}: gpu_compute_capability must be a quoted string."
    )
    try:
        compute_capability.parse(capability)
    except ValueError as error:
        raise CatalogError(f"{where}: {error}") from None
    arch = values.get("gpu_arch")
    listed = (architectures.get(arch) or {}).get("compute_capabilities") or ()
    require(
        capability in listed,
        f"{where}: compute capability {capability} is not one of {arch}'s {list(listed)}.",
    )
    return capability


def build_instance(
    instance_type: str, family: str, values: dict[str, Any], architectures: dict[str, Any]
) -> InstanceInfo:
    """``instance_type``'s facts from its merged entry ``values``; CatalogError when malformed."""
    where = f"{INSTANCES_FILE}: {instance_type}"
    accelerator = _check_entry(where, instance_type, family, values)
    gpus = int(values.get("gpus", 0))
    if accelerator == "gpu":
        accelerators = int(values.get("accelerators", gpus))
    else:
        accelerators = int(values.get("accelerators", 0))
    libraries = frozenset(values.get("libraries") or ())
    require(
        libraries <= INSTANCE_LIBRARIES,
        f"{where}: libraries {sorted(libraries - INSTANCE_LIBRARIES)} are not among "
        f"{sorted(INSTANCE_LIBRARIES)}.",
    )
    bf16, tf32 = _precisions(where, values, architectures)
    efa_rdma, efa_interfaces = _efa_values(where, values)
    refused = frozenset(values.get("refused_request_fields") or ())
    require(
        refused <= REFUSABLE_REQUEST_FIELDS,
        f"{where}: refused_request_fields {sorted(refused - REFUSABLE_REQUEST_FIELDS)} are not "
        f"among {sorted(REFUSABLE_REQUEST_FIELDS)}.",
    )
    storage = values.get("instance_storage")
    require(
        storage is None or storage in INSTANCE_STORAGE_KINDS,
        f"{where}: instance_storage {storage!r} is not among {sorted(INSTANCE_STORAGE_KINDS)}.",
    )
    price = values.get("price_per_hour")
    gpu_memory = values.get("gpu_memory_gib")
    return InstanceInfo(
        instance_type=instance_type,
        family=family,
        vcpus=int(values["vcpus"]),
        memory_gib=float(values["memory_gib"]),
        gpus=gpus,
        gpu_model=values.get("gpu_model"),
        gpu_memory_gib=None if gpu_memory is None else float(gpu_memory),
        gpu_compute_capability=_compute_capability(where, accelerator, values, architectures),
        accelerator=accelerator,
        accelerators=accelerators,
        efa=bool(values["efa"]),
        efa_rdma=efa_rdma,
        efa_interfaces=efa_interfaces,
        price_per_hour=None if price is None else float(price),
        retired=bool(values.get("retired", False)),
        training=bool(values.get("training", True)),
        libraries=libraries,
        bf16=bf16,
        tf32=tf32,
        note=values.get("note"),
        refused_request_fields=refused,
        instance_storage=storage,
        instance_storage_gb=values.get("instance_storage_gb"),
    )
