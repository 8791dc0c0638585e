"""The harness of the local-backend jobs the integration tests start: ``smdist run`` as a real
process with a timeout, its output and job folder, and the search for anything it left running.

Shared by every module that runs jobs through ``smdist run`` or ``smdist.fit``.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import tarfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from smdist.backends.local.hosts.shared.ports import free_ports

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"
PYTHON = sys.executable
_FOREIGN = (
    "SM_",
    "SMDIST_",
    "TF_CONFIG",
    "HOROVOD_",
    "OMPI_",
    "PMIX_",
    "NSS_WRAPPER",
    "TORCHELASTIC",
)
# Every job a test starts carries its directory in this variable (see ``_marked``).
# Secrets as a user's shell holds them, with values no file may contain: every job of these
# tests runs with them, and every file under the test's folder is searched for them after.
CANARY_SECRETS = {
    "HF_TOKEN": "hf_canaryTokenNeverOnDisk4f1c",
    "WANDB_API_KEY": "canary0wandb0key0never0on0disk0b7e2",
    "MY_SERVICE_PASSWORD": "canary-password-never-on-disk-91ad",
}
LEFTOVER_MARKER = "LEFTOVER_MARKER"
MARKER_PREFIX = f"{LEFTOVER_MARKER}=".encode()
_CHECKSUM = re.compile(r"rank=(\d+) weights_checksum=([0-9a-f]+)")
# Small runs: every strategy trains a few steps.
SMALL = ["-H", "epochs=1", "-H", "max_steps=6", "-H", "samples=256", "-H", "log_every=3",
         "-H", "batch_size=16"]  # fmt: skip


def clean_environ(extra: dict[str, str] | None = None) -> dict[str, str]:
    environ = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(_FOREIGN) and name not in ("RANK", "WORLD_SIZE", "LD_PRELOAD")
    }
    environ["PATH"] = f"{Path(PYTHON).parent}{os.pathsep}{environ.get('PATH', '')}"
    environ["TF_CPP_MIN_LOG_LEVEL"] = "2"
    environ.update(CANARY_SECRETS)
    environ.update(extra or {})
    return environ


# What a job's own script writes (its model, output and checkpoints, and the archives and
# stores made of them): a script that saves its environment there saved it itself.
SCRIPTS_OWN = re.compile(
    r"/hosts/[^/]+/(model|output|checkpoints)/|/jobs/[^/]+/output/|^/checkpoints/"
)


def files_holding_secrets(folder: Path, secrets: dict[str, str] | None = None) -> list[str]:
    """Files smdist wrote under ``folder`` (links followed; not what the job's script wrote,
    ``SCRIPTS_OWN``) that hold the value of one of ``secrets`` (default: the canaries every
    job runs with), as ``path: NAME``."""
    wanted = {name: value.encode() for name, value in (secrets or CANARY_SECRETS).items()}
    found = []
    for directory, _, names in os.walk(folder, followlinks=True):
        for name in names:
            path = Path(directory, name)
            if SCRIPTS_OWN.search("/" + path.relative_to(folder).as_posix()):
                continue
            try:
                with open(path, "rb") as handle:
                    data = handle.read(64 << 20)
            except OSError:
                continue  # a socket, a dangling link, a file gone meanwhile
            found += [f"{path}: {key}" for key, value in wanted.items() if value in data]
    return found


def _marked(environ: bytes, marker: str) -> bool:
    """Whether a process's environment names ``marker`` (a test's directory): in a path (hosts
    sharing this machine see their folders where they are), or as LEFTOVER_MARKER, which a
    job's processes inherit (hosts in namespaces see only /opt/ml) and which names ``marker``
    or a directory above or below it."""
    if marker.encode() in environ:
        return True
    for entry in environ.split(b"\0"):
        if entry.startswith(MARKER_PREFIX):
            value = entry[len(MARKER_PREFIX) :].decode(errors="replace")
            return marker.startswith(value) or value.startswith(marker)
    return False


def leftover_processes(marker: str) -> list[str]:
    """Live processes whose environment names ``marker`` (a test's own directory)."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            stat = Path(f"/proc/{name}/stat").read_bytes()
            if stat[stat.rfind(b")") + 2 :].startswith(b"Z"):
                continue
            if _marked(Path(f"/proc/{name}/environ").read_bytes(), marker):
                command = Path(f"/proc/{name}/cmdline").read_bytes().replace(b"\0", b" ")
                found.append(f"{name}: {command.decode(errors='replace')[:200]}")
        except OSError:
            continue
    return found


def assert_nothing_left(marker: Path, wait: float = 10.0) -> None:
    deadline = time.monotonic() + wait
    left = leftover_processes(str(marker))
    while left and time.monotonic() < deadline:
        time.sleep(0.2)
        left = leftover_processes(str(marker))
    assert not left, "processes outlived the job:\n" + "\n".join(left)


@dataclass
class Run:
    returncode: int
    output: str
    root: Path

    def job_dirs(self) -> list[Path]:
        return sorted((self.root / "jobs").iterdir())

    def job_dir(self) -> Path:
        return self.job_dirs()[-1]


def smdist_run(
    job: Path,
    tmp_path: Path,
    *args: str,
    timeout: float = 300,
    start_only: bool = False,
    env: dict[str, str] | None = None,
    prefix: Sequence[str] = (),
):
    """``smdist run job --root tmp/.smdist args`` (with ``env`` added to a clean environment,
    run by the ``prefix`` command where one is given); returns a Run (or the Popen with
    start_only)."""
    root = tmp_path / ".smdist"
    log = tmp_path / f"smdist-run-{time.monotonic_ns()}.log"
    command = [*prefix, PYTHON, "-m", "smdist.cli.app", "run", str(job), "--root", str(root), *args]
    with open(log, "wb") as handle:
        process = subprocess.Popen(
            command,
            cwd=tmp_path,
            env=clean_environ({LEFTOVER_MARKER: str(tmp_path), **(env or {})}),
            stdout=handle,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=_as_in_a_terminal,
        )
    if start_only:
        return process, log
    return finish(process, log, root, timeout)


def _as_in_a_terminal() -> None:
    """Ctrl-C's default, as a terminal gives it, even where the tests run in the background
    of a script (which starts them with SIGINT ignored, and Python then keeps it ignored)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def smdist_cli(cwd: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    """``smdist ARGS`` in ``cwd`` with a clean environment, its output captured."""
    return subprocess.run(
        [PYTHON, "-m", "smdist.cli.app", *args],
        cwd=cwd,
        env=clean_environ(),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def finish(process: subprocess.Popen, log: Path, root: Path, timeout: float) -> Run:
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=30)
        raise AssertionError(f"smdist run outlived {timeout} s:\n{log.read_text()}") from None
    leaked = files_holding_secrets(root)
    assert not leaked, f"secrets written to disk: {leaked}"
    return Run(process.returncode, log.read_text(errors="replace"), root)


def free_port() -> int:
    return free_ports(1)[0]


def checksums(output: str) -> dict[int, str]:
    return {int(rank): digest for rank, digest in _CHECKSUM.findall(output)}


def tar_names(path: Path) -> list[str]:
    with tarfile.open(path) as tar:
        return tar.getnames()


def assert_a_sound_finish(output: str, world: int, job_dir: Path, marker: Path) -> None:
    """What every strategy's finished job must show, in its ``output`` (its log or smdist's):
    ranks 0 to ``world`` - 1 each reported the same weights, the job's model archive holds
    files, and nothing whose environment names ``marker`` outlived it."""
    found = checksums(output)
    assert sorted(found) == list(range(world)), output
    assert len(set(found.values())) == 1, f"replicas diverged: {found}"
    model = job_dir / "output" / "model.tar.gz"
    assert [n for n in tar_names(model) if n != "."], "model.tar.gz is empty"
    assert_nothing_left(marker)
