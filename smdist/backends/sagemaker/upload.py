"""The job's code in S3, once per distinct content.

The bundle's content digest names the object (``s3://<bucket>/smdist/source/<digest>/
sourcedir.tar.gz``); a HeadObject finds it already there, and only new code is packed and
uploaded. Both SDK lines hand the container that tarball.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from smdist.backends.sagemaker import request as request_
from smdist.backends.sagemaker.upload_progress import upload_bar
from smdist.callbacks import each
from smdist.packaging import bundle as packaging


@dataclass(frozen=True)
class SourceUpload:
    """The code's place in S3 and what it cost to put it there."""

    uri: str
    digest: str
    uploaded_bytes: int  # 0 when the same content was already there
    files: list[str] = field(default_factory=list)


def upload_source(
    boto_session: Any,
    bucket: str,
    entries: list[tuple[Path, str]],
    kms_key: str | None = None,
    progress: Callable[[int], None] | None = None,
) -> SourceUpload:
    """Put the bundle at its content-addressed key unless an object is already there.

    While it uploads, a bar shows on stderr where that is a terminal, and ``progress`` (if
    given) is called with the bytes sent since its last call."""
    from botocore.exceptions import ClientError

    digest = packaging.content_digest(entries)
    uri = request_.source_uri(bucket, digest)
    key = uri[len(f"s3://{bucket}/") :]
    files = [arcname for _, arcname in entries]
    s3 = boto_session.client("s3")
    try:
        s3.head_object(Bucket=bucket, Key=key)
        return SourceUpload(uri, digest, 0, files)
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code") not in ("404", "NoSuchKey", "NotFound"):
            raise
    extra: dict[str, Any] = {
        "ContentType": "application/gzip",
        "Metadata": {"smdist-digest": digest},
    }
    if kms_key:
        extra.update(ServerSideEncryption="aws:kms", SSEKMSKeyId=kms_key)
    with tempfile.TemporaryDirectory(prefix="smdist-pack-") as tmp:
        tarball = Path(tmp) / request_.TARBALL
        packaging.write_tarball(entries, tarball)
        size = tarball.stat().st_size
        with upload_bar(size, f"uploading code ({len(files)} files)") as bar:
            s3.upload_file(str(tarball), bucket, key, ExtraArgs=extra, Callback=each(bar, progress))
    return SourceUpload(uri, digest, size, files)
