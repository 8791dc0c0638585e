"""Shell completion: ``smdist --show-completion SHELL`` prints the script to install, and the
shell's completion call (the ``_SMDIST_COMPLETE`` protocol) offers commands and strategies."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest


def smdist(*args: str, **environ: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "smdist.cli.app", *args],
        env={**os.environ, **environ}, capture_output=True, text=True, timeout=60,
    )  # fmt: skip


def completions(line: str) -> list[str]:
    """What bash offers for ``line`` (the word being typed is its last)."""
    words = line.split(" ")
    done = smdist(_SMDIST_COMPLETE="complete_bash", COMP_WORDS=line, COMP_CWORD=str(len(words) - 1))
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


# A line only that shell's script has (typer's templates).
SCRIPT_MARK = {
    "bash": "complete -o default -F _smdist_completion smdist",
    "zsh": "#compdef smdist",
    "fish": "complete --command smdist",
}


@pytest.mark.parametrize("shell", sorted(SCRIPT_MARK))
@pytest.mark.parametrize("spelling", ["word", "equals"])
def test_show_completion_prints_the_named_shells_script(shell, spelling):
    """The named shell's script, whatever shell runs smdist (this test's parent may be any)."""
    args = ["--show-completion", shell] if spelling == "word" else [f"--show-completion={shell}"]
    shown = smdist(*args)
    assert shown.returncode == 0, shown.stderr
    assert "_SMDIST_COMPLETE" in shown.stdout and SCRIPT_MARK[shell] in shown.stdout
    assert all(SCRIPT_MARK[other] not in shown.stdout for other in SCRIPT_MARK if other != shell)


def test_show_completion_alone_detects_the_shell_it_runs_under():
    # "; exit $?" keeps bash as smdist's parent: bash -c execs a lone command in its place
    shown = subprocess.run(
        ["bash", "-c", '"$0" -m smdist.cli.app --show-completion; exit $?', sys.executable],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert shown.returncode == 0, shown.stderr
    assert SCRIPT_MARK["bash"] in shown.stdout


def test_an_unknown_shell_is_refused_with_the_ones_it_could_be():
    shown = smdist("--show-completion", "tcsh", COLUMNS="200")
    assert shown.returncode == 2 and not shown.stdout
    assert "'tcsh' is not one of 'bash', 'zsh', 'fish', 'powershell', 'pwsh'" in shown.stderr


def test_help_lists_the_completion_options():
    shown = smdist("--help", COLUMNS="150")
    assert "--install-completion" in shown.stdout and "--show-completion" in shown.stdout


def test_a_command_completes_from_its_first_letters():
    assert completions("smdist ru") == ["run"]
    assert completions("smdist st") == ["status", "stop"]


def test_init_completes_the_strategies_it_knows():
    assert completions("smdist init py") == ["pytorch_ddp", "pytorch_ddp_torch_distributed"]
    assert completions("smdist init smp") == ["smp_v1", "smp_v2"]
