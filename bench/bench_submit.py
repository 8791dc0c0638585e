"""Re-submitting unchanged code: smdist vs the plain SageMaker SDK (v2 estimator or v3 trainer).

Builds a 50 MB source_dir, starts a moto server on 127.0.0.1 standing in for S3 and SageMaker,
and submits the same job twice through each path: smdist's sagemaker backend (content-addressed
upload, skipped when the code is already there) and ``sagemaker.pytorch.PyTorch(source_dir=...)
.fit()`` (which tars and uploads the directory on every call). The first submit of each warms
up imports and caches; the next ones are measured: wall time and bytes written to S3 (counted on
the server: new or rewritten objects). Both paths use the same SDK session (telemetry opted
out, so neither waits on a telemetry request), so the difference is what each does with the
code. Prints the figures and smdist's advantage as ratios.

With SDK v3 installed (``.venv``) the SDK side is ``ModelTrainer(source_code=SourceCode(
source_dir=...), distributed=Torchrun(...)).train(wait=False)``, and smdist's backend submits
the job as v3 would (code and drivers content-addressed). With SDK v2 (``.venv-v2``) it is the
estimator above.

    python bench/bench_submit.py [--megabytes 50] [--repeats 3]
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import random
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

REGION = "us-west-2"
ROLE = "arn:aws:iam::123456789012:role/BenchRole"
BUCKET = "smdist-bench"
IMAGE = "763104351884.dkr.ecr.us-west-2.amazonaws.com/pytorch-training:2.3.0-gpu-py311"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_moto(port: int, log: Path) -> subprocess.Popen:
    out = open(log, "wb")  # noqa: SIM115 - closed with the process
    process = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=out,
        stderr=subprocess.STDOUT,
    )
    deadline = time.monotonic() + 60
    while True:
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/moto-api/", timeout=2).read()
            return process
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                process.kill()
                raise SystemExit(f"moto server did not start; see {log}") from None
            time.sleep(0.2)


def make_source_dir(root: Path, megabytes: int) -> int:
    """A project: scripts plus larger files (half compressible text, half random bytes)."""
    rng = random.Random(7)
    root.mkdir(parents=True)
    (root / "train.py").write_text("print('training')\n")
    (root / "model").mkdir()
    for i in range(20):
        (root / "model" / f"layer_{i}.py").write_text(f"WIDTH = {i}\n" * 200)
    chunk = 1024 * 1024
    for i in range(megabytes):
        path = root / "assets" / f"part_{i:03d}.bin"
        path.parent.mkdir(exist_ok=True)
        if i % 2:
            path.write_bytes(rng.randbytes(chunk))
        else:
            path.write_bytes((f"token_{i} " * (chunk // 10 + 1)).encode()[:chunk])
    return sum(p.stat().st_size for p in root.rglob("*") if p.is_file())


def use_moto(work: Path, port: int) -> None:
    """Every AWS call of this process to the moto server, with dummy credentials."""
    os.environ.update(
        AWS_ACCESS_KEY_ID="bench",
        AWS_SECRET_ACCESS_KEY="bench",
        AWS_DEFAULT_REGION=REGION,
        AWS_ENDPOINT_URL=f"http://127.0.0.1:{port}",
        AWS_CONFIG_FILE=str(work / "no-config"),
        AWS_SHARED_CREDENTIALS_FILE=str(work / "no-credentials"),
        SAGEMAKER_SUPPRESS_V2_WARNING="1",
        SAGEMAKER_VALIDATE_ROLE="false",
    )


def bucket_objects(s3) -> dict[str, tuple[str, int]]:
    objects: dict[str, tuple[str, int]] = {}
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=BUCKET):
        for item in page.get("Contents", []):
            objects[item["Key"]] = (item["ETag"], item["Size"])
    return objects


def written_bytes(before: dict, after: dict) -> int:
    return sum(size for key, (etag, size) in after.items() if before.get(key, (None,))[0] != etag)


# Where each SDK line keeps its config validation (module or class attribute). smdist's sessions
# make it validate each config once for the whole process (smdist.backends.sagemaker.
# config_once); the SDK's own side is timed as a user meets it, validating at every lookup.
SDK_VALIDATORS = {
    "3": (
        "sagemaker.core.config.config",
        "sagemaker.core.helper.session_helper",
        "sagemaker.core.local.local_session",
        "sagemaker.core.utils.intelligent_defaults_helper",
        "sagemaker.core.config.config_manager:SageMakerConfig",
    ),
    "2": ("sagemaker.config.config", "sagemaker.utils", "sagemaker.session"),
}


def sdk_validators(line: str) -> dict:
    """The SDK's validators as imported, before smdist has made any session."""
    found = {}
    for place in SDK_VALIDATORS[line]:
        module_name, _, class_name = place.partition(":")
        with contextlib.suppress(ImportError):
            owner = importlib.import_module(module_name)
            owner = getattr(owner, class_name) if class_name else owner
            if "validate_sagemaker_config" in vars(owner):
                found[owner] = vars(owner)["validate_sagemaker_config"]
    return found


@contextlib.contextmanager
def as_the_sdk_ships(validators: dict):
    """The SDK's own validators in place for the duration, smdist's put back after."""
    current = {owner: vars(owner)["validate_sagemaker_config"] for owner in validators}
    for owner, validator in validators.items():
        owner.validate_sagemaker_config = validator
    try:
        yield
    finally:
        for owner, validator in current.items():
            owner.validate_sagemaker_config = validator


