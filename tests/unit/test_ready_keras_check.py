"""The ready TensorFlow scripts install tf-keras at start on the Keras-3-only 2.16+ images; a
job in network isolation cannot, so ``validate`` refuses it (exit 2) before anything is sent,
and leaves alone every job that does not depend on that install."""

from __future__ import annotations

import subprocess
import sys

import pytest

import smdist
from smdist.errors import SpecError
from smdist.spec.job import JobSpec


def job(strategy: dict, version: str | None = "2.21", isolation: bool = True, **code) -> dict:
    pinned = {"framework_version": version} if version else {}
    return {
        "name": "job",
        "strategy": strategy,
        "cluster": {"instance_type": "ml.c5.xlarge", "instance_count": 2},
        "code": {**pinned, **code},
        "network": {"isolation": isolation},
    }


def isolation_problems(data: dict) -> list:
    try:
        smdist.plan(JobSpec.from_dict(data))
    except SpecError as error:
        return [p for p in error.problems if p.path == "network.isolation"]
    return []


@pytest.mark.parametrize(
    ("strategy", "script"),
    [
        ({"kind": "mwms"}, "tensorflow_mwms.py"),
        ({"kind": "parameter_server"}, "tensorflow_parameter_server.py"),
    ],
)
@pytest.mark.parametrize("version", ["2.21", None])  # None: the newest image, unpinned
def test_a_ready_tensorflow_script_in_isolation_on_a_keras_3_image_is_refused(
    strategy, script, version
):
    (problem,) = isolation_problems(job(strategy, version))
    assert problem.severity == "error" and problem.value is True
    assert "Keras 3 only" in problem.message and script in problem.message
    assert "tf-keras" in problem.message and "network isolation" in problem.message
    assert "code.framework_version < 2.16" in problem.valid
    assert "code.image_uri" in problem.valid


@pytest.mark.parametrize(
    "data",
    [
        job({"kind": "mwms"}, isolation=False),  # the script can reach a package index
        job({"kind": "mwms"}, version="2.14"),  # TensorFlow's own Keras 2
        job({"kind": "mwms"}, entry_point="train.py", source_dir="."),  # the user's script
        job({"kind": "mwms"}, version=None, image_uri="123456789012.dkr.ecr.us-east-1"
            ".amazonaws.com/mine:latest"),  # an image smdist cannot see into
        job({"kind": "pytorch_ddp"}, version="2.13.0"),
    ],
    ids=["network", "tf-2.14", "own-script", "own-image", "pytorch"],
)  # fmt: skip
def test_jobs_that_do_not_install_tf_keras_in_isolation_are_not_refused(data):
    assert isolation_problems(data) == []


def test_validate_exits_2_naming_the_field(tmp_path):
    path = tmp_path / "job.yaml"
    path.write_text(
        "name: iso\nstrategy: {kind: mwms}\n"
        "cluster: {instance_type: ml.c5.xlarge, instance_count: 2}\n"
        'code: {framework_version: "2.21"}\nnetwork: {isolation: true}\n'
    )
    done = subprocess.run(
        [sys.executable, "-m", "smdist.cli.app", "validate", str(path)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "network.isolation: the TensorFlow 2.21" in done.stderr
