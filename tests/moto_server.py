"""The moto server the AWS tests run against, and what each SDK line needs next to it.

Three directories share it: ``tests/aws`` (SDK v2 only), ``tests/aws_v3`` (SDK v3 only) and
``tests/sdk_lines`` (each test once per line). Each ``conftest.py`` starts one server per
session with ``running_moto_server`` (``tests/aws`` runs ``moto_lifecycle.py``, moto plus the
training-job lifecycle; the others plain ``moto.server``), resets it before every test and
points boto3 and the SDK at it with ``point_sdk_at``: dummy credentials, one region, the
user's AWS configuration files (and SDK v3's) hidden so nothing can reach a real account.

Only one SDK line can be installed at a time (both are the ``sagemaker`` distribution), so each
directory skips the tests of the line that is not installed, with ``why_not_line``'s reason.
"""

from __future__ import annotations

import copy
import re
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

import pytest

from smdist.backends.local.hosts.shared.ports import free_ports

MOTO_SERVER = ("-m", "moto.server")  # moto's own server, run with the tests' interpreter
LINES = ("v2", "v3")
VENVS = {"v2": ".venv-v2", "v3": ".venv"}  # where `bash .ci/test` runs each line's tests


def free_port() -> int:
    return free_ports(1)[0]


@dataclass
class MotoServer:
    url: str
    log: Path
    process: subprocess.Popen

    log_offset: int = 0

    def reset(self) -> None:
        """Forget all state, and the requests logged so far."""
        request = urllib.request.Request(f"{self.url}/moto-api/reset", method="POST")
        urllib.request.urlopen(request, timeout=10).read()
        self.log_offset = self.log.stat().st_size

    def requests(self) -> list[str]:
        """Request lines logged since the last reset ("PUT /bucket/key")."""
        with open(self.log, "rb") as handle:
            handle.seek(self.log_offset)
            text = handle.read().decode(errors="replace")
        text = re.sub(r"\x1b\[[0-9;]*m", "", text)
        return re.findall(r'"([A-Z]+ \S+) HTTP/1\.1"', text)

    def object_writes(self, bucket: str, prefix: str) -> list[str]:
        """PutObject and CreateMultipartUpload requests for keys under ``prefix``."""
        writes = []
        for line in self.requests():
            method, _, path = line.partition(" ")
            if not path.startswith(f"/{bucket}/{prefix}"):
                continue
            if (method == "PUT" and "partNumber=" not in path) or (
                method == "POST" and "uploads" in path
            ):
                writes.append(path)
        return writes


@contextmanager
def running_moto_server(log_dir: Path, server: Sequence[str] = MOTO_SERVER) -> Iterator[MotoServer]:
    """A moto server on a free port of 127.0.0.1 (``python <server> -H ... -p ...``), logging
    to ``log_dir/server.log``; stopped on exit."""
    port = free_port()
    log = log_dir / "server.log"
    with open(log, "wb") as out:
        process = subprocess.Popen(
            [sys.executable, *server, "-H", "127.0.0.1", "-p", str(port)],
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            urllib.request.urlopen(f"{url}/moto-api/", timeout=2).read()
            break
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                process.kill()
                raise RuntimeError(
                    f"moto server did not start: {log.read_text()[-2000:]}"
                ) from None
            time.sleep(0.2)
    try:
        yield MotoServer(url, log, process)
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)


def point_aws_at(
    server: MotoServer,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    region: str,
    unset: Iterable[str] = (),
) -> MotoServer:
    """Reset ``server`` and point every boto3 client at it: dummy credentials, ``region``, no
    profile, session token or user AWS configuration, and the variables ``unset`` removed."""
    server.reset()
    for name in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_SECURITY_TOKEN", *unset):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", region)
    monkeypatch.setenv("AWS_REGION", region)
    monkeypatch.setenv("AWS_ENDPOINT_URL", server.url)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-aws-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-aws-credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    return server


