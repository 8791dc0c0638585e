"""``docker compose`` / ``docker-compose`` of the fake Docker CLI: ``version``, ``up``, ``down``.

``up`` (``-f FILE up [--build] [--abort-on-container-exit] [--exit-code-from S]``), as Compose
v2 does, in the mode ``install`` chose:

- ``run``: the file is read (PyYAML), ``$VAR`` / ``${VAR:-x}`` interpolated from this process's
  environment (``$$`` is a ``$``); the project (``-p``, else the file's directory name,
  normalised) is recorded with its networks and containers, which stay recorded, stopped, after
  ``up`` ends, until ``down``. Each service becomes a container (``container.py``): its own
  mount, UTS and network namespaces, ``eth0`` on a bridge of the project's own (the
  ``emulated_container`` machinery; addresses 10.0.0.2, .3, ... in service order, .1 being the
  gateway's on Docker), hostname a 12-hex container id (or the service's ``hostname``), an
  ``/etc/hosts`` naming its id and, standing in for Docker's DNS, every service's name,
  aliases and container name on its networks. The command is the service's ``entrypoint`` +
  ``command`` (an ``entrypoint`` drops the image's CMD), else the image's ENTRYPOINT + the
  service's ``command`` or the image's CMD; the environment the image's ENV + the service's
  ``environment`` + ``HOSTNAME``/``HOME``, ``PATH`` starting at the image python's directory,
  and nothing of this process's. A ``tty: true`` service writes to a pseudo-terminal (no
  ``\\n`` -> ``\\r\\n`` translation). Output is streamed line by line as
  ``<name>  | <line>`` (``container_name``, else ``<service>-1``, padded to the widest).
  When a container's main process exits, what is left in it is killed (Docker's PID
  namespace ends with it). ``--abort-on-container-exit``: the first exit stops the others
  (SIGTERM to each container's processes, SIGKILL 10 s later) and its code is ``up``'s.
  SIGTERM or SIGINT: "Gracefully stopping...", the same stop, exit 130 (a second signal
  kills at once). A GPU reservation (``deploy.resources.reservations.devices`` asking for
  ``gpu``) without the ``nvidia`` runtime fails at start as Docker does.
- ``silent``: the project, networks and containers are recorded as created; then nothing is
  printed or started, and SIGTERM and SIGINT are ignored: only SIGKILL ends it.

``down [--remove-orphans] [--volumes] [-t N]``: the project's containers are stopped (their
processes killed) and removed, and its networks, unless a running container of another
project is on them. Keys a service may have beyond those used: ``shm_size``, ``stdin_open``,
``tty``, ``ulimits``, ``ipc``, ``labels``, ``restart``, ``logging`` (accepted, not emulated);
any other key is refused, so nothing the SDKs start to send goes unnoticed.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shlex
import signal
import subprocess
import sys
import termios
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from fake_docker import state as state_
from smdist.backends.local.hosts.namespaced.probe import SYSTEM_PATH
from smdist.backends.local.hosts.namespaced.switch import Switch, plug_in, start_switch

LEGACY_VERSION = "docker-compose version 1.29.2, build 5becea4c"
CONTAINER_PROGRAM = Path(__file__).resolve().with_name("container.py")
DEFAULT_FILES = ("compose.yaml", "compose.yml", "docker-compose.yaml", "docker-compose.yml")
STOP_GRACE = 10.0  # seconds, Compose's default stop timeout
INTERRUPTED = 130
FIRST_ADDRESS = 2  # 10.0.0.1 is the gateway's on a Docker bridge
SERVICE_KEYS = {
    "image", "container_name", "command", "entrypoint", "environment", "volumes", "networks",
    "deploy", "working_dir", "hostname",
    # accepted, not emulated
    "shm_size", "stdin_open", "tty", "ulimits", "ipc", "labels", "restart", "logging",
}  # fmt: skip
NO_GPU_DRIVER = (
    'Error response from daemon: could not select device driver "" with capabilities: [[gpu]]'
)


NO_DAEMON = (
    "Cannot connect to the Docker daemon at unix:///var/run/docker.sock. "
    "Is the docker daemon running?"
)


class ComposeError(Exception):
    """Compose refuses: the message goes to stderr, exit 1."""


class Unsupported(Exception):
    """A call (or compose file) the fake does not emulate: exit 1, naming it."""


_output = threading.Lock()


def _say(text: str, *, stream: Any = None) -> None:
    with _output:
        try:
            print(text, file=stream or sys.stdout, flush=True)
        except BrokenPipeError:  # nobody reads any more: the containers still run their course
            pass


def _progress(kind: str, name: str, what: str) -> None:
    """Compose's plain progress line (stderr): `` Container NAME  Started``."""
    _say(f" {kind} {name}  {what}", stream=sys.stderr)


