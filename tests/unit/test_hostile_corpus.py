"""Hostile and careless job files are refused naming the field; hostile-looking values arrive.

Every refused case runs through the Python API (``smdist.load`` + ``smdist.plan``, in a forked
child so a hang or an interpreter crash is one failure) and must raise a SpecError naming its
field within 1 s of CPU; a sample covering every group also runs through the real ``smdist
validate`` command: exit 2, the field on stderr, never a traceback. Accepted cases validate and
the plan carries the value unchanged.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hostile import ACCEPTED, REFUSED, Accepted, Case
from hostile.build import EXAMPLES_DIR, make_workspace
from hostile.harness import run_cli, validate_isolated, warm_up
from hostile.verdict import (
    accepted_faults,
    cli_refused_faults,
    names_field,
    refused_faults,
)

pytestmark = pytest.mark.timeout(120)


def _cli_sample(cases: list[Case]) -> list[Case]:
    """The first case of every group, then every twelfth case."""
    seen: set[str] = set()
    sample = []
    for index, case in enumerate(cases):
        if case.group not in seen or index % 12 == 0:
            sample.append(case)
        seen.add(case.group)
    return sample


CLI_REFUSED = _cli_sample(REFUSED)
CLI_ACCEPTED = ACCEPTED[::5]


@pytest.fixture(scope="module", autouse=True)
def _warm() -> None:
    warm_up(EXAMPLES_DIR / "pytorch_ddp.yaml")


def _job(tmp_path: Path, data: bytes) -> Path:
    make_workspace(tmp_path)
    job = tmp_path / "job.yaml"
    job.write_bytes(data)
    return job


@pytest.mark.parametrize("case", REFUSED, ids=[c.id for c in REFUSED])
def test_refused_through_the_python_api(case: Case, tmp_path: Path) -> None:
    faults = refused_faults(case, validate_isolated(_job(tmp_path, case.job_bytes())))
    assert not faults, "; ".join(faults)


@pytest.mark.parametrize("case", CLI_REFUSED, ids=[c.id for c in CLI_REFUSED])
def test_refused_by_smdist_validate(case: Case, tmp_path: Path) -> None:
    job = _job(tmp_path, case.job_bytes())
    faults = cli_refused_faults(case, run_cli("validate", str(job), cwd=tmp_path))
    assert not faults, "; ".join(faults)


@pytest.mark.parametrize("case", ACCEPTED, ids=[c.id for c in ACCEPTED])
def test_value_is_delivered_exactly(case: Accepted, tmp_path: Path) -> None:
    faults = accepted_faults(case, validate_isolated(_job(tmp_path, case.data)))
    assert not faults, "; ".join(faults)


@pytest.mark.parametrize("case", CLI_ACCEPTED, ids=[c.id for c in CLI_ACCEPTED])
def test_accepted_by_smdist_validate(case: Accepted, tmp_path: Path) -> None:
    result = run_cli("validate", str(_job(tmp_path, case.data)), cwd=tmp_path)
    assert "Traceback" not in result.stdout + result.stderr, result.stderr[-2000:]
    if _refused_by_submit_under_sdk_v3(case):
        # validate reports what submit would refuse under the installed SDK line, naming the
        # field and the SDK line that delivers the value.
        assert result.returncode == 2, result.stderr[-2000:]
        assert f"hyperparameters.{case.name}: contains a single quote" in result.stderr
        assert "SDK v2" in result.stderr
        return
    assert result.returncode == 0, result.stderr[-2000:]


def _refused_by_submit_under_sdk_v3(case: Accepted) -> bool:
    """A hyperparameter with a single quote, with SDK v3 installed: v3's container script would
    run it as shell code (``v3_request.carriage_problems``); SDK v2 delivers it unchanged."""
    from smdist.backends.sagemaker import sdk_v3_installed

    quoted = case.where == "hyperparameters" and "'" in json.dumps(case.value)
    return quoted and sdk_v3_installed()


def test_the_corpus_is_large_and_spans_every_launcher() -> None:
    assert len(REFUSED) >= 130
    assert len(ACCEPTED) >= 30
    assert len({c.id for c in REFUSED}) == len(REFUSED)
    assert len(CLI_REFUSED) >= 25
    assert {c.group for c in CLI_REFUSED} == {c.group for c in REFUSED}
    examples = {p.stem for p in EXAMPLES_DIR.glob("*.yaml")}
    assert {c.example for c in ACCEPTED} == examples


def test_every_refusal_says_where() -> None:
    assert [c.id for c in REFUSED if not c.fields and not c.says] == []


@pytest.mark.parametrize(
    ("path", "text", "field", "named"),
    [
        ("cluster.instance_count", "cluster.instance_count: bad", "cluster", True),
        ("cluster", "cluster: bad", "cluster.instance_count", False),
        ("job.yaml", "duplicate key 'cluster' (lines 3 and 9)", "cluster", True),
        ("job.yaml", "a cluster of hosts", "cluster", False),
        ("hyperparameters.lr;id", "bad name", "hyperparameters", True),
        ("hyperparameters_x", "bad", "hyperparameters", False),
    ],
)
def test_a_field_is_named_by_path_or_quoted(path, text, field, named) -> None:
    assert names_field(path, text, field) is named
