"""NCCL / EFA defaults: added where missing, never over what the user set."""

from __future__ import annotations

import json
import os
from pathlib import Path
from types import MappingProxyType

import pytest

from smdist.contract.launch import Launch
from smdist.planning.plan import plan
from smdist.runtime.nccl import efa_devices, nccl_defaults
from smdist.spec.job import JobSpec

P4D = {
    "SM_HOSTS": '["algo-1","algo-2"]',
    "SM_CURRENT_HOST": "algo-1",
    "SM_CURRENT_INSTANCE_TYPE": "ml.p4d.24xlarge",
    "SM_NETWORK_INTERFACE_NAME": "eth0",
}


def test_without_efa_infiniband_is_disabled_and_the_interface_pinned():
    assert nccl_defaults(MappingProxyType(P4D), efa=False) == {
        "NCCL_DEBUG": "WARN",
        "NCCL_SOCKET_IFNAME": "eth0",
        "NCCL_IB_DISABLE": "1",
    }


def planned_launch(instance_type: str) -> Launch:
    """The launch a DDP job on two ``instance_type`` hosts ships with its code."""
    spec = {"name": "nccl", "strategy": {"kind": "pytorch_ddp"},
            "cluster": {"instance_type": instance_type, "instance_count": 2}}  # fmt: skip
    return plan(JobSpec.from_dict(spec)).launch


def test_with_efa_on_an_rdma_instance_libfabric_uses_efa_and_rdma():
    assert nccl_defaults(MappingProxyType(P4D), planned_launch("ml.p4d.24xlarge")) == {
        "NCCL_DEBUG": "WARN",
        "NCCL_SOCKET_IFNAME": "eth0",
        "FI_PROVIDER": "efa",
        "NCCL_PROTO": "simple",
        "FI_EFA_USE_DEVICE_RDMA": "1",
        "RDMAV_FORK_SAFE": "1",
    }


def test_efa_without_rdma_support_does_not_ask_for_rdma():
    environ = dict(P4D, SM_CURRENT_INSTANCE_TYPE="ml.g5.48xlarge")
    defaults = nccl_defaults(MappingProxyType(environ), planned_launch("ml.g5.48xlarge"))
    assert defaults["FI_PROVIDER"] == "efa"
    assert "FI_EFA_USE_DEVICE_RDMA" not in defaults


def test_without_a_shipped_launch_efa_is_found_but_rdma_never_forced(tmp_path):
    class_dir = fake_sysfs(tmp_path, {"rdmap16s27": "efa"})
    defaults = nccl_defaults(MappingProxyType(P4D), class_dir=class_dir)
    assert defaults["FI_PROVIDER"] == "efa" and "FI_EFA_USE_DEVICE_RDMA" not in defaults


def test_variables_the_user_set_are_never_replaced():
    environ = dict(P4D, NCCL_DEBUG="INFO", NCCL_SOCKET_IFNAME="ens5", NCCL_IB_DISABLE="0")
    assert nccl_defaults(MappingProxyType(environ), efa=False) == {}


def test_interface_comes_from_the_resource_config_when_no_variable_names_it():
    environ = {
        "SM_RESOURCE_CONFIG": json.dumps(
            {"current_host": "algo-1", "hosts": ["algo-1"], "network_interface_name": "ens6"}
        )
    }
    assert nccl_defaults(MappingProxyType(environ), efa=False)["NCCL_SOCKET_IFNAME"] == "ens6"


def test_outside_sagemaker_no_interface_is_pinned():
    defaults = nccl_defaults(MappingProxyType({}), efa=False)
    assert defaults == {"NCCL_DEBUG": "WARN", "NCCL_IB_DISABLE": "1"}


def fake_sysfs(root: Path, devices: dict[str, str]) -> Path:
    """A /sys/class/infiniband look-alike: device -> driver name."""
    class_dir = root / "class" / "infiniband"
    for device, driver in devices.items():
        driver_dir = root / "bus" / "pci" / "drivers" / driver
        driver_dir.mkdir(parents=True, exist_ok=True)
        (class_dir / device / "device").mkdir(parents=True)
        os.symlink(driver_dir, class_dir / device / "device" / "driver")
    class_dir.mkdir(parents=True, exist_ok=True)
    return class_dir


def test_efa_adapters_are_found_by_their_driver(tmp_path):
    class_dir = fake_sysfs(tmp_path, {"rdmap16s27": "efa", "mlx5_0": "mlx5_core"})
    assert efa_devices(class_dir) == ["rdmap16s27"]
    assert efa_devices(tmp_path / "absent") == []


def test_detected_efa_is_used_unless_overridden(tmp_path):
    class_dir = fake_sysfs(tmp_path, {"rdmap16s27": "efa"})
    assert nccl_defaults(MappingProxyType(P4D), class_dir=class_dir)["FI_PROVIDER"] == "efa"
    off = MappingProxyType(dict(P4D, SMDIST_EFA="0"))
    assert "FI_PROVIDER" not in nccl_defaults(off, class_dir=class_dir)
    assert "FI_PROVIDER" not in nccl_defaults(off, planned_launch("ml.p4d.24xlarge"))


def test_malformed_efa_override_is_rejected():
    with pytest.raises(ValueError, match="SMDIST_EFA='maybe' is not valid"):
        nccl_defaults(MappingProxyType({"SMDIST_EFA": "maybe"}))


@pytest.mark.parametrize(
    "instance_type",
    ["ml.p5e.48xlarge", "ml.p5en.48xlarge", "ml.p6-b200.48xlarge", "ml.p6e-gb200.36xlarge"],
)
def test_p5e_p5en_and_p6_get_efa_with_rdma(instance_type):
    environ = MappingProxyType(dict(P4D, SM_CURRENT_INSTANCE_TYPE=instance_type))
    defaults = nccl_defaults(environ, planned_launch(instance_type))
    assert (defaults["FI_PROVIDER"], defaults["FI_EFA_USE_DEVICE_RDMA"]) == ("efa", "1")


def test_runtime_asks_for_rdma_exactly_where_the_catalogue_says():
    from smdist import catalog
    from smdist.catalog import efa

    for name in catalog.known_instance_types():
        info = catalog.instance(name)
        if not info.efa or info.accelerator == "cpu":
            continue
        environ = MappingProxyType(dict(P4D, SM_CURRENT_INSTANCE_TYPE=name))
        defaults = nccl_defaults(environ, planned_launch(name))
        assert ("FI_EFA_USE_DEVICE_RDMA" in defaults) is info.efa_rdma, name
        assert {k: v for k, v in defaults.items() if k in efa.nccl_environment(name)} == (
            efa.nccl_environment(name)
        ), name