def _warn(text: str) -> None:
    _say(f"WARN[0000] {text}", stream=sys.stderr)


# ---- the compose file ---------------------------------------------------------------------------
_VARIABLE = re.compile(
    r"\$(?:(?P<escaped>\$)|\{(?P<braced>[^}]*)\}|(?P<named>[A-Za-z_][A-Za-z0-9_]*))"
)
_BRACED = re.compile(r"(?P<name>[A-Za-z_][A-Za-z0-9_]*)(?:(?P<op>:?[-?+])(?P<arg>.*))?", re.S)


def interpolate(value: Any, env: dict[str, str]) -> Any:
    """Compose's variable interpolation of every string in ``value``."""
    if isinstance(value, dict):
        return {key: interpolate(item, env) for key, item in value.items()}
    if isinstance(value, list):
        return [interpolate(item, env) for item in value]
    if not isinstance(value, str):
        return value

    def substitute(match: re.Match) -> str:
        if match.group("escaped"):
            return "$"
        if match.group("named"):
            name, op, arg = match.group("named"), None, ""
        else:
            parts = _BRACED.fullmatch(match.group("braced"))
            if parts is None:
                raise ComposeError(f"invalid interpolation format for {value!r}")
            name, op, arg = parts.group("name"), parts.group("op"), parts.group("arg") or ""
        found = env.get(name)
        empty = not found
        if op in (":-", "-"):
            return arg if (found is None or (op == ":-" and empty)) else found
        if op in (":?", "?"):
            if found is None or (op == ":?" and empty):
                raise ComposeError(f"required variable {name} is missing a value: {arg}")
            return found
        if op in (":+", "+"):
            return arg if not (found is None or (op == ":+" and empty)) else ""
        if found is None:
            _warn(f'The "{name}" variable is not set. Defaulting to a blank string.')
            return ""
        return found

    return _VARIABLE.sub(substitute, value)


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def service_environment(service: dict[str, Any], env: dict[str, str]) -> dict[str, str]:
    """A service's ``environment`` (``K=V`` list or mapping); a bare ``K`` takes this
    process's value, or is left out when it has none."""
    raw = service.get("environment") or {}
    result: dict[str, str] = {}
    items = (item.partition("=") for item in raw) if isinstance(raw, list) else None
    if items is not None:
        for key, equals, value in items:
            if equals:
                result[key] = value
            elif key in env:
                result[key] = env[key]
        return result
    for key, value in raw.items():
        if value is not None:
            result[key] = _text(value)
        elif key in env:
            result[key] = env[key]
    return result


def _words(value: Any) -> list[str] | None:
    if value is None:
        return None
    return shlex.split(value) if isinstance(value, str) else [_text(word) for word in value]


