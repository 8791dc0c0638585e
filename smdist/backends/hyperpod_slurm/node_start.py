"""The first step of a HyperPod Slurm job on every node: the SageMaker contract of this node,
then the command the SageMaker container would start there.

``srun`` starts it once per node (``python smdist_node.py <job folder>``, copied into the job's
folder). It reads the job's settings (``node.json``), the job's nodes (``SMDIST_SLURM_HOSTS``,
which the batch script takes from ``scontrol show hostnames``) and its own node name
(``SLURMD_NODENAME``); then, from the contract shipped in the job's code (``code/smdist``):

1. writes this node's ``input/config`` files (hyperparameters, resource config with the Slurm
   node names as the hosts, input data config) under ``hosts/<node>/``, the node's stand-in for
   ``/opt/ml``, whose ``model``, ``checkpoints`` and channel folders are links to the shared
   folders of the job;
2. builds the node's environment with the contract's one builder (``SM_*``, the job
   variables, MASTER_ADDR/MASTER_PORT, NCCL and EFA settings) over the node's own (the
   cluster's, less the variables that describe another job);
3. starts the host's command (``contract.commands.host_command``): the program once, or
   torchrun with this node's rank, and stays its parent: a child subreaper, so that what the
   command leaves behind (training processes torchrun left when a second SIGTERM ended it)
   is its child, inside Slurm's step, and is ended when the command ends, as a container
   ends everything in it. SIGTERM from ``scancel`` reaches every process of the step
   directly; this one outlives it to end what is left, and exits with the command's code.

Standard library only, Python 3.8+: it runs in the job's Python on the cluster.
"""

from __future__ import annotations

import ctypes
import json
import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

HOSTS_VARIABLE = "SMDIST_SLURM_HOSTS"
NODE_VARIABLE = "SLURMD_NODENAME"
CONFIG_ERROR = 2
SUBREAPER = 36  # prctl's PR_SET_CHILD_SUBREAPER
LEFTOVER_GRACE = 10.0  # seconds from SIGTERM to SIGKILL for what the command left running
_FOREIGN_PREFIXES = ("SM_", "TORCHELASTIC_", "OMPI_", "HOROVOD_")
_FOREIGN_NAMES = frozenset(
    (
        "TF_CONFIG RANK LOCAL_RANK WORLD_SIZE LOCAL_WORLD_SIZE GROUP_RANK ROLE_RANK MASTER_ADDR "
        "MASTER_PORT TRAINING_JOB_NAME SAGEMAKER_JOB_NAME CURRENT_HOST SMDIST_RDZV_PORT "
        "SMDIST_CHECKPOINT_DIR"
    ).split()
)


class NodeError(Exception):
    """This node cannot start the job (said on the job's log; the step exits 2)."""


def node_identity(environ: dict) -> tuple:
    """(the job's nodes in order, this node's name) from Slurm's variables."""
    hosts = [name for name in environ.get(HOSTS_VARIABLE, "").split(",") if name]
    current = environ.get(NODE_VARIABLE, "")
    if not hosts:
        raise NodeError(f"{HOSTS_VARIABLE} names no node: start this under the job's sbatch")
    if current not in hosts:
        raise NodeError(f"{NODE_VARIABLE}={current!r} is none of the job's nodes {hosts}")
    return hosts, current


def default_interface(route_table: str = "/proc/net/route") -> str:
    """The interface of this node's default route (NCCL's and SageMaker's
    ``network_interface_name``), eth0 where none is found."""
    try:
        lines = Path(route_table).read_text().splitlines()[1:]
    except OSError:
        return "eth0"
    for line in lines:
        fields = line.split()
        if len(fields) > 1 and fields[1] == "00000000":
            return fields[0]
    return "eth0"


def gpu_count(dev: str = "/dev") -> int:
    """The node's NVIDIA GPUs, as their device files show them."""
    try:
        names = os.listdir(dev)
    except OSError:
        return 0
    return sum(1 for name in names if name.startswith("nvidia") and name[6:].isdigit())


def clean_environment(environ: dict) -> dict:
    """The node's environment without the variables of another job or cluster."""
    return {
        name: value
        for name, value in environ.items()
        if not name.startswith(_FOREIGN_PREFIXES) and name not in _FOREIGN_NAMES
    }


def _link(link: Path, target: str) -> None:
    """``link`` -> ``target``, made anew (a requeued job makes it again)."""
    if link.is_symlink() or link.is_file():
        link.unlink()
    link.symlink_to(target)


def host_folder(settings: dict, current: str) -> Path:
    """This node's stand-in for ``/opt/ml``: its own folders, links to the shared ones."""
    base = Path(settings["hosts_dir"]) / current
    for folder in ("input/config", "input/data", "output/data", "output/intermediate"):
        (base / folder).mkdir(parents=True, exist_ok=True)
    _link(base / "model", settings["model_dir"])
    _link(base / "checkpoints", settings["checkpoint_dir"])
    for name, channel in settings["channels"].items():
        _link(base / "input" / "data" / name, channel["path"])
    return base


