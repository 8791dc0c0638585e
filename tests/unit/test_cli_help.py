"""``smdist <command> --help``: flags read as flags, and only options that do something."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from smdist.cli.app import app, main

COMMANDS = [
    "plan",
    "validate",
    "schema",
    "instances",
    "run",
    "submit",
    "tune",
    "init",
    "status",
    "logs",
    "stop",
]


def help_text(*command: str) -> str:
    result = CliRunner().invoke(app, [*command, "--help"], env={"COLUMNS": "150"})
    assert result.exit_code == 0, result.output
    return result.output


@pytest.mark.parametrize("command", [[], *([c] for c in COMMANDS)], ids=["smdist", *COMMANDS])
def test_help_shows_flags_without_a_value_type(command):
    text = help_text(*command)
    assert "--help" in text
    assert "<bool>" not in text and "BOOLEAN" not in text


def test_run_help_shows_fresh_and_no_local():
    text = help_text("run")
    assert "--fresh" in text and "--set" in text and "name=value" in text
    assert "--local" not in text  # run is always local: the flag says nothing


def test_run_still_accepts_local_for_scripts_that_pass_it(tmp_path, capfd):
    # Refused for the missing job file (exit 2), never as an unknown option.
    missing = str(tmp_path / "missing.yaml")
    assert main(["run", "--local", missing]) == 2
    said = capfd.readouterr().err
    assert "missing.yaml" in said and "No such option" not in said
