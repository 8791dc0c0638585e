"""A stand-in for ``ssh`` that "logs into" an emulated host by running the command locally.

mpirun and horovodrun reach the other hosts of a job over ssh. The emulated hosts are
directories on this machine, so this script takes ssh's place (first on PATH, and mpirun's
``plm_rsh_agent``): it drops ssh's options, finds the host, and runs the command with
``/bin/sh -c`` as the remote shell would.

What makes it a different host is its disk and its GPUs. SageMaker's launchers export the
first host's environment (``SM_MODEL_DIR=/opt/ml/model`` ...) and working directory to every
rank, and on each real host those paths name that host's own files. Here each host has its own
directory standing in for ``/opt/ml``, so the first host's directory is replaced by this host's
in the environment and in the command (``cd <dir>``, exported variables) before it runs, and
``CUDA_VISIBLE_DEVICES`` becomes this host's share of the machine's GPUs.

Configured through the environment the launcher passes on: ``SMDIST_LOCAL_HOSTS`` (a JSON
object host -> {"base": its /opt/ml directory, "gpus": its CUDA_VISIBLE_DEVICES}; the first
entry is the launching host). Any other host is handed to the real ssh. Standard library only.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import sys

HOSTS_VARIABLE = "SMDIST_LOCAL_HOSTS"
# ssh options that take a value (OpenSSH 9).
_WITH_VALUE = set("BbcDEeFIiJLlmOoPpQRSWw")


def _skip_options(argv: list[str], index: int) -> int:
    """Index of the first word at or after ``index`` that is not an ssh option."""
    while index < len(argv):
        token = argv[index]
        if token == "--":
            return index + 1
        if not token.startswith("-") or token == "-":
            return index
        letters = token[1:]
        for position, letter in enumerate(letters):
            if letter in _WITH_VALUE:
                if position == len(letters) - 1:
                    index += 1  # the value is the next word
                break
        index += 1
    return index


def split_ssh_arguments(argv: list[str]) -> tuple[str, list[str]]:
    """(destination host, remote command words) from ssh's command line.

    Like OpenSSH, options are accepted after the destination too (horovodrun puts
    ``-o ConnectTimeout=...`` there).
    """
    index = _skip_options(argv, 0)
    if index >= len(argv):
        raise SystemExit("ssh stand-in: no destination host given")
    destination = argv[index].rpartition("@")[2]
    return destination, argv[_skip_options(argv, index + 1) :]


def rewrite(value: str, main_base: str, host_base: str) -> str:
    """Replace the launching host's directory with this host's (whole path components only)."""
    if main_base == host_base or main_base not in value:
        return value
    return re.sub(re.escape(main_base) + r"(?=[/\s\"':,;=]|$)", host_base, value)


_GPU_ASSIGNMENT = re.compile(r"(?<![\w])CUDA_VISIBLE_DEVICES=(?:'[^']*'|\"[^\"]*\"|[^\s;]*)")


def with_gpus(script: str, gpus: str) -> str:
    """Give ``CUDA_VISIBLE_DEVICES=...`` assignments in a shell command this host's GPUs."""
    return _GPU_ASSIGNMENT.sub(lambda _: f"CUDA_VISIBLE_DEVICES={shlex.quote(gpus)}", script)


def _real_ssh() -> str | None:
    own = os.path.dirname(os.path.abspath(sys.argv[0]))
    path = os.pathsep.join(
        entry
        for entry in os.environ.get("PATH", "").split(os.pathsep)
        if entry and os.path.abspath(entry) != own
    )
    return shutil.which("ssh", path=path)


def main(argv: list[str]) -> int:
    host, command = split_ssh_arguments(argv)
    hosts: dict[str, dict[str, str]] = json.loads(os.environ.get(HOSTS_VARIABLE, "{}"))
    if host not in hosts:
        real = _real_ssh()
        if real is None:
            known = ", ".join(hosts) or "none"
            raise SystemExit(f"ssh stand-in: {host!r} is not a host of this job ({known})")
        os.execv(real, [real, *argv])
    main_base = next(iter(hosts.values()))["base"]
    host_base, gpus = hosts[host]["base"], hosts[host]["gpus"]
    environ = {
        name: value if name == HOSTS_VARIABLE else rewrite(value, main_base, host_base)
        for name, value in os.environ.items()
    }
    environ["CUDA_VISIBLE_DEVICES"] = gpus
    if "NSS_WRAPPER_HOSTS" in environ:
        environ["NSS_WRAPPER_HOSTNAME"] = host  # this host's gethostname(), not the launcher's
    script = with_gpus(rewrite(" ".join(command), main_base, host_base), gpus)
    os.chdir(os.path.join(host_base, "code") if os.path.isdir(host_base) else "/")
    os.execve("/bin/sh", ["/bin/sh", "-c", script or "exec $SHELL -l"], environ)
    return 127  # not reached


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
