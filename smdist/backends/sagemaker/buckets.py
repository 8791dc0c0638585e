"""The bucket a job's code goes to: one the user named must exist; only the SDK's default
bucket (``sagemaker-<region>-<account>``) may be created.

SDK v2's ``Session(default_bucket=NAME).default_bucket()`` creates any bucket it is given, so a
mistyped ``--bucket`` silently made a new bucket and the job ran from it; SDK v3's upload
failed with ``NoSuchBucket`` deep inside the upload. A HeadBucket before anything is uploaded
turns both into an error naming the bucket.
"""

from __future__ import annotations

from typing import Any

from smdist.errors import Problem, SpecError

_MISSING = ("404", "NoSuchBucket", "NotFound")
_DENIED = ("403", "AccessDenied", "Forbidden")


def require_bucket(boto_session: Any, bucket: str, where: str = "--bucket") -> str:
    """``bucket`` when it exists and can be reached; a SpecError naming it otherwise."""
    from botocore.exceptions import ClientError

    try:
        boto_session.client("s3").head_bucket(Bucket=bucket)
    except ClientError as exc:
        code = str(exc.response.get("Error", {}).get("Code", ""))
        if code in _MISSING:
            why = "no such bucket (smdist never creates a bucket you name)"
        elif code in _DENIED:
            why = "access to this bucket is denied for these credentials"
        else:
            raise
        raise SpecError(
            [
                Problem(
                    where,
                    why,
                    bucket,
                    "an existing bucket these credentials can write to, or no --bucket (and no "
                    "SMDIST_BUCKET) for the SDK's default bucket sagemaker-<region>-<account>",
                )
            ]
        ) from None
    return bucket


__all__ = ["require_bucket"]