def _volume(entry: Any, directory: Path) -> dict[str, Any]:
    """``{"source", "target", "readonly"}`` of a bind volume, short or long syntax."""
    if isinstance(entry, dict):
        if entry.get("type", "bind") != "bind":
            raise Unsupported(f"volume of type {entry.get('type')!r}")
        source, target, readonly = entry["source"], entry["target"], entry.get("read_only", False)
    else:
        parts = entry.split(":")
        if len(parts) not in (2, 3):
            raise Unsupported(f"volume {entry!r}")
        source, target = parts[0], parts[1]
        options = parts[2].split(",") if len(parts) == 3 else []
        unknown = set(options) - {"ro", "rw", "z", "Z"}
        if unknown:
            raise Unsupported(f"volume options {sorted(unknown)}")
        readonly = "ro" in options
    if not source.startswith(("/", ".", "~")):
        raise Unsupported(f"named volume {source!r}")
    path = Path(os.path.expanduser(source))
    return {"source": str(directory / path), "target": target, "readonly": bool(readonly)}


def _wants_gpu(service: dict[str, Any]) -> bool:
    reservations = ((service.get("deploy") or {}).get("resources") or {}).get("reservations")
    for device in (reservations or {}).get("devices") or []:
        capabilities = device.get("capabilities") or []
        flat = [c for group in capabilities for c in ([group] if isinstance(group, str) else group)]
        if "gpu" in flat:
            return True
    return False


def normalise_project_name(name: str) -> str:
    """As Compose: lower case, only ``[a-z0-9_-]``, starting with a letter or digit."""
    return re.sub(r"^[^a-z0-9]+", "", re.sub(r"[^a-z0-9_-]", "", name.lower()))


@dataclass
class Container:
    """One service's container, as planned from the compose file and then run."""

    service: str
    name: str  # Docker's container name
    label: str  # its name in Compose's log prefix
    id: str
    image_ref: str
    image: dict[str, Any]
    config: dict[str, Any]  # interpolated
    networks: dict[str, list[str]]  # Docker network name -> aliases
    address: str = ""
    index: int = 0
    argv: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    mounts: list[dict[str, Any]] = field(default_factory=list)
    process: subprocess.Popen | None = None
    reader: threading.Thread | None = None
    namespace: str | None = None
    exit_code: int | None = None

    @property
    def hostname(self) -> str:
        return _text(self.config.get("hostname") or self.id[:12])

    def record(self, project: str, status: str) -> dict[str, Any]:
        return {
            "id": self.id, "name": self.name, "project": project, "service": self.service,
            "image": self.image_ref, "status": status, "exit_code": self.exit_code,
            "argv": self.argv, "networks": sorted(self.networks), "address": self.address,
            "config": self.config, "created_at": time.time(), "started_at": None,
            "finished_at": None, "pid": None, "namespace": None,
        }  # fmt: skip


@dataclass
class Project:
    name: str
    file: Path
    raw: dict[str, Any]
    networks: dict[str, str]  # key in the file -> Docker network name
    containers: list[Container]


def load_project(
    files: list[str],
    name: str | None,
    config: dict[str, Any],
    env: dict[str, str],
    *,
    quiet: bool = False,
) -> Project:
    if len(files) > 1:
        raise Unsupported("more than one -f")
    if files:
        file = Path(files[0]).absolute()
    else:
        found = [Path.cwd() / n for n in DEFAULT_FILES if (Path.cwd() / n).is_file()]
        if not found:
            raise ComposeError("no configuration file provided: not found")
        file = found[0]
    if not file.is_file():
        raise ComposeError(f"open {file}: no such file or directory")
    raw = yaml.safe_load(file.read_text()) or {}
    data = interpolate(raw, env)
    project = normalise_project_name(
        name or env.get("COMPOSE_PROJECT_NAME") or data.get("name") or file.parent.name
    )
    if "version" in data and not quiet:
        _warn(
            f"{file}: the attribute `version` is obsolete, it will be ignored, please remove it "
            "to avoid potential confusion"
        )
    unknown_top = set(data) - {"version", "name", "services", "networks"}
    if unknown_top:
        raise Unsupported(f"top-level compose keys {sorted(unknown_top)}")
    networks = {
        key: (spec or {}).get("name") or f"{project}_{key}"
        for key, spec in (data.get("networks") or {}).items()
    }
    containers = []
    for service, spec in (data.get("services") or {}).items():
        unknown = set(spec) - SERVICE_KEYS
        if unknown:
            raise Unsupported(f"service keys {sorted(unknown)}")
        if "image" not in spec:
            raise Unsupported(f"service {service} without an image (build)")
        image = config["images"].get(spec["image"]) or config.get("default_image")
        attached = spec.get("networks") or ["default"]
        if isinstance(attached, list):
            attached = {key: None for key in attached}
        service_networks = {}
        for key, options in attached.items():
            if key == "default":
                networks.setdefault("default", f"{project}_default")
            elif key not in networks:
                raise ComposeError(f"service {service!r} refers to undefined network {key}")
            service_networks[networks[key]] = list((options or {}).get("aliases") or [])
        name_given = spec.get("container_name")
        containers.append(
            Container(
                service=service,
                name=name_given or f"{project}-{service}-1",
                label=name_given or f"{service}-1",
                id=secrets.token_hex(32),
                image_ref=spec["image"],
                image=image or {},
                config=spec,
                networks=service_networks,
            )
        )
    return Project(project, file, raw, networks, containers)


