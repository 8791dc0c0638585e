"""A stopped or silent rank is named instead of the rank that noticed it; a stopped process is
continued after its SIGTERM; ranks that share a host's output keep their own errors.

Real processes for what ``/proc`` says; for the reasons, recorded torchrun output
(tests/fixtures/failures) and the ranks as a job's stop would have found them.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from smdist.backends.base import JobStatus
from smdist.backends.local.processes import proctree
from smdist.backends.local.processes.endings import RankProcess, rank_processes
from smdist.backends.local.processes.supervisor import STALL, Outcome
from smdist.backends.local.reports.failure import diagnose, rank_lines
from smdist.backends.local.reports.logs import attribute
from smdist.backends.local.reports.verdict import judge

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "failures"
TOKEN = "SMDIST_TEST_HUNG_TOKEN=hung-ranks"

pytestmark = pytest.mark.skipif(not proctree.available(), reason="needs /proc")


def recorded(name: str) -> list[tuple[int, str, int | None, str]]:
    lines = []
    for sequence, raw in enumerate((FIXTURES / f"{name}.txt").read_text().splitlines()):
        host, _, text = raw.partition(" | ")
        lines += [(sequence, *line) for line in attribute(text, host, None, [])]
    return lines


def started(code: str, **environment: str) -> subprocess.Popen[str]:
    """``python -c code`` with ``environment``, once it has printed "ready"."""
    process = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(code)],
        env={**os.environ, **environment},
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None and process.stdout.readline().strip() == "ready"
    return process


def wait_until_stopped(pid: int) -> None:
    deadline = time.monotonic() + 10
    while not proctree.is_stopped(pid):
        assert time.monotonic() < deadline, f"{pid} never stopped"
        time.sleep(0.01)


CHECKPOINTS_ON_SIGTERM = """
    import signal, sys, time
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(7))
    print("ready", flush=True)
    time.sleep(60)
"""


def test_sigterm_to_a_stopped_process_continues_it_so_that_it_acts_on_it():
    process = started(CHECKPOINTS_ON_SIGTERM)
    try:
        os.kill(process.pid, signal.SIGSTOP)
        wait_until_stopped(process.pid)
        proctree.send([process.pid], signal.SIGTERM)
        assert process.wait(timeout=10) == 7  # its own handler ran: not killed, not waiting
    finally:
        process.kill()
        process.wait()


RANK_WITH_A_WORKER = """
    import subprocess, sys, time
    worker = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    print("ready", flush=True)
    time.sleep(60)
