"""One host of a ``parameter_server`` job, as SageMaker's TensorFlow toolkit runs it.

The toolkit's ``train()`` on each host of a job of two or more hosts: start this host's
parameter server, run the training script once with the toolkit's TF_CONFIG, and on hosts other
than the master wait until the master is down before ending (which ends the parameter server).
Where no toolkit runs the job (smdist's SDK v3 driver, the local emulator) this module does
those steps, with the server as a process of its own (``parameter_server``).

``python -m smdist.contract.parameter_server_host PROGRAM [ARG ...]`` (or ``run_host``) reads
``SM_HOSTS`` and ``SM_CURRENT_HOST``, and ``SMDIST_PS_ADDRESSES`` when set: a JSON map of each
host to its two addresses ``[script, parameter server]`` (the emulator's own ports; SageMaker's are
``host:2222`` and ``host:2223``). It exits with the script's exit code.

Standard library only, Python 3.8+: this module runs inside training images.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from .parameter_server import (
    MASTER_PORT,
    PS_PORT,
    TF_CONFIG_ENV,
    is_listening,
    tf_config,
)

ADDRESSES_ENV = "SMDIST_PS_ADDRESSES"
# Run by path: standard library only, it needs no package on the server's import path.
SERVER_SCRIPT = Path(__file__).with_name("parameter_server.py")
POLL_S = 1.0
STOP_GRACE_S = 10.0


def address_function(environ: Mapping[str, str]):
    """(host, toolkit port) -> address: the emulator's map, else the toolkit's ``host:port``."""
    given = environ.get(ADDRESSES_ENV)
    if not given:
        return None
    addresses = json.loads(given)
    return lambda host, port: addresses[host][0 if port == MASTER_PORT else 1]


def run_host(program: Sequence[str], environ: Mapping[str, str]) -> int:
    """This host's part of the job; the script's exit code."""
    hosts = json.loads(environ["SM_HOSTS"])
    current = environ["SM_CURRENT_HOST"]
    if len(hosts) < 2:  # the toolkit: no parameter server, no TF_CONFIG
        return subprocess.call(list(program), env=dict(environ))
    address = address_function(environ)
    server_env = dict(environ)
    server_env[TF_CONFIG_ENV] = json.dumps(tf_config(hosts, current, True, address=address))
    server = subprocess.Popen([sys.executable, str(SERVER_SCRIPT)], env=server_env)
    script_env = {**environ, "TF_CONFIG": json.dumps(tf_config(hosts, current, address=address))}
    script = subprocess.Popen(list(program), env=script_env)

    def forward(signum: int, _frame: object) -> None:
        script.send_signal(signum)

    previous = {sig: signal.signal(sig, forward) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        code = script.wait()
        if code == 0 and current != hosts[0]:
            # The toolkit's wait: until nothing answers on the master's port (at once when the
            # master has ended before this host's script did).
            master = (address or (lambda host, port: f"{host}:{port}"))(hosts[0], MASTER_PORT)
            while is_listening(master):
                time.sleep(POLL_S)
        return code
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        server.terminate()
        try:
            server.wait(STOP_GRACE_S)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


def main(argv: Sequence[str] | None = None) -> int:
    program = list(sys.argv[1:] if argv is None else argv)
    if not program:
        sys.stderr.write(
            "usage: python -m smdist.contract.parameter_server_host PROGRAM [ARG ...]\n"
        )
        return 2
    return run_host(program, os.environ)


__all__ = ["ADDRESSES_ENV", "PS_PORT", "main", "run_host"]

if __name__ == "__main__":
    sys.exit(main())