def point_sdk_at(
    line: str, server: MotoServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, region: str
) -> MotoServer:
    """``point_aws_at`` (the user's ``SMDIST_ROLE`` and ``SMDIST_BUCKET`` removed too), plus
    what SDK ``line`` needs to run quietly and only against ``server``."""
    point_aws_at(server, monkeypatch, tmp_path, region, ("SMDIST_ROLE", "SMDIST_BUCKET"))
    if line == "v2":
        monkeypatch.setenv("SAGEMAKER_SUPPRESS_V2_WARNING", "1")
        return server
    # v3 checks the role with IAM SimulatePrincipalPolicy and GetRole unless told not to.
    monkeypatch.setenv("SAGEMAKER_VALIDATE_ROLE", "false")
    # v3 reads SDK defaults from the user's and the admin's config files; point both at one
    # that sets nothing.
    empty = tmp_path / "sdk-config.yaml"
    empty.write_text("SchemaVersion: '1.0'\n")
    monkeypatch.setenv("SAGEMAKER_USER_CONFIG_OVERRIDE", str(empty))
    monkeypatch.setenv("SAGEMAKER_ADMIN_CONFIG_OVERRIDE", str(empty))
    return server


def unreachable_aws(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Every AWS call would fail: no credentials, no profile or AWS configuration files, and
    an endpoint that nothing listens on (a port bound, then closed)."""
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://127.0.0.1:{free_port()}")


def create_bucket(boto_session, name: str) -> str:
    """Make bucket ``name`` in the session's region on the moto server; returns the name."""
    boto_session.client("s3").create_bucket(
        Bucket=name, CreateBucketConfiguration={"LocationConstraint": boto_session.region_name}
    )
    return name


def capture_calls(boto_session, operation: str) -> list[dict]:
    """Every ``operation`` request (``CreateTrainingJob``, ``CreateHyperParameterTuningJob``)
    sent through ``boto_session`` from now on, as boto3 sends it."""
    captured: list[dict] = []
    boto_session.events.register(
        f"provide-client-params.sagemaker.{operation}",
        lambda params, **_: captured.append(copy.deepcopy(params)),
    )
    return captured


def capture_create_training_job(boto_session) -> list[dict]:
    """Every CreateTrainingJob request sent through ``boto_session`` from now on."""
    return capture_calls(boto_session, "CreateTrainingJob")


def s3_objects(boto_session) -> dict[str, int]:
    """``s3://bucket/key`` -> size, for every object on the moto server."""
    s3 = boto_session.client("s3")
    objects = {}
    for found in s3.list_buckets()["Buckets"]:
        paginator = s3.get_paginator("list_objects_v2")
        for page in paginator.paginate(Bucket=found["Name"]):
            for item in page.get("Contents", []):
                objects[f"s3://{found['Name']}/{item['Key']}"] = item["Size"]
    return objects


# ---- which SDK line is installed -------------------------------------------------------------
def why_not_line(line: str) -> str | None:
    """Why SDK ``line``'s tests (``"v2"`` or ``"v3"``) cannot run here, or None when they can."""
    try:
        version = metadata.version("sagemaker")
    except metadata.PackageNotFoundError:
        version = None
    if version is None or f"v{version.split('.')[0]}" != line:
        found = f"sagemaker {version}" if version else "no sagemaker"
        return f"SDK {line} is not installed here ({found}): bash .ci/test runs it in {VENVS[line]}"
    try:
        import moto.server  # noqa: F401

        if line == "v3":
            import sagemaker.train  # noqa: F401
    except ImportError as exc:
        return f"the SDK {line} environment is incomplete: {exc} (pip install 'smdist[dev]')"
    return None


def mark_aws_tests(items: Iterable[pytest.Item], directory: Path, skip: str | None) -> None:
    """Mark every test under ``directory`` ``aws``, and skipped with the reason ``skip`` if any
    (a conftest's ``pytest_collection_modifyitems`` sees every test of the session)."""
    for item in items:
        if directory in Path(item.fspath).parents:
            item.add_marker(pytest.mark.aws)
            if skip:
                item.add_marker(pytest.mark.skip(reason=skip))
