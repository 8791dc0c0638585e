"""The emulated hosts' sshd: ``ssh <host> <command>`` runs the command inside that host.

A process can enter only a PID namespace below its own, so ``ssh algo-2 CMD`` run on algo-1
cannot enter algo-2 itself. ``main`` (the ``ssh`` on every host's PATH) hands the command and
its stdin, stdout and stderr (file descriptors, over the run folder's Unix socket) to the
``SessionBroker``, a thread of the process that started the hosts, outside every host. It runs
``/bin/sh -c CMD`` in the host's mount, UTS, network and PID namespaces, with the host's
environment (held in memory: it may carry credentials) plus what its ``/etc/environment``
says, as sshd would after SageMaker's MPI setup, and a container's capabilities only
(``capabilities.py``: ``nsenter`` itself needs more). ``ssh`` exits with the command's status (255
when a signal ended it, as ssh does); when ``ssh`` dies first (mpirun stopping its daemons),
the command's process group is ended, as sshd ends a session whose connection dropped.

``main`` is standard library only: it runs under the image's Python, before the job's code.
"""

from __future__ import annotations

import json
import os
import select
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

if __package__:
    from ..ssh_arguments import split_ssh_arguments
else:  # run by the ``ssh`` client without site-packages: hosts/ is on sys.path
    from ssh_arguments import split_ssh_arguments

SESSIONS_SOCKET = "sshd.sock"  # in the run folder, beside the hosts' state folders
ETC_ENVIRONMENT = "etc-environment"
SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
HOST_START_TIMEOUT = 60.0  # seconds a session waits for its host to be ready
# In a host's state folder: a host after the first playing a Deep Learning Container (its
# port 22 answers from the start), whose MPI driver writes /etc/environment before it would
# start sshd (the first host, mpirun's, starts sshd at once under the training toolkit).
SSHD_AFTER_ENVIRONMENT = "sshd-after-environment"
SESSION_END_GRACE = 5.0  # seconds between SIGTERM and SIGKILL for a dropped session
# Run inside the host before the session's shell: it leaves a container's capabilities only.
CAPABILITIES = Path(__file__).with_name("capabilities.py")


def etc_environment(text: str) -> dict[str, str]:
    """``KEY=VALUE`` lines of /etc/environment, as pam_env gives them to an sshd session."""
    values = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep and key and not key.startswith("#"):
            values[key.strip()] = value
    return values


