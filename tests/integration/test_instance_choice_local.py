"""``smdist run --instance-type``: with ``cluster.instance_preferences`` a local run emulates
the preference it names (its type and count reach the hosts: SM_CURRENT_INSTANCE_TYPE, the
number of hosts), and a type that is not a preference is refused before anything starts.

The ranks torchrun starts are plain Python that record what they were told: the choice is
smdist's, no framework's."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
import yaml
from local_jobs import assert_nothing_left, smdist_run

pytestmark = [pytest.mark.integration, pytest.mark.torch]

# Each rank records the instance type its host emulates.
REPORTER = """
    import json, os
    from pathlib import Path

    output = Path(os.environ["SM_OUTPUT_DATA_DIR"])
    output.mkdir(parents=True, exist_ok=True)
    report = {"instance_type": os.environ["SM_CURRENT_INSTANCE_TYPE"]}
    (output / f"report-{os.environ['RANK']}.json").write_text(json.dumps(report))
"""
PREFERENCES = [
    {"instance_type": "ml.c5.xlarge", "instance_count": 2},
    {"instance_type": "ml.c5.2xlarge", "instance_count": 1},
]


def write_job(directory: Path) -> Path:
    source = directory / "src"
    source.mkdir()
    (source / "train.py").write_text(textwrap.dedent(REPORTER))
    job = {
        "name": "preferences",
        "strategy": {"kind": "pytorch_ddp", "launcher": "torchrun"},
        "cluster": {"instance_preferences": PREFERENCES},
        "code": {"source_dir": str(source), "entry_point": "train.py"},
    }
    path = directory / "job.yaml"
    path.write_text(yaml.safe_dump(job, sort_keys=False))
    return path


def test_instance_type_chooses_the_preference_the_hosts_emulate(tmp_path):
    job = write_job(tmp_path)
    run = smdist_run(job, tmp_path, "--processes-per-host", "2", "--instance-type", "ml.c5.2xlarge")
    assert run.returncode == 0, run.output
    assert "1 host x 2 processes emulating ml.c5.2xlarge" in run.output  # its count: 1 host
    assert "emulating ml.c5.2xlarge, cluster.instance_preferences[1]" in run.output
    hosts = run.job_dir() / "hosts"
    assert [path.name for path in hosts.iterdir()] == ["algo-1"]
    resources = json.loads((hosts / "algo-1" / "input" / "config" / "resourceconfig.json")
                           .read_text())  # fmt: skip
    assert resources["current_instance_type"] == "ml.c5.2xlarge"
    reports = sorted((hosts / "algo-1" / "output" / "data").glob("report-*.json"))
    assert [json.loads(path.read_text())["instance_type"] for path in reports] == [
        "ml.c5.2xlarge",
        "ml.c5.2xlarge",
    ]
    assert_nothing_left(tmp_path)


def test_an_instance_type_that_is_no_preference_is_refused_listing_them(tmp_path):
    run = smdist_run(write_job(tmp_path), tmp_path, "--instance-type", "ml.c5.4xlarge")
    assert run.returncode == 2, run.output
    assert "--instance-type" in run.output and "'ml.c5.4xlarge'" in run.output
    assert "ml.c5.xlarge (instance_preferences[0]), ml.c5.2xlarge (instance_preferences[1])" in (
        run.output
    )
    assert not (tmp_path / ".smdist" / "jobs").exists()
