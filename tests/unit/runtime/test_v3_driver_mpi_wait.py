"""A worker host of an MPI job under smdist's v3 driver: when it stops waiting."""

from __future__ import annotations

import threading
import time

from smdist.runtime import v3_driver_mpi


def test_the_first_hosts_mark_ends_the_wait_even_when_no_daemon_was_seen(tmp_path):
    # Ranks that end within one poll leave no daemon to see: the mark still ends the wait.
    done = v3_driver_mpi.mpi_done_file("job-1", "algo-2")
    assert done.name == "smdist-mpi-done-job-1-algo-2"
    done = tmp_path / done.name
    threading.Timer(0.3, done.touch).start()
    started = time.monotonic()
    assert v3_driver_mpi.wait_for_mpi_daemon(done, appear=30, poll=0.05) == 0
    assert time.monotonic() - started < 10 and not done.exists()  # consumed: a rerun waits


def test_without_daemon_or_mark_the_host_gives_up_after_the_appear_time(tmp_path, capsys):
    assert v3_driver_mpi.wait_for_mpi_daemon(tmp_path / "never", appear=0.2, poll=0.05) == 1
    assert "no MPI daemon started here within 0 s" in capsys.readouterr().out


def test_a_daemon_that_comes_and_goes_ends_the_wait(tmp_path, monkeypatch):
    states = iter([False, True, True, False])
    monkeypatch.setattr(v3_driver_mpi, "_daemon_running", lambda: next(states))
    assert v3_driver_mpi.wait_for_mpi_daemon(tmp_path / "never", appear=30, poll=0.01) == 0


def test_the_first_host_marks_every_worker_through_ssh(tmp_path, monkeypatch):
    calls = []
    monkeypatch.setattr(v3_driver_mpi.subprocess, "run", lambda argv, **_: calls.append(argv))
    v3_driver_mpi.tell_workers_mpirun_ended(["algo-2", "algo-3"], "job-1")
    assert [c[-3:] for c in calls] == [
        ["algo-2", "touch", "/tmp/smdist-mpi-done-job-1-algo-2"],
        ["algo-3", "touch", "/tmp/smdist-mpi-done-job-1-algo-3"],
    ]
