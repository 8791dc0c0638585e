"""Every emulated host's sshd: runs a remote command inside that host's namespaces.

Each emulated host has a PID namespace of its own, and a process can enter only a PID namespace
below its own: the ``ssh`` stand-in, run on algo-1, cannot enter algo-2. So ``ssh algo-2 CMD``
hands the command and its stdin/stdout/stderr (as file descriptors over a Unix socket) to this
broker, a thread of the test process outside every host, which runs ``/bin/sh -c CMD`` in algo-2's
mount, UTS, network and PID namespaces with that host's environment plus its ``/etc/environment``
(SageMaker's MPI drivers write the rank environment there for sshd sessions). The stand-in exits
with the command's status; when the stand-in dies first (mpirun stopping its daemons), the
command's process group is ended, as sshd ends a session whose connection dropped.
"""

from __future__ import annotations

import json
import os
import select
import signal
import socket
import subprocess
import threading
from pathlib import Path

from .emulated_namespace import ETC_ENVIRONMENT, SESSIONS_SOCKET, SYSTEM_PATH, etc_environment

SESSION_END_GRACE = 5.0  # seconds between SIGTERM and SIGKILL for a dropped session


class SessionBroker:
    """Accepts the ``ssh`` stand-in's sessions for the hosts under ``run`` (one state folder
    per host, with its ``pid``, ``env.json`` and ``etc-environment``)."""

    def __init__(self, run: Path) -> None:
        self._run = run
        self._stopping = threading.Event()
        self._server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._server.bind(str(run / SESSIONS_SOCKET))
        self._server.listen()
        self._server.settimeout(0.2)
        self._thread = threading.Thread(target=self._serve, name="emulated-sshd", daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._stopping.set()
        self._thread.join()
        self._server.close()

    def _serve(self) -> None:
        while not self._stopping.is_set():
            try:
                connection, _ = self._server.accept()
            except TimeoutError:
                continue
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
        env = json.loads((state / "env.json").read_text())
        env.update(etc_environment((state / ETC_ENVIRONMENT).read_text()))
        pid = (state / "pid").read_text()  # unshare's; its child is the host's PID 1
        nsenter = [
            "nsenter", "--target", pid, "--mount", "--uts", "--net",
            f"--pid=/proc/{pid}/ns/pid_for_children", "--wd=/root", "--",
        ]  # fmt: skip
        stdin, stdout, stderr = fds
        return subprocess.Popen(
            [*nsenter, "/bin/sh", "-c", command], stdin=stdin, stdout=stdout, stderr=stderr,
            env={**env, "PATH": env.get("PATH", SYSTEM_PATH)}, start_new_session=True,
        )  # fmt: skip


def _follow(process: subprocess.Popen, connection: socket.socket) -> int | None:
    """The command's exit status (255 when a signal ended it, as ssh says), or None when the
    stand-in went away first and the session was ended."""
    while True:
        readable, _, _ = select.select([connection], [], [], 0.2)
        if readable and not connection.recv(1):  # the stand-in's end closed
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
