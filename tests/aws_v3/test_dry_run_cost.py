"""What SDK v3's ``ModelTrainer.train(dry_run=True)`` costs, next to smdist's own dry run.

A measurement, printed: time, buckets created and bytes written to (moto's) S3 for the same
job. Asserted are only the behaviours these figures rest on: the ModelTrainer smdist builds
touches no S3 until ``train()``, v3's dry run sends no CreateTrainingJob, and smdist's dry run
makes no AWS call at all.
"""

from __future__ import annotations

import os
import time

import pytest
from moto_server import s3_objects

from smdist.backends.sagemaker.v3 import trainer as v3
from smdist.planning.plan import plan
from smdist.spec.job import JobSpec

from .conftest import BUCKET, REGION, ROLE

IMAGE = "763104351884.dkr.ecr.us-west-2.amazonaws.com/pytorch-training:2.3.0-gpu-py311"
SOURCE_MB = 5


@pytest.fixture
def source_dir(tmp_path):
    root = tmp_path / "project"
    root.mkdir()
    (root / "train.py").write_text("import sys\nprint('training', sys.argv[1:])\n")
    (root / "weights.bin").write_bytes(os.urandom(SOURCE_MB * 1_000_000))  # incompressible
    return root


def _state(boto_session) -> tuple[list[str], int, int]:
    buckets = [b["Name"] for b in boto_session.client("s3").list_buckets()["Buckets"]]
    objects = s3_objects(boto_session)
    return buckets, len(objects), sum(objects.values())


def test_dry_run_cost(boto_session, bucket, captured_requests, source_dir, capsys):
    spec = JobSpec.from_dict(
        {
            "name": "v3-dry-run",
            "strategy": {"kind": "pytorch_ddp", "launcher": "torch_distributed"},
            "cluster": {"instance_type": "ml.g5.12xlarge", "instance_count": 2},
            "code": {"source_dir": str(source_dir), "entry_point": "train.py", "image_uri": IMAGE},
            "hyperparameters": {"epochs": 1},
        }
    )
    job_plan = plan(spec)
    from sagemaker.train import ModelTrainer  # noqa: F401 - import time is not the dry run's

    # A bucket the user names must exist (model_trainer checks it, as submit does).
    assert _state(boto_session) == ([bucket], 0, 0)
    lines = []
    for attempt in (1, 2):
        start = time.perf_counter()
        trainer = v3.model_trainer(
            job_plan, role=ROLE, bucket=bucket, region=REGION, session=boto_session
        )
        built = time.perf_counter()
        if attempt == 1:
            assert _state(boto_session) == ([bucket], 0, 0)  # constructing it wrote nothing
        assert trainer.train(dry_run=True) is None
        done = time.perf_counter()
        buckets, count, size = _state(boto_session)
        lines.append(
            f"v3 ModelTrainer.train(dry_run=True) #{attempt}: construct {built - start:.2f} s, "
            f"dry run {done - built:.2f} s; buckets now {buckets}; S3 holds {count} objects, "
            f"{size / 1e6:.2f} MB"
        )
    assert captured_requests == []  # a dry run submits nothing

    from smdist.backends import sagemaker as backend

    before = _state(boto_session)
    start = time.perf_counter()
    shown = backend.dry_run(job_plan, bucket=BUCKET, role=ROLE, region=REGION)
    elapsed = time.perf_counter() - start
    assert _state(boto_session) == before  # no AWS call
    lines.append(
        f"smdist dry run: {elapsed:.3f} s, 0 bytes, no bucket; CreateTrainingJob with "
        f"{len(shown.request['HyperParameters'])} hyperparameters shown"
    )
    with capsys.disabled():
        print("\n" + "\n".join(lines))