def _plan(project: Project, env: dict[str, str]) -> None:
    """Address, command, environment and mounts of every container."""
    for index, container in enumerate(project.containers):
        container.index = FIRST_ADDRESS + index
        container.address = f"10.0.0.{container.index}"
        spec, image = container.config, container.image
        entrypoint, command = _words(spec.get("entrypoint")), _words(spec.get("command"))
        if entrypoint is not None:  # Compose: an entrypoint also drops the image's CMD
            container.argv = entrypoint + (command or [])
        else:
            default = image.get("command") or []
            container.argv = list(image.get("entrypoint") or []) + (
                command if command is not None else default
            )
        if not container.argv:
            why = f"no command specified ({container.name})"
            raise ComposeError(f"Error response from daemon: {why}")
        python_bin = str(Path(image["python"]).absolute().parent)
        image_env = dict(image.get("env") or {})
        path = image_env.pop("PATH", SYSTEM_PATH)
        container.env = {
            "PATH": f"{python_bin}:{path}",
            "HOSTNAME": container.hostname,
            **image_env,
        }
        container.env.setdefault("HOME", "/root")
        container.env.update(service_environment(spec, env))
        container.mounts = [_volume(v, project.file.parent) for v in spec.get("volumes") or []]


def _hosts_file(container: Container, project: Project) -> str:
    """Docker's /etc/hosts, plus what its DNS would answer on the container's networks."""
    lines = [
        "127.0.0.1\tlocalhost",
        "::1\tlocalhost ip6-localhost ip6-loopback",
        f"{container.address}\t{container.hostname}",
    ]
    for other in project.containers:
        shared = set(other.networks) & set(container.networks)
        if not shared:
            continue
        names = [alias for net in sorted(shared) for alias in other.networks[net]]
        names += [other.service, other.name, other.id[:12]]
        lines.append(f"{other.address}\t{' '.join(dict.fromkeys(names))}")
    return "\n".join(lines) + "\n"


# ---- the daemon's records -----------------------------------------------------------------------
def find_container(state: dict[str, Any], name: str) -> dict[str, Any] | None:
    for container in state["containers"].values():
        if name in (container["name"], container["id"]) or (
            len(name) >= 12 and container["id"].startswith(name)
        ):
            return container
    return None


def kill_container(container: dict[str, Any], sig: int) -> None:
    """Signal every live process of a recorded container."""
    for pid in state_.container_processes(container):
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass


