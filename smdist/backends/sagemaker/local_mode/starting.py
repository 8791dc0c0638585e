"""Starting a local-mode job: this machine checked, the code staged, the supervising process
started (``smdist.backends.sagemaker.local_mode`` re-exports these)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from smdist.backends.aws_region import DRY_RUN_REGION, resolve_region
from smdist.backends.job_names import unique_job_name
from smdist.backends.job_records import read_job
from smdist.backends.sagemaker.local_mode import checks, settings
from smdist.backends.sagemaker.local_mode.job import LocalModeJob
from smdist.backends.sagemaker.local_mode.run_file import LocalRun, write_record
from smdist.backends.sagemaker.local_mode.sdk_runs import LOCAL_MODE_ROLE
from smdist.errors import Problem, SpecError
from smdist.packaging import bundle as packaging
from smdist.planning.plan import Plan

DEFAULT_ROOT = Path(".smdist")
SUPERVISOR_START_TIMEOUT = 30.0

SUPERVISOR = "smdist.backends.sagemaker.local_mode.supervisor"  # run as its own process


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


def check_machine(plan: Plan) -> tuple[str, str]:
    """(SDK line, local instance type) once this machine can run the job; SpecError if not."""
    line = checks.sdk_line()
    instance_type = local_instance_type(plan)
    docker = checks.check_docker()
    checks.check_compose(line, docker)
    if instance_type == "local_gpu":
        checks.check_gpu_runtime(docker, plan.gpus_per_host)
    return line, instance_type


def _region(region: str | None, plan: Plan, boto_session: Any) -> str:
    given = getattr(boto_session, "region_name", None)
    found = resolve_region(region, plan.spec.region, given)
    if found:
        return found
    print(
        f"sagemaker-local: no AWS region is configured: the image is named for {DRY_RUN_REGION}",
        file=sys.stderr,
    )
    return DRY_RUN_REGION


def _supervisor_environment(boto_session: Any, region: str) -> dict[str, str]:
    env = dict(os.environ, PYTHONUNBUFFERED="1", AWS_DEFAULT_REGION=region)
    # The supervisor imports this smdist, installed or not.
    package_parent = str(Path(__file__).resolve().parents[4])  # the directory holding smdist/
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (package_parent, os.environ.get("PYTHONPATH")) if p
    )
    if boto_session is not None:  # the caller's credentials, not the default chain's
        credentials = boto_session.get_credentials()
        if credentials is not None:
            frozen = credentials.get_frozen_credentials()
            env.update(AWS_ACCESS_KEY_ID=frozen.access_key, AWS_SECRET_ACCESS_KEY=frozen.secret_key)
            env.pop("AWS_SESSION_TOKEN", None)
            if frozen.token:
                env["AWS_SESSION_TOKEN"] = frozen.token
    return env


def _await_supervisor(job_dir: Path, process: subprocess.Popen) -> None:
    deadline = time.monotonic() + SUPERVISOR_START_TIMEOUT
    while time.monotonic() < deadline:
        if read_job(job_dir).record.get("supervisor"):
            return
        if process.poll() is not None:
            break
        time.sleep(0.05)
    log = (job_dir / "logs" / "job.log").read_text(errors="replace").strip().splitlines()
    raise RuntimeError(
        f"the local-mode job's supervising process did not start: {log[-1] if log else 'no output'}"
    )


def _job_directories(root: str | Path, name: str, output_dir: str | None) -> tuple[Path, Path]:
    """(the job's directory, with ``logs/``; its output directory), both made."""
    job_dir = Path(root).absolute() / "jobs" / name
    (job_dir / "logs").mkdir(parents=True)
    output = Path(output_dir).absolute() if output_dir else job_dir / "output"
    output.mkdir(parents=True, exist_ok=True)
    return job_dir, output


def _job_record(
    plan: Plan, name: str, line: str, instance_type: str, job_dir: Path, output: Path
) -> dict[str, Any]:
    """``job.json`` as the job starts: what ``smdist status`` reads."""
    return {
        "name": name,
        "backend": "sagemaker-local",
        "status": "InProgress",
        "sdk": line,
        "instance_type": instance_type,
        "instance_count": plan.spec.cluster.instance_count,
        "job_dir": str(job_dir),
        "log": str(job_dir / "logs" / "job.log"),
        "output_dir": str(output),
        "failure_reason": None,
        "model_artifacts": None,
        "started": round(time.time(), 3),  # wall clock, for `smdist jobs`
    }


def _start_supervisor(job_dir: Path, boto_session: Any, region: str) -> subprocess.Popen:
    """The supervising process, in a session of its own, writing into ``logs/job.log``."""
    with open(job_dir / "logs" / "job.log", "ab") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", SUPERVISOR, str(job_dir)],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env=_supervisor_environment(boto_session, region),
        )
    _await_supervisor(job_dir, process)
    return process


def launch(
    plan: Plan,
    *,
    pass_aws_credentials: bool = False,
    region: str | None = None,
    boto_session: Any = None,
    bucket: str | None = None,
    output_dir: str | None = None,
    role: str | None = None,
    root: str | Path = DEFAULT_ROOT,
    grace: float = 30.0,
    container_config: dict[str, Any] | None = None,
    shm_size: str | None = None,
    poll_seconds: float = 0.2,
) -> LocalModeJob:
    """Check this machine, stage the code and start the job; returns once it has started."""
    line, instance_type = check_machine(plan)
    sdk_config = settings.sdk_local_config()
    compose_settings = settings.container_config(sdk_config, container_config, shm_size)
    job_region = _region(region, plan, boto_session)
    name = unique_job_name(plan.spec.name)
    job_dir, output = _job_directories(root, name, output_dir)
    for text in settings.replaced_settings(plan, output, sdk_config):
        print(text, file=sys.stderr)
    work = Path(tempfile.mkdtemp(prefix="smdist-local-mode-"))
    try:
        packaging.stage(plan, work / "code")
        (work / "containers").mkdir()
        run = LocalRun(
            name=name,
            sdk=line,
            spec=plan.spec.model_dump(mode="json", by_alias=True, exclude_unset=True),
            spec_source=str(getattr(plan.spec, "source", "") or ""),
            plan=_json_plan(plan),
            instance_type=instance_type,
            region=job_region,
            bucket=bucket,
            role=plan.spec.role or role or LOCAL_MODE_ROLE,
            work_dir=str(work),
            output_dir=str(output),
            container_config=compose_settings,
            sdk_local_config={k: v for k, v in sdk_config.items() if k != "container_root"},
            pass_aws_credentials=pass_aws_credentials,
            grace=grace,
        )
        run.write(job_dir)
        write_record(job_dir, _job_record(plan, name, line, instance_type, job_dir, output))
        if pass_aws_credentials:
            print(
                "sagemaker-local: the SageMaker SDK writes your AWS credentials in plain text "
                f"into a docker-compose.yaml under {work}; it is removed when the job ends",
                file=sys.stderr,
            )
        process = _start_supervisor(job_dir, boto_session, job_region)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    return LocalModeJob(name, plan, job_dir, process, poll_seconds)


def _json_plan(plan: Plan) -> dict[str, Any]:
    """The plan as run.json carries it to the supervisor (``Plan.to_record``)."""
    return json.loads(json.dumps(plan.to_record(), default=str))


__all__ = ["LocalModeJob", "check_machine", "launch", "local_instance_type"]
