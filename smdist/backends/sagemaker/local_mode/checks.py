"""What SageMaker local mode needs on this machine, checked before anything is staged.

Each check agrees with what the installed SDK line will accept, by asking that SDK: Docker
Compose is found with the SDK's own ``_get_compose_cmd_prefix`` (SDK v2 takes ``docker compose``
only when its version text holds "v2", so Compose v5 or a distribution's "2.24.6+ds1" build
fails there; SDK v3 reads the major version), so smdist never accepts a machine whose job then
dies inside ``fit`` with the SDK's "Docker Compose is not installed".
"""

from __future__ import annotations

import json
import shutil
import subprocess
from importlib import metadata

from smdist.errors import CANNOT_RUN_HERE, Problem, SpecError
from smdist.spec.job import JobSpec

# The local backend, as each way in names it (no Docker needed).
_EMULATED = "`smdist run FILE` (or backend='local' from Python; no Docker needed)"
NO_DOCKER_HINT = (
    "install Docker Engine with the Compose v2 plugin, or run the job on emulated hosts with "
    f"{_EMULATED}"
)
NVIDIA_HINT = (
    "install the NVIDIA Container Toolkit and register its runtime "
    "(`sudo nvidia-ctk runtime configure --runtime=docker && sudo systemctl restart docker`), "
    "or use a CPU instance type (local) for local mode"
)
SDK_INSTALLS = {
    "3": "pip install 'smdist[sagemaker]' (SDK v3)",
    "2": "pip install 'sagemaker>=2.200,<3' (SDK v2)",
}
COMMAND_TIMEOUT = 20.0


def unavailable(message: str, hint: str = NO_DOCKER_HINT) -> SpecError:
    return SpecError(
        [Problem("backend", f"sagemaker-local: {message}", valid=hint)], CANNOT_RUN_HERE
    )


def sdk_line() -> str:
    """ "2" or "3": the installed SageMaker Python SDK's major version; SpecError otherwise."""
    try:
        version = metadata.version("sagemaker")
    except metadata.PackageNotFoundError:
        version = None
    line = (version or "").split(".")[0]
    if line in SDK_INSTALLS:
        return line
    found = f"sagemaker {version} is installed" if version else "sagemaker is not installed"
    raise unavailable(
        f"SageMaker local mode runs through the SageMaker Python SDK; {found}",
        " or ".join(SDK_INSTALLS.values()),
    )


def _run(argv: list[str]) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=COMMAND_TIMEOUT)
    except subprocess.TimeoutExpired:
        raise unavailable(
            f"`{' '.join(argv)}` did not answer within {COMMAND_TIMEOUT:.0f} s"
        ) from None


def check_docker() -> str:
    """The path of ``docker`` once its daemon answers; SpecError saying what is missing."""
    docker = shutil.which("docker")
    if docker is None:
        raise unavailable(
            "SageMaker local mode runs its containers with Docker; `docker` is not on PATH"
        )
    info = _run([docker, "info", "--format", "{{.ServerVersion}}"])
    if info.returncode != 0:
        detail = (info.stderr or info.stdout).strip().splitlines()
        raise unavailable(
            "cannot reach the Docker daemon" + (f" ({detail[-1]})" if detail else ""),
            "start the Docker daemon (e.g. `sudo systemctl start docker`), or run the job on "
            f"emulated hosts with {_EMULATED}",
        )
    return docker


def _compose_version(docker: str) -> str:
    found = _run([docker, "compose", "version"])
    text = (found.stdout or "").strip() if found.returncode == 0 else ""
    return text or "no `docker compose` plugin"


def sdk_compose_command(line: str) -> list[str]:
    """The Compose command the installed SDK line picks; ImportError when it finds none."""
    if line == "2":
        from sagemaker.local.image import _SageMakerContainer

        return list(_SageMakerContainer._get_compose_cmd_prefix())
    from sagemaker.train.local.local_container import _LocalContainer

    # An instance method that uses no instance state: called unbound, as the SDK would call it.
    return list(_LocalContainer._get_compose_cmd_prefix(None))


def check_compose(line: str, docker: str) -> list[str]:
    """The Compose command the SDK will run, or SpecError naming the version it refused."""
    try:
        return sdk_compose_command(line)
    except ImportError:
        pass
    version = _compose_version(docker)
    if line == "2":
        hint = (
            "SDK v2 takes `docker compose` only when `docker compose version` says v2, else a "
            "`docker-compose` on PATH: install Compose v2, put a Compose v2 binary on PATH as "
            "`docker-compose`, or use SDK v3 (" + SDK_INSTALLS["3"] + ")"
        )
    else:
        hint = "install the Docker Compose plugin, version 2 or later"
    raise unavailable(
        f"SageMaker Python SDK v{line} finds no Docker Compose it accepts "
        f"(`docker compose version`: {version!r}; no `docker-compose` on PATH)",
        hint,
    )


def check_gpu_runtime(docker: str, gpus_wanted: int) -> None:
    """For ``local_gpu``: the NVIDIA runtime Docker needs, and enough GPUs on this machine."""
    runtimes = _run([docker, "info", "--format", "{{json .Runtimes}}"])
    try:
        names = set(json.loads(runtimes.stdout or "{}"))
    except ValueError:
        names = set()
    if runtimes.returncode != 0 or "nvidia" not in names:
        found = ", ".join(sorted(names)) or "none reported"
        raise unavailable(
            f"GPU containers need Docker's NVIDIA runtime; this Docker has: {found}", NVIDIA_HINT
        )
    smi = shutil.which("nvidia-smi")
    listed = _run([smi, "-L"]) if smi else None
    gpus = (
        len([row for row in listed.stdout.splitlines() if row.startswith("GPU ")])
        if listed is not None and listed.returncode == 0
        else 0
    )
    if gpus < gpus_wanted:
        raise SpecError(
            [
                Problem(
                    "cluster.instance_type",
                    f"plans {gpus_wanted} GPU(s) per host, but this machine has {gpus}: local "
                    "mode runs on this machine's GPUs, and ranks without one fail",
                    None,
                    "instance_type: local_gpu (the ranks follow this machine's GPUs), or a type "
                    f"with at most {gpus} GPU(s)",
                )
            ]
        )


def refused_settings(spec: JobSpec) -> list[Problem]:
    """What SageMaker local mode cannot run: heterogeneous clusters (the developer guide: "not
    compatible with SageMaker local mode") and file system channels (the SDK's local mode reads
    file:// and s3:// channels only). The local backend emulates both."""
    instead = "the local backend (`smdist run FILE`), which emulates it"
    problems = []
    if spec.cluster.instance_groups:
        problems.append(
            Problem(
                "cluster.instance_groups",
                "SageMaker local mode does not run heterogeneous clusters",
                valid=instead,
            )
        )
    problems += [
        Problem(
            f"inputs.{name}.uri",
            "SageMaker local mode reads file:// and s3:// channels only",
            channel.uri,
            instead,
        )
        for name, channel in spec.inputs.items()
        if channel.file_system is not None
    ]
    return problems