def _record_created(project: Project, state_dir: Path) -> None:
    """The project's networks and containers, as ``compose up`` creates them."""
    with state_.locked(state_dir) as state:
        state["runs"].append({
            "project": project.name, "file": str(project.file),
            "services": project.raw.get("services") or {},
            "networks": project.raw.get("networks") or {}, "time": time.time(),
        })  # fmt: skip
        used = {name for container in project.containers for name in container.networks}
        for name in sorted(used):
            existing = state["networks"].get(name)
            if existing is None:
                _progress("Network", name, "Creating")
                state["networks"][name] = {
                    "id": secrets.token_hex(32), "project": project.name,
                    "created_at": time.time(),
                }  # fmt: skip
                _progress("Network", name, "Created")
            elif existing["project"] != project.name:
                _warn(
                    f"a network with name {name} exists but was not created for project "
                    f'"{project.name}".\nSet `external: true` to use an existing network'
                )
        for container in project.containers:
            old = next(
                (c for c in state["containers"].values() if c["name"] == container.name), None
            )
            if old is not None and old["project"] != project.name:
                raise ComposeError(
                    f'Error response from daemon: Conflict. The container name "/{container.name}" '
                    f'is already in use by container "{old["id"]}". You have to remove (or rename) '
                    "that container to be able to reuse that name."
                )
            if old is not None:  # the same project's: recreated
                _progress("Container", container.name, "Recreate")
                kill_container(old, signal.SIGKILL)
                del state["containers"][old["id"]]
                _progress("Container", container.name, "Recreated")
            else:
                _progress("Container", container.name, "Creating")
                _progress("Container", container.name, "Created")
            state["containers"][container.id] = container.record(project.name, "created")


def _update(state_dir: Path, container: Container, **changes: Any) -> None:
    with state_.locked(state_dir) as state:
        record = state["containers"].get(container.id)
        if record is not None:  # `down` may have removed it meanwhile
            record.update(changes)


# ---- running ------------------------------------------------------------------------------------
class _Signals:
    """SIGTERM / SIGINT to ``up``, counted; the supervising loop acts on them."""

    def __init__(self) -> None:
        self.count = 0
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, self._handle)

    def _handle(self, signum: int, frame: Any) -> None:
        self.count += 1


def _die_with_parent() -> None:  # runs in the child, before exec: no threads yet
    import ctypes

    ctypes.CDLL(None).prctl(1, int(signal.SIGKILL), 0, 0, 0)  # PR_SET_PDEATHSIG


def _pump(fd: int, label: str) -> None:
    """The container's output, line by line, as ``label  | line``."""
    pending = b""
    while True:
        try:
            chunk = os.read(fd, 65536)
        except OSError:  # EIO: no process holds the terminal's other end any more
            chunk = b""
        if not chunk:
            break
        pending += chunk
        *lines, pending = pending.split(b"\n")
        for line in lines:
            _say(f"{label}| {line.decode('utf-8', 'replace').rstrip(chr(13))}")
    if pending:
        _say(f"{label}| {pending.decode('utf-8', 'replace')}")
    os.close(fd)


