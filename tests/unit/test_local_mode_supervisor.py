"""The local-mode supervisor's end of a job when two threads end it at once."""

from __future__ import annotations

import json
import threading
import time
from types import SimpleNamespace

from smdist.backends.sagemaker.local_mode import supervisor
from smdist.backends.sagemaker.local_mode.run_file import RECORD


def test_the_second_finish_waits_until_the_first_has_written_the_end(tmp_path, monkeypatch):
    """A job stopped before its SDK call returns: the watcher ends it after the grace, the
    main thread's call then fails and finishes too. When the main thread's finish returns
    (and with it the process), the record must say Stopped: the watcher is a daemon thread
    that the exit would cut short."""
    (tmp_path / RECORD).write_text(json.dumps({"status": "InProgress"}))
    run = SimpleNamespace(
        grace=1, work_dir=tmp_path / "work", output_dir=tmp_path / "output",
        container_root=tmp_path / "containers", sdk="3",
    )  # fmt: skip
    supervision = supervisor.Supervision(tmp_path, run)
    supervision.stop_at = time.monotonic()
    down_started = threading.Event()

    def slow_compose_down() -> None:  # `compose down` takes its time
        down_started.set()
        time.sleep(0.5)

    monkeypatch.setattr(supervision, "_compose_down", slow_compose_down)
    monkeypatch.setattr(supervision, "_children", lambda: [])
    watcher = threading.Thread(target=supervision.finish, args=(None, None), daemon=True)
    watcher.start()
    assert down_started.wait(5)
    supervision.finish(RuntimeError("the work directory is gone"), None)
    record = json.loads((tmp_path / RECORD).read_text())
    assert record["status"] == "Stopped", record
    assert record["failure_reason"] == "stopped on request"
    watcher.join(5)
