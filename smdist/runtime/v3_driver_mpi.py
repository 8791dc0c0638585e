"""How the hosts of an MPI launch meet under smdist's SDK v3 driver (``v3_driver``).

The training toolkit starts an MPI job in steps that SDK v3's ``sm_train.sh`` does not take,
so the driver takes them: every host publishes the rank environment for the sessions mpirun
opens (``publish_environment``), checks that its image has what the launcher needs
(``check_image``: mpirun on the first host, an ssh server on every host of a multi-host job),
failing at once, in ``output/failure``, when not, and starts sshd. The first host waits
for the others' ssh ports before it starts mpirun, then marks on every other host that mpirun
ended (``tell_workers_mpirun_ended``, as v3's own MPI driver does). The others wait for
mpirun's daemon to come and go, as the toolkit's workers do, or for that mark: a daemon whose
ranks end within one poll would otherwise never be seen, and the host would wait for it for
half an hour (``wait_for_mpi_daemon``).

Standard library only, on every Python the catalogue accepts: it ships with the job's code.
"""

from __future__ import annotations

import os
import socket
import subprocess
import time
from collections.abc import Mapping
from pathlib import Path

from ..contract.image_prerequisites import absent_optional, missing_prerequisites

SSH_PORT = 22
SSHD = "/usr/sbin/sshd"
ETC_ENVIRONMENT = Path("/etc/environment")
MPI_DAEMONS = ("orted", "prted")
HOST_WAIT_SECONDS = 300  # v3's own MPI driver waits as long for its workers
DAEMON_APPEAR_SECONDS = 1800


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
