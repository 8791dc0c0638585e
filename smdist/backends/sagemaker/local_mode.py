"""SageMaker SDK local mode: SageMaker's own training containers on this machine, via Docker.

The SDK's local mode (``instance_type="local"`` / ``"local_gpu"``) runs the Deep Learning
Container images with Docker Compose, one container per instance. smdist checks for Docker,
its daemon and Docker Compose before anything starts (the SDK itself fails deep inside ``fit``
with a bare ``FileNotFoundError``), and stages the same code bundle the other backends run.

Credentials: with long-lived keys the SDK writes ``AWS_ACCESS_KEY_ID`` and
``AWS_SECRET_ACCESS_KEY`` in plain text into the ``docker-compose.yaml`` it generates. smdist
does not let it unless asked (``options={"pass_aws_credentials": True}``), and then says where.
Without them the containers get no AWS credentials (enough for file:// data and outputs).

Options: ``pass_aws_credentials``, ``region``, ``boto_session``, ``bucket``, ``output_dir``
(a local directory for model.tar.gz; default a temporary one).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from smdist import packaging
from smdist.backends.base import JobError, JobStatus
from smdist.backends.job_names import unique_job_name
from smdist.backends.sagemaker import request as request_
from smdist.backends.sagemaker import sdk as sdk
from smdist.errors import CANNOT_RUN_HERE, Problem, SpecError
from smdist.planning import Plan

NO_DOCKER_HINT = (
    "install Docker Engine with the Compose v2 plugin, or use backend 'local' "
    "(emulated hosts, no Docker needed)"
)
LOCAL_MODE_ROLE = "arn:aws:iam::000000000000:role/smdist-local-mode-unused"
# Estimator arguments that describe cloud resources local mode has no use for.
_CLOUD_ONLY = (
    "subnets",
    "security_group_ids",
    "enable_network_isolation",
    "encrypt_inter_container_traffic",
    "use_spot_instances",
    "max_wait",
    "keep_alive_period_in_seconds",
    "volume_kms_key",
    "output_kms_key",
    "checkpoint_s3_uri",
    "checkpoint_local_path",
    "tags",
)


def _unavailable(message: str, hint: str = NO_DOCKER_HINT) -> SpecError:
    return SpecError(
        [Problem("backend", f"sagemaker-local: {message}", valid=hint)], CANNOT_RUN_HERE
    )


def check_docker(timeout: float = 20.0) -> list[str]:
    """The Docker Compose command, or a SpecError saying what is missing."""
    docker = shutil.which("docker")
    if docker is None:
        raise _unavailable(
            "SageMaker local mode runs its containers with Docker; `docker` is not on PATH"
        )
    try:
        info = subprocess.run(
            [docker, "info", "--format", "{{.ServerVersion}}"],
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        raise _unavailable(f"the Docker daemon did not answer within {timeout:.0f} s") from None
    if info.returncode != 0:
        detail = (info.stderr or info.stdout).strip().splitlines()
        raise _unavailable(
            "cannot reach the Docker daemon" + (f" ({detail[-1]})" if detail else ""),
            "start the Docker daemon (e.g. `sudo systemctl start docker`), or use backend "
            "'local' (emulated hosts, no Docker needed)",
        )
    compose = subprocess.run(
        [docker, "compose", "version"], capture_output=True, text=True, timeout=timeout
    )
    if compose.returncode == 0:
        return [docker, "compose"]
    legacy = shutil.which("docker-compose")
    if legacy:
        return [legacy]
    raise _unavailable("Docker Compose is missing (neither `docker compose` nor `docker-compose`)")


def local_instance_type(plan: Plan) -> str:
    """``local`` / ``local_gpu`` for the spec's instances (an ml.* type maps by its GPUs)."""
    cluster = plan.spec.cluster
    kind = cluster.instance_type
    if not cluster.is_local_mode:
        kind = "local_gpu" if cluster.gpus_per_host > 0 else "local"
    if kind == "local_gpu" and cluster.instance_count > 1:
        raise SpecError(
            [
                Problem(
                    "cluster.instance_count",
                    "SageMaker local mode runs only one local_gpu instance",
                    cluster.instance_count,
                    "1 with GPUs, or a CPU instance type for several local containers",
                )
            ]
        )
    return kind


def _dropped_options(plan: Plan) -> list[str]:
    return [key for key in _CLOUD_ONLY if plan.estimator_kwargs.get(key)]


# The SDK's local mode streams container output and reads credentials through two module
# functions; smdist routes them per thread, so each job thread gets its own log buffer and
# credential policy while SDK use outside smdist keeps the SDK's behaviour.
_thread_state = threading.local()
_hooks_installed = False
_hooks_lock = threading.Lock()


def _install_hooks() -> None:
    global _hooks_installed
    with _hooks_lock:
        if _hooks_installed:
            return
        from sagemaker.local import image

        original_stream, original_credentials = image._stream_output, image._aws_credentials

        def stream_output(process):
            job = getattr(_thread_state, "job", None)
            return original_stream(process) if job is None else job._stream(process)

        def aws_credentials(session):
            job = getattr(_thread_state, "job", None)
            if job is not None and not getattr(_thread_state, "pass_credentials", False):
                return None
            return original_credentials(session)

        image._stream_output = stream_output
        image._aws_credentials = aws_credentials
        _hooks_installed = True


