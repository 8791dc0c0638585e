"""The emulated SageMaker container's inside: what runs in a host's own namespaces.

``emulated_container.run_request`` starts each emulated host as ``unshare --mount --uts ...
python emulated_namespace.py enter SPEC.json``; ``enter`` makes that fresh namespace look like
host K's container (its directory at ``/opt/ml``, hostname ``algo-K``, an ``/etc/hosts`` naming
every host) and then execs the request's command, unchanged. ``ssh_main`` is the ``ssh`` on every
host's PATH: mpirun-style launchers start remote ranks with ``ssh <host> <command>``, and it hands
that command to ``emulated_sshd``, which runs it inside the target host's namespaces.

Standard library only: it runs under whatever interpreter starts it, before any of the job's code.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

OPT_ML = Path("/opt/ml")
SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
HOST_START_TIMEOUT = 60.0  # seconds the ssh stand-in waits for a host's namespace to be ready
# ssh options that take a value (OpenSSH's getopt string).
SSH_OPTIONS_WITH_VALUE = set("bceilmopBDEFIJLOQRSwW")
SSHD = "/usr/sbin/sshd"


ETC_ENVIRONMENT = "etc-environment"  # in the host's state directory; its /etc/environment
SESSIONS_SOCKET = "sshd.sock"  # in the run directory: where emulated_sshd takes ssh sessions


def _mount(*arguments: str) -> None:
    subprocess.run(["mount", *arguments], check=True)


def _provide_opt_ml(scratch: Path) -> None:
    """Make /opt/ml exist in this mount namespace only: an overlay on /opt hides nothing."""
    if OPT_ML.is_dir():
        return
    parent = OPT_ML.parent
    if not parent.is_dir():
        raise SystemExit(f"emulated container: neither {OPT_ML} nor {parent} exists")
    scratch.mkdir(parents=True, exist_ok=True)
    _mount("-t", "tmpfs", "tmpfs", str(scratch))
    upper, work = scratch / "upper", scratch / "work"
    upper.mkdir()
    work.mkdir()
    options = f"lowerdir={parent},upperdir={upper},workdir={work}"
    mounted = subprocess.run(
        ["mount", "-t", "overlay", "overlay", "-o", options, str(parent)], capture_output=True
    )
    if mounted.returncode != 0:
        raise SystemExit(f"emulated container: no /opt/ml and no overlayfs: {mounted.stderr!r}")
    OPT_ML.mkdir()


def _await(path: Path, what: str) -> None:
    deadline = time.monotonic() + HOST_START_TIMEOUT
    while not path.exists():
        if time.monotonic() > deadline:
            raise SystemExit(f"emulated container: {what} never came ({path})")
        time.sleep(0.05)


def _listen_as_sshd() -> None:
    """Keep port 22 open, as a DLC's sshd does, for drivers that wait for it on every host."""
    if Path(SSHD).exists():  # a real sshd will be started by the driver
        return
    server = socket.socket()
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind(("0.0.0.0", 22))
    server.listen()  # before the command starts: smdist's driver checks port 22 at once
    if os.fork() != 0:
        server.close()
        return
    with server:
        while True:  # until the host's session is ended
            server.accept()[0].close()


def enter(spec_path: str) -> None:
    """Make this fresh set of namespaces host K's container, then exec the request's command."""
    spec = json.loads(Path(spec_path).read_text())
    state = Path(spec["state"])
    _provide_opt_ml(Path(spec["scratch"]))
    _mount("--bind", spec["root"], str(OPT_ML))
    _mount("--bind", spec["hosts_file"], "/etc/hosts")
    _mount("--bind", str(state / ETC_ENVIRONMENT), "/etc/environment")
    socket.sethostname(spec["host"])
    os.chdir("/")
    _await(state / "network", "the host's network")  # cabled from outside
    _listen_as_sshd()
    (state / "ready").touch()  # the ssh stand-in enters this host only now
    argv, env = spec["argv"], spec["env"]
    try:
        os.execvpe(argv[0], argv, env)  # PATH lookup in the container's environment
    except OSError as exc:
        print(f"emulated container: cannot run {argv[0]!r}: {exc}", file=sys.stderr)
        raise SystemExit(127) from None


def etc_environment(text: str) -> dict[str, str]:
    """``KEY=VALUE`` lines of /etc/environment, as pam_env gives them to an sshd session."""
    values = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep and key and not key.startswith("#"):
            values[key.strip()] = value
    return values


def _parse_ssh(arguments: list[str]) -> tuple[str, list[str]]:
    """(host, remote command words) from an ssh command line."""
    index = 0
    while index < len(arguments) and arguments[index].startswith("-"):
        option = arguments[index]
        index += 1
        if option == "--":
            break
        # "-p 22" takes the next word; "-p22" / "-oX=y" carry their value; "-xT" are flags.
        if len(option) == 2 and option[1] in SSH_OPTIONS_WITH_VALUE:
            index += 1
    if index >= len(arguments):
        raise SystemExit("ssh stand-in: no host given")
    host = arguments[index].rpartition("@")[2]
    return host, arguments[index + 1 :]


def ssh_main(arguments: list[str], run: str) -> int:
    """``ssh [options] host command...``: run the command on host, as sshd would there.

    The remote words are joined with spaces, as ssh does, and sent with this process's stdin,
    stdout and stderr to ``emulated_sshd``; the answer is the command's exit status.
    """
    host, words = _parse_ssh(arguments)
    if not words:
        print("ssh stand-in: interactive sessions are not emulated", file=sys.stderr)
        return 255
    state = Path(run) / host
    if not (state / "env.json").is_file():
        print(f"ssh: Could not resolve hostname {host}: not an emulated host", file=sys.stderr)
        return 255
    deadline = time.monotonic() + HOST_START_TIMEOUT
    while not (state / "ready").is_file():
        if time.monotonic() > deadline:
            print(f"ssh: connect to host {host}: its container never started", file=sys.stderr)
            return 255
        time.sleep(0.1)
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


if __name__ == "__main__":
    if sys.argv[1:2] != ["enter"] or len(sys.argv) != 3:
        raise SystemExit("usage: emulated_namespace.py enter SPEC.json")
    enter(sys.argv[2])
