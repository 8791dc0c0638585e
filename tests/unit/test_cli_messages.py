"""Messages a newcomer reads: a ``--set`` name the job does not have is pointed out, and text
the user wrote is printed as written, never as terminal markup."""

from __future__ import annotations

from pathlib import Path

import yaml

from smdist import cli_local
from smdist.cli import main


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
    spec = cli_local.local_spec(job_file(tmp_path), ["epoch=1"])
    assert spec.hyperparameters["epoch"] == 1  # still added: the user may mean a new one
    err = capsys.readouterr().err
    assert "--set epoch: the job file has no hyperparameter 'epoch'" in err
    assert "did you mean 'epochs'?" in err


def test_a_set_name_the_job_has_needs_no_note(tmp_path, capsys):
    cli_local.local_spec(job_file(tmp_path), ["epochs=1", "dropout=0.2"])
    assert capsys.readouterr().err == ""


def test_the_ready_scripts_own_options_need_no_note(tmp_path, capsys):
    cli_local.local_spec(job_file(tmp_path), ["max_steps=20", "batch_size=8"])
    assert capsys.readouterr().err == ""


def test_a_users_own_script_gets_no_ready_script_names(tmp_path, capsys):
    source = tmp_path / "src"
    source.mkdir()
    (source / "train.py").write_text("print('hi')\n")
    path = job_file(tmp_path, code={"source_dir": "src", "entry_point": "train.py"})
    cli_local.local_spec(path, ["max_step=20"])
    assert "has no hyperparameter 'max_step'" in capsys.readouterr().err


def test_plan_prints_a_value_that_looks_like_markup_as_written(tmp_path, capsys):
    path = job_file(tmp_path, hyperparameters={"note": "[bold]y[/bold]"})
    assert main(["plan", str(path)]) == 0
    assert "[bold]y[/bold]" in capsys.readouterr().out
