"""An ``ssh`` for the hyperpod-slurm backend's head node (``--head-node``): it runs the command
line on this machine, as sshd would on the head node, and records each call's host and command
line, one JSON object a line, in the file ``SSH_RECORD`` names."""

from __future__ import annotations

import json
import sys
from pathlib import Path

_STAND_IN = """#!{python}
import json, os, sys
arguments = sys.argv[1:]
at = arguments.index("--")  # smdist: ssh [options] -- HOST COMMAND-LINE
host, command = arguments[at + 1], arguments[at + 2]
with open(os.environ["SSH_RECORD"], "a") as record:
    record.write(json.dumps({{"host": host, "command": command}}) + "\\n")
os.execvp("bash", ["bash", "-c", command])
"""


def head_node_ssh(tools: Path) -> Path:
    """Write the stand-in as ``tools/ssh`` and return ``tools``: the caller puts it first on
    PATH and sets SSH_RECORD."""
    tools.mkdir(parents=True, exist_ok=True)
    ssh = tools / "ssh"
    ssh.write_text(_STAND_IN.format(python=sys.executable))
    ssh.chmod(0o755)
    return tools


def recorded_calls(record: Path) -> list[dict[str, str]]:
    """What the stand-in was asked: {"host": ..., "command": ...} per call."""
    return [json.loads(line) for line in record.read_text().splitlines()]
