"""A fake Docker CLI for SageMaker SDK local mode, where no Docker daemon exists.

``install(bin_dir, state_dir, images=...)`` writes ``bin_dir/docker`` (and, if asked,
``bin_dir/docker-compose``): a two-line shell script that runs this package's ``cli.py``, by
absolute path, under the interpreter of the process that installed it, with the state directory
baked in. Put the returned ``PATH`` into the environment of the code under test and the SDK's
``docker compose -f FILE up`` runs every service of the compose file it generated as a
"container": its own mount, UTS and network namespaces (the machinery of
``tests/aws_v3/emulated_container``), a hostname that is a container id, an ``/etc/hosts``
resolving every service, the volumes bind-mounted, and the command run with the image's
environment and the image's python (a ``FakeImage``) first on ``PATH``.

The state (``state_dir``) is a daemon's: containers and networks stay recorded after ``up``
ends until ``compose down`` removes them; ``leftovers(state_dir)`` says what is left, live
processes included. ``calls(state_dir)`` is every call's argv. ``cli.py`` says what each
subcommand does; ``compose.py`` how ``up`` runs the containers; ``container.py`` what runs
inside one.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from .state import CONFIG, calls, container_processes, live_processes, read_state

__all__ = ["FakeImage", "calls", "compose_runs", "install", "leftovers"]

CLI = Path(__file__).resolve().with_name("cli.py")
SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
MODES = ("run", "silent")


@dataclass(frozen=True)
class FakeImage:
    """What an image brings to a container, played by this machine.

    ``python``: the interpreter that plays the image's python (absolute; its directory comes
    first on the container's PATH, so ``train``, ``torchrun`` and ``python`` resolve there).
    ``env``: the image's ``ENV`` (PATH excepted: the fake builds it). ``command``: the image's
    ``CMD``, run when the service has neither ``command`` nor ``entrypoint``. ``entrypoint``:
    the image's ``ENTRYPOINT`` (None: none), replaced by a service's ``entrypoint``.
    ``present``: whether ``docker images -q`` finds it before any ``docker pull``.
    """

    python: str
    env: dict[str, str] = field(default_factory=dict)
    command: list[str] | None = None
    entrypoint: list[str] | None = None
    present: bool = True


def _script(program: str, state_dir: Path) -> str:
    command = [sys.executable, "-I", str(CLI), "--state", str(state_dir), program]
    return (
        "#!/bin/sh\n"
        "# A fake Docker CLI for tests without a Docker daemon (tests/fake_docker).\n"
        f'exec {" ".join(shlex.quote(word) for word in command)} "$@"\n'
    )


def install(
    bin_dir: Path,
    state_dir: Path,
    *,
    images: dict[str, FakeImage] | None = None,
    default_image: FakeImage | None = None,
    compose_version: str | None = "Docker Compose version v2.29.7",
    mode: str = "run",
    daemon: bool = True,
    runtimes: tuple[str, ...] = ("runc",),
    pull_seconds: float = 0.0,
    legacy_compose: bool = False,
) -> dict[str, str]:
    """Write ``bin_dir/docker`` and the fake's config; return the environment to add.

    ``images``: image reference -> FakeImage; ``default_image`` plays any other reference
    (without either, such an image cannot be pulled). ``compose_version``: what ``docker
    compose version`` prints (None: ``docker`` has no ``compose`` command). ``mode``: ``run``
    runs the containers; ``silent`` makes ``compose up`` record them and then hang, deaf to
    SIGTERM and SIGINT (a stuck Compose). ``daemon``: False and every call but ``compose
    version`` fails as without a daemon. ``runtimes``: what ``docker info`` lists (GPU
    services need ``nvidia``). ``pull_seconds``: how long ``docker pull`` takes.
    ``legacy_compose``: also write ``bin_dir/docker-compose`` (Compose v1's command).
    Installing again into the same ``state_dir`` changes the config and keeps the state.
    """
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, not {mode!r}")
    bin_dir, state_dir = Path(bin_dir).absolute(), Path(state_dir).absolute()
    bin_dir.mkdir(parents=True, exist_ok=True)
    state_dir.mkdir(parents=True, exist_ok=True)
    config: dict[str, Any] = {
        "images": {name: asdict(image) for name, image in (images or {}).items()},
        "default_image": asdict(default_image) if default_image else None,
        "compose_version": compose_version,
        "mode": mode,
        "daemon": daemon,
        "runtimes": list(runtimes),
        "pull_seconds": pull_seconds,
        "legacy_compose": legacy_compose,
    }
    (state_dir / CONFIG).write_text(json.dumps(config, indent=1))
    programs = ["docker", "docker-compose"] if legacy_compose else ["docker"]
    for program in programs:
        script = bin_dir / program
        script.write_text(_script(program, state_dir))
        script.chmod(0o755)
    if not legacy_compose:
        (bin_dir / "docker-compose").unlink(missing_ok=True)
    path = os.environ.get("PATH") or SYSTEM_PATH
    return {"PATH": f"{bin_dir}{os.pathsep}{path}", "FAKE_DOCKER_STATE": str(state_dir)}


def leftovers(state_dir: Path) -> dict[str, Any]:
    """What the fake daemon still holds: the state a test asserts to be empty after cleanup.

    ``containers``: every recorded container (``name``, ``id``, ``project``, ``service``,
    ``status`` created/running/exited, ``exit_code``, ``config``: the service as the compose
    file gave it); ``networks``: the names of the recorded networks; ``processes``: the pids
    of processes still alive in any recorded container.
    """
    state = read_state(Path(state_dir))
    containers = [
        {
            key: container.get(key)
            for key in ("name", "id", "project", "service", "status", "exit_code", "config")
        }
        | {"processes": container_processes(container)}
        for container in state["containers"].values()
    ]
    return {
        "containers": sorted(containers, key=lambda container: container["name"]),
        "networks": sorted(state["networks"]),
        "processes": live_processes(state),
    }


def compose_runs(state_dir: Path) -> list[dict[str, Any]]:
    """Every ``compose up`` so far, oldest first: ``project``, ``file``, ``services`` (the
    services as the compose file gave them, before interpolation), ``networks``."""
    return read_state(Path(state_dir))["runs"]