def measure(s3, submit) -> tuple[float, int]:
    before = bucket_objects(s3)
    start = time.perf_counter()
    submit()
    elapsed = time.perf_counter() - start
    return elapsed, written_bytes(before, bucket_objects(s3))


def v3_submit(boto, source: Path):
    """The same job through SDK v3's ModelTrainer, written as its documentation writes it."""
    from sagemaker.core.training.configs import Compute, OutputDataConfig, SourceCode
    from sagemaker.train import ModelTrainer
    from sagemaker.train.distributed import Torchrun

    from smdist.backends.sagemaker.v3.trainer import sagemaker_session

    session = sagemaker_session(boto, BUCKET)

    def submit() -> None:
        ModelTrainer(
            sagemaker_session=session,
            role=ROLE,
            base_job_name="bench-v3",
            training_image=IMAGE,
            source_code=SourceCode(source_dir=str(source), entry_script="train.py"),
            distributed=Torchrun(process_count_per_node=4),
            compute=Compute(instance_type="ml.g5.12xlarge", instance_count=2),
            output_data_config=OutputDataConfig(s3_output_path=f"s3://{BUCKET}/"),
        ).train(wait=False, logs=False)

    return submit


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--megabytes", type=int, default=50)
    parser.add_argument("--repeats", type=int, default=3, help="measured re-submits per path")
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="smdist-bench-submit-"))
    port = free_port()
    server = start_moto(port, work / "moto.log")
    use_moto(work, port)
    try:
        import boto3

        from smdist.backends import sagemaker as backend
        from smdist.backends.sagemaker import sdk as sdk
        from smdist.planning.plan import plan
        from smdist.spec.job import JobSpec

        source = work / "project"
        total = make_source_dir(source, args.megabytes)
        files = sum(1 for p in source.rglob("*") if p.is_file())
        boto = boto3.Session(region_name=REGION)
        s3 = boto.client("s3")
        s3.create_bucket(Bucket=BUCKET, CreateBucketConfiguration={"LocationConstraint": REGION})

        spec = JobSpec.from_dict(
            {
                "name": "bench",
                "strategy": {"kind": "pytorch_ddp", "launcher": "torch_distributed"},
                "cluster": {"instance_type": "ml.g5.12xlarge", "instance_count": 2},
                "code": {
                    "source_dir": str(source),
                    "entry_point": "train.py",
                    "framework_version": "2.3.0",
                    "py_version": "py311",
                },
                "role": ROLE,
            }
        )

        validators = sdk_validators("3" if backend.sdk_v3_installed() else "2")

        def smdist_submit() -> None:
            backend.launch(plan(spec), bucket=BUCKET, boto_session=boto)

        sdk_submit = v3_submit(boto, source) if backend.sdk_v3_installed() else None
        if sdk_submit is None:
            session = sdk.sagemaker_session(boto, BUCKET)
            estimator_class = sdk.estimator_class("sagemaker.pytorch.PyTorch")

        def v2_submit() -> None:
            with sdk.contained():
                estimator = estimator_class(
                    entry_point="train.py",
                    source_dir=str(source),
                    role=ROLE,
                    instance_type="ml.g5.12xlarge",
                    instance_count=2,
                    framework_version="2.3.0",
                    py_version="py311",
                    distribution={"torch_distributed": {"enabled": True}},
                    sagemaker_session=session,
                )
                estimator.fit(wait=False, logs=False)

        sdk_submit = sdk_submit or v2_submit
        unpatched_submit = sdk_submit

        def sdk_submit() -> None:
            with as_the_sdk_ships(validators):
                unpatched_submit()

        sdk_label = "v3 ModelTrainer.train()" if backend.sdk_v3_installed() else "v2 PyTorch.fit()"
        first_smdist = measure(s3, smdist_submit)
        first_sdk = measure(s3, sdk_submit)
        smdist_runs = [measure(s3, smdist_submit) for _ in range(args.repeats)]
        sdk_runs = [measure(s3, sdk_submit) for _ in range(args.repeats)]
    finally:
        server.terminate()
        server.wait(timeout=10)
        shutil.rmtree(work, ignore_errors=True)

    smdist_time = statistics.median(t for t, _ in smdist_runs)
    sdk_time = statistics.median(t for t, _ in sdk_runs)
    smdist_bytes = max(b for _, b in smdist_runs)
    sdk_bytes = min(b for _, b in sdk_runs)
    print(f"SDK: {sdk_label}; source_dir: {total / 1e6:.1f} MB in {files} files")
    rows = [
        ("first submit", "smdist", *first_smdist, ""),
        ("first submit", "SDK", *first_sdk, ""),
        ("re-submit", "smdist", smdist_time, smdist_bytes, f"(median of {args.repeats})"),
        ("re-submit", "SDK", sdk_time, sdk_bytes, f"(median of {args.repeats})"),
    ]
    for what, who, seconds, written, note in rows:
        print(f"{what:<14} {who:<6} {seconds:6.2f} s {written:>12,} bytes  {note}".rstrip())
    print(f"re-submit time: smdist is {sdk_time / smdist_time:.1f}x faster than the SDK's")
    print(f"first submit time: smdist / SDK = {first_smdist[0] / first_sdk[0]:.2f}")
    print(f"re-submit bytes: smdist {smdist_bytes:,} vs SDK {sdk_bytes:,}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
