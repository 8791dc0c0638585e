"""A job file's problems come in one report: every unknown key with its suggestion, every bad
value with what would be valid, and the whole-job rules over what could be read."""

from __future__ import annotations

import subprocess
import sys
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


# ---- the paths a job names are reported with the rest ------------------------------------
def job_with_code(tmp_path: Path, text: str) -> Path:
    (tmp_path / "src").mkdir(exist_ok=True)
    (tmp_path / "src" / "train.py").write_text("print('training')\n")
    return write(tmp_path, text)


def validate_in_a_subprocess(path: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "smdist.cli.app", "validate", str(path)],
        capture_output=True,
        text=True,
        timeout=120,
    )


def reported(done: subprocess.CompletedProcess) -> dict[str, str]:
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.startswith("invalid job spec") and "Traceback" not in done.stderr
    lines = [line[4:] for line in done.stderr.splitlines() if line.startswith("  - ")]
    return {line.split(": ", 1)[0]: line for line in lines}


def test_an_entry_point_typo_is_reported_with_the_unknown_keys(tmp_path):
    found = reported(
        validate_in_a_subprocess(
            job_with_code(
                tmp_path,
                "name: t\nstrategy: {kind: pytorch_ddp, process_per_host: 2}\n"
                "cluster: {instance_type: ml.g5.xlarge, instanc_count: 2}\n"
                "code: {source_dir: src, entry_point: trian.py}\nmax_runn: 10\n",
            )
        )
    )
    assert set(found) == {
        "strategy.process_per_host",
        "cluster.instanc_count",
        "max_runn",
        "code.entry_point",
    }
    assert "is not a file in" in found["code.entry_point"]
    assert "(got 'trian.py'); valid: a script in" in found["code.entry_point"]
    assert found["code.entry_point"].endswith("src: train.py")


def test_an_entry_point_typo_is_reported_with_the_whole_job_rules(tmp_path):
    found = reported(
        validate_in_a_subprocess(
            job_with_code(
                tmp_path,
                "name: t\nstrategy: {kind: sdmp, partitions: 2, microbatches: 8}\n"
                "cluster: {instance_type: ml.g5.12xlarge, instance_count: 2}\n"
                'code: {framework_version: "1.13.1", py_version: py39, source_dir: src, '
                "entry_point: trian.py}\nhyperparameters: {batch_size: 20}\n",
            )
        )
    )
    assert "is not a file in" in found["code.entry_point"]
    assert "SMP v1 does not run on ml.g5.12xlarge" in found["cluster.instance_type"]
    assert "do not divide the per-rank batch size 20" in found["strategy.microbatches"]


def test_an_entry_point_typo_is_reported_with_an_unknown_strategy_kind(tmp_path):
    found = reported(
        validate_in_a_subprocess(
            job_with_code(
                tmp_path,
                "name: t\nstrategy: {kind: pytorch-ddp}\n"
                "cluster: {instance_type: ml.g5.xlarge, instance_count: 2}\n"
                "code: {source_dir: src, entry_point: trian.py}\n",
            )
        )
    )
    assert set(found) == {"strategy", "code.entry_point"}
    assert "did you mean 'pytorch_ddp'?" in found["strategy"]


def test_a_missing_source_dir_is_reported_with_a_bad_value(tmp_path):
    found = reported(
        validate_in_a_subprocess(
            write(
                tmp_path,
                "name: t\nstrategy: {kind: pytorch_ddp}\n"
                "cluster: {instance_type: ml.g5.xlarge, instance_count: 2}\n"
                "code: {source_dir: srcc, entry_point: train.py}\nmax_run: 0\n",
            )
        )
    )
    assert set(found) == {"max_run", "code.source_dir"}
    assert "does not exist (got '" in found["code.source_dir"]
    assert "srcc'); valid: the directory holding your training code" in found["code.source_dir"]


def test_a_field_the_checks_set_aside_is_not_reported_twice_as_a_path(tmp_path):
    found = reported(
        validate_in_a_subprocess(
            job_with_code(
                tmp_path,
                "name: t\nstrategy: {kind: pytorch_ddp}\n"
                "cluster: {instance_type: ml.g5.xlarge, instance_count: 2}\n"
                "code: {source_dir: src, entry_point: [train.py]}\nmax_run: 0\n",
            )
        )
    )
    assert set(found) == {"max_run", "code.entry_point"}
    assert "is not a file" not in found["code.entry_point"]
