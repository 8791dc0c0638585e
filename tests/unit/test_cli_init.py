"""``smdist init STRATEGY [FILE]``: a commented job file that validates as written, never
written over an existing file without --force, and refused for a strategy it does not know."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml
from cli_process import run_smdist

REPO = Path(__file__).resolve().parents[2]
STARTERS = [
    "pytorch_ddp",
    "pytorch_ddp_torch_distributed",
    "mwms",
    "parameter_server",
    "horovod_pytorch",
    "horovod_tensorflow",
    "sddp",
    "smp_v1",
    "smp_v2",
]
# The example each starter shares its strategy, instances and image with.
EXAMPLE_OF = {name: name for name in STARTERS} | {"parameter_server": "tf_parameter_server"}


def smdist(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    return run_smdist(*args, cwd=cwd)


@pytest.mark.parametrize("strategy", STARTERS)
def test_init_writes_a_job_file_that_validates(tmp_path, strategy):
    written = smdist(tmp_path, "init", strategy)
    assert written.returncode == 0, written.stderr
    path = tmp_path / f"{strategy}.yaml"
    assert f"wrote {path.name}" in written.stdout
    checked = smdist(tmp_path, "validate", path.name)
    assert checked.returncode == 0, checked.stderr
    assert checked.stdout.startswith(f"{path.name}: valid")


@pytest.mark.parametrize("strategy", STARTERS)
def test_the_job_file_says_what_each_field_is_for_and_trains_briefly(tmp_path, strategy):
    assert smdist(tmp_path, "init", strategy, "job.yaml").returncode == 0
    text = (tmp_path / "job.yaml").read_text()
    for line in text.splitlines():
        assert len(line) <= 100, line
    bare = [
        line for number, line in enumerate(text.splitlines())
        if not line.lstrip().startswith("#") and "#" not in line
        and not text.splitlines()[number - 1].lstrip().startswith("#")
        and not line.startswith("  kind:")
    ]  # fmt: skip
    assert not bare, f"fields without a comment: {bare}"
    job = yaml.safe_load(text)
    assert job["hyperparameters"]["max_steps"] <= 50 and job["hyperparameters"]["epochs"] == 1
    assert isinstance(job["code"]["framework_version"], str)


@pytest.mark.parametrize("strategy", STARTERS)
def test_a_starter_shares_its_strategy_instances_and_image_with_its_example(tmp_path, strategy):
    assert smdist(tmp_path, "init", strategy, "job.yaml").returncode == 0
    job = yaml.safe_load((tmp_path / "job.yaml").read_text())
    example = yaml.safe_load((REPO / "examples" / f"{EXAMPLE_OF[strategy]}.yaml").read_text())
    assert job["strategy"] == example["strategy"]
    assert job["cluster"] == example["cluster"]
    assert job["code"] == example["code"]


def test_init_refuses_to_write_over_a_file_unless_forced(tmp_path):
    kept = tmp_path / "job.yaml"
    kept.write_text("mine\n")
    refused = smdist(tmp_path, "init", "pytorch_ddp", "job.yaml")
    assert refused.returncode == 2
    assert "job.yaml: exists already" in refused.stderr and "--force" in refused.stderr
    assert kept.read_text() == "mine\n"
    forced = smdist(tmp_path, "init", "pytorch_ddp", "job.yaml", "--force")
    assert forced.returncode == 0, forced.stderr
    assert yaml.safe_load(kept.read_text())["strategy"]["kind"] == "pytorch_ddp"


def test_an_unknown_strategy_exits_2_listing_the_valid_ones(tmp_path):
    refused = smdist(tmp_path, "init", "horovod")
    assert refused.returncode == 2
    said = " ".join(refused.stderr.split())
    assert "'horovod'" in said and ", ".join(STARTERS) in said
    assert list(tmp_path.iterdir()) == []
