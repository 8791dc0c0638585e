"""The live console once smdist stops a job: the stopped processes' shutdown tracebacks are left
out (the log files keep them); a failing rank's own traceback never is.

The lines are those a stopped torchrun 2.13 agent prints (``smdist run``, Ctrl-C), trimmed to
a few frames each.
"""

from __future__ import annotations

from smdist.backends.local.reports.shutdown_noise import ShutdownNoise
from smdist.backends.log_lines import prefixed

AGENT_STOPPED = [
    "W1127 18:36:58.749000 3 torch/distributed/elastic/agent/server/api.py:753] Received 15 "
    "death signal, shutting down workers",
    "W1127 18:36:58.750000 3 torch/distributed/elastic/multiprocessing/api.py:1028] Sending "
    "process 5 closing signal SIGTERM",
]
SIGNAL_TRACEBACK = [
    "Traceback (most recent call last):",
    '  File ".../torch/distributed/elastic/agent/server/api.py", line 923, in _invoke_run',
    "    time.sleep(monitor_interval)",
    "torch.distributed.elastic.multiprocessing.api.SignalException: Process 3 got signal: 15",
    "",
    "During handling of the above exception, another exception occurred:",
    "",
    "Traceback (most recent call last):",
    '  File "<frozen runpy>", line 198, in _run_module_as_main',
    '  File ".../subprocess.py", line 2040, in _wait',
    "    time.sleep(delay)",
    "torch.distributed.elastic.multiprocessing.api.SignalException: Process 3 got signal: 15",
]
RANK_TRACEBACK = [
    "Traceback (most recent call last):",
    '  File "/opt/ml/code/train.py", line 9, in <module>',
    '    raise RuntimeError("boom from rank 1")',
    "RuntimeError: boom from rank 1",
]


def lines(host: str, texts: list[str]) -> list[str]:
    return [prefixed(host, text, 10) for text in texts]


def shown(noise: ShutdownNoise, fed: list[str]) -> list[str]:
    out = [line for line in fed for line in noise.feed(line)]
    return out + noise.flush()


def test_before_any_stop_every_line_is_shown_as_it_comes():
    noise = ShutdownNoise(lambda: None)
    fed = lines("algo-1", [*AGENT_STOPPED, *SIGNAL_TRACEBACK, "done"])
    assert [kept for line in fed for kept in noise.feed(line)] == fed
    assert noise.left_out == 0


def test_after_a_requested_stop_the_agents_shutdown_output_is_left_out_and_counted():
    noise = ShutdownNoise(lambda: "requested")
    ours = lines("smdist", ["Stopped in 9.1 s: stop requested by Ctrl-C"])
    kept = lines("algo-1", ["smdist: stopped by SIGTERM at step=441; exiting 143"])
    fed = [
        *lines("algo-1", AGENT_STOPPED),
        *kept,
        *lines("algo-1", SIGNAL_TRACEBACK),
        *lines("algo-2", SIGNAL_TRACEBACK),
        *ours,
    ]
    assert shown(noise, fed) == [*kept, *ours]
    assert noise.left_out == len(AGENT_STOPPED) + 2 * len(SIGNAL_TRACEBACK)


def test_another_process_writing_inside_a_traceback_is_shown_and_the_traceback_still_left_out():
    noise = ShutdownNoise(lambda: "requested")
    between = lines("algo-1", ["smdist: rank=1 weights_checksum=ba3638f7803ea993"])
    traceback = lines("algo-1", SIGNAL_TRACEBACK)
    assert shown(noise, [*traceback[:2], *between, *traceback[2:]]) == between


def test_after_a_failure_a_ranks_own_traceback_is_shown_whole_and_the_agents_left_out():
    noise = ShutdownNoise(lambda: "failure")
    rank = lines("algo-2", RANK_TRACEBACK)
    fed = [*lines("algo-1", SIGNAL_TRACEBACK), *rank, *lines("algo-2", ["after it"])]
    assert shown(noise, fed) == [*rank, *lines("algo-2", ["after it"])]


def test_a_ranks_traceback_still_open_when_the_job_ends_is_shown_after_a_failure():
    noise = ShutdownNoise(lambda: "failure")
    rank = lines("algo-2", RANK_TRACEBACK)
    assert shown(noise, rank) == rank


def test_a_ranks_prefixed_traceback_is_told_apart_from_its_hosts_other_lines():
    # torchrun writes a worker's uncaught error with its rank before every line.
    prefixed_rank = lines("algo-1", [f"[rank0]: {text}" for text in RANK_TRACEBACK])
    agent = lines("algo-1", SIGNAL_TRACEBACK)
    mixed = [*prefixed_rank[:2], *agent[:3], *prefixed_rank[2:], *agent[3:]]
    after_failure = ShutdownNoise(lambda: "failure")
    assert shown(after_failure, mixed) == prefixed_rank
    after_a_stop = ShutdownNoise(lambda: "requested")
    assert shown(after_a_stop, mixed) == []
