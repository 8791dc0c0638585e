"""TF_CONFIG for MultiWorkerMirroredStrategy where the container did not write one.

MWMS reads the cluster from TF_CONFIG. SageMaker's TensorFlow toolkit writes it for the
``multi_worker_mirrored_strategy`` distribution, as smdist's driver and local backend do
(``smdist.contract``); an image without that toolkit announces its hosts only as SM_HOSTS /
SM_CURRENT_HOST, so the entry point builds the same TF_CONFIG from them (the contract's
``multi_worker_tf_config``: every host a ``worker`` on port 8890, the task index the current
host's position). A TF_CONFIG the container already has is used as it is.

Emulated hosts that share one machine need distinct ports, because each worker binds
``0.0.0.0:<port>``: SMDIST_TF_PORTS gives one port for all hosts or one per host
(``"8890,8891"``).

Building and choosing are pure; ``apply_tf_config`` is the one place that writes os.environ,
and entry points call it explicitly before creating the strategy.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, MutableMapping, Sequence
from typing import Any

from ..contract.commands import TF_CONFIG, TF_CONFIG_PORT, multi_worker_tf_config
from .environments.base import ClusterEnvironmentError, invalid_variable
from .environments.sagemaker import SageMakerEnvironment
from .environments.tf_config import TFConfigEnvironment

DEFAULT_PORT = TF_CONFIG_PORT
PORTS_ENV = "SMDIST_TF_PORTS"


def build_tf_config(
    hosts: Sequence[str], current_host: str, port: int | Sequence[int] = DEFAULT_PORT
) -> dict[str, Any]:
    """Every host a worker; the task index is the position of ``current_host``."""
    hosts = list(hosts)
    if not hosts:
        raise ValueError("hosts is empty: expected at least one host name.")
    if current_host not in hosts:
        raise ValueError(f"current_host={current_host!r} is not one of the hosts {hosts}.")
    ports = [port] * len(hosts) if isinstance(port, int) else list(port)
    if len(ports) != len(hosts):
        raise ValueError(
            f"port={list(ports)!r} gives {len(ports)} ports for {len(hosts)} hosts: expected one "
            "port for all hosts or one per host."
        )
    for value in ports:
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 65535:
            raise ValueError(f"port {value!r} is not valid: expected an integer in 1..65535.")
    return multi_worker_tf_config(hosts, hosts.index(current_host), ports)


def ports_from_environ(environ: Mapping[str, str]) -> int | list[int]:
    """SMDIST_TF_PORTS as one port or a list of ports; the default port when unset."""
    raw = environ.get(PORTS_ENV, "").strip()
    if not raw:
        return DEFAULT_PORT
    parts = [part.strip() for part in raw.split(",")]
    if not all(part.isdigit() and 1 <= int(part) <= 65535 for part in parts):
        raise invalid_variable(PORTS_ENV, raw, "a port or comma-separated ports, e.g. '8890,8891'")
    ports = [int(part) for part in parts]
    return ports[0] if len(ports) == 1 else ports


def ensure_tf_config(environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The TF_CONFIG this process should use, without writing anything.

    An existing TF_CONFIG is returned as it is (after checking it parses). Otherwise, on a
    multi-host SageMaker job, one is built from the host list; elsewhere, and on a single host,
    the result is ``{}``: a single worker needs no TF_CONFIG, and one naming the host would make
    TensorFlow wait on a name that may not resolve outside SageMaker.
    """
    environ = os.environ if environ is None else environ
    if TFConfigEnvironment.detect(environ):
        existing = TFConfigEnvironment(environ)
        return existing.config
    if not SageMakerEnvironment.detect(environ):
        return {}
    sagemaker = SageMakerEnvironment(environ)
    if len(sagemaker.hosts) < 2:
        return {}
    try:
        return build_tf_config(sagemaker.hosts, sagemaker.current_host, ports_from_environ(environ))
    except ValueError as error:
        if isinstance(error, ClusterEnvironmentError):
            raise
        raise ClusterEnvironmentError(f"{PORTS_ENV}: {error}") from None


def apply_tf_config(
    tf_config: Mapping[str, Any], environ: MutableMapping[str, str] | None = None
) -> None:
    """Write TF_CONFIG (os.environ by default) so that TensorFlow finds it; ``{}`` writes nothing.

    Call it before creating the strategy: TensorFlow reads TF_CONFIG when the strategy is built.
    """
    if not tf_config:
        return
    target = os.environ if environ is None else environ
    current = target.get(TF_CONFIG)
    if current is not None:
        try:
            if json.loads(current) == tf_config:
                return  # the container's own string stays byte for byte
        except json.JSONDecodeError:
            pass
    target[TF_CONFIG] = json.dumps(tf_config)