def write_config(base: Path, config: object) -> None:
    """The three files SageMaker writes into ``input/config`` (``config``: a HostConfig)."""
    files = {
        "hyperparameters.json": config.hyperparameters,  # type: ignore[attr-defined]
        "resourceconfig.json": config.resource_config,  # type: ignore[attr-defined]
        "inputdataconfig.json": config.input_data_config,  # type: ignore[attr-defined]
    }
    for name, value in files.items():
        (base / "input" / "config" / name).write_text(json.dumps(value, indent=1) + "\n")


def node_command(settings: dict, hosts: list, current: str, environ: dict) -> tuple:
    """(argv, environment) of this node: the contract's, for the job's launch on ``hosts``."""
    # lazy: the contract shipped with the job's code, importable once its folder leads sys.path
    from smdist.contract.commands import HostArguments, Image, Rendezvous, host_command
    from smdist.contract.environment import HostConfig, Machine, input_data_config
    from smdist.contract.environment import command_line_arguments as arguments_of
    from smdist.contract.environment import decode_hyperparameters as decoded
    from smdist.contract.environment import split_hyperparameters as split
    from smdist.contract.host import HostSite, host_environment, host_resource_config
    from smdist.contract.launch import shipped_launch

    launch = shipped_launch(Path(settings["code_dir"]) / "smdist")
    if launch is None or len(launch.hosts) != len(hosts):
        raise NodeError(f"the job's launch does not plan {len(hosts)} node(s): {hosts}")
    launch = launch.renamed({launch.hosts[i]: host for i, host in enumerate(hosts)})
    index = hosts.index(current)
    base = host_folder(settings, current)
    interface = default_interface()
    channels = {name: channel["distribution"] for name, channel in settings["channels"].items()}
    config = HostConfig(
        hyperparameters=dict(settings["hyperparameters"]),
        resource_config=host_resource_config(launch, current, interface),
        input_data_config=input_data_config(channels),
    )
    write_config(base, config)
    contract = host_environment(
        launch, index, config, Machine(num_cpus=os.cpu_count() or 1, num_gpus=gpu_count()),
        job_name=settings["job_name"], framework=settings["framework"],
        site=HostSite(base=base, interface=interface, master_port=settings["master_port"]),
        job_environment=settings["environment"], region=settings["region"],
    )  # fmt: skip
    environment = clean_environment(environ)
    environment.update(contract)
    script_arguments = arguments_of(split(decoded(config.hyperparameters))[0])
    image = Image(python=sys.executable, mpi4py=False, smddprun=False, smddpmprun=False,
                  hostname_shim=None, shell_programs=False)  # fmt: skip
    meet = Rendezvous((sys.executable, "-m", "torch.distributed.run"), settings["master_port"])
    command = host_command(
        launch, index, image, launch.program, HostArguments(script_arguments), torchrun=meet
    )
    if command.argv is None:
        raise NodeError(f"{current} would wait for another host's mpirun: {command.role}")
    return command.argv, environment


def main(argv: list | None = None) -> int:
    """Start this node's command (never returns when it starts); 2 when it cannot."""
    argv = sys.argv[1:] if argv is None else argv
    try:
        if len(argv) != 1:
            raise NodeError("usage: smdist_node.py <job folder>")
        job_dir = Path(argv[0])
        settings = json.loads((job_dir / "node.json").read_text())
        hosts, current = node_identity(dict(os.environ))
        sys.path.insert(0, settings["code_dir"])
        command, environment = node_command(settings, hosts, current, dict(os.environ))
    except (NodeError, OSError, ValueError, KeyError) as error:
        print(f"smdist-node: {error}", file=sys.stderr, flush=True)
        return CONFIG_ERROR
    position = f"node {hosts.index(current) + 1} of {len(hosts)}"
    print(f"smdist-node: {current} ({position}): {shlex.join(command)}", flush=True)
    return supervise(command, environment, settings["code_dir"])


def become_subreaper() -> bool:
    """Make the processes this one's descendants leave behind its children (Linux)."""
    try:
        return ctypes.CDLL(None, use_errno=True).prctl(SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def children(pid: int) -> list:
    """The live children of ``pid``, from /proc."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path("/proc", entry, "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2 :].split()
        if len(fields) > 1 and fields[1] == str(pid) and fields[0] != "Z":
            found.append(int(entry))
    return found


def end_leftovers(grace: float = LEFTOVER_GRACE) -> None:
    """SIGTERM what is left of this process's descendants, SIGKILL after ``grace``."""
    deadline = time.monotonic() + grace
    while True:
        _reap()
        left = children(os.getpid())
        if not left:
            return
        number = signal.SIGTERM if time.monotonic() < deadline else signal.SIGKILL
        for pid in left:
            try:
                os.kill(pid, number)
            except ProcessLookupError:
                pass
        time.sleep(0.2)


def _reap() -> None:
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def supervise(command: list, environment: dict, cwd: str, grace: float = LEFTOVER_GRACE) -> int:
    """Run ``command``, end what it leaves behind (SIGKILL ``grace`` seconds after SIGTERM),
    return its exit code (128 + the signal that ended it)."""
    become_subreaper()
    for number in (signal.SIGTERM, signal.SIGINT):  # the step's processes all get it
        signal.signal(number, lambda *_: None)
    child = subprocess.Popen(command, env=environment, cwd=cwd)
    code = child.wait()
    end_leftovers(grace)
    return 128 - code if code < 0 else code


if __name__ == "__main__":
    sys.exit(main())
