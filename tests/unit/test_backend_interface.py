"""A backend is one object on one interface: a new one is a module plus a registry line, and
the command line (flags, dry run, submit, status, logs), ``fit`` and ``tune`` reach it without
a change of their own."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

from smdist.backends import registry
from smdist.backends.base import Backend

PLUGIN = Path(__file__).parent / "backend_plugin"
JOB = "name: toy\nstrategy: {kind: pytorch_ddp}\ncluster: {instance_type: ml.g5.xlarge, instance_count: 2}\n"  # noqa: E501
# The smdist command, with one registry line more: nothing else of smdist is touched.
RUN = (
    "import sys; from smdist.backends import registry; "
    "registry.BACKENDS['toy'] = 'toy_backend:ToyBackend'; "
    "from smdist.cli.app import main; sys.exit(main(sys.argv[1:]))"
)


def smdist(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    env_path = f"{PLUGIN}"
    # COLUMNS: --help's descriptions each on one line, however many flags the backends have
    return subprocess.run(
        [sys.executable, "-c", RUN, *args], cwd=cwd, capture_output=True, text=True,
        timeout=120, env={**__import__("os").environ, "PYTHONPATH": env_path, "COLUMNS": "250"},
    )  # fmt: skip


@pytest.fixture()
def job(tmp_path: Path) -> Path:
    (tmp_path / "job.yaml").write_text(JOB)
    return tmp_path / "job.yaml"


def test_a_new_backends_options_are_submit_flags_and_its_dry_run_is_what_it_shows(job):
    shown = smdist(job.parent, "submit", str(job), "--backend", "toy", "--lane", "gpu", "--dry-run")
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout) == {"lane": "gpu", "hosts": ["algo-1", "algo-2"]}
    assert "note: the toy lane is gpu" in shown.stderr
    assert not (job.parent / "spool").exists()  # a dry run sends nothing
    helped = smdist(job.parent, "submit", "--help")
    assert "--lane" in helped.stdout and "the toy cluster's lane" in helped.stdout


def test_a_new_backend_is_submitted_to_and_found_again_by_status_and_logs(job):
    sent = smdist(job.parent, "submit", str(job), "--backend", "toy", "--spool", "spool")
    assert sent.returncode == 0, sent.stderr
    assert sent.stdout.strip() == "toy-job-1"
    record = json.loads((job.parent / "spool" / "toy-job-1" / "job.json").read_text())
    assert record == {"lane": "default", "hosts": ["algo-1", "algo-2"], "status": "Completed"}
    status = smdist(job.parent, "status", "toy-job-1", "--backend", "toy")
    assert status.returncode == 0, status.stderr
    assert status.stdout.split("\t")[:2] == ["toy-job-1", "Completed"]
    logs = smdist(job.parent, "logs", "toy-job-1", "--backend", "toy")
    assert logs.stdout == "toy | toy-job-1 ran\n"


def test_a_flag_of_one_backend_given_to_another_is_refused_naming_the_one_that_takes_it(job):
    done = smdist(job.parent, "submit", str(job), "--backend", "sagemaker", "--lane", "gpu")
    assert done.returncode == 2
    assert "--lane: applies to --backend toy only" in done.stderr
    assert not (job.parent / "spool").exists()


def test_a_backend_without_a_search_is_refused_by_tune_naming_those_with_one():
    class NoSearch(Backend):
        name = "none"
        summary = "no search"
        Options = registry.get("sagemaker").Options

        def dry_run(self, plan, options):
            return None

        def send(self, value, options):
            raise AssertionError("never sent")

    assert not NoSearch().tunes and registry.get("local").tunes
    assert registry.names(tunes=True) == ["local", "sagemaker"]
    assert registry.names(command="run") == ["local"]


def _named_backends(path: Path) -> set[str]:
    """The backends a module names in its code: string values equal to a backend's name, and
    imports of a backend's package (docstrings and help texts aside)."""
    tree = ast.parse(path.read_text())
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.ClassDef))
        and node.body
        and isinstance(node.body[0], ast.Expr)
    }
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and id(node) not in docstrings:
            if node.value in registry.BACKENDS:
                found.add(node.value)
        elif isinstance(node, ast.ImportFrom) and node.module:
            if node.module.startswith(("smdist.backends.local", "smdist.backends.sagemaker")):
                found.add(node.module)
    return found


def test_the_command_line_fit_and_tune_name_no_backend():
    """Only the registry and help texts name a backend: the entry points ask the registry."""
    package = Path(__file__).resolve().parents[2] / "smdist"
    modules = [*(package / "cli").glob("*.py"), package / "fitting.py", package / "tuning.py"]
    named = {path.name: _named_backends(path) for path in sorted(modules)}
    assert {name: found for name, found in named.items() if found} == {}
