"""The smdist command: exit codes CI relies on (0 valid, 2 invalid) and readable output.

The commands run as a user's shell runs them, a process each; what is about the examples and
not the command (each validates, together they cover every strategy) is asked of the command's
``main`` in this process, where a process per example would cost more than the checks.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from smdist.cli.app import main

EXAMPLES = sorted(Path("examples").glob("*.yaml"))


def smdist(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "smdist.cli.app", *args], capture_output=True, text=True, timeout=120
    )


@pytest.mark.parametrize("example", EXAMPLES, ids=[e.stem for e in EXAMPLES])
def test_every_example_validates(example, capsys):
    code = main(["validate", str(example)])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert out.startswith(f"{example}: valid")


def test_examples_cover_every_strategy(capsys):
    from smdist.strategies import STRATEGIES

    kinds = set()
    for example in EXAMPLES:
        assert main(["plan", "--json", str(example)]) == 0, capsys.readouterr().err
        kinds.add(json.loads(capsys.readouterr().out)["strategy"])
    assert kinds == set(STRATEGIES)


def test_invalid_job_exits_2_with_the_field_on_stderr(tmp_path):
    job = tmp_path / "job.yaml"
    job.write_text(
        Path("examples/horovod_pytorch.yaml")
        .read_text()
        .replace("processes_per_host: 1", "process_per_host: 1")
    )
    result = smdist("validate", str(job))
    assert result.returncode == 2
    assert "strategy.process_per_host" in result.stderr
    assert "processes_per_host" in result.stderr


def test_missing_file_exits_2(tmp_path):
    result = smdist("plan", str(tmp_path / "nope.yaml"))
    assert result.returncode == 2
    assert "nope.yaml" in result.stderr


def test_malformed_yaml_exits_2(tmp_path):
    job = tmp_path / "job.yaml"
    job.write_text("name: [unclosed\n")
    result = smdist("validate", str(job))
    assert result.returncode == 2
    assert "YAML" in result.stderr


def test_plan_json_has_wire_hyperparameters_and_topology():
    result = smdist("plan", "--json", "examples/smp_v1.yaml")
    assert result.returncode == 0, result.stderr
    plan = json.loads(result.stdout)
    assert plan["topology"]["world_size"] == 16
    assert json.loads(plan["hyperparameters"]["mp_parameters"])["partitions"] == 2


def test_plan_text_shows_warnings_for_a_single_node_sddp(tmp_path):
    job = tmp_path / "job.yaml"
    job.write_text(
        Path("examples/sddp.yaml").read_text().replace("instance_count: 2", "instance_count: 1")
    )
    result = smdist("plan", str(job))
    assert result.returncode == 0, result.stderr
    assert "single node" in result.stdout


def test_schema_is_json_schema_with_strategy_kinds():
    schema = json.loads(smdist("schema").stdout)
    text = json.dumps(schema)
    for kind in ("mwms", "horovod", "pytorch_ddp", "sddp", "sdmp"):
        assert f'"{kind}"' in text
    assert "processes_per_host" in text


def test_version_prints_the_name_and_version_and_exits_0():
    import smdist as package

    done = smdist("--version")
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"smdist {package.__version__}\n"
    assert done.stderr == ""
