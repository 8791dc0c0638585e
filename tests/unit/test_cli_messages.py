"""Messages a newcomer reads: a ``--set`` name the job does not have is pointed out, and text
the user wrote is printed as written, never as terminal markup."""

from __future__ import annotations

from pathlib import Path

import yaml

from smdist.cli import assignments as cli_assignments
from smdist.cli.app import main


def job_file(tmp_path: Path, **extra) -> Path:
    data = {
        "name": "messages",
        "strategy": {"kind": "pytorch_ddp"},
        "cluster": {"instance_type": "ml.g5.xlarge", "instance_count": 2},
        "code": {"framework_version": "2.3.0", "py_version": "py311"},
        "hyperparameters": {"epochs": 3, "dropout": 0.1},
        **extra,
    }
    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_a_set_name_the_job_lacks_gets_a_note_with_a_suggestion(tmp_path, capsys):
    spec = cli_assignments.local_spec(job_file(tmp_path), ["epoch=1"])
    assert spec.hyperparameters["epoch"] == 1  # still added: the user may mean a new one
    err = capsys.readouterr().err
    assert "--set epoch: the job file has no hyperparameter 'epoch'" in err
    assert "did you mean 'epochs'?" in err


def test_a_set_name_the_job_has_needs_no_note(tmp_path, capsys):
    cli_assignments.local_spec(job_file(tmp_path), ["epochs=1", "dropout=0.2"])
    assert capsys.readouterr().err == ""


def test_the_ready_scripts_own_options_need_no_note(tmp_path, capsys):
    cli_assignments.local_spec(job_file(tmp_path), ["max_steps=20", "batch_size=8"])
    assert capsys.readouterr().err == ""


def test_a_users_own_script_gets_no_ready_script_names(tmp_path, capsys):
    source = tmp_path / "src"
    source.mkdir()
    (source / "train.py").write_text("print('hi')\n")
    path = job_file(tmp_path, code={"source_dir": "src", "entry_point": "train.py"})
    cli_assignments.local_spec(path, ["max_step=20"])
    assert "has no hyperparameter 'max_step'" in capsys.readouterr().err


def test_plan_prints_a_value_that_looks_like_markup_as_written(tmp_path, capsys):
    path = job_file(tmp_path, hyperparameters={"note": "[bold]y[/bold]"})
    assert main(["plan", str(path)]) == 0
    assert "[bold]y[/bold]" in capsys.readouterr().out


# ---- one header per kind of error ----------------------------------------------------------
def first_error_line(capsys) -> str:
    return capsys.readouterr().err.strip().splitlines()[0]


def test_a_job_file_error_is_an_invalid_job_spec(tmp_path, capsys):
    path = job_file(tmp_path, cluster={"instance_type": "ml.g5.xlarge", "instance_count": 0})
    assert main(["validate", str(path)]) == 2
    assert first_error_line(capsys).startswith("invalid job spec")


def test_a_job_name_that_names_no_job_says_so(tmp_path, capsys):
    root = tmp_path / "elsewhere" / ".smdist"
    assert main(["status", "no-such-job", "--backend", "local", "--root", str(root)]) == 2
    assert first_error_line(capsys).startswith("no such job")


def test_an_unknown_option_value_is_an_invalid_option(capsys):
    assert main(["logs", "some-job", "--backend", "nope"]) == 2
    assert first_error_line(capsys).startswith("invalid option")


def test_what_this_machine_lacks_is_cannot_run_here(tmp_path, monkeypatch, capsys):
    for name in ("AWS_REGION", "AWS_DEFAULT_REGION", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    (tmp_path / "config").write_text("")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "config"))
    assert main(["status", "some-job", "--backend", "sagemaker"]) == 2
    lines = capsys.readouterr().err
    assert lines.strip().startswith("cannot run here"), lines
    assert "region" in lines
