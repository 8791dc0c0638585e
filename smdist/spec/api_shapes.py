"""The names, identifiers and locations a job states, in the shapes the CreateTrainingJob API
accepts, and the name shape of a credential.

Patterns and limits come from botocore's service model (the dated snapshot in
``smdist/catalog/sagemaker_api.json``). Where smdist is stricter than the API (S3 bucket naming,
EC2 id shapes, hyperparameter names that must survive as CLI flags), the API's own rule is kept
as a lookahead so that neither can be broken.
"""

import re

from smdist.catalog import api

_api = api.field
JOB_NAME = re.compile(_api("job_name").regex)
# The backend appends a unique 19-character suffix (smdist.backends.job_names.SUFFIX_LENGTH).
JOB_NAME_PREFIX_LIMIT = _api("job_name").limit - 19
CHANNEL_NAME = re.compile(_api("channel_name").regex)
ENV_NAME = re.compile(_api("environment_key").regex)
ROLE_ARN = re.compile(_api("role_arn").regex)
HYPERPARAMETER_NAME = re.compile(
    rf"(?={_api('hyperparameter_key').regex})\A[A-Za-z_][A-Za-z0-9_.\-]*\Z"
)
S3_URI_LIMIT = _api("s3_uri").limit
S3_URI = re.compile(
    rf"(?={_api('s3_uri').regex})"
    r"\As3://(?P<bucket>[a-z0-9][a-z0-9.\-]{1,61}[a-z0-9])(?:/(?P<key>.*))?\Z"
)
SECURITY_GROUP = re.compile(rf"(?={_api('security_group_id').regex})\Asg-[0-9a-f]{{8,17}}\Z")
SUBNET = re.compile(rf"(?={_api('subnet_id').regex})\Asubnet-[0-9a-f]{{8,17}}\Z")
KMS_KEY = re.compile(
    rf"(?={_api('kms_key_id').regex})"
    r"\A(arn:aws[a-z\-]*:kms:[a-z0-9\-]+:\d{12}:(key|alias)/.+|alias/.+|[0-9a-f\-]{36})\Z"
)
# Names and values that look like credentials must not travel as hyperparameters or environment.
SECRET_NAME = re.compile(r"(secret|password|passwd|token|credential|api_?key|access_?key)", re.I)

MAX_RUN_LIMIT = _api("max_runtime").limit  # MaxRuntimeInSeconds: "at most 28 days"
KEEP_ALIVE_LIMIT = _api("keep_alive").limit  # warm pool KeepAlivePeriodInSeconds ceiling


def check_s3_uri(value: str) -> str:
    if not S3_URI.match(value):
        raise ValueError(
            f"{value!r} is not an S3 URI; expected s3://bucket/prefix with a 3-63 character "
            f"lower-case bucket name, at most {S3_URI_LIMIT} characters in all"
        )
    return value


def check_uri(value: str) -> str:
    """An input or output location: s3://... or file://... (a local directory)."""
    if value.startswith("s3://"):
        return check_s3_uri(value)
    if value.startswith("file://"):
        if len(value) <= len("file://"):
            raise ValueError(f"{value!r} names no directory; expected file:///path/to/dir")
        return value
    raise ValueError(f"{value!r} is neither s3://bucket/prefix nor file:///local/path")


INSTANCE_GROUPS_LIMIT = _api("instance_groups").limit  # ResourceConfig.InstanceGroups: 5
INSTANCE_GROUP_NAME_LIMIT = _api("instance_group_name").limit
INSTANCE_PREFERENCES_LIMIT = _api("instance_preferences").limit
PLACEMENTS_LIMIT = _api("placement_specifications").limit
ULTRA_SERVER_ID_LIMIT = _api("ultra_server_id").limit
RETRY_ATTEMPTS_LIMIT = _api("retry_attempts").limit  # MaximumRetryAttempts: 1 to 30
TRAINING_PLAN_ARN = re.compile(_api("training_plan_arn").regex)
MLFLOW_ARN = re.compile(_api("mlflow_arn").regex)
MLFLOW_NAME_LIMIT = _api("mlflow_experiment").limit
FILE_SYSTEM_ID = re.compile(_api("file_system_id").regex)
# A file system input: fsx://<file-system-id>/<mount name>/<path> or efs://<file-system-id>/<path>
FILE_SYSTEM_URI = re.compile(r"\A(?P<scheme>fsx|efs)://(?P<id>[^/]+)(?P<path>/.*)?\Z")
FILE_SYSTEM_TYPES = {"fsx": "FSxLustre", "efs": "EFS"}


def check_training_plan(value: str) -> str:
    if not TRAINING_PLAN_ARN.match(value):
        raise ValueError(
            f"{value!r} is not a training plan ARN such as "
            "arn:aws:sagemaker:us-east-1:123456789012:training-plan/my-plan"
        )
    return value


def check_input_uri(value: str) -> str:
    """An input channel's location: s3://, file://, or a file system: fsx:// or efs://."""
    match = FILE_SYSTEM_URI.match(value)
    if match is None:
        if value.startswith(("fsx:", "efs:")):
            raise ValueError(
                f"{value!r} is not a file system location; expected fsx://<file-system-id>/"
                "<mount name>/<path> or efs://<file-system-id>/<path>"
            )
        return check_uri(value)
    if not FILE_SYSTEM_ID.match(match["id"]):
        raise ValueError(
            f"{value!r}: {match['id']!r} is not a file system id such as fs-0123456789abcdef0"
        )
    if match["scheme"] == "fsx" and not (match["path"] or "").strip("/"):
        raise ValueError(
            f"{value!r} names no directory; an FSx for Lustre path starts with the file "
            "system's mount name: fsx://<file-system-id>/<mount name>/<path>"
        )
    return value
