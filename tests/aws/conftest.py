"""A moto server on 127.0.0.1 standing in for S3, SageMaker and CloudWatch Logs.

These are the SDK v2 (estimator) tests: they run in an environment with the SageMaker Python
SDK 2.x (``.venv-v2``, built by ``.ci/install``; v2 and v3 cannot be installed together).
Elsewhere, such as the SDK v3 environment ``.venv``, every test here is skipped with the
reason; ``bash .ci/test`` runs them in ``.venv-v2``.

One server per test session (started here, stopped at the end), reset before every test. Every
AWS call of the code under test goes to it through ``AWS_ENDPOINT_URL``, with dummy
credentials, region us-west-2, an explicit role ARN and an explicit bucket; the user's AWS
configuration files are hidden so nothing can reach a real account.
"""

from __future__ import annotations

import copy
import re
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

import pytest

pytest.importorskip("moto", reason="the aws tests need moto[server] (pip install smdist[dev])")

REGION = "us-west-2"
ROLE = "arn:aws:iam::123456789012:role/SmdistTestRole"
BUCKET = "smdist-test-bucket"
LIFECYCLE_SERVER = Path(__file__).with_name("moto_lifecycle.py")


def _sdk_v2_missing() -> str | None:
    """Why these tests cannot run here, or None when SDK v2 is installed."""
    try:
        version = metadata.version("sagemaker")
    except metadata.PackageNotFoundError:
        return "the SageMaker Python SDK is not installed (SDK v2 tests: run them in .venv-v2)"
    if not version.startswith("2."):
        return f"sagemaker {version} is installed; the SDK v2 tests run in .venv-v2 (.ci/test)"
    return None


SKIP_REASON = _sdk_v2_missing()


def pytest_collection_modifyitems(items):
    here = Path(__file__).parent
    for item in items:
        if here in Path(item.fspath).parents:
            item.add_marker(pytest.mark.aws)
            if SKIP_REASON:
                item.add_marker(pytest.mark.skip(reason=SKIP_REASON))


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


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


@pytest.fixture(scope="session")
def moto_server(tmp_path_factory) -> MotoServer:
    port = _free_port()
    log = tmp_path_factory.mktemp("moto") / "server.log"
    with open(log, "wb") as out:
        process = subprocess.Popen(
            [sys.executable, str(LIFECYCLE_SERVER), "-H", "127.0.0.1", "-p", str(port)],
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    url = f"http://127.0.0.1:{port}"
    server = MotoServer(url, log, process)
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
    yield server
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=10)


@pytest.fixture
def aws(moto_server: MotoServer, monkeypatch, tmp_path) -> MotoServer:
    """Environment pointing every boto3 client at the moto server, state reset."""
    moto_server.reset()
    for name in (
        "AWS_PROFILE",
        "AWS_SESSION_TOKEN",
        "AWS_SECURITY_TOKEN",
        "SMDIST_ROLE",
        "SMDIST_BUCKET",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    monkeypatch.setenv("AWS_REGION", REGION)
    monkeypatch.setenv("AWS_ENDPOINT_URL", moto_server.url)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-aws-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-aws-credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setenv("SAGEMAKER_SUPPRESS_V2_WARNING", "1")
    return moto_server


@pytest.fixture
def boto_session(aws):
    import boto3

    session = boto3.Session(region_name=REGION)
    session.client("s3").create_bucket(
        Bucket=BUCKET, CreateBucketConfiguration={"LocationConstraint": REGION}
    )
    return session


@pytest.fixture
def captured_requests(boto_session) -> list[dict]:
    """Every CreateTrainingJob request sent through ``boto_session``, as boto3 sends it."""
    captured: list[dict] = []
    boto_session.events.register(
        "provide-client-params.sagemaker.CreateTrainingJob",
        lambda params, **_: captured.append(copy.deepcopy(params)),
    )
    return captured