class Up:
    """One ``compose up``: start, stream, supervise, stop."""

    def __init__(self, project: Project, state_dir: Path, signals: _Signals) -> None:
        self.project, self.state_dir, self.signals = project, state_dir, signals
        self.run_dir = state_dir / state_.RUN / project.name
        width = max(len(c.label) for c in project.containers) + 1
        self.labels = {c.id: f"{c.label:<{width}} " for c in project.containers}
        self.switch: Switch | None = None

    def _start(self, container: Container) -> None:
        directory = self.run_dir / container.id
        directory.mkdir(parents=True, exist_ok=True)
        for mount in container.mounts:  # Docker makes a missing bind source directory
            if not Path(mount["source"]).exists():
                Path(mount["source"]).mkdir(parents=True)
        (directory / "hosts").write_text(_hosts_file(container, self.project))
        (directory / "hostname").write_text(container.hostname + "\n")
        spec = {
            "parent": os.getpid(), "hostname": container.hostname, "argv": container.argv,
            "env": container.env, "mounts": container.mounts,
            "workdir": _text(container.config.get("working_dir") or "/"),
            "hosts_file": str(directory / "hosts"), "hostname_file": str(directory / "hostname"),
            "network": str(directory / "network"), "scratch": str(directory / "scratch"),
        }  # fmt: skip
        spec_path = directory / "container.json"
        spec_path.write_text(json.dumps(spec, indent=1))
        if container.config.get("tty"):
            reading, writing = os.openpty()
            attributes = termios.tcgetattr(writing)
            attributes[1] &= ~termios.OPOST  # the text as written: no \r added
            termios.tcsetattr(writing, termios.TCSANOW, attributes)
        else:
            reading, writing = os.pipe()
        command = ["unshare", "--mount", "--uts", "--net", "--propagation", "private", "--",
                   sys.executable, "-I", str(CONTAINER_PROGRAM), str(spec_path)]  # fmt: skip
        try:
            container.process = subprocess.Popen(
                command, stdin=subprocess.DEVNULL, stdout=writing, stderr=writing,
                env={"PATH": SYSTEM_PATH}, start_new_session=True,
            )  # fmt: skip
        finally:
            os.close(writing)
        container.reader = threading.Thread(
            target=_pump, args=(reading, self.labels[container.id]), daemon=True
        )
        container.reader.start()
        plug_in(container.process.pid, container.index, self.switch, container.address)
        container.namespace = state_.mount_namespace(container.process.pid)
        _update(
            self.state_dir, container, status="running", pid=container.process.pid,
            namespace=container.namespace, started_at=time.time(),
        )  # fmt: skip
        (directory / "network").touch()  # the container may now run its command
        _progress("Container", container.name, "Started")

    def _members(self, container: Container) -> list[int]:
        if container.namespace is None:
            return []
        return state_.namespace_members(container.namespace, container.id)

    def _signal(self, container: Container, sig: int) -> None:
        targets = set(self._members(container))
        if container.process is not None and container.process.poll() is None:
            targets.add(container.process.pid)
        for pid in targets:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass

    def _finish(self, container: Container, code: int) -> None:
        """The main process has exited: end the rest of the container, report, record."""
        self._signal(container, signal.SIGKILL)  # as its PID namespace would end
        if container.reader is not None:
            container.reader.join(timeout=10)
        container.exit_code = 128 - code if code < 0 else code
        _say(f"{container.label} exited with code {container.exit_code}")
        _update(
            self.state_dir, container, status="exited", exit_code=container.exit_code,
            finished_at=time.time(),
        )  # fmt: skip

    def stop(self, containers: list[Container], forced: Callable[[], bool]) -> None:
        """SIGTERM to every process of each container; SIGKILL after the grace (or at once,
        when ``forced()`` turns true)."""
        running = [c for c in containers if c.process is not None and c.exit_code is None]
        for container in running:
            _progress("Container", container.name, "Stopping")
            self._signal(container, signal.SIGTERM)
        deadline = time.monotonic() + STOP_GRACE
        while any(c.process.poll() is None or self._members(c) for c in running):
            if time.monotonic() > deadline or forced():
                break
            time.sleep(0.05)
        for container in running:
            self._signal(container, signal.SIGKILL)
            self._finish(container, container.process.wait())
            _progress("Container", container.name, "Stopped")

    def run(self, abort: bool, exit_from: str | None) -> int:
        containers = self.project.containers
        seen = 0  # a signal while images were pulled counts too
        self.switch = start_switch()
        try:
            _say("Attaching to " + ", ".join(c.label for c in containers))
            for container in containers:
                self._start(container)
            first: Container | None = None
            running = list(containers)
            while running:
                if self.signals.count > seen:
                    _say("Gracefully stopping... (press Ctrl+C again to force)", stream=sys.stderr)
                    stopped_at = self.signals.count
                    self.stop(running, lambda at=stopped_at: self.signals.count > at)
                    return INTERRUPTED
                for container in list(running):
                    code = container.process.poll()
                    if code is not None:
                        self._finish(container, code)
                        running.remove(container)
                        first = first or container
                if first is not None and running and (abort or exit_from):
                    _say("Aborting on container exit...", stream=sys.stderr)
                    self.stop(running, lambda: self.signals.count > seen)
                    running = []
                time.sleep(0.05)
            if exit_from:
                chosen = next(c for c in containers if c.service == exit_from)
                return chosen.exit_code or 0
            return (first.exit_code or 0) if abort and first else 0
        finally:
            for container in containers:  # whatever an error left running
                if container.process is not None and container.exit_code is None:
                    self._signal(container, signal.SIGKILL)
                    self._finish(container, container.process.wait())
            self.switch.stop()


