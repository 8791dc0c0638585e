"""The README and the command line stay together: every ``smdist`` command and option the
README shows exists, and the examples that need no job run or AWS are run as written."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
import typer

from smdist.cli.app import app, main

ROOT = Path(__file__).parents[2]
README = (ROOT / "README.md").read_text()
_INLINE = re.compile(r"`((?:\.venv/bin/)?smdist [^`]+)`")


def shell_lines() -> list[str]:
    """The lines of the README's shell code blocks (bash, sh, console or no language)."""
    lines, language = [], None
    for line in README.splitlines():
        if line.startswith("```"):
            language = None if language is not None else (line[3:].strip() or "text")
        elif language in ("bash", "sh", "console", "text"):
            lines.append(line)
    return lines


def readme_commands() -> list[str]:
    """Every ``smdist ...`` command line the README shows, in code blocks or inline."""
    found = []
    for line in shell_lines():
        for part in line.split("&&"):
            part = part.split("#", 1)[0].strip()
            if re.match(r"(\.venv/bin/)?smdist [a-z]", part):
                found.append(part)
    found += _INLINE.findall(README)
    return sorted(set(found))


COMMANDS = readme_commands()
CLICK = typer.main.get_command(app)


def test_the_readme_shows_the_main_commands():
    shown = {shlex.split(line)[1] for line in COMMANDS}
    assert {"run", "submit", "validate", "plan", "status", "logs", "stop"} <= shown


@pytest.mark.parametrize("line", COMMANDS)
def test_every_command_and_option_the_readme_shows_exists(line):
    words = shlex.split(line.replace("[", " ").replace("]", " ").replace("|", " "))[1:]
    top = {option for param in CLICK.params for option in param.opts + param.secondary_opts}
    while words and words[0].startswith("-"):  # options of smdist itself (--debug)
        assert words.pop(0) in top, f"README shows `{line}`: smdist has no such option"
    if not words or words[0] == "...":
        return
    name = words[0]
    words = words[1:]
    assert name in CLICK.commands, f"README shows `smdist {name}`, which does not exist"
    command = CLICK.commands[name]
    options = {option for param in command.params for option in param.opts + param.secondary_opts}
    for word in words:
        if word.startswith("-") and not word.startswith("---"):
            flag = word.split("=", 1)[0]
            assert flag in options, f"README shows `{line}`: {name} has no {flag}"


@pytest.mark.parametrize(
    "args",
    [
        ["schema"],
        ["instances", "--family", "p4d"],
        ["plan", "examples/pytorch_ddp.yaml", "--json"],
        ["plan", "examples/smp_v1.yaml", "--hosts"],
        *(["validate", f"examples/{path.name}"] for path in sorted(ROOT.glob("examples/*.yaml"))),
    ],
    ids=lambda args: " ".join(args),
)
def test_readme_examples_that_need_no_job_run_as_written(args, monkeypatch, capsys):
    monkeypatch.chdir(ROOT)
    assert main(args) == 0, capsys.readouterr().err