class LocalModeJob:
    """A job run by the SDK's local mode in a background thread (``backend="sagemaker-local"``)."""

    backend = "sagemaker-local"

    def __init__(self, name: str, plan: Plan) -> None:
        self.name = name
        self.plan = plan
        self._lines: list[str] = []
        self._changed = threading.Condition()
        self._process: subprocess.Popen | None = None
        self._stop_requested = False
        self._error: BaseException | None = None
        self._done = False
        self._model: str | None = None
        self._thread: threading.Thread | None = None

    # called from the SDK's thread
    def _stream(self, process: subprocess.Popen) -> int:
        self._process = process
        for raw in iter(process.stdout.readline, b""):
            with self._changed:
                self._lines.append(raw.decode("utf-8", "replace").rstrip("\n"))
                self._changed.notify_all()
        code = process.wait()
        if code not in (0, 130) and not self._stop_requested:
            raise RuntimeError(f"the training containers exited with code {code}")
        return code

    def _finish(self, error: BaseException | None, model: str | None) -> None:
        with self._changed:
            self._error, self._model, self._done = error, model, True
            self._changed.notify_all()

    @property
    def status(self) -> JobStatus:
        if not self._done:
            return JobStatus.STOPPING if self._stop_requested else JobStatus.IN_PROGRESS
        if self._stop_requested:
            return JobStatus.STOPPED
        return JobStatus.FAILED if self._error else JobStatus.COMPLETED

    @property
    def model_artifacts(self) -> str | None:
        return self._model if self.status is JobStatus.COMPLETED else None

    @property
    def failure_reason(self) -> str | None:
        if self._stop_requested and self._done:
            return "stopped on request"
        return None if self._error is None else str(self._error)

    def logs(self, follow: bool = False) -> Iterator[str]:
        sent = 0
        while True:
            with self._changed:
                if follow and sent == len(self._lines) and not self._done:
                    self._changed.wait(timeout=1.0)
                lines, done = self._lines[sent:], self._done
            yield from lines
            sent += len(lines)
            if not follow or (done and sent == len(self._lines)):
                return

    def wait(
        self, timeout: float | None = None, logs: bool = False, raise_on_failure: bool = False
    ) -> JobStatus:
        deadline = None if timeout is None else time.monotonic() + timeout
        if logs:
            for line in self.logs(follow=True):
                print(line, flush=True)
                if deadline is not None and time.monotonic() >= deadline:
                    break
        if self._thread is not None:
            self._thread.join(None if deadline is None else max(0.0, deadline - time.monotonic()))
        status = self.status
        if raise_on_failure and status in (JobStatus.FAILED, JobStatus.STOPPED):
            raise JobError(self.name, status, self.failure_reason)
        return status

    def stop(self) -> None:
        """SIGTERM to Docker Compose, which stops the containers (SIGKILL after its grace)."""
        self._stop_requested = True
        if self._process is not None and self._process.poll() is None:
            self._process.terminate()


def launch(
    plan: Plan,
    *,
    pass_aws_credentials: bool = False,
    region: str | None = None,
    boto_session: Any = None,
    bucket: str | None = None,
    output_dir: str | None = None,
    role: str | None = None,
    **_ignored: Any,
) -> LocalModeJob:
    """Start the job in SageMaker local mode; returns at once (the job runs in a thread)."""
    instance_type = local_instance_type(plan)
    check_docker()
    say: Callable[[str], None] = lambda text: print(text, file=sys.stderr, flush=True)  # noqa: E731
    dropped = _dropped_options(plan)
    if dropped:
        say(f"sagemaker-local: ignoring cloud-only settings: {', '.join(dropped)}")

    boto = sdk.boto_session(region or plan.spec.region, boto_session)
    work = Path(tempfile.mkdtemp(prefix="smdist-local-mode-"))
    code_dir = work / "code"
    packaging.stage(plan, code_dir)
    output = Path(output_dir) if output_dir else work / "output"
    output.mkdir(parents=True, exist_ok=True)
    container_root = work / "containers"
    container_root.mkdir()

    session = sdk.sagemaker_session(boto, bucket, local=True)
    session.config = {"local": {"local_code": True, "container_root": str(container_root)}}

    name = unique_job_name(plan.spec.name)
    submission = plan.bind(
        job_name=name,
        region=boto.region_name,
        bucket=bucket,
        role=plan.spec.role or role or LOCAL_MODE_ROLE,
        code_uri=f"file://{code_dir}",
        model_dir=f"file://{output}/model" if plan.framework == "tensorflow" else None,
    )
    kwargs = {k: v for k, v in submission.estimator_kwargs.items() if k not in _CLOUD_ONLY}
    # The SDK insists on a role ARN even though local mode never assumes it.
    kwargs["role"] = kwargs.get("role") or role or LOCAL_MODE_ROLE
    kwargs.update(request_.BACKEND_ESTIMATOR_KWARGS)
    kwargs.update(
        source_dir=str(code_dir), instance_type=instance_type, output_path=f"file://{output}"
    )
    inputs = {name_: channel.uri for name_, channel in plan.spec.inputs.items()} or None
    job = LocalModeJob(name, plan)

    if pass_aws_credentials:
        say(
            "sagemaker-local: the SageMaker SDK writes your AWS credentials in plain text into "
            f"a docker-compose.yaml under {container_root} while the job runs"
        )
    sdk.import_sagemaker()
    _install_hooks()

    def run() -> None:
        error: BaseException | None = None
        model = None
        _thread_state.job, _thread_state.pass_credentials = job, pass_aws_credentials
        try:
            with sdk.contained():
                estimator = sdk.estimator_class(plan.estimator)(sagemaker_session=session, **kwargs)
                estimator.fit(inputs, job_name=name, wait=True, logs=False)
                model = estimator.model_data
        except BaseException as exc:  # noqa: BLE001 - reported as the job's failure reason
            error = exc
        finally:
            _thread_state.job = None
            job._finish(error, model)

    job._thread = threading.Thread(target=run, name=f"smdist-{name}", daemon=True)
    job._thread.start()
    return job


__all__ = ["LocalModeJob", "check_docker", "launch", "local_instance_type"]