# ---- the server: outside every host --------------------------------------------------------
class SessionBroker:
    """Takes the sessions for the hosts under ``run`` (one state folder per host: its ``pid``
    and ``etc-environment``) until ``close``. ``environments``: each host's environment (what a
    login starts from), filled in as hosts start; ``user_namespace``: the process whose user
    namespace the hosts live in, when they were made without root."""

    def __init__(
        self,
        run: Path,
        environments: dict[str, dict[str, str]] | None = None,
        user_namespace: int | None = None,
    ) -> None:
        self._run = run
        self.environments = environments if environments is not None else {}
        self._user_namespace = user_namespace
        self._stopping = threading.Event()
        self._server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._server.bind(str(run / SESSIONS_SOCKET))
        self._server.listen()
        self._server.settimeout(0.2)
        self._thread = threading.Thread(target=self._serve, name="smdist-sshd", daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._stopping.set()
        try:  # wake the accept at once rather than at its next timeout
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as wake:
                wake.connect(str(self._run / SESSIONS_SOCKET))
        except OSError:
            pass
        self._thread.join()
        self._server.close()

    def _serve(self) -> None:
        while not self._stopping.is_set():
            try:
                connection, _ = self._server.accept()
            except TimeoutError:
                continue
            if self._stopping.is_set():
                connection.close()
                return
            threading.Thread(target=self._session, args=(connection,), daemon=True).start()

    def _session(self, connection: socket.socket) -> None:
        with connection:
            connection.settimeout(None)
            data, fds, _, _ = socket.recv_fds(connection, 1 << 16, 3)
            try:
                length = int.from_bytes(data[:4], "big")
                while len(data) < 4 + length:
                    more = connection.recv(1 << 16)
                    if not more:
                        return
                    data += more
                request = json.loads(data[4 : 4 + length])
                process = self._start(request["host"], request["command"], fds)
            finally:
                for fd in fds:
                    os.close(fd)
            status = _follow(process, connection)
            if status is not None:
                connection.sendall(status.to_bytes(4, "big", signed=True))

    def _start(self, host: str, command: str, fds: list[int]) -> subprocess.Popen:
        state = self._run / host
        env = dict(self.environments.get(host, {}))
        env.update(etc_environment((state / ETC_ENVIRONMENT).read_text()))
        pid = (state / "pid").read_text()  # unshare's; its child is the host's PID 1
        user = [f"--user=/proc/{self._user_namespace}/ns/user", "--preserve-credentials"]
        nsenter = ["nsenter", "--target", pid, *(user if self._user_namespace else []),
                   "--mount", "--uts", "--net", f"--pid=/proc/{pid}/ns/pid_for_children",
                   f"--wd={'/' if self._user_namespace else '/root'}", "--"]  # fmt: skip
        stdin, stdout, stderr = fds
        return subprocess.Popen(
            [*nsenter, sys.executable, "-S", "-E", str(CAPABILITIES), "/bin/sh", "-c", command],
            stdin=stdin, stdout=stdout, stderr=stderr,
            env={**env, "PATH": env.get("PATH", SYSTEM_PATH)}, start_new_session=True,
        )  # fmt: skip


def _follow(process: subprocess.Popen, connection: socket.socket) -> int | None:
    """The command's exit status, or None when the client went away first and the session
    was ended."""
    while True:
        readable, _, _ = select.select([connection], [], [], 0.2)
        if readable and not connection.recv(1):  # the client's end closed
            _end_session(process)
            return None
        code = process.poll()
        if code is not None:
            return code if code >= 0 else 255


def _end_session(process: subprocess.Popen) -> None:
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            return
        try:
            process.wait(SESSION_END_GRACE)
            return
        except subprocess.TimeoutExpired:
            continue


# ---- the client: ``ssh`` on every host's PATH ----------------------------------------------
def main(arguments: list[str], run: str) -> int:
    """``ssh [options] host command...`` on the hosts under ``run``: the remote words joined by
    spaces, as ssh does, run on ``host``; returns the command's exit status."""
    host, words = split_ssh_arguments(arguments)
    if not words:
        print("ssh: interactive sessions are not emulated", file=sys.stderr)
        return 255
    state = Path(run) / host
    if not (state / ETC_ENVIRONMENT).is_file():
        print(f"ssh: Could not resolve hostname {host}: not a host of this job", file=sys.stderr)
        return 255
    deadline = time.monotonic() + HOST_START_TIMEOUT
    while not (state / "ready").is_file():
        if time.monotonic() > deadline:
            print(f"ssh: connect to host {host}: it never started", file=sys.stderr)
            return 255
        time.sleep(0.1)
    if (state / SSHD_AFTER_ENVIRONMENT).exists():
        _await_published(state / ETC_ENVIRONMENT, deadline)
    request = json.dumps({"host": host, "command": " ".join(words)}).encode()
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as connection:
        connection.connect(str(Path(run) / SESSIONS_SOCKET))
        socket.send_fds(connection, [len(request).to_bytes(4, "big") + request], [0, 1, 2])
        status = b""
        while len(status) < 4:
            more = connection.recv(4 - len(status))
            if not more:
                print(f"ssh: connection to {host} closed", file=sys.stderr)
                return 255
            status += more
    return int.from_bytes(status, "big", signed=True)


def _await_published(path: Path, deadline: float, settle: float = 0.05) -> None:
    """Until the host's /etc/environment is written (its size held still ``settle`` seconds),
    or ``deadline``. On SageMaker the MPI drivers (the training toolkit's, SDK v3's, smdist's)
    write it on the hosts after the first before they start sshd, so no session reaches such
    a host before it; the emulated port 22 answers from the host's start, so the session waits
    here instead, or it would start without the host's SM_* variables."""
    size = 0
    while time.monotonic() < deadline:
        time.sleep(settle)
        now = path.stat().st_size
        if now and now == size:
            return
        size = now


def write_client(tools: Path, run: Path) -> Path:
    """``tools/ssh``: this module's ``main`` for the hosts under ``run``, run by the Python
    that runs this one, without site-packages (it needs none)."""
    tools.mkdir(parents=True, exist_ok=True)
    path = tools / "ssh"
    path.write_text(
        f"#!{sys.executable} -SE\n"
        "import sys\n"
        f"sys.path[:0] = [{str(Path(__file__).parent)!r}, {str(Path(__file__).parents[1])!r}]\n"
        "import sshd\n"
        f"sys.exit(sshd.main(sys.argv[1:], {str(run)!r}))\n"
    )
    path.chmod(0o755)
    return path
