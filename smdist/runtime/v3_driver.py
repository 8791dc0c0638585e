"""smdist's SDK v3 driver: what the training toolkit does, for the strategies v3 cannot launch.

SDK v3's ``ModelTrainer`` does not run the image's training toolkit: its ``sm_train.sh`` exports
its own ``SM_*`` set and starts one of its drivers. It has drivers for torchrun and (a
single-host-only) mpirun, none for TensorFlow MultiWorkerMirrored, smddp, SMP v1 or Horovod
across hosts. For those smdist ships this driver in the ``sm_drivers`` channel. On every host it
reads the same three config files the toolkit reads, gives the rank the toolkit's environment
(``container_contract``: every ``SM_*`` of the toolkit, the user's arguments sorted and built the
toolkit's way, never smdist's own settings), applies the PyTorch images' host-name fix that
v3's ``/bin/bash`` entry point skips (``hostname_shim``) and then starts what the toolkit's
runner would, built by ``host_commands`` from the plan's launch value and this image:

- ``program``: runs the program on every host (smdist's torchrun launcher, for DDP with
  restarts: v3's torchrun driver cannot restart);
- ``tf_config``: writes ``TF_CONFIG`` (every host a worker, port 8890) and runs the script;
- ``parameter_server``: the TensorFlow toolkit's steps (``parameter_server_host``): this host's
  parameter server, the script with the toolkit's TF_CONFIG, the wait for the master;
- ``mpirun`` / ``smddp``: the first host starts the runner's mpirun (EFA and NCCL exports,
  smddprun / smddpmprun where installed) once every host's sshd answers; the others wait for
  it to start and end their ranks. How the hosts meet (the image check, sshd, the waits and
  the mark that mpirun ended) is ``v3_driver_mpi``'s.

This module decides what this host runs and with which environment; ``main`` ties the steps
together. Standard library only: it runs in any training image, from the job's code channel.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..contract.commands import HostArguments, Image, Launch, host_command
from ..contract.environment import HostConfig, Machine
from ..contract.host import HostSite, host_environment
from ..contract.hostname_shim import build_dlc_shim, preload, toolkit_shim
from .v3_driver_mpi import (
    HOST_WAIT_SECONDS,
    SSH_PORT,
    check_image,
    mpi_done_file,
    publish_environment,
    start_sshd,
    tell_workers_mpirun_ended,
    wait_for_mpi_daemon,
    wait_for_ports,
)

DRIVER_CONFIG = "/opt/ml/input/data/sm_drivers/distributed.json"


def read_host_config(config_dir: Path, toolkit: Mapping[str, str]) -> HostConfig:
    """The host's config files, with the toolkit's own ``sagemaker_*`` hyperparameters added:
    a v3 request carries none, and the toolkit derives ``SM_FRAMEWORK_PARAMS`` and the
    distribution hosts from them."""

    def load(name: str) -> dict[str, Any]:
        path = config_dir / name
        return json.loads(path.read_text()) if path.exists() else {}

    return HostConfig(
        hyperparameters={**load("hyperparameters.json"), **toolkit},
        resource_config=load("resourceconfig.json"),
        input_data_config=load("inputdataconfig.json"),
    )


def gpu_count(environ: Mapping[str, str]) -> int:
    """v3's environment.py counted the GPUs already (nvidia-smi): reuse its answer."""
    try:
        return int(environ.get("SM_NUM_GPUS", "0"))
    except ValueError:
        return 0


def job_launch(settings: Mapping[str, Any], config: HostConfig) -> Launch:
    """The plan's launch (shipped in the driver's settings) on this job's hosts, as the
    container's resourceconfig.json names them (its groups as SageMaker filled them)."""
    resources = config.resource_config
    launch = settings["launch"]
    return Launch.from_dict(
        launch,
        interface=resources.get("network_interface_name", "eth0"),
        instance_type=resources.get("current_instance_type") or launch["instance_type"],
    ).on_cluster(resources)


