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


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_show_completion_prints_a_script_that_completes_smdist(shell):
    shown = smdist("--show-completion", shell)
    assert shown.returncode == 0, shown.stderr
    assert "_SMDIST_COMPLETE" in shown.stdout and "smdist" in shown.stdout


def test_help_lists_the_completion_options():
    shown = smdist("--help", COLUMNS="150")
    assert "--install-completion" in shown.stdout and "--show-completion" in shown.stdout


def test_a_command_completes_from_its_first_letters():
    assert completions("smdist ru") == ["run"]
    assert completions("smdist st") == ["status", "stop"]


def test_init_completes_the_strategies_it_knows():
    assert completions("smdist init py") == ["pytorch_ddp", "pytorch_ddp_torch_distributed"]
    assert completions("smdist init smp") == ["smp_v1", "smp_v2"]