"""


def test_the_ranks_the_stop_finds_are_named_with_host_pid_and_state():
    rank = started(
        RANK_WITH_A_WORKER, RANK="3", LOCAL_RANK="1", SMDIST_TEST_HUNG_TOKEN="hung-ranks"
    )
    try:
        os.kill(rank.pid, signal.SIGSTOP)
        wait_until_stopped(rank.pid)
        found = rank_processes({"algo-2": rank.pid}, TOKEN)
        # Its worker process carries the same RANK: the rank is named once, by its own pid.
        assert found == (RankProcess("algo-2", 3, rank.pid, True),)
        assert str(found[0]) == f"algo-2 rank 3 (pid {rank.pid}) is stopped (SIGSTOP)"
    finally:
        for pid in [*proctree.descendants(rank.pid), rank.pid]:
            os.kill(pid, signal.SIGKILL)
        rank.wait()


def test_a_silent_rank_is_named_instead_of_the_rank_whose_collective_timed_out():
    silent = RankProcess("algo-2", 1, 4242, stopped=False)
    failure = diagnose(recorded("torchrun_2hosts_hang"), {"algo-1": 1}, ["algo-1"], ranks=[silent])
    assert failure is not None and failure.where == "algo-2 rank 1"
    reason = failure.reason()
    assert reason.startswith(
        "AlgorithmError: ExecuteUserScriptError: algo-2 rank 1 (pid 4242) is probably hung: it "
        "was running and printed no error while the other ranks timed out; first to give up: "
        "algo-1 rank 0 (exit code 1): RuntimeError: "
    ), reason
    assert "Timed out waiting 3000ms" in reason
    assert failure.details().startswith(reason + "\n\nLast lines of algo-2 rank 1:\nrank 1 joined")


def test_a_silent_rank_its_own_torchrun_closed_before_reporting_is_named_from_what_was_seen():
    """algo-2's torchrun closed its silent rank 3 (pid 4) when its rank 2 timed out, and was
    stopped before its failure block could say which rank pid 4 was: by the time the job
    stopped, rank 3 was gone from /proc. The ranks seen while the job ran name it."""
    lines = recorded("torchrun_2x2_hang_closed_before_its_report")
    seen = [
        RankProcess("algo-1", 0, 4, stopped=False),
        RankProcess("algo-1", 1, 5, stopped=False),
        RankProcess("algo-2", 2, 3, stopped=False),
        RankProcess("algo-2", 3, 4, stopped=False),
    ]
    failure = diagnose(lines, {"algo-1": 1}, ["algo-1"], ranks=(), seen=seen)
    assert failure is not None and failure.where == "algo-2 rank 3"
    assert failure.reason().startswith(
        "AlgorithmError: ExecuteUserScriptError: algo-2 rank 3 (pid 4) is probably hung: it was "
        "running and printed no error while the other ranks timed out; first to give up: "
        "algo-1 rank 1 (exit code 1): RuntimeError: "
    ), failure.reason()
    # Without what was seen, nothing tells which rank pid 4 was: the rank that gave up is named.
    unseen = diagnose(lines, {"algo-1": 1}, ["algo-1"], ranks=())
    assert unseen is not None and unseen.where == "algo-1 rank 1"


def test_a_stopped_rank_is_named_as_stopped():
    stopped = RankProcess("algo-2", 1, 4242, stopped=True)
    failure = diagnose(recorded("torchrun_2hosts_hang"), {"algo-1": 1}, ["algo-1"], ranks=[stopped])
    assert failure is not None
    assert failure.reason().startswith(
        "AlgorithmError: ExecuteUserScriptError: algo-2 rank 1 (pid 4242) is stopped (SIGSTOP) "
        "and the other ranks waited for it; first to give up: algo-1 rank 0 (exit code 1): "
    )


def test_a_rank_that_failed_on_its_own_is_still_the_cause():
    stopped = RankProcess("algo-1", 0, 4242, stopped=True)
    failure = diagnose(
        recorded("torchrun_2hosts_raise"), {"algo-2": 1}, ["algo-2"], ranks=[stopped]
    )
    assert failure is not None
    assert failure.reason() == (
        "AlgorithmError: ExecuteUserScriptError on algo-2 rank 1 (exit code 1): "
        "ValueError: bad shard 7"
    )


def test_a_stall_names_the_stopped_rank():
    outcome = Outcome(
        exit_codes={"algo-1": 137, "algo-2": 137},
        stop_cause=STALL,
        stop_detail="no output from any process for 5 s",
        ranks=(RankProcess("algo-2", 3, 5, stopped=True),),
    )
    hosts = [SimpleNamespace(name="algo-1"), SimpleNamespace(name="algo-2")]
    log = SimpleNamespace(recent=[(1, "algo-2", None, "rank 3 step 9")])
    status, reason, failure = judge(outcome, log, hosts, False)  # type: ignore[arg-type]
    assert status is JobStatus.FAILED
    assert reason is not None and reason.endswith(
        "; algo-2 rank 3 (pid 5) is stopped (SIGSTOP) and the other ranks waited for it"
    )
    assert failure is not None and failure.where == "algo-2 rank 3"


def test_ranks_sharing_a_host_are_not_credited_with_each_others_lines():
    lines = recorded("torchrun_1host_raise")  # one host, ranks 0 and 1
    own = rank_lines(lines, "algo-1", 1)
    assert own[-1] == "ValueError: bad shard 7"
    assert not any(line.startswith("rank 0") for line in own), own
    failure = diagnose(lines, {"algo-1": 1}, ["algo-1"])
    assert failure is not None and "rank 0 step 1" in failure.host_lines
    assert "Last lines of algo-1, its ranks' output not told apart:\n" in failure.details()


def two_errors_on_one_host() -> list[tuple[int, str, int | None, str]]:
    texts = [
        "rank 0 step 0",
        "rank 1 step 0",
        "[rank0]: Traceback (most recent call last):",
        '[rank0]:   File "/opt/ml/code/train.py", line 9, in <module>',
        "[rank0]: ValueError: shard 7 is corrupt",
        "[rank1]: Traceback (most recent call last):",
        '[rank1]:   File "/opt/ml/code/train.py", line 11, in <module>',
        "[rank1]: KeyError: 'label'",
        "Root Cause (first observed failure):",
        "[0]:",
        "  rank      : 0 (local_rank: 0)",
        "  exitcode  : 1 (pid: 40)",
        "============================================================",
    ]
    return [(index, "algo-1", None, text) for index, text in enumerate(texts)]


def test_each_rank_of_a_host_keeps_its_own_error_in_output_failure():
    failure = diagnose(two_errors_on_one_host(), {"algo-1": 1}, ["algo-1"])
    assert failure is not None
    details = failure.details()
    own = details.split("Last lines of algo-1 rank 0:\n", 1)[1].split("\n\n", 1)[0]
    assert own.endswith("ValueError: shard 7 is corrupt")
    assert "rank 1" not in own and "KeyError" not in own
    assert "Errors other ranks printed:\nalgo-1 rank 1: KeyError: 'label'\n" in details
