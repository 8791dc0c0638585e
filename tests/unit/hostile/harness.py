"""Run one job file through ``smdist.load`` + ``smdist.plan`` in a forked child.

A hostile file may hang the loader (alias bombs), exhaust memory or crash the interpreter (deep
nesting); in a child each of those is one failed case instead of a dead test run. The child
inherits the parent's imports, so its CPU time is the check's own.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import resource
import subprocess
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

CHILD_TIMEOUT = 10.0  # CPU seconds before a case counts as hung (it may take 1 s of CPU)
# Wall seconds for an answer, per CPU second allowed: on a loaded machine (CI runs two test
# workers beside jobs of many processes) a child may wait long for a core, and that is no hang.
WALL_PER_CPU_SECOND = 12
CLI_TIMEOUT = 30.0  # wall seconds before `smdist validate` counts as hung
CHILD_MEMORY = 4 << 30  # address space a case may add before it counts as a crash


@dataclass
class Outcome:
    """What smdist did with a job file."""

    kind: str  # refused | accepted | crash | hung | died
    problems: list[tuple[str, str, str]] = field(default_factory=list)  # path, text, severity
    error: str = ""  # the last line of a traceback, or how the child ended
    cpu: float = 0.0
    wire: dict[str, Any] | None = None  # wire hyperparameters and environment when accepted

    @property
    def errors(self) -> list[tuple[str, str]]:
        return [(path, text) for path, text, severity in self.problems if severity == "error"]


def _validate(job: Path, deep: bool = False) -> Outcome:
    """load + plan; with ``deep``, a valid job is also planned as a submit plans it."""
    import smdist
    from smdist.errors import SpecError

    start = time.process_time()
    try:
        plan = smdist.plan(smdist.load(job))
    except SpecError as exc:
        problems = [(p.path, str(p), p.severity) for p in exc.problems]
        return Outcome("refused", problems, cpu=time.process_time() - start)
    except BaseException as exc:  # noqa: BLE001 - any other exception is the finding
        return Outcome("crash", error=_last_line(exc), cpu=time.process_time() - start)
    cpu = time.process_time() - start
    wire = {"hyperparameters": plan.wire_hyperparameters, "environment": dict(plan.environment)}
    if deep:
        try:
            submitted = plan.bind(
                job_name="job-2026-11-22-00-00-00-000",
                region="us-west-2",
                bucket="bucket",
                role=None,
                code_uri="s3://bucket/smdist/source/0/sourcedir.tar.gz",
            )
            json.dumps(submitted.wire_hyperparameters)  # what the request carries
            json.dumps(plan.to_dict())  # what `smdist plan --json` prints
        except BaseException as exc:  # noqa: BLE001
            return Outcome("crash", error="planning a valid job: " + _last_line(exc), cpu=cpu)
    return Outcome("accepted", cpu=cpu, wire=wire)


def _last_line(exc: BaseException) -> str:
    return traceback.format_exception_only(type(exc), exc)[-1].strip()[:500]


def _address_space() -> int:
    """This process's address space now: a forked child starts with its parent's, which is
    large in a test worker that has imported torch or TensorFlow for earlier tests."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmSize:"):
            return int(line.split()[1]) * 1024
    return 0


def _child(connection: Any, check: Callable[..., Outcome], args: tuple, timeout: float) -> None:
    # A limit below what the child already holds fails every later allocation, and C code
    # reports that as anything (a SystemError, a crash): the limit is what a case may add.
    limit = _address_space() + CHILD_MEMORY
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    resource.setrlimit(resource.RLIMIT_CPU, (int(timeout) + 1, int(timeout) + 2))
    connection.send(check(*args))
    connection.close()


def run_isolated(
    check: Callable[..., Outcome], *args: Any, timeout: float = CHILD_TIMEOUT
) -> Outcome:
    """``check(*args)`` in a forked child; a hang or a dead child is an outcome too."""
    context = multiprocessing.get_context("fork")
    receiver, sender = context.Pipe(duplex=False)
    child = context.Process(target=_child, args=(sender, check, args, timeout), daemon=True)
    child.start()
    sender.close()
    try:
        if receiver.poll(timeout * WALL_PER_CPU_SECOND):
            return receiver.recv()
    except EOFError:
        pass
    finally:
        child.join(1.0)
        if child.is_alive():
            child.kill()
            child.join()
        receiver.close()
    if child.exitcode is None or child.exitcode in (-9, -24):  # killed, or out of CPU time
        wall = timeout * WALL_PER_CPU_SECOND
        return Outcome("hung", error=f"no answer within {timeout:.0f} s of CPU or {wall:.0f} s")
    return Outcome("died", error=f"the interpreter ended with exit code {child.exitcode}")


def validate_isolated(job: Path, deep: bool = False, timeout: float = CHILD_TIMEOUT) -> Outcome:
    return run_isolated(_validate, job, deep, timeout=timeout)


def warm_up(job: Path) -> None:
    """Import and build everything once so a child's CPU time is the check alone."""
    _validate(job)


def smdist_command() -> list[str]:
    """The installed ``smdist`` script next to this interpreter, else ``python -m``."""
    script = Path(sys.executable).with_name("smdist")
    if script.exists():
        return [str(script)]
    return [sys.executable, "-m", "smdist.cli.app"]


@dataclass
class CliResult:
    returncode: int
    stdout: str
    stderr: str
    wall: float


def run_cli(*args: str, cwd: Path) -> CliResult:
    """``smdist <args>`` in a subprocess with a wide terminal (no wrapped field paths)."""
    env = {**os.environ, "COLUMNS": "400", "NO_COLOR": "1"}
    start = time.perf_counter()
    try:
        done = subprocess.run(
            [*smdist_command(), *args],
            capture_output=True,
            text=True,
            errors="replace",
            timeout=CLI_TIMEOUT,
            cwd=cwd,
            env=env,
        )
    except subprocess.TimeoutExpired:
        return CliResult(-1, "", f"no answer within {CLI_TIMEOUT:.0f} s", CLI_TIMEOUT)
    return CliResult(done.returncode, done.stdout, done.stderr, time.perf_counter() - start)
