"""The code's upload to (moto's) S3 reports its progress: a callback's bytes add up to the
archive, and a bar shows on stderr when it is a terminal, nothing when it is not."""

from __future__ import annotations

import os
import pty
import re
import select
import subprocess
import sys
from pathlib import Path

import pytest

from smdist.backends.sagemaker.upload import upload_source

from .conftest import BUCKET, REGION

MEGABYTES = 3
UPLOAD = f"""
import sys
from pathlib import Path
import boto3
from smdist.backends.sagemaker.upload import upload_source

entries = [(Path(sys.argv[1]) / name, name) for name in ("train.py", "weights.bin")]
done = upload_source(boto3.Session(region_name={REGION!r}), {BUCKET!r}, entries)
print("uploaded", done.uploaded_bytes)
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (root / "train.py").write_text("print('training')\n")
    (root / "weights.bin").write_bytes(os.urandom(MEGABYTES * 1_000_000))  # incompressible
    return root


def entries(project: Path) -> list[tuple[Path, str]]:
    return [(project / name, name) for name in ("train.py", "weights.bin")]


def test_the_progress_callback_counts_every_byte_of_the_archive(boto_session, bucket, project):
    sent: list[int] = []
    done = upload_source(boto_session, bucket, entries(project), progress=sent.append)
    key = done.uri.removeprefix(f"s3://{bucket}/")
    stored = boto_session.client("s3").head_object(Bucket=bucket, Key=key)["ContentLength"]
    assert done.uploaded_bytes == stored > MEGABYTES * 1_000_000
    assert len(sent) > 1 and sum(sent) == stored  # in steps, as the bytes went


def test_on_a_terminal_a_bar_shows_the_upload(aws, bucket, project):
    main, terminal = pty.openpty()
    environ = {**os.environ, "TERM": "xterm-256color"}
    process = subprocess.Popen(
        [sys.executable, "-c", UPLOAD, str(project)], stdout=subprocess.PIPE, stderr=terminal,
        env=environ,
    )  # fmt: skip
    os.close(terminal)
    drawn = b""
    while True:
        ready, _, _ = select.select([main], [], [], 60)
        if not ready:
            break
        try:
            chunk = os.read(main, 65536)
        except OSError:  # closed: the process ended
            break
        if not chunk:
            break
        drawn += chunk
    os.close(main)
    out, _ = process.communicate(timeout=60)
    assert process.returncode == 0
    text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", drawn.decode(errors="replace"))
    assert "uploading code (2 files)" in text, text
    assert f"{MEGABYTES}.0/{MEGABYTES}.0 MB" in text, text  # drawn once it had all gone
    assert out.decode().startswith("uploaded ")


def test_in_a_pipe_the_upload_draws_nothing(aws, bucket, project):
    done = subprocess.run(
        [sys.executable, "-c", UPLOAD, str(project)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("uploaded ") and done.stderr == ""
