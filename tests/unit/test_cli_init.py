"""``smdist init STRATEGY [FILE]``: a commented job file that validates as written, never
written over an existing file without --force, and refused for a strategy it does not know.

What each starter says is read from files written once for the module by the command's own
``main`` in this process; the real command, a process of its own, writes, refuses and forces in
the tests at the end.
"""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
from pathlib import Path
from typing import NamedTuple

import pytest
import yaml
from cli_process import run_smdist

from smdist.cli.app import main

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


class Said(NamedTuple):
    code: int
    stdout: str
    stderr: str


def smdist(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    return run_smdist(*args, cwd=cwd)


def in_process(cwd: Path, *args: str) -> Said:
    """``smdist ARGS`` in ``cwd`` through the command's ``main``, in this process: a process
    per starter and command would cost more than everything they check."""
    out, err, before = io.StringIO(), io.StringIO(), os.getcwd()
    try:
        os.chdir(cwd)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(list(args))
    finally:
        os.chdir(before)
    return Said(code, out.getvalue(), err.getvalue())


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Said]]:
    """The directory ``smdist init STRATEGY`` wrote every starter into, and what it said."""
    root = tmp_path_factory.mktemp("starters")
    return root, {strategy: in_process(root, "init", strategy) for strategy in STARTERS}


def starter(written: tuple[Path, dict[str, Said]], strategy: str) -> str:
    root, said = written
    assert said[strategy].code == 0, said[strategy].stderr
    return (root / f"{strategy}.yaml").read_text()


@pytest.mark.parametrize("strategy", STARTERS)
def test_init_writes_a_job_file_that_validates(written, strategy):
    root, said = written
    assert said[strategy].code == 0, said[strategy].stderr
    name = f"{strategy}.yaml"
    assert f"wrote {name}" in said[strategy].stdout
    checked = in_process(root, "validate", name)
    assert checked.code == 0, checked.stderr
    assert checked.stdout.startswith(f"{name}: valid")


@pytest.mark.parametrize("strategy", STARTERS)
def test_the_job_file_says_what_each_field_is_for_and_trains_briefly(written, strategy):
    text = starter(written, strategy)
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
def test_a_starter_shares_its_strategy_instances_and_image_with_its_example(written, strategy):
    job = yaml.safe_load(starter(written, strategy))
    example = yaml.safe_load((REPO / "examples" / f"{EXAMPLE_OF[strategy]}.yaml").read_text())
    assert job["strategy"] == example["strategy"]
    assert job["cluster"] == example["cluster"]
    assert job["code"] == example["code"]


def test_init_refuses_to_write_over_a_file_unless_forced(tmp_path, written):
    kept = tmp_path / "job.yaml"
    kept.write_text("mine\n")
    refused = smdist(tmp_path, "init", "pytorch_ddp", "job.yaml")
    assert refused.returncode == 2
    assert "job.yaml: exists already" in refused.stderr and "--force" in refused.stderr
    assert kept.read_text() == "mine\n"
    forced = smdist(tmp_path, "init", "pytorch_ddp", "job.yaml", "--force")
    assert forced.returncode == 0, forced.stderr
    assert f"wrote {kept.name}" in forced.stdout
    # FILE names where the starter goes; it is the same starter as ``init STRATEGY`` writes
    assert kept.read_text() == starter(written, "pytorch_ddp")


def test_an_unknown_strategy_exits_2_listing_the_valid_ones(tmp_path):
    refused = smdist(tmp_path, "init", "horovod")
    assert refused.returncode == 2
    said = " ".join(refused.stderr.split())
    assert "'horovod'" in said and ", ".join(STARTERS) in said
    assert list(tmp_path.iterdir()) == []
