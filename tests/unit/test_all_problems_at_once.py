"""A job file's problems come in one report: every unknown key with its suggestion, every bad
value with what would be valid, and the whole-job rules over what could be read."""

from __future__ import annotations

from pathlib import Path

import pytest

from smdist.checks.reading import load
from smdist.cli.app import main
from smdist.errors import SpecError
from smdist.spec.job import JobSpec


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "job.yaml"
    path.write_text(text)
    return path


def problems(tmp_path: Path, text: str) -> dict[str, str]:
    with pytest.raises(SpecError) as caught:
        load(write(tmp_path, text))
    return {problem.path: str(problem) for problem in caught.value.problems}


def test_three_typos_in_three_places_are_all_reported(tmp_path):
    found = problems(
        tmp_path,
        """
        name: t
        strategy: {kind: pytorch_ddp, process_per_host: 2}
        cluster: {instance_type: ml.g5.xlarge, instanc_count: 2}
        max_runn: 10
        """,
    )
    assert "did you mean 'processes_per_host'?" in found["strategy.process_per_host"]
    assert "did you mean 'instance_count'?" in found["cluster.instanc_count"]
    assert "did you mean 'max_run'?" in found["max_runn"]


def test_the_readmes_example_reports_the_typo_and_the_strategy_checks_together(tmp_path):
    found = problems(
        tmp_path,
        """
        name: t
        strategy: {kind: sdmp, process_per_host: 8, partitions: 2, microbatches: 8}
        cluster: {instance_type: ml.g5.12xlarge, instance_count: 2}
        code: {framework_version: "1.13.1", py_version: py39}
        hyperparameters: {batch_size: 20}
        """,
    )
    assert "did you mean 'processes_per_host'?" in found["strategy.process_per_host"]
    assert "SMP v1 does not run on ml.g5.12xlarge; valid: " in found["cluster.instance_type"]
    assert "do not divide the per-rank batch size 20" in found["strategy.microbatches"]


def test_a_bad_checkpoint_uri_does_not_hide_the_spot_and_warm_pool_clash(tmp_path):
    found = problems(
        tmp_path,
        """
        name: t
        strategy: {kind: pytorch_ddp}
        cluster: {instance_type: ml.g5.xlarge, instance_count: 2}
        spot: {enabled: true}
        keep_alive: 600
        checkpoint: {s3_uri: bucket/prefix}
        """,
    )
    assert "is not an S3 URI" in found["checkpoint.s3_uri"]
    assert "warm pools are not available with managed spot training" in found["keep_alive"]


def test_a_value_set_aside_is_not_reported_twice_through_its_default(tmp_path):
    found = problems(
        tmp_path,
        """
        name: t
        strategy: {kind: pytorch_ddp, processes_per_host: eight}
        cluster: {instance_type: ml.g5.xlarge, instance_count: 2}
        """,
    )
    assert list(found) == ["strategy.processes_per_host"]


@pytest.mark.parametrize(
    ("text", "path", "valid"),
    [
        ("keep_alive: 99999", "keep_alive", "valid: at most 21600"),
        ("max_run: true", "max_run", "valid: an integer"),
        ("max_run: 0", "max_run", "valid: at least 1"),
    ],
)
def test_every_refusal_says_what_would_be_valid(tmp_path, text, path, valid):
    found = problems(
        tmp_path,
        f"""
        name: t
        strategy: {{kind: pytorch_ddp}}
        cluster: {{instance_type: ml.g5.xlarge, instance_count: 2}}
        {text}
        """,
    )
    assert valid in found[path], found[path]


def test_a_missing_strategy_says_what_to_write(tmp_path):
    found = problems(tmp_path, "name: t\ncluster: {instance_type: ml.g5.xlarge, instance_count: 2}")
    assert found["strategy"].startswith("strategy: is required; valid: a mapping such as")
    assert "pytorch_ddp" in found["strategy"]


@pytest.mark.parametrize(("kind", "meant"), [("pytorch-ddp", "pytorch_ddp"), ("MWMS", "mwms")])
def test_a_misspelt_strategy_kind_gets_a_did_you_mean(tmp_path, kind, meant):
    found = problems(
        tmp_path,
        f"name: t\nstrategy: {{kind: {kind}}}\n"
        "cluster: {instance_type: ml.g5.xlarge, instance_count: 2}\n",
    )
    assert f"did you mean {meant!r}?" in found["strategy"]
    assert "valid: 'mwms', 'horovod', 'pytorch_ddp', 'sddp', 'sdmp'" in found["strategy"]


def test_typed_construction_reports_every_unknown_key_too():
    with pytest.raises(SpecError) as caught:
        JobSpec.from_dict(
            {
                "name": "t",
                "strategy": {"kind": "horovod", "proceses_per_host": 2},
                "cluster": {"instance_type": "ml.g5.xlarge", "instance_count": 2, "spto": 1},
            }
        )
    paths = [problem.path for problem in caught.value.problems]
    assert paths[:2] == ["strategy.proceses_per_host", "cluster.spto"]


def test_validate_lists_them_all_with_exit_2(tmp_path, capsys):
    path = write(
        tmp_path,
        "name: t\nstrategy: {kind: pytorch_ddp, process_per_host: 2}\n"
        "cluster: {instance_type: ml.g5.xlarge, instanc_count: 2}\nmax_runn: 10\n",
    )
    assert main(["validate", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("did you mean") == 3, err
