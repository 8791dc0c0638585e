"""Local and SageMaker logs print each line with the same host prefix, ``algo-1 | text``."""

from __future__ import annotations

from smdist.backends.local.reports.logs import SMDIST, JobLog
from smdist.backends.log_lines import prefixed, split_prefixed
from smdist.backends.sagemaker.job import CloudWatchLogReader


class FakeLogs:
    """The two CloudWatch Logs calls the reader makes, over streams held in memory."""

    class exceptions:  # noqa: N801 - boto3's attribute name
        ResourceNotFoundException = LookupError

    def __init__(self, streams: dict[str, list[tuple[int, str]]]) -> None:
        self.streams = streams

    def describe_log_streams(self, **kwargs):
        return {"logStreams": [{"logStreamName": name} for name in self.streams]}

    def get_log_events(self, logStreamName, nextToken=None, **kwargs):
        if nextToken:
            return {"events": [], "nextForwardToken": nextToken}
        events = [{"timestamp": t, "message": m} for t, m in self.streams[logStreamName]]
        return {"events": events, "nextForwardToken": "end"}


def test_sagemaker_lines_carry_the_local_prefix_aligned_over_the_hosts():
    logs = FakeLogs(
        {
            "job/algo-1-1700000000": [(1, "epoch 1 done\n")],
            "job/algo-10-1700000000": [(2, "[metrics] step=1")],
        }
    )
    lines = CloudWatchLogReader(logs, "job").new_lines()
    assert lines == ["algo-1  | epoch 1 done", "algo-10 | [metrics] step=1"]
    assert [split_prefixed(line) for line in lines] == [
        ("algo-1", "epoch 1 done"),
        ("algo-10", "[metrics] step=1"),
    ]


def test_local_lines_use_the_same_prefix(tmp_path):
    log = JobLog(tmp_path, ["algo-1", "algo-2"])
    log.add("algo-1", None, "epoch 1 done")
    log.add("algo-2", 1, "[metrics] step=1")
    log.note("[train] running")
    log.close()
    width = log.width  # the widest label a host and rank can have
    assert log.path.read_text().splitlines() == [
        prefixed("algo-1", "epoch 1 done", width),
        prefixed("algo-2 r1", "[metrics] step=1", width),
        prefixed(SMDIST, "[train] running", width),
    ]
    assert log.path.read_text().splitlines()[0] == "algo-1     | epoch 1 done"
