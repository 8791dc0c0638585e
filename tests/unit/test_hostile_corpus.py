"""Hostile and careless job files are refused naming the field; hostile-looking values arrive.

Every refused case runs through the Python API (``smdist.load`` + ``smdist.plan``, in a forked
child so a hang or an interpreter crash is one failure) and must raise a SpecError naming its
field within 1 s of CPU; a sample covering every group also runs through ``smdist validate``:
exit 2, the field on stderr, never a traceback. The first case of every group runs the real
command as a process of its own; the rest of the sample runs the command's ``main`` in the
forked child. Accepted cases validate and the plan carries the value unchanged.
"""

from __future__ import annotations

import json
import os
import resource
from collections.abc import Iterator
from pathlib import Path

import pytest
from hostile import ACCEPTED, REFUSED, Accepted, Case
from hostile.build import EXAMPLES_DIR, make_workspace
from hostile.harness import CliResult, Isolated, Outcome, run_cli, warm_up
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


def _first_of_each_group(cases: list[Case]) -> list[Case]:
    firsts: dict[str, Case] = {}
    for case in cases:
        firsts.setdefault(case.group, case)
    return list(firsts.values())


CLI_REFUSED = _cli_sample(REFUSED)
# A process per case costs more than the check: the real script runs the first case of each
# group, which is where the exit code, the streams' encoding and the script itself are proved.
PROCESS_REFUSED = _first_of_each_group(REFUSED)
MAIN_REFUSED = [c for c in CLI_REFUSED if c not in PROCESS_REFUSED]
CLI_ACCEPTED = ACCEPTED[::5]
PROCESS_ACCEPTED = ACCEPTED[::40]  # the first is a single-quoted hyperparameter (SDK v3 refuses)
MAIN_ACCEPTED = [c for c in CLI_ACCEPTED if c not in PROCESS_ACCEPTED]


@pytest.fixture(scope="module")
def isolated() -> Iterator[Isolated]:
    """One forked child for the module's cases, forked once everything is imported and built,
    so that a case's CPU time is its check's own."""
    warm_up(EXAMPLES_DIR / "pytorch_ddp.yaml")
    checks = Isolated()
    yield checks
    checks.close()


def _job(tmp_path: Path, data: bytes) -> Path:
    make_workspace(tmp_path)
    job = tmp_path / "job.yaml"
    job.write_bytes(data)
    return job


@pytest.mark.parametrize("case", REFUSED, ids=[c.id for c in REFUSED])
def test_refused_through_the_python_api(case: Case, tmp_path: Path, isolated: Isolated) -> None:
    faults = refused_faults(case, isolated.validate(_job(tmp_path, case.job_bytes())))
    assert not faults, "; ".join(faults)


@pytest.mark.parametrize("case", PROCESS_REFUSED, ids=[c.id for c in PROCESS_REFUSED])
def test_refused_by_the_smdist_validate_command(case: Case, tmp_path: Path) -> None:
    job = _job(tmp_path, case.job_bytes())
    faults = cli_refused_faults(case, run_cli("validate", str(job), cwd=tmp_path))
    assert not faults, "; ".join(faults)


@pytest.mark.parametrize("case", MAIN_REFUSED, ids=[c.id for c in MAIN_REFUSED])
def test_refused_by_smdist_validates_main(case: Case, tmp_path: Path, isolated: Isolated) -> None:
    job = _job(tmp_path, case.job_bytes())
    faults = cli_refused_faults(case, isolated.cli("validate", str(job), cwd=tmp_path))
    assert not faults, "; ".join(faults)


@pytest.mark.parametrize("case", ACCEPTED, ids=[c.id for c in ACCEPTED])
def test_value_is_delivered_exactly(case: Accepted, tmp_path: Path, isolated: Isolated) -> None:
    faults = accepted_faults(case, isolated.validate(_job(tmp_path, case.data)))
    assert not faults, "; ".join(faults)


@pytest.mark.parametrize("case", PROCESS_ACCEPTED, ids=[c.id for c in PROCESS_ACCEPTED])
def test_accepted_by_the_smdist_validate_command(case: Accepted, tmp_path: Path) -> None:
    _assert_accepted(case, run_cli("validate", str(_job(tmp_path, case.data)), cwd=tmp_path))


@pytest.mark.parametrize("case", MAIN_ACCEPTED, ids=[c.id for c in MAIN_ACCEPTED])
def test_accepted_by_smdist_validates_main(
    case: Accepted, tmp_path: Path, isolated: Isolated
) -> None:
    job = _job(tmp_path, case.data)
    _assert_accepted(case, isolated.cli("validate", str(job), cwd=tmp_path))


def _assert_accepted(case: Accepted, result: CliResult) -> None:
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
    assert {c.group for c in PROCESS_REFUSED} == {c.group for c in REFUSED}
    assert sorted(c.id for c in PROCESS_REFUSED + MAIN_REFUSED) == sorted(c.id for c in CLI_REFUSED)
    assert {c.where for c in PROCESS_ACCEPTED} == {"hyperparameters", "environment"}
    quoted = [c for c in PROCESS_ACCEPTED if c.where == "hyperparameters" and "'" in str(c.value)]
    assert quoted, "the script's sample has a single-quoted hyperparameter (SDK v3 refuses it)"
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


def _end_the_child(code: int) -> Outcome:
    os._exit(code)


def _cpu_limit_and_use() -> Outcome:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    soft = resource.getrlimit(resource.RLIMIT_CPU)[0]
    return Outcome("accepted", error=f"{soft} {usage.ru_utime + usage.ru_stime}")


def _answer(job: Path) -> Outcome:
    return Outcome("accepted", error=str(job))


def test_a_case_that_kills_the_child_is_its_own_failure_and_the_next_gets_a_fresh_child(
    isolated: Isolated,
) -> None:
    assert isolated.run(_end_the_child, 3).kind == "died"
    assert isolated.run(_answer, Path("next")).error == "next"
    assert isolated.run(_answer, Path("and on")).error == "and on"


def test_each_case_may_use_its_own_cpu_seconds_counted_from_what_the_child_used_before(
    isolated: Isolated,
) -> None:
    for timeout in (10.0, 3.0):
        soft, used = map(float, isolated.run(_cpu_limit_and_use, timeout=timeout).error.split())
        assert used < soft <= used + timeout + 1
