"""The process that runs one local-mode job:
``python -m smdist.backends.sagemaker.local_mode.supervisor JOB_DIR``.

It runs the SDK's local mode (``sdk_runs``) with its stdout and stderr as the job's log, keeps
``job.json`` current, and owns the end of the job whatever happens:

- a stop (the job directory's stop file, SIGTERM, SIGINT or SIGHUP) at any moment, image pull
  included: SIGTERM to every process this one started (Compose then stops its containers),
  SIGKILL to what is left after the grace period, and again to anything started later;
- at the end, completed, failed or stopped: ``docker compose down`` for the compose file the
  SDK wrote (the SDKs never run it, leaving the containers and the ``sagemaker-local``
  network behind), then the job's temporary directory is removed, compose file (and any
  credentials in it) and staged code included. The output directory is kept.

Runs in a session of its own, so a Ctrl-C in the terminal that started it reaches only the
waiting ``smdist`` process, which asks for the stop.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from smdist.backends.job_records import STOP_FILE, process_identity
from smdist.backends.local.processes import proctree
from smdist.backends.sagemaker.local_mode.checks import sdk_compose_command
from smdist.backends.sagemaker.local_mode.run_file import RECORD, LocalRun, write_record
from smdist.backends.sagemaker.local_mode.sdk_runs import run_job
from smdist.planning.plan import Plan
from smdist.spec.job import JobSpec

POLL = 0.1
DOWN_TIMEOUT = 60.0
# After the grace period, how long the SDK call may take to notice its processes died.
SETTLE = 10.0


class Supervision:
    def __init__(self, job_dir: Path, run: LocalRun) -> None:
        self.job_dir, self.run = job_dir, run
        self.record: dict[str, Any] = json.loads((job_dir / RECORD).read_text())
        self.stop_at: float | None = None
        self.main_done = threading.Event()
        self._finish_lock = threading.Lock()
        self._finished = False

    # ---- stopping ---------------------------------------------------------------------------
    def request_stop(self, *_: Any) -> None:
        if self.stop_at is None:
            self.stop_at = time.monotonic()
            print("smdist: stop requested; stopping the containers", flush=True)
            self._write(status="Stopping")

    def _children(self) -> list[int]:
        return [pid for pid in proctree.descendants(os.getpid()) if pid != os.getpid()]

    def watch(self) -> None:
        """Polls for a stop; once asked, ends every process the job starts, then the job."""
        signalled: set[int] = set()
        while not self.main_done.is_set():
            if self.stop_at is None and (self.job_dir / STOP_FILE).exists():
                self.request_stop()
            if self.stop_at is not None:
                waited = time.monotonic() - self.stop_at
                children = self._children()
                if waited < self.run.grace:
                    fresh = [pid for pid in children if pid not in signalled]
                    proctree.send(fresh, signal.SIGTERM)
                    signalled.update(fresh)
                else:
                    proctree.kill_all(children)
                if waited >= self.run.grace + SETTLE:
                    # The SDK call has not returned (stuck outside any process): end it here.
                    self.finish(None, None)
                    os._exit(1)
            time.sleep(POLL)

    # ---- the end ----------------------------------------------------------------------------
    def _compose_down(self) -> None:
        root = self.run.container_root
        files = sorted(root.rglob("docker-compose.yaml")) if root.is_dir() else []
        docker = shutil.which("docker")
        for compose_file in files:
            command = self._compose_command(docker)
            if not command:
                print("smdist: no docker to run `compose down` with", flush=True)
                return
            argv = [*command, "-f", str(compose_file), "down", "--remove-orphans", "--volumes"]
            argv += ["--timeout", "0" if self.stop_at is not None else "10"]
            try:
                done = subprocess.run(
                    argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=DOWN_TIMEOUT
                )
                if done.returncode != 0:
                    print(done.stdout.decode("utf-8", "replace"), end="", flush=True)
            except (OSError, subprocess.TimeoutExpired) as error:
                print(f"smdist: `compose down` failed: {error}", flush=True)

    def _compose_command(self, docker: str | None) -> list[str] | None:
        try:
            return sdk_compose_command(self.run.sdk)
        except Exception:  # noqa: BLE001 - fall back to the plugin when the SDK finds none
            return [docker, "compose"] if docker else None

    def finish(self, error: BaseException | None, model: str | None) -> None:
        # The whole end under the lock: the watcher ends a stuck job from its own thread, and
        # the main thread, its SDK call failing as the work directory goes, finishes too. The
        # second caller must wait for the first to have written the end, or it returns, the
        # process exits and the watcher (a daemon thread) dies before writing "Stopped".
        with self._finish_lock:
            if self._finished:
                return
            self._finished = True
            self._end(error, model)

    def _end(self, error: BaseException | None, model: str | None) -> None:
        proctree.kill_all(self._children())
        self._compose_down()
        shutil.rmtree(self.run.work_dir, ignore_errors=True)
        if self.stop_at is not None:
            status, reason, model = "Stopped", "stopped on request", None
        elif error is not None:
            status, reason, model = "Failed", str(error) or type(error).__name__, None
        else:
            status, reason = "Completed", None
        kept = Path(self.run.output_dir)
        if status != "Completed" and kept.is_dir() and any(kept.iterdir()):
            reason = f"{reason}; what the job wrote is kept in {kept}"
        self._write(status=status, failure_reason=reason, model_artifacts=model)
        print(f"smdist: {status}" + (f": {reason}" if reason else ""), flush=True)

    def _write(self, **changes: Any) -> None:
        self.record.update(changes)
        write_record(self.job_dir, self.record)

    # ---- the job ------------------------------------------------------------------------------
    def main(self) -> int:
        for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(signum, self.request_stop)
        watcher = threading.Thread(target=self.watch, name="smdist-stop-watch", daemon=True)
        watcher.start()
        error: BaseException | None = None
        model = None
        try:
            model = run_job(self.run, self._plan())
        except BaseException as exc:  # noqa: BLE001 - the job's failure reason
            error = exc
            if self.stop_at is None:
                import traceback

                traceback.print_exc()
        finally:
            self.main_done.set()
            self.finish(error, model)
        return 0

    def _plan(self) -> Any:
        """The plan ``launch`` showed, as it wrote it (``Plan.to_record``): not planned again."""
        spec = JobSpec.from_dict(self.run.spec, source=self.run.spec_source)
        return Plan.from_record(self.run.plan, spec)


def main(argv: list[str] | None = None) -> int:
    job_dir = Path((argv if argv is not None else sys.argv[1:])[0])
    supervision = Supervision(job_dir, LocalRun.read(job_dir))
    supervision._write(supervisor=process_identity())
    return supervision.main()


if __name__ == "__main__":
    sys.exit(main())
