"""What the fake Docker tests share, for both SDK lines' environments.

The DDP script a user would write for SageMaker, the stand-in DLC python
(``.ci/install-dlc-standin``), the checks that decide whether containers can run here (each a
reason to skip, or None), and what each SDK line's ``_get_compose_cmd_prefix`` makes of a
``docker compose version``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from importlib import metadata
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
# Any PyTorch training DLC reference: the SDKs look nothing up for an explicit image_uri.
PYTORCH_IMAGE = "763104351884.dkr.ecr.us-west-2.amazonaws.com/pytorch-training:2.5.1-cpu-py311"
ROLE = "arn:aws:iam::123456789012:role/SmdistFakeDockerRole"
REGION = "us-west-2"
SDK_CONFIG = """\
SchemaVersion: '1.0'
SageMaker:
  PythonSDK:
    Modules:
      TelemetryOptOut: true
"""

TRAIN_SCRIPT = '''\
"""A user's DDP script, as written for SageMaker: gloo over the hosts SageMaker names."""
import argparse
import json
import os

import torch
import torch.distributed as dist

parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, required=True)
parser.add_argument("--lr", type=float, default=0.1)
args = parser.parse_args()  # strict: an argument the platform adds fails the job

hosts = json.loads(os.environ["SM_HOSTS"])
current = os.environ["SM_CURRENT_HOST"]
model_dir = os.environ["SM_MODEL_DIR"]
if "RANK" in os.environ:  # started by torchrun (SDK v3's Torchrun driver)
    dist.init_process_group("gloo")
else:  # one process per host (SDK v2's PyTorch estimator without a distribution)
    dist.init_process_group(
        "gloo",
        init_method=f"tcp://{hosts[0]}:29500",
        rank=hosts.index(current),
        world_size=len(hosts),
    )
rank, world = dist.get_rank(), dist.get_world_size()
torch.manual_seed(0)
model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=args.lr)
for step in range(args.steps):
    inputs = torch.randn(8, 4) + rank
    loss = ((model(inputs) - 1.0) ** 2).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"rank {rank}/{world} on {current}: step {step} loss {loss.item():.4f}", flush=True)
total = torch.tensor([float(rank + 1)])
dist.all_reduce(total)
print(f"rank {rank}/{world}: all_reduce sum {total.item():.0f}", flush=True)
if rank == 0:
    torch.save(model.module.state_dict(), os.path.join(model_dir, "model.pt"))
    with open(os.path.join(model_dir, "ranks.json"), "w") as out:
        json.dump({"world": world, "sum": total.item(), "hosts": hosts}, out)
dist.barrier()
dist.destroy_process_group()
'''

# (compose version printed, legacy docker-compose on PATH) -> what the SDK line's
# _get_compose_cmd_prefix returns (None: it raises ImportError). SDK v2 wants "v2" in the
# version text; SDK v3 wants "version v?N" with N >= 2; both fall back to docker-compose.
COMPOSE_VERSIONS: list[tuple[str | None, bool, dict[str, list[str] | None]]] = [
    ("Docker Compose version v2.29.7", False,
     {"2": ["docker", "compose"], "3": ["docker", "compose"]}),
    ("Docker Compose version v5.0.1", False, {"2": None, "3": ["docker", "compose"]}),
    ("Docker Compose version v5.0.1", True,
     {"2": ["docker-compose"], "3": ["docker", "compose"]}),
    ("Docker Compose version 2.24.6+ds1-0ubuntu2", False, {"2": None, "3": ["docker", "compose"]}),
    ("Docker Compose version 2.24.6+ds1-0ubuntu2", True,
     {"2": ["docker-compose"], "3": ["docker", "compose"]}),
    (None, True, {"2": ["docker-compose"], "3": ["docker-compose"]}),  # Compose v1 only
    (None, False, {"2": None, "3": None}),
]  # fmt: skip


def sdk_line() -> str | None:
    """The major version of the installed SageMaker Python SDK ("2", "3"), or None."""
    try:
        return metadata.version("sagemaker").split(".")[0]
    except metadata.PackageNotFoundError:
        return None


def sdk_compose_prefix(line: str) -> list[str] | None:
    """What the installed SDK line's own _get_compose_cmd_prefix returns (None: ImportError)."""
    try:
        if line == "2":
            from sagemaker.local.image import _SageMakerContainer

            return _SageMakerContainer._get_compose_cmd_prefix()
        from sagemaker.train.local.local_container import _LocalContainer

        return _LocalContainer._get_compose_cmd_prefix(None)  # it uses nothing of self
    except ImportError:
        return None


def why_no_containers() -> str | None:
    """Why the fake's containers cannot run here (root, namespaces, a bridge), or None."""
    if os.geteuid() != 0:
        return "the fake Docker's containers need root (mount, UTS and network namespaces)"
    missing = [tool for tool in ("unshare", "nsenter", "ip", "mount") if not shutil.which(tool)]
    if missing:
        return f"the fake Docker's containers need {', '.join(missing)} (util-linux, iproute2)"
    probe = subprocess.run(
        ["unshare", "--mount", "--uts", "--net", "ip", "link", "add", "br0", "type", "bridge"],
        capture_output=True,
    )
    if probe.returncode != 0:
        return f"namespaces or a bridge cannot be made here: {probe.stderr.decode().strip()}"
    return None


def standin_python() -> Path:
    """The python of the stand-in DLC: $SMDIST_DLC_VENV or <repo>/.venv-dlc."""
    venv = Path(os.environ.get("SMDIST_DLC_VENV") or REPO / ".venv-dlc")
    return venv / "bin" / "python"


def why_no_standin() -> str | None:
    python = standin_python()
    if not python.is_file():
        return f"no stand-in DLC python at {python}: run .ci/install-dlc-standin"
    train = python.parent / "train"
    if not train.is_file():
        return f"{python.parent} has no `train` (sagemaker-training): run .ci/install-dlc-standin"
    return None


def aws_offline(monkeypatch, tmp_path: Path) -> None:
    """Region and dummy credentials for the SDK, nothing of the user's AWS configuration, and
    every AWS endpoint a closed local port: the runs must not need AWS at all."""
    for name in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_SECURITY_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    monkeypatch.setenv("AWS_REGION", REGION)
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-aws-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-aws-credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setenv("SAGEMAKER_SUPPRESS_V2_WARNING", "1")
    # Both SDK lines read their defaults from these files: telemetry off (it would send a
    # request to AWS at every fit/train), nothing of the user's.
    config = tmp_path / "sagemaker-config.yaml"
    config.write_text(SDK_CONFIG)
    monkeypatch.setenv("SAGEMAKER_USER_CONFIG_OVERRIDE", str(config))
    monkeypatch.setenv("SAGEMAKER_ADMIN_CONFIG_OVERRIDE", str(config))