def _pull_missing(project: Project, config: dict[str, Any], state_dir: Path) -> None:
    state = state_.read_state(state_dir)
    for container in project.containers:
        image = container.image
        if not image:
            raise ComposeError(
                f"Error response from daemon: pull access denied for "
                f"{container.image_ref.split(':')[0]}, repository does not exist or may "
                "require 'docker login'"
            )
        if image["present"] or container.image_ref in state["pulled"]:
            continue
        _progress("", container.service, "Pulling")
        time.sleep(float(config["pull_seconds"]))
        with state_.locked(state_dir) as current:
            if container.image_ref not in current["pulled"]:
                current["pulled"].append(container.image_ref)
        state["pulled"].append(container.image_ref)
        _progress("", container.service, "Pulled")


def up(project: Project, options: dict[str, Any], config: dict[str, Any], state_dir: Path) -> int:
    if options.get("detach"):
        raise Unsupported("up --detach (containers would outlive the fake)")
    if config["mode"] == "silent":  # signals already ignored: see main()
        with state_.locked(state_dir) as state:  # created, silently
            state["runs"].append({
                "project": project.name, "file": str(project.file),
                "services": project.raw.get("services") or {},
                "networks": project.raw.get("networks") or {}, "time": time.time(),
            })  # fmt: skip
            for name in {n for c in project.containers for n in c.networks}:
                state["networks"].setdefault(
                    name, {"id": secrets.token_hex(32), "project": project.name,
                           "created_at": time.time()},
                )  # fmt: skip
            for container in project.containers:
                state["containers"][container.id] = container.record(project.name, "created")
        while True:
            time.sleep(3600)
    signals = _Signals()
    _pull_missing(project, config, state_dir)
    _plan(project, dict(os.environ))
    _record_created(project, state_dir)
    if "nvidia" not in config["runtimes"]:
        for container in project.containers:
            if _wants_gpu(container.config):
                _progress("Container", container.name, "Starting")
                raise ComposeError(NO_GPU_DRIVER)
    return Up(project, state_dir, signals).run(
        abort=bool(options.get("abort")), exit_from=options.get("exit_from")
    )


def down(project: Project, timeout: float, state_dir: Path) -> int:
    with state_.locked(state_dir, write=False) as state:
        records = [c for c in state["containers"].values() if c["project"] == project.name]
    for record in records:
        if state_.container_processes(record):
            _progress("Container", record["name"], "Stopping")
            kill_container(record, signal.SIGTERM)
            deadline = time.monotonic() + timeout
            while state_.container_processes(record) and time.monotonic() < deadline:
                time.sleep(0.05)
            kill_container(record, signal.SIGKILL)
            while state_.container_processes(record):
                time.sleep(0.05)
            _progress("Container", record["name"], "Stopped")
        _progress("Container", record["name"], "Removing")
        with state_.locked(state_dir) as state:
            state["containers"].pop(record["id"], None)
        _progress("Container", record["name"], "Removed")
    names = set(project.networks.values())
    with state_.locked(state_dir) as state:
        for name in sorted(names & set(state["networks"])):
            busy = [
                c for c in state["containers"].values()
                if name in c["networks"] and c["status"] == "running"
            ]  # fmt: skip
            if busy:
                why = f"error while removing network: network {name} has active endpoints"
                _say(f"failed to remove network {name}: Error response from daemon: {why}",
                     stream=sys.stderr)  # fmt: skip
                continue
            _progress("Network", name, "Removing")
            del state["networks"][name]
            _progress("Network", name, "Removed")
    return 0


