"""The parameter server of SageMaker's ``parameter_server`` distribution, outside the toolkit.

What SageMaker does (sagemaker-tensorflow-training-toolkit, ``training.py``): the SDK v2
TensorFlow estimator turns ``distribution={"parameter_server": {"enabled": True}}`` into the
hyperparameter ``sagemaker_parameter_server_enabled``. With it, on a job of two or more hosts,
the container's toolkit process on every host

1. builds TF_CONFIG (``_build_tf_config_for_ps``): the first host is the ``master`` and the
   others are ``worker`` tasks, all on port 2222; every host, the master included, also holds
   one ``ps`` task on port 2223; ``"environment": "cloud"``;
2. starts that host's parameter server (``_run_ps``): a ``tf.distribute.Server`` for job
   ``ps`` with the host's index, CPU only (``ConfigProto(device_count={"GPU": 0})``), living
   in the toolkit process, before the training script;
3. runs the training script once (``_run_worker``), with TF_CONFIG and the SM_* variables;
4. on hosts other than the master, once the script has exited, waits until nothing answers
   on ``master:2222`` any more (``_wait_until_master_is_down``), then exits, which ends the
   parameter server with it.

On a single host the toolkit does none of this: no TF_CONFIG, no parameter server.

Why a module: outside SageMaker (the local emulator, a test) nothing plays the toolkit, and
its parameter server lives inside the toolkit's own process. This module is that server as a
process of its own, from the same TF_CONFIG, so an emulated host is "this process, then the
training script", stopped with SIGTERM where the toolkit process would have exited.
``tf_config`` gives the toolkit's TF_CONFIG exactly (same keys, order and values), with an
optional ``address`` function so that hosts emulated on one machine get their own addresses.

``python -m smdist.contract.parameter_server`` reads, in order:

- ``SMDIST_PS_TF_CONFIG``: a complete TF_CONFIG whose task is ``{"type": "ps", "index": i}``
  (what ``tf_config(..., ps_task=True)`` returns), used as it is: the emulator's way;
- else ``SM_HOSTS`` (JSON list) and ``SM_CURRENT_HOST``, as SageMaker sets them: the
  toolkit's layout with ports 2222/2223.

It serves until SIGTERM or SIGINT, then exits 0 (stopping it is how it normally ends). With a
single host it serves nothing and exits 0, as the toolkit starts no parameter server there.
A configuration error exits 2, a server that cannot start (its port taken) 1. The process
also hides every GPU (CUDA_VISIBLE_DEVICES=-1) on top of the toolkit's CPU-only config: a
process of its own must not reserve GPU memory.

Standard library only at import time; TensorFlow is imported when the server starts.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import sys
import time
from collections.abc import Mapping, Sequence
from types import FrameType
from typing import Any, Callable

MASTER_PORT = 2222  # the toolkit's port of the master and worker tasks (the training script)
PS_PORT = 2223  # the toolkit's port of every host's ps task
TF_CONFIG_ENV = "SMDIST_PS_TF_CONFIG"
CONFIG_ERROR_EXIT_CODE = 2
SERVER_ERROR_EXIT_CODE = 1

# (host, toolkit port) -> "address:port"; the toolkit's is f"{host}:{port}".
AddressFunction = Callable[[str, int], str]


def toolkit_address(host: str, port: int) -> str:
    return f"{host}:{port}"


def tf_config(
    hosts: Sequence[str],
    current_host: str,
    ps_task: bool = False,
    *,
    port: int = MASTER_PORT,
    ps_port: int = PS_PORT,
    address: AddressFunction | None = None,
) -> dict[str, Any]:
    """The toolkit's TF_CONFIG (``_build_tf_config_for_ps``) for ``current_host``.

    ``ps_task``: the config of the host's parameter server instead of its training script.
    ``address(host, port)`` replaces ``f"{host}:{port}"``, e.g. to give hosts emulated on one
    machine their own loopback ports; it is called with ``port`` or ``ps_port``.
    """
    hosts = list(hosts)
    if not hosts:
        raise ValueError("hosts is empty: expected at least one host name.")
    if len(set(hosts)) != len(hosts):
        raise ValueError(f"hosts {hosts} name a host twice.")
    if current_host not in hosts:
        raise ValueError(f"current_host={current_host!r} is not one of the hosts {hosts}.")
    where = address or toolkit_address
    masters, workers = hosts[:1], hosts[1:]
    ps = hosts if len(hosts) > 1 else None

    # Built in the toolkit's order: json.dumps of the result is the toolkit's string.
    config: dict[str, Any] = {
        "cluster": {"master": [where(host, port) for host in masters]},
        "environment": "cloud",
    }
    if ps:
        config["cluster"]["ps"] = [where(host, ps_port) for host in ps]
    if workers:
        config["cluster"]["worker"] = [where(host, port) for host in workers]

    if ps_task:
        if ps is None:
            raise ValueError(
                "Cannot have a ps task if there are no parameter servers in the cluster"
            )
        task = {"index": ps.index(current_host), "type": "ps"}
    elif current_host == hosts[0]:
        task = {"index": 0, "type": "master"}
    else:
        task = {"index": workers.index(current_host), "type": "worker"}
    config["task"] = task
    return config


def say(message: str) -> None:
    # One write per line: launchers that tag output per write never split it.
    sys.stderr.write(f"smdist: {message}\n")
    sys.stderr.flush()


def split_address(address: str) -> tuple[str, int]:
    """``host:port`` (IPv6 as ``[::1]:port``) into host and port."""
    host, sep, port = address.rpartition(":")
    if not sep or not host or not port.isdigit() or not 1 <= int(port) <= 65535:
        raise ValueError(f"{address!r} is not a 'host:port' address")
    return host.strip("[]"), int(port)


def is_listening(address: str, timeout: float = 1.0) -> bool:
    """Whether something accepts TCP connections at ``host:port``."""
    host, port = split_address(address)
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def wait_until_master_is_down(
    address: str,
    appear_timeout: float,
    poll_seconds: float = 1.0,
    stop: Callable[[], bool] = lambda: False,
) -> str:
    """Return once the master at ``address`` has been up and is down again.

    The toolkit's ``_wait_until_master_is_down`` (curl every 10 s) with two additions: a probe
    that fails before the master ever answered means "not started yet", not "finished", and
    waiting for the first answer gives up after ``appear_timeout`` seconds.
    Returns ``"down"``, ``"never-up"`` or ``"stopped"`` (``stop()`` turned true).
    """
    seen = False
    started = time.monotonic()
    while not stop():
        if is_listening(address):
            seen = True
        elif seen:
            return "down"
        elif time.monotonic() - started > appear_timeout:
            return "never-up"
        time.sleep(poll_seconds)
    return "stopped"


def ps_config_from_environ(environ: Mapping[str, str]) -> dict[str, Any] | None:
    """The parameter server's TF_CONFIG from the environment; None when there is none to run.

    Raises ValueError for a malformed configuration.
    """
    raw = environ.get(TF_CONFIG_ENV, "").strip()
    if raw:
        try:
            config = json.loads(raw)
        except json.JSONDecodeError as error:
            raise ValueError(f"{TF_CONFIG_ENV} is not JSON: {error}") from None
        if not isinstance(config, dict):
            raise ValueError(f"{TF_CONFIG_ENV} must be a JSON object, got {raw!r}")
        cluster, task = config.get("cluster"), config.get("task")
        if not isinstance(cluster, dict) or not isinstance(task, dict):
            raise ValueError(f"{TF_CONFIG_ENV} needs 'cluster' and 'task' objects, got {raw!r}")
        ps: list[Any] = cluster.get("ps") or []
        index = task.get("index")
        if task.get("type") != "ps" or not isinstance(index, int) or not 0 <= index < len(ps):
            raise ValueError(
                f"{TF_CONFIG_ENV}: task {task!r} is not one of the {len(ps)} ps task(s) of "
                f"cluster {cluster!r}"
            )
        return config
    raw_hosts, current_host = environ.get("SM_HOSTS", ""), environ.get("SM_CURRENT_HOST", "")
    if not raw_hosts or not current_host:
        raise ValueError(f"set {TF_CONFIG_ENV}, or SM_HOSTS and SM_CURRENT_HOST")
    try:
        hosts = json.loads(raw_hosts)
    except json.JSONDecodeError:
        raise ValueError(f"SM_HOSTS is not a JSON list: {raw_hosts!r}") from None
    if not isinstance(hosts, list) or not all(isinstance(host, str) for host in hosts):
        raise ValueError(f"SM_HOSTS is not a JSON list of host names: {raw_hosts!r}")
    if len(hosts) < 2:
        return None  # the toolkit runs no parameter server on a single host
    return tf_config(hosts, current_host, ps_task=True)


class _Stop:
    """SIGTERM / SIGINT recorded as a flag: the server is stopped from Python, not inside
    ``server.join()``, a C++ wait during which Python signal handlers never run."""

    def __init__(self) -> None:
        self.signal_name: str | None = None
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, self._handle)

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        self.signal_name = signal.Signals(signum).name

    @property
    def requested(self) -> bool:
        return self.signal_name is not None


def start_server(config: Mapping[str, Any]) -> Any:
    """Start this host's ps task as the toolkit's ``_run_ps`` does; returns the server."""
    os.environ["CUDA_VISIBLE_DEVICES"] = "-1"  # before TensorFlow loads: no GPU, no GPU memory
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # C++ info lines drown the job's log
    import tensorflow as tf

    # Running several TensorFlow processes on one GPU is not safe (the toolkit's reason).
    no_gpu = tf.compat.v1.ConfigProto(device_count={"GPU": 0})
    return tf.distribute.Server(
        tf.train.ClusterSpec(dict(config["cluster"])),
        job_name="ps",
        task_index=int(config["task"]["index"]),
        protocol="grpc",
        config=no_gpu,
        start=True,
    )


def serve(config: Mapping[str, Any], stop: _Stop) -> int:
    index = int(config["task"]["index"])
    address = config["cluster"]["ps"][index]
    if stop.requested:  # stopped while TensorFlow loaded: nothing to serve
        return 0
    try:
        start_server(config)
    except Exception as error:  # TensorFlow's errors (the port is taken...): one line, exit 1
        say(f"parameter server ps:{index} could not start at {address}: {error}")
        return SERVER_ERROR_EXIT_CODE
    say(f"parameter server ps:{index} serving at {address} (CPU only)")
    # "Join": wait here rather than in server.join(), where SIGTERM could not be handled.
    while not stop.requested:
        time.sleep(0.2)
    say(f"parameter server ps:{index} stopping on {stop.signal_name}")
    return 0


def main(environ: Mapping[str, str] | None = None) -> int:
    stop = _Stop()  # first: a stop during TensorFlow's start-up (seconds) is not lost
    try:
        config = ps_config_from_environ(os.environ if environ is None else environ)
    except ValueError as error:
        say(f"parameter server: configuration error: {error}")
        return CONFIG_ERROR_EXIT_CODE
    if config is None:
        say("parameter server: single host, none to run (as the SageMaker toolkit)")
        return 0
    return serve(config, stop)


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    # os._exit: TensorFlow cannot shut a gRPC server down (Server has no stop), and interpreter
    # teardown with its threads still serving may hang or abort instead of exiting.
    os._exit(code)
