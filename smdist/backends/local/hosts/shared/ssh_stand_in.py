"""A stand-in for ``ssh`` that "logs into" an emulated host by running the command locally.

mpirun reaches the other hosts of a job over ssh (``plm_rsh_agent``). The emulated hosts are
directories on this machine, so this script takes ssh's place: it drops ssh's options, finds
the host, and hands the remote command to ``/bin/sh -c`` exactly as sshd hands it to the login
shell: the words joined by spaces, byte for byte, never edited. (mpirun quotes what it puts
there; editing that text is how values turn into commands.)

What makes it a different host is its environment, set as variables and never as text: the
login starts from that host's own environment (as a SageMaker worker's ssh login starts
from the ``/etc/environment`` it wrote: its own ``SM_*`` values, its share of the GPUs, its host
name for ``gethostname()``), in its working directory (its ``code/``). What mpirun exports
(``-x``) then overrides that in the ranks, per host (``launch``).

Configured through the environment the launcher passes on: ``SMDIST_LOCAL_HOSTS`` (a JSON
object host -> {"base": its /opt/ml directory, "gpus": its CUDA_VISIBLE_DEVICES,
"environment": its environment file, which names the host's variables and holds the values
that differ from mpirun's own: no value of the user's is ever written there}). Any other host
is handed to the real ssh. Standard library only.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from collections.abc import Mapping

if __package__:
    from ..ssh_arguments import HOSTS_VARIABLE, split_ssh_arguments
else:  # run as a script with -S (no site-packages): the hosts' folder holds the reader
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    from ssh_arguments import HOSTS_VARIABLE, split_ssh_arguments


def _real_ssh() -> str | None:
    own = os.path.dirname(os.path.abspath(sys.argv[0]))
    path = os.pathsep.join(
        entry
        for entry in os.environ.get("PATH", "").split(os.pathsep)
        if entry and os.path.abspath(entry) != own
    )
    return shutil.which("ssh", path=path)


def host_environment(path: str, inherited: Mapping[str, str]) -> dict[str, str]:
    """The host's environment from its file: its variable names, with the values that differ
    from mpirun's; the rest (the user's own values, secrets among them) from ``inherited``,
    mpirun's environment, never from disk. What mpirun added of its own is left out."""
    with open(path, encoding="utf-8") as handle:
        own = json.load(handle)
    values = own["values"]
    return {
        name: values[name] if name in values else inherited[name]
        for name in own["names"]
        if name in values or name in inherited
    }


def main(argv: list[str]) -> int:
    host, command = split_ssh_arguments(argv)
    hosts: dict[str, dict[str, str]] = json.loads(os.environ.get(HOSTS_VARIABLE, "{}"))
    if host not in hosts:
        real = _real_ssh()
        if real is None:
            known = ", ".join(hosts) or "none"
            raise SystemExit(f"ssh stand-in: {host!r} is not a host of this job ({known})")
        os.execv(real, [real, *argv])
    entry = hosts[host]
    host_base = entry["base"]
    if entry.get("environment"):
        environ = host_environment(entry["environment"], os.environ)
    else:
        environ = dict(os.environ)
        environ["CUDA_VISIBLE_DEVICES"] = entry["gpus"]
        if "NSS_WRAPPER_HOSTS" in environ:
            environ["NSS_WRAPPER_HOSTNAME"] = host  # its gethostname(), not the launcher's
    os.chdir(os.path.join(host_base, "code") if os.path.isdir(host_base) else "/")
    # sshd's contract: the remote command is the words joined by single spaces, run by the
    # user's shell. It is passed on as it came.
    script = " ".join(command)
    os.execve("/bin/sh", ["/bin/sh", "-c", script or "exec $SHELL -l"], environ)
    return 127  # not reached


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
