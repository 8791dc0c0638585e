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
- ``mpirun`` / ``smddp``: first each host checks that its image has what the launcher needs
  (``image_prerequisites``: mpirun on the first host, an ssh server on every host of a
  multi-host job) and fails at once, in ``output/failure``, when not; then every host starts
  sshd; the first host waits for the others' ssh ports and starts the runner's mpirun (EFA and
  NCCL exports, smddprun / smddpmprun where installed); the others wait for mpirun's daemon
  to come and go, as the toolkit's workers do, or for the first host to say over ssh that its
  mpirun ended (as v3's own MPI driver does: a daemon whose ranks end within one poll would
  otherwise never be seen, and the host would wait for it for half an hour).

Standard library only: it runs in any training image, from the job's code channel.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..contract.commands import HostArguments, Image, Launch, host_command
from ..contract.environment import HostConfig, Machine
from ..contract.host import HostSite, host_environment
from ..contract.hostname_shim import build_dlc_shim, preload, toolkit_shim
from ..contract.image_prerequisites import absent_optional, missing_prerequisites

DRIVER_CONFIG = "/opt/ml/input/data/sm_drivers/distributed.json"
SSH_PORT = 22
SSHD = "/usr/sbin/sshd"
ETC_ENVIRONMENT = Path("/etc/environment")
MPI_DAEMONS = ("orted", "prted")
HOST_WAIT_SECONDS = 300  # v3's own MPI driver waits as long for its workers
DAEMON_APPEAR_SECONDS = 1800


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
    container's resourceconfig.json names them."""
    resources = config.resource_config
    launch = settings["launch"]
    return Launch.from_dict(
        launch,
        hosts=tuple(resources["hosts"]),
        interface=resources.get("network_interface_name", "eth0"),
        instance_type=resources.get("current_instance_type") or launch["instance_type"],
    )


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
        list(launch.hosts).index(resources["current_host"]),
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


def _port_open(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=2):
            return True
    except OSError:
        return False


def wait_for_ports(hosts: list[str], port: int, timeout: float) -> list[str]:
    """The hosts whose ``port`` did not open within ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    waiting = list(hosts)
    while waiting and time.monotonic() < deadline:
        waiting = [host for host in waiting if not _port_open(host, port)]
        if waiting:
            time.sleep(1)
    return waiting


def _daemon_running() -> bool:
    for status in Path("/proc").glob("[0-9]*/comm"):
        try:
            if status.read_text().strip() in MPI_DAEMONS:
                return True
        except OSError:
            continue
    return False


def mpi_done_file(job_name: str, host: str) -> Path:
    """Where the first host marks, on ``host``, that its mpirun ended (per job and host: an
    emulation's hosts may share one /tmp)."""
    return Path("/tmp") / f"smdist-mpi-done-{job_name or 'job'}-{host}"


def wait_for_mpi_daemon(
    done: Path, appear: float = DAEMON_APPEAR_SECONDS, poll: float = 1.0
) -> int:
    """A worker's part: wait until mpirun's daemon has come and gone on this host, or until the
    first host marks ``done``."""
    deadline = time.monotonic() + appear
    seen = False
    while not done.exists():
        running = _daemon_running()
        if seen and not running:
            return 0
        seen = seen or running
        if not seen and time.monotonic() > deadline:
            print(f"smdist driver: no MPI daemon started here within {appear:.0f} s", flush=True)
            return 1
        time.sleep(poll)
    done.unlink(missing_ok=True)
    return 0


def tell_workers_mpirun_ended(workers: list[str], job_name: str) -> None:
    """Mark on every other host that mpirun ended (``mpi_done_file``), through the same ssh
    mpirun used; a host that cannot be reached still ends when its daemon does."""
    for host in workers:
        command = ["ssh", "-o", "StrictHostKeyChecking=no", host,
                   "touch", str(mpi_done_file(job_name, host))]  # fmt: skip
        try:
            subprocess.run(command, stdin=subprocess.DEVNULL, capture_output=True, timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            pass


def publish_environment(env: Mapping[str, str], path: Path = ETC_ENVIRONMENT) -> None:
    """The rank environment into ``/etc/environment``, for the sshd sessions mpirun opens
    here (the training toolkit and v3's own MPI driver do the same)."""
    lines = [f"{key}={value}" for key, value in env.items() if "\n" not in value and key]
    with open(path, "a") as handle:
        handle.write("".join(line + "\n" for line in lines))


def start_sshd() -> subprocess.Popen | None:
    if not Path(SSHD).exists():
        return None
    return subprocess.Popen([SSHD, "-D"])


def run(argv: list[str], env: Mapping[str, str]) -> int:
    print(f"smdist driver: {json.dumps(argv)}", flush=True)
    return subprocess.run(argv, env=dict(env), check=False).returncode


def check_image(
    launcher: str, hosts: list[str], current: str, env: Mapping[str, str], output_dir: Path
) -> int:
    """0 when this host's image has what ``launcher`` needs; else 1, with one line per missing
    thing printed and written to the toolkit's failure file (``output/failure``)."""
    path = env.get("PATH", os.defpath)
    absent = absent_optional(launcher, path)
    if absent:
        print(f"smdist driver: smddp runs without {' and '.join(absent)} "
              "(not in this image)", flush=True)  # fmt: skip
    missing = missing_prerequisites(
        launcher, first_host=current == hosts[0], host_count=len(hosts), path=path,
        sshd=SSHD, ssh_port=SSH_PORT,
    )  # fmt: skip
    if not missing:
        return 0
    lines = [f"smdist driver: {item.message}" for item in missing]
    for line in lines:
        print(line, flush=True)
    try:
        output_dir.mkdir(parents=True, exist_ok=True)
        (output_dir / "failure").write_text("".join(line + "\n" for line in lines))
    except OSError as exc:
        print(f"smdist driver: cannot write {output_dir / 'failure'}: {exc}", flush=True)
    return 1


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
        launch, hosts.index(current), image, program, HostArguments(arguments, arguments),
        exported_names=sorted(name for name in env if name.startswith("SM_")), environ=env,
    )  # fmt: skip
    if not launch.launcher.uses_mpi:  # one process per host: the program, torchrun, PS host
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
