"""Failure reasons from real launcher output: host, rank, exit code or signal, last lines.

The fixtures are recorded runs of torchrun and mpirun in which one rank raised, aborted or
exited with a code (tests/fixtures/failures/README.md says how). Each is read the way the
local backend reads its hosts' pipes, through ``local_logs.attribute``.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from smdist.backends.local.reports.failure import (
    Ending,
    Failure,
    diagnose,
    launcher_reports,
    rank_lines,
)
from smdist.backends.local.reports.logs import attribute

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "failures"
RANK_HOSTS = ["algo-1", "algo-2"]  # mpirun's rank 1 ran on the second emulated host


def recorded(name: str, tags: str | None = None) -> list[tuple[int, str, int | None, str]]:
    lines = []
    for sequence, raw in enumerate((FIXTURES / f"{name}.txt").read_text().splitlines()):
        host, separator, text = raw.partition(" | ")
        assert separator, raw
        for line in attribute(text, host, tags, RANK_HOSTS):
            lines.append((sequence, *line))
    return lines


# fixture, launcher tags, exit codes, failed hosts (first first), one launcher for all hosts
RUNS = {
    "torchrun_2hosts_raise": (None, {"algo-2": 1, "algo-1": 143}, ["algo-2"], False),
    "torchrun_2hosts_abort": (None, {"algo-2": 1, "algo-1": 143}, ["algo-2"], False),
    "torchrun_2hosts_exit3": (None, {"algo-2": 1, "algo-1": 143}, ["algo-2"], False),
    "torchrun_2hosts_early_raise": (None, {"algo-2": 1, "algo-1": 143}, ["algo-2"], False),
    "torchrun_2hosts_hang": (None, {"algo-1": 1, "algo-2": 143}, ["algo-1"], False),
    "torchrun_1host_raise": (None, {"algo-1": 1}, ["algo-1"], False),
    "torchrun_1host_abort": (None, {"algo-1": 1}, ["algo-1"], False),
    "mpirun_abort": ("mpirun", {"algo-1": 134, "algo-2": 143}, ["algo-1"], True),
    "mpirun_exit3": ("mpirun", {"algo-1": 3, "algo-2": 143}, ["algo-1"], True),
    "mpirun_raise": ("mpirun", {"algo-1": 1, "algo-2": 143}, ["algo-1"], True),
    "process_2hosts_abort": (None, {"algo-2": 134, "algo-1": 143}, ["algo-2"], False),
    "torchrun_2hosts_corrupt_checkpoint_peer_first": (
        None,
        {"algo-2": 1, "algo-1": 143},
        ["algo-2"],
        False,
    ),
}


def failure_of(name: str) -> Failure:
    tags, codes, failed, single = RUNS[name]
    found = diagnose(recorded(name, tags), codes, failed, single)
    assert found is not None
    return found


# fixture -> (where, how it ended, text the reason must hold)
EXPECTED = {
    "torchrun_2hosts_raise": ("algo-2 rank 1", "exit code 1", "ValueError: bad shard 7"),
    "torchrun_2hosts_abort": (
        "algo-2 rank 1",
        "killed by SIGABRT",
        "rank 1 step 1 | rank 1: shard 7 is corrupt, aborting",
    ),
    "torchrun_2hosts_exit3": ("algo-2 rank 1", "exit code 3", "shard 7: checksum mismatch"),
    "torchrun_2hosts_early_raise": ("algo-2 rank 1", "exit code 1", "KeyError: 'shard_7'"),
    "torchrun_2hosts_hang": ("algo-1 rank 0", "exit code 1", "another rank is probably hung"),
    "torchrun_1host_raise": ("algo-1 rank 1", "exit code 1", "ValueError: bad shard 7"),
    "torchrun_1host_abort": (
        "algo-1 rank 1",
        "killed by SIGABRT",
        "rank 1: shard 7 is corrupt, aborting",
    ),
    "mpirun_abort": ("algo-2 rank 1", "killed by SIGABRT", "rank 1 about to abort"),
    "mpirun_exit3": ("algo-2 rank 1", "exit code 3", "rank 1: shard 7 is missing"),
    "mpirun_raise": ("algo-2 rank 1", "exit code 1", "ValueError: bad shard 7"),
    "process_2hosts_abort": (
        "algo-2",
        "killed by SIGABRT",
        "algo-2: checkpoint directory is not writable, giving up",
    ),
}
# fixture -> (where, text the reason must hold): the cause printed by a rank whose launcher
# was stopped before it could report, so how it ended is not known.
EXPECTED_UNREPORTED = {
    "torchrun_2hosts_corrupt_checkpoint_peer_first": (
        "algo-1",
        "_pickle.UnpicklingError: Weights only load failed.",
    ),
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_the_reason_names_host_rank_ending_and_what_the_rank_wrote(name):
    where, how, said = EXPECTED[name]
    reason = failure_of(name).reason()
    assert reason.startswith(f"AlgorithmError: ExecuteUserScriptError on {where} ({how}): ")
    assert said in reason
    assert "\n" not in reason and len(reason) <= 1024


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_no_launcher_text_is_taken_for_the_ranks_own(name):
    failure = failure_of(name)
    text = "\n".join(failure.last_lines)
    for launcher_text in (
        "ChildFailedError",
        "Root Cause",
        "torch/distributed/elastic",
        "OMP_NUM_THREADS",
        "Primary job",
        "mpirun noticed",
        "Process name:",
        "-----",
    ):
        assert launcher_text not in text, (launcher_text, text)
    assert not any(re.match(r"\[rank\d+\]:", line) for line in failure.last_lines)


def test_a_peers_connection_error_printed_first_is_not_the_cause():
    lines = recorded("torchrun_2hosts_abort")
    first_error = next(text for _, _, _, text in lines if "Connection closed by peer" in text)
    assert first_error.startswith("[rank0]: RuntimeError")  # algo-1's rank 0 spoke first
    assert failure_of("torchrun_2hosts_abort").host == "algo-2"


@pytest.mark.parametrize("name", sorted(EXPECTED_UNREPORTED))
def test_a_peers_launcher_reporting_first_yields_to_the_rank_that_failed_on_its_own(name):
    """The peer's launcher reports a connection error and its host exits first; the rank that
    raised the root error was stopped before its launcher said anything: the reason names it,
    with what it raised (it named the peer and "Connection closed by peer")."""
    where, said = EXPECTED_UNREPORTED[name]
    reason = failure_of(name).reason()
    assert reason.startswith(f"AlgorithmError: ExecuteUserScriptError on {where}: {said}")
    assert "by peer" not in reason
    assert failure_of(name).last_lines[-1].startswith(said)


def test_a_traceback_is_kept_whole_in_the_ranks_last_lines():
    last = failure_of("torchrun_2hosts_raise").last_lines
    assert last[-4:] == (
        "Traceback (most recent call last):",
        '  File "/opt/ml/code/raise.py", line 15, in <module>',
        '    raise ValueError("bad shard 7")',
        "ValueError: bad shard 7",
    )
    assert last[:2] == ("rank 1 step 0", "rank 1 step 1")  # its own output, not rank 0's


def test_mpirun_pieces_of_one_line_are_joined_back():
    # mpirun tags every chunk it forwards; the traceback's last line arrives in pieces.
    assert failure_of("mpirun_raise").message == "ValueError: bad shard 7"
    assert failure_of("mpirun_raise").last_lines[-1] == "ValueError: bad shard 7"


def test_torchrun_root_cause_blocks_give_rank_and_status():
    reports = launcher_reports(recorded("torchrun_1host_abort"))
    assert [(r.host, r.rank, r.ending) for r in reports] == [("algo-1", 1, Ending(signal=6))]
    both = launcher_reports(recorded("torchrun_2hosts_raise"))
    # Each host's torchrun reports its own first failure: the crash, then the peer.
    assert [(r.host, r.rank, r.ending) for r in both] == [
        ("algo-2", 1, Ending(code=1)),
        ("algo-1", 0, Ending(code=1)),
    ]


def test_mpirun_reports_name_the_rank_and_the_host_it_ran_on():
    aborted = launcher_reports(recorded("mpirun_abort", "mpirun"))
    assert [(r.host, r.rank, r.ending) for r in aborted] == [("algo-2", 1, Ending(signal=6))]
    exited = launcher_reports(recorded("mpirun_exit3", "mpirun"))
    assert [(r.host, r.rank, r.ending) for r in exited] == [("algo-2", 1, Ending(code=3))]


def test_rank_lines_of_a_tagged_launcher_are_that_ranks_only():
    lines = recorded("mpirun_exit3", "mpirun")
    assert rank_lines(lines, "algo-2", 1) == ["rank 1 started", "rank 1: shard 7 is missing"]
    assert rank_lines(lines, "algo-1", 0) == ["rank 0 started"]


def test_the_output_failure_text_holds_the_reason_and_the_last_lines():
    failure = failure_of("torchrun_2hosts_abort")
    details = failure.details()
    assert details.startswith(failure.reason() + "\n\nLast lines of algo-2 rank 1:\n")
    assert details.rstrip().endswith("rank 1: shard 7 is corrupt, aborting")


@pytest.mark.parametrize(
    ("code", "shown", "stopped"),
    [
        (3, "exit code 3", False),
        (134, "killed by SIGABRT", False),
        (137, "killed by SIGKILL", False),
        (143, "killed by SIGTERM", True),
        (-6, "killed by SIGABRT", False),
        (1, "exit code 1", False),
    ],
)
def test_a_hosts_exit_code_reads_as_an_exit_code_or_a_signal(code, shown, stopped):
    ending = Ending.of_host_exit(code)
    assert (str(ending), ending.stopped) == (shown, stopped)


def test_nothing_failed_nothing_found():
    assert diagnose(recorded("torchrun_1host_raise")[:3], {"algo-1": 0}, [], False) is None