# ---- the command line ---------------------------------------------------------------------------
def _parse(arguments: list[str]) -> tuple[list[str], str | None, str, list[str]]:
    """(files, project name, subcommand, its arguments) of ``compose`` global options."""
    files: list[str] = []
    name = None
    index = 0
    valued = {"-f", "--file", "-p", "--project-name", "--ansi", "--progress",
              "--project-directory"}  # fmt: skip
    while index < len(arguments) and arguments[index].startswith("-"):
        option, equals, value = arguments[index].partition("=")
        if option not in valued:
            if option in ("-v", "--version"):
                return files, name, "version", []
            raise Unsupported(f"compose option {option}")
        if not equals:
            index += 1
            if index >= len(arguments):
                raise Unsupported(f"{option} without a value")
            value = arguments[index]
        if option in ("-f", "--file"):
            files.append(value)
        elif option in ("-p", "--project-name"):
            name = value
        elif option == "--project-directory":
            raise Unsupported("--project-directory")
        index += 1
    if index >= len(arguments):
        raise Unsupported("compose without a command")
    return files, name, arguments[index], arguments[index + 1 :]


def _up_options(arguments: list[str]) -> dict[str, Any]:
    options: dict[str, Any] = {}
    index = 0
    while index < len(arguments):
        word = arguments[index]
        if word in ("--build", "--remove-orphans", "--force-recreate", "--no-build",
                    "--quiet-pull", "--always-recreate-deps"):  # fmt: skip
            pass
        elif word == "--abort-on-container-exit":
            options["abort"] = True
        elif word in ("-d", "--detach"):
            options["detach"] = True
        elif word == "--exit-code-from" and index + 1 < len(arguments):
            index += 1
            options["exit_from"] = arguments[index]
        else:
            raise Unsupported(f"up {word}")
        index += 1
    return options


def _down_timeout(arguments: list[str]) -> float:
    timeout = STOP_GRACE
    index = 0
    while index < len(arguments):
        word = arguments[index]
        if word in ("--timeout", "-t") and index + 1 < len(arguments):
            index += 1
            timeout = float(arguments[index])
        elif word.startswith("--timeout="):
            timeout = float(word.partition("=")[2])
        elif word not in ("--remove-orphans", "--volumes", "-v"):
            raise Unsupported(f"down {word}")
        index += 1
    return timeout


def main(arguments: list[str], *, config: dict[str, Any], state_dir: Path, legacy: bool) -> int:
    """``docker compose ARGS`` (``legacy``: the ``docker-compose ARGS`` program)."""
    try:
        files, name, command, rest = _parse(arguments)
        if command == "version":
            if legacy:
                print(LEGACY_VERSION)
                return 0
            if config["compose_version"] is None:
                print("docker: 'compose' is not a docker command.\nSee 'docker --help'",
                      file=sys.stderr)  # fmt: skip
                return 1
            version = config["compose_version"]
            print(version.rsplit(" ", 1)[-1].lstrip("v") if "--short" in rest else version)
            return 0
        if config["compose_version"] is None and not legacy:
            print("docker: 'compose' is not a docker command.", file=sys.stderr)
            return 1
        if not config["daemon"]:
            print(NO_DAEMON, file=sys.stderr)
            return 1
        if command not in ("up", "down"):
            raise Unsupported(f"compose {command}")
        silent = command == "up" and config["mode"] == "silent"
        if silent:  # a stuck Compose from the start: only SIGKILL ends it
            for sig in (signal.SIGTERM, signal.SIGINT):
                signal.signal(sig, signal.SIG_IGN)
        project = load_project(files, name, config, dict(os.environ), quiet=silent)
        if command == "up":
            return up(project, _up_options(rest), config, state_dir)
        return down(project, _down_timeout(rest), state_dir)
    except ComposeError as exc:
        _say(str(exc), stream=sys.stderr)
        return 1
