"""A dry run of the same job: ``smdist submit --dry-run`` vs SDK v3's ``train(dry_run=True)``.

Run in the SDK v3 environment (``.venv``). Builds a source_dir (5 MB by default), starts a
moto server on 127.0.0.1 standing in for S3 and SageMaker, and dry-runs one PyTorch DDP job on
2 x ml.g5.12xlarge both ways, in this one process: smdist's ``sagemaker`` backend ``dry_run``
(what ``smdist submit --dry-run`` prints) and ``ModelTrainer(...).train(dry_run=True)``. Both
are warmed up once (imports, caches), then measured: median wall time, and bytes written to S3
and buckets created, counted on the server. Prints the figures and the ratio.

    .venv/bin/python bench/bench_dry_run.py [--megabytes 5] [--repeats 5]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_submit import (  # noqa: E402
    BUCKET,
    IMAGE,
    REGION,
    ROLE,
    free_port,
    make_source_dir,
    start_moto,
    use_moto,
)


def s3_state(s3) -> tuple[set[str], dict[str, tuple[str, int]]]:
    buckets = {b["Name"] for b in s3.list_buckets()["Buckets"]}
    objects: dict[str, tuple[str, int]] = {}
    for bucket in buckets:
        for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket):
            for item in page.get("Contents", []):
                objects[f"{bucket}/{item['Key']}"] = (item["ETag"], item["Size"])
    return buckets, objects


def measure(s3, run, repeats: int) -> tuple[float, int, int]:
    """(median seconds, bytes written per run, buckets created, warm-up included)."""
    buckets, _ = s3_state(s3)
    run()  # warm-up: imports and caches
    _, before = s3_state(s3)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    after_buckets, after = s3_state(s3)
    written = sum(size for key, (etag, size) in after.items() if before.get(key, ("",))[0] != etag)
    return statistics.median(times), written // repeats, len(after_buckets - buckets)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--megabytes", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="smdist-bench-dry-run-"))
    port = free_port()
    server = start_moto(port, work / "moto.log")
    use_moto(work, port)
    try:
        import boto3
        from sagemaker.core.training.configs import Compute, SourceCode
        from sagemaker.train import ModelTrainer
        from sagemaker.train.distributed import Torchrun

        from smdist.backends import sagemaker as backend
        from smdist.backends.sagemaker.v3.trainer import sagemaker_session
        from smdist.planning.plan import plan
        from smdist.spec.job import JobSpec

        if not backend.sdk_v3_installed():
            raise SystemExit("run this with SDK v3 installed (.venv, built by .ci/install)")
        source = work / "project"
        total = make_source_dir(source, args.megabytes)
        boto = boto3.Session(region_name=REGION)
        s3 = boto.client("s3")
        spec = JobSpec.from_dict(
            {
                "name": "bench",
                "strategy": {"kind": "pytorch_ddp", "processes_per_host": 4},
                "cluster": {"instance_type": "ml.g5.12xlarge", "instance_count": 2},
                "code": {"source_dir": str(source), "entry_point": "train.py", "image_uri": IMAGE},
                "role": ROLE,
            }
        )
        job_plan = plan(spec)

        def smdist_dry_run() -> None:
            backend.dry_run(job_plan, bucket=BUCKET, region=REGION)

        # v3 as its documentation writes it: the bucket is the session's default.
        trainer = ModelTrainer(
            sagemaker_session=sagemaker_session(boto, BUCKET),
            role=ROLE,
            base_job_name="bench-v3",
            training_image=IMAGE,
            source_code=SourceCode(source_dir=str(source), entry_script="train.py"),
            distributed=Torchrun(process_count_per_node=4),
            compute=Compute(instance_type="ml.g5.12xlarge", instance_count=2),
        )

        def v3_dry_run() -> None:
            trainer.train(dry_run=True)

        ours = measure(s3, smdist_dry_run, args.repeats)
        theirs = measure(s3, v3_dry_run, args.repeats)
    finally:
        server.terminate()
        server.wait(timeout=10)
        shutil.rmtree(work, ignore_errors=True)

    print(f"source_dir: {total / 1e6:.1f} MB; median of {args.repeats} after one warm-up")
    for who, (seconds, written, buckets) in (
        ("smdist submit --dry-run", ours),
        ("v3 train(dry_run=True)", theirs),
    ):
        print(f"{who:<24} {seconds:8.4f} s {written:>12,} bytes/run  buckets created {buckets}")
    print(f"dry run: smdist is {theirs[0] / ours[0]:.0f}x faster; uploads {ours[1]} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
