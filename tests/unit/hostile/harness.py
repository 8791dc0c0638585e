"""Run job files through ``smdist.load`` + ``smdist.plan`` in a forked child.

A hostile file may hang the loader (alias bombs), exhaust memory or crash the interpreter (deep
nesting); in a child each of those is one failed case instead of a dead test run. The child
inherits the parent's imports, so its CPU time is the check's own. ``Isolated`` keeps one child
for case after case (a fork per case costs more than most checks) and replaces it only when a
case has hung it or killed it.
"""

from __future__ import annotations

import contextlib
import io
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


def _no_answer(exitcode: int | None, timeout: float) -> Outcome:
    if exitcode is None or exitcode in (-9, -24):  # killed, or out of CPU time
        wall = timeout * WALL_PER_CPU_SECOND
        return Outcome("hung", error=f"no answer within {timeout:.0f} s of CPU or {wall:.0f} s")
    return Outcome("died", error=f"the interpreter ended with exit code {exitcode}")


def _limit_next_case(timeout: float) -> None:
    """Soft limits for one more case, counted from what the child has used so far; the hard
    limits stay as inherited so that the next case can be given its own."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    cpu = int(usage.ru_utime + usage.ru_stime + timeout) + 1
    memory = _address_space() + CHILD_MEMORY
    for kind, soft in ((resource.RLIMIT_CPU, cpu), (resource.RLIMIT_AS, memory)):
        hard = resource.getrlimit(kind)[1]
        if hard != resource.RLIM_INFINITY:
            soft = min(soft, hard)
        resource.setrlimit(kind, (soft, hard))


def _serve(connection: Any) -> None:
    """The child's loop: one ``(check, args, timeout)`` in, its Outcome out, until told to stop.
    Past its soft CPU limit the kernel ends the child (SIGXCPU), as a forked child per case."""
    while True:
        try:
            request = connection.recv()
        except EOFError:
            return
        if request is None:
            return
        check, args, timeout = request
        _limit_next_case(timeout)
        connection.send(check(*args))


class Isolated:
    """Checks run one after another in one forked child, each with its own CPU and memory
    limits; a case that hangs or kills the child is that case's outcome, and the next case gets
    a fresh child forked from this process again."""

    def __init__(self) -> None:
        self._child: Any = None
        self._connection: Any = None

    def run(
        self, check: Callable[..., Outcome], *args: Any, timeout: float = CHILD_TIMEOUT
    ) -> Outcome:
        if self._child is None:
            context = multiprocessing.get_context("fork")
            self._connection, theirs = context.Pipe()
            self._child = context.Process(target=_serve, args=(theirs,), daemon=True)
            self._child.start()
            theirs.close()
        try:
            self._connection.send((check, args, timeout))
            if self._connection.poll(timeout * WALL_PER_CPU_SECOND):
                return self._connection.recv()
        except (EOFError, OSError):  # the child is gone: it died on this case
            pass
        child = self._end()
        return _no_answer(child.exitcode, timeout)

    def validate(self, job: Path, deep: bool = False, timeout: float = CHILD_TIMEOUT) -> Outcome:
        return self.run(_validate, job, deep, timeout=timeout)

    def cli(self, *args: str, cwd: Path) -> CliResult:
        """``smdist <args>`` as the script's ``main`` runs it, in the child (see ``_command``)."""
        result = self.run(_command, args, cwd, timeout=CHILD_TIMEOUT)
        if isinstance(result, Outcome):  # it hung or killed the child
            return CliResult(-1, "", result.error, CLI_TIMEOUT)
        return result

    def close(self) -> None:
        if self._child is not None and self._child.is_alive():
            try:
                self._connection.send(None)
            except OSError:
                pass
        self._end()

    def _end(self) -> Any:
        child, self._child = self._child, None
        if child is not None:
            child.join(1.0)
            if child.is_alive():
                child.kill()
                child.join()
            self._connection.close()
        return child


def warm_up(job: Path) -> None:
    """Import and build everything once, the command line's too, so that a child forked after
    this spends its CPU time on the check alone."""
    _validate(job)
    _command(("validate", str(job)), job.parent)


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


def _command(args: tuple[str, ...], cwd: Path) -> CliResult:
    """``smdist <args>`` through the console script's own ``main``, in this process, with
    ``run_cli``'s terminal and streams that encode as a process's do; what only a process of
    its own adds (the installed script, the interpreter's exit) is for ``run_cli`` to prove."""
    from smdist.cli.app import main

    before = (os.getcwd(), dict(os.environ))
    out, err = _stream_like(sys.__stdout__), _stream_like(sys.__stderr__)
    start = time.perf_counter()
    try:  # the child goes on to other cases: leave its directory and environment as they were
        os.chdir(cwd)
        os.environ.update(COLUMNS="400", NO_COLOR="1")
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(list(args))
    finally:
        os.chdir(before[0])
        os.environ.clear()
        os.environ.update(before[1])
    wall = time.perf_counter() - start
    return CliResult(code, _written(out), _written(err), wall)


def _stream_like(stream: Any) -> io.TextIOWrapper:
    """A stream with the encoding and error handling of ``stream`` as the interpreter opened
    it (test capture aside): text a real process could not write fails here too."""
    return io.TextIOWrapper(io.BytesIO(), encoding=stream.encoding, errors=stream.errors)


def _written(stream: io.TextIOWrapper) -> str:
    stream.flush()
    return stream.buffer.getvalue().decode(stream.encoding, errors="replace")  # as run_cli reads


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