def toolkit_environment(
    base: Path, config: HostConfig, environ: Mapping[str, str], framework: str, launch: Launch
) -> dict[str, str]:
    """The rank's environment: the container's, with what the container contract gives the
    host (``contract.host``: every ``SM_*`` as the toolkit sets it, MASTER_*, NCCL, TF_CONFIG)."""
    machine = Machine(
        num_cpus=os.cpu_count() or 1,
        num_gpus=gpu_count(environ),
        num_neurons=int(environ.get("SM_NUM_NEURONS", "0") or 0),
    )
    resources = config.resource_config
    result = host_environment(
        launch,
        list(launch.all_hosts).index(resources["current_host"]),
        config,
        machine,
        job_name=environ.get("TRAINING_JOB_NAME", ""),
        framework=framework,
        site=HostSite(base=base, interface=launch.interface),
        job_environment=environ,
    )
    result["SM_MODULE_DIR"] = str(Path.cwd())  # the code channel, unpacked by sm_train.sh
    result["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(Path.cwd()), environ.get("PYTHONPATH", "")) if p
    )
    return result


def image_here(env: Mapping[str, str], hostname_shim: str | None) -> Image:
    """What this container's image gives the command: its Python, mpi4py, smddprun and
    smddpmprun where installed, the host-name shim, the PyTorch DLC's version variable."""
    path = env.get("PATH", os.defpath)
    return Image(
        python=sys.executable,
        mpi4py=importlib.util.find_spec("mpi4py") is not None,
        smddprun=shutil.which("smddprun", path=path) is not None,
        smddpmprun=shutil.which("smddpmprun", path=path) is not None,
        hostname_shim=hostname_shim,
        torch_version=env.get("SM_DLC_TORCH_VERSION", ""),
        shell_programs=False,  # a program that is not a Python script is executed directly
    )


def apply_hostname_fix(env: dict[str, str], current: str) -> str | None:
    """Preload the DLC's host-name library for the job, as its entry script does (v3 bypasses
    that script); returns the library the MPI ranks preload: the toolkit's, else that one."""
    library = build_dlc_shim(current)
    if library:
        env["LD_PRELOAD"] = preload(library, env.get("LD_PRELOAD", ""))
    return toolkit_shim() or library


def run(argv: list[str], env: Mapping[str, str]) -> int:
    print(f"smdist driver: {json.dumps(argv)}", flush=True)
    return subprocess.run(argv, env=dict(env), check=False).returncode


def main() -> int:
    settings = json.loads(Path(DRIVER_CONFIG).read_text())
    base = Path(os.environ.get("SM_INPUT_DIR", "/opt/ml/input")).parent
    toolkit = dict(settings.get("toolkit_hyperparameters") or {})
    toolkit.setdefault("sagemaker_program", json.dumps(os.environ["SM_ENTRY_SCRIPT"]))
    config = read_host_config(base / "input" / "config", toolkit)
    launch = job_launch(settings, config)
    framework = settings.get("framework", "pytorch")
    env = toolkit_environment(base, config, os.environ, framework, launch)
    hosts = list(launch.hosts)
    current = env["SM_CURRENT_HOST"]
    program = json.loads(toolkit["sagemaker_program"])
    arguments = list(json.loads(env["SM_USER_ARGS"]))
    if launch.launcher.uses_mpi:
        # First: mpirun may reach this host as soon as its ssh port answers, and the sessions
        # it opens read this file (the ranks get the host-name fix through mpirun's exports).
        publish_environment(env)
    image = image_here(env, apply_hostname_fix(env, current))
    own = host_command(
        launch, list(launch.all_hosts).index(current), image, program,
        HostArguments(arguments, arguments),
        exported_names=sorted(name for name in env if name.startswith("SM_")), environ=env,
    )  # fmt: skip
    if not launch.launcher.uses_mpi or current not in hosts:  # one process on this host
        return run(own.argv or [], env)
    output_dir = Path(env.get("SM_OUTPUT_DIR") or base / "output")
    if check_image(launch.launcher.value, hosts, current, env, output_dir):
        return 1
    sshd = start_sshd()
    job_name = env.get("TRAINING_JOB_NAME", "")
    try:
        if own.argv is None:  # mpirun on the first host starts this host's ranks
            return wait_for_mpi_daemon(mpi_done_file(job_name, current))
        missing = wait_for_ports(hosts[1:], SSH_PORT, HOST_WAIT_SECONDS)
        if missing:
            print(f"smdist driver: ssh never answered on {', '.join(missing)}", flush=True)
            return 1
        code = run(own.argv, env)
        tell_workers_mpirun_ended(hosts[1:], job_name)
        return code
    finally:
        if sshd is not None:
            sshd.terminate()


if __name__ == "__main__":  # pragma: no cover - the shipped script calls main()
    sys.exit(main())
