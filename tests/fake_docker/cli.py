"""The fake ``docker`` program: ``python -I cli.py --state DIR docker|docker-compose ARGS``.

The scripts ``install`` writes run this file by absolute path. Every call is logged (argv) to
``calls.jsonl`` first. What it answers, as Docker 27 with the Compose v2 plugin would:

- ``--version``, ``version``; ``info`` (``--format '{{.ServerVersion}}'``, ``'{{json
  .Runtimes}}'``, ``'{{.DefaultRuntime}}'``): without a daemon, Docker's "Cannot connect"
  error and exit 1, as every call below but ``compose version`` does;
- ``images -q IMAGE`` (an id when present), ``pull IMAGE`` (``pull_seconds``, silent),
  ``login ... --password-stdin`` ("Login Succeeded");
- ``compose ...`` and the ``docker-compose`` program: ``compose.py``;
- ``ps [-a] [-q] [--filter K=V] [--format T]``, ``network ls [-q] [--format T]``, ``rm [-f]``,
  ``network rm``: what the state records;
- ``run --rm -v HOST:DIR IMAGE chmod -R 777 DIR`` (SDK v3's cleanup fallback): the chmod, on
  the host path.

Anything else: exit 1, naming the call on stderr. ``--format`` takes ``{{.Field}}``,
``{{json .Field}}`` and ``{{json .}}`` only.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
import signal
import sys
import time
from pathlib import Path
from typing import Any

if __name__ == "__main__":  # run by the scripts install() writes: the package by its path
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fake_docker import compose  # noqa: E402
from fake_docker import state as state_  # noqa: E402
from fake_docker.compose import NO_DAEMON, Unsupported  # noqa: E402

SERVER_VERSION = "27.3.1"
CLIENT_VERSION = "Docker version 27.3.1, build ce12230"
RUNTIME_PATHS = {"runc": "runc", "nvidia": "nvidia-container-runtime"}
BUILTIN_NETWORKS = {"bridge": "bridge", "host": "host", "none": "null"}


def _fail(message: str, code: int = 1) -> int:
    print(message, file=sys.stderr, flush=True)
    return code


# ---- images -------------------------------------------------------------------------------------
def image_config(config: dict[str, Any], reference: str) -> dict[str, Any] | None:
    """The FakeImage (as a dict) playing ``reference``, or None for an image nobody has."""
    return config["images"].get(reference) or config.get("default_image")


def image_present(config: dict[str, Any], state: dict[str, Any], reference: str) -> bool:
    image = image_config(config, reference)
    return image is not None and (image["present"] or reference in state["pulled"])


def image_id(reference: str) -> str:
    return hashlib.sha256(reference.encode()).hexdigest()[:12]


def pull(config: dict[str, Any], state_dir: Path, reference: str) -> int:
    """Take ``pull_seconds``, then the image is present (silent, as ``docker pull -q``)."""
    if image_config(config, reference) is None:
        return _fail(
            f"Error response from daemon: pull access denied for {reference.split(':')[0]}, "
            "repository does not exist or may require 'docker login'"
        )
    time.sleep(float(config["pull_seconds"]))
    with state_.locked(state_dir) as state:
        if reference not in state["pulled"]:
            state["pulled"].append(reference)
    return 0


# ---- Go-template stand-in -----------------------------------------------------------------------
_PLACEHOLDER = re.compile(r"\{\{\s*(json\s+)?\.([A-Za-z]*)\s*\}\}")


def render(template: str, fields: dict[str, Any]) -> str:
    """``{{.Field}}``, ``{{json .Field}}``, ``{{json .}}`` filled in; anything else refused."""

    def fill(match: re.Match) -> str:
        as_json, name = bool(match.group(1)), match.group(2)
        if not name:
            if not as_json:
                raise Unsupported(f"--format {template!r}")
            return json.dumps(fields, separators=(",", ":"))
        if name not in fields:
            raise Unsupported(f"--format field .{name}")
        value = fields[name]
        return json.dumps(value, separators=(",", ":")) if as_json else str(value)

    text = _PLACEHOLDER.sub(fill, template)
    if "{{" in text:
        raise Unsupported(f"--format {template!r}")
    return text.replace("\\t", "\t").replace("\\n", "\n")


def _options(
    arguments: list[str], flags: set[str], valued: set[str], *, interspersed: bool = True
) -> tuple[dict, list[str]]:
    """Docker-style options (``-a``, ``--format X``, ``--format=X``, ``-aq``).

    Returns ({option: True, or the list of its values}, the operands). Options may follow
    operands, as Docker's commands allow, unless not ``interspersed`` (``run``: everything
    after the image is the command).
    """
    found: dict[str, Any] = {}
    operands: list[str] = []
    index = 0
    while index < len(arguments):
        word = arguments[index]
        if word == "--":
            operands.extend(arguments[index + 1 :])
            break
        if not word.startswith("-") or word == "-":
            if not interspersed:
                operands.extend(arguments[index:])
                break
            operands.append(word)
            index += 1
            continue
        name, equals, value = word.partition("=")
        if name in valued:
            if not equals:
                index += 1
                if index >= len(arguments):
                    raise Unsupported(f"{name} without a value")
                value = arguments[index]
            found.setdefault(name, []).append(value)
        elif word in flags:
            found[word] = True
        elif len(word) > 2 and word[1] != "-" and all(f"-{c}" in flags for c in word[1:]):
            found.update({f"-{c}": True for c in word[1:]})
        else:
            raise Unsupported(f"option {word}")
        index += 1
    return found, operands


# ---- subcommands --------------------------------------------------------------------------------
def info(config: dict[str, Any], arguments: list[str]) -> int:
    options, rest = _options(arguments, set(), {"--format", "-f"})
    if rest:
        raise Unsupported("info with operands")
    runtimes = {name: {"path": RUNTIME_PATHS.get(name, name)} for name in config["runtimes"]}
    fields = {
        "ServerVersion": SERVER_VERSION,
        "Runtimes": runtimes,
        "DefaultRuntime": "runc",
        "OperatingSystem": "fake Docker (no daemon: tests/fake_docker)",
    }
    template = (options.get("--format") or options.get("-f") or [None])[-1]
    if template is None:
        print(f"Server Version: {SERVER_VERSION}")
        print(f"Runtimes: {' '.join(runtimes)}")
        print("Default Runtime: runc")
        return 0
    print(render(template, fields))
    return 0


def images(config: dict[str, Any], state_dir: Path, arguments: list[str]) -> int:
    options, rest = _options(arguments, {"-q", "--quiet"}, set())
    if not (options.get("-q") or options.get("--quiet")) or len(rest) > 1:
        raise Unsupported("images without -q IMAGE")
    state = state_.read_state(state_dir)
    candidates = rest or sorted(set(config["images"]) | set(state["pulled"]))
    for reference in candidates:
        if image_present(config, state, reference):
            print(image_id(reference))
    return 0


def login(arguments: list[str]) -> int:
    options, rest = _options(
        arguments, {"--password-stdin"}, {"-u", "--username", "-p", "--password"}
    )
    if not options.get("--password-stdin") or len(rest) > 1:
        raise Unsupported("login without --password-stdin")
    sys.stdin.read()
    print("Login Succeeded", flush=True)
    return 0


def _container_fields(container: dict[str, Any]) -> dict[str, Any]:
    now = time.time()
    if container["status"] == "running":
        status = f"Up {int(now - container['started_at'])} seconds"
    elif container["status"] == "exited":
        ago = int(now - (container.get("finished_at") or now))
        status = f"Exited ({container['exit_code']}) {ago} seconds ago"
    else:
        status = "Created"
    labels = {
        "com.docker.compose.project": container["project"],
        "com.docker.compose.service": container["service"],
    }
    return {
        "ID": container["id"][:12],
        "Names": container["name"],
        "Image": container["image"],
        "Command": shlex.join(container["argv"]),
        "Status": status,
        "State": container["status"],
        "Labels": ",".join(f"{key}={value}" for key, value in labels.items()),
        "Networks": ",".join(container["networks"]),
        "_labels": labels,
    }


def _matches(fields: dict[str, Any], container: dict[str, Any], filters: list[str]) -> bool:
    for item in filters:
        key, _, value = item.partition("=")
        if key == "name":
            ok = value in container["name"]
        elif key == "id":
            ok = container["id"].startswith(value)
        elif key == "status":
            ok = container["status"] == value
        elif key == "network":
            ok = value in container["networks"]
        elif key == "label":
            label, has_value, wanted = value.partition("=")
            found = fields["_labels"].get(label)
            ok = found is not None and (not has_value or found == wanted)
        else:
            raise Unsupported(f"ps --filter {key}")
        if not ok:
            return False
    return True


def ps(state_dir: Path, arguments: list[str]) -> int:
    options, rest = _options(
        arguments, {"-a", "--all", "-q", "--quiet", "--no-trunc"}, {"--filter", "-f", "--format"}
    )
    if rest:
        raise Unsupported("ps with operands")
    every = options.get("-a") or options.get("--all")
    quiet = options.get("-q") or options.get("--quiet")
    filters = options.get("--filter", []) + options.get("-f", [])
    template = (options.get("--format") or [None])[-1]
    containers = state_.read_state(state_dir)["containers"].values()
    for container in sorted(containers, key=lambda c: -c["created_at"]):  # newest first
        fields = _container_fields(container)
        if (not every and container["status"] != "running") or not _matches(
            fields, container, filters
        ):
            continue
        if quiet:
            print(container["id"] if options.get("--no-trunc") else fields["ID"])
        elif template:
            print(render(template, {k: v for k, v in fields.items() if k != "_labels"}))
        else:
            print(f"{fields['ID']}   {fields['Image']}   {fields['Status']}   {fields['Names']}")
    return 0


def network(state_dir: Path, arguments: list[str]) -> int:
    if arguments[:1] == ["ls"]:
        options, rest = _options(arguments[1:], {"-q", "--quiet"}, {"--format", "--filter", "-f"})
        if rest:
            raise Unsupported("network ls with operands")
        recorded = state_.read_state(state_dir)["networks"]
        rows = [
            {"ID": hashlib.sha256(name.encode()).hexdigest()[:12], "Name": name,
             "Driver": driver, "Scope": "local"}
            for name, driver in [*BUILTIN_NETWORKS.items(), *((n, "bridge") for n in recorded)]
        ]  # fmt: skip
        for item in options.get("--filter", []) + options.get("-f", []):
            key, _, value = item.partition("=")
            if key != "name":
                raise Unsupported(f"network ls --filter {key}")
            rows = [row for row in rows if value in row["Name"]]
        template = (options.get("--format") or [None])[-1]
        for row in rows:
            if options.get("-q") or options.get("--quiet"):
                print(row["ID"])
            elif template:
                print(render(template, row))
            else:
                print(f"{row['ID']}   {row['Name']}   {row['Driver']}   {row['Scope']}")
        return 0
    if arguments[:1] == ["rm"] and len(arguments) > 1:
        code = 0
        with state_.locked(state_dir) as state:
            for name in arguments[1:]:
                if name in state["networks"]:
                    del state["networks"][name]
                    print(name)
                else:
                    code = _fail(f"Error response from daemon: network {name} not found")
        return code
    raise Unsupported("network " + " ".join(arguments[:1]))


def rm(state_dir: Path, arguments: list[str]) -> int:
    options, names = _options(arguments, {"-f", "--force", "-v", "--volumes"}, set())
    if not names:
        raise Unsupported("rm without containers")
    force = options.get("-f") or options.get("--force")
    code = 0
    for name in names:
        with state_.locked(state_dir) as state:
            found = compose.find_container(state, name)
            if found is None:
                code = _fail(f"Error response from daemon: No such container: {name}")
                continue
            if found["status"] == "running" and not force:
                code = _fail(
                    f'Error response from daemon: cannot remove container "/{found["name"]}": '
                    "container is running: stop the container before removing or force remove"
                )
                continue
            del state["containers"][found["id"]]
        compose.kill_container(found, signal.SIGKILL)
        print(name, flush=True)
    return code


def run(arguments: list[str]) -> int:
    """Only SDK v3's cleanup fallback: ``run --rm [--network N] -v HOST:DIR IMAGE chmod -R 777
    DIR``, done on the host path (what root in the container would do to the bind mount)."""
    options, rest = _options(
        arguments, {"--rm"}, {"-v", "--volume", "--network"}, interspersed=False
    )
    volumes = dict(
        reversed(volume.split(":")[:2])
        for volume in options.get("-v", []) + options.get("--volume", [])
    )
    if len(rest) != 5 or rest[1:4] != ["chmod", "-R", "777"] or rest[4] not in volumes:
        raise Unsupported("run other than `run --rm -v HOST:DIR IMAGE chmod -R 777 DIR`")
    host = Path(volumes[rest[4]])
    for path in [host, *host.rglob("*")]:
        if not path.is_symlink():
            path.chmod(0o777)
    return 0


def docker(config: dict[str, Any], state_dir: Path, arguments: list[str]) -> int:
    command = arguments[0] if arguments else ""
    if command in ("--version", "-v"):
        print(CLIENT_VERSION)
        return 0
    if command == "compose":
        return compose.main(arguments[1:], config=config, state_dir=state_dir, legacy=False)
    if not config["daemon"]:
        return _fail(NO_DAEMON)
    if command == "version":
        print(f"Client: Docker Engine - Community\n Version: {SERVER_VERSION}\n")
        print(f"Server: Docker Engine - Community\n Engine:\n  Version: {SERVER_VERSION}")
        return 0
    handlers = {
        "info": lambda rest: info(config, rest),
        "images": lambda rest: images(config, state_dir, rest),
        "pull": lambda rest: pull(config, state_dir, rest[0]) if len(rest) == 1 else None,
        "login": login,
        "ps": lambda rest: ps(state_dir, rest),
        "network": lambda rest: network(state_dir, rest),
        "rm": lambda rest: rm(state_dir, rest),
        "run": run,
    }
    handler = handlers.get(command)
    code = handler(arguments[1:]) if handler else None
    if code is None:
        raise Unsupported(command or "no command")
    return code


def main(argv: list[str]) -> int:
    if len(argv) < 3 or argv[0] != "--state" or argv[2] not in ("docker", "docker-compose"):
        return _fail("usage: cli.py --state DIR docker|docker-compose ARGS...", 2)
    state_dir, program, arguments = Path(argv[1]), argv[2], argv[3:]
    state_.log_call(state_dir, [program, *arguments])
    # `docker pull` and the rest die of SIGINT/SIGTERM as a Go program does: no traceback.
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    config = state_.read_config(state_dir)
    try:
        if program == "docker-compose":
            return compose.main(arguments, config=config, state_dir=state_dir, legacy=True)
        return docker(config, state_dir, arguments)
    except Unsupported as exc:
        return _fail(f"fake docker: unsupported call ({exc}): {shlex.join([program, *arguments])}")
    except BrokenPipeError:  # the reader went away
        os._exit(141)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
