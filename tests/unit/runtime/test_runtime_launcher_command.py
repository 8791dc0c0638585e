"""The torchrun launcher's argument handling and command line, without starting torch."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from pathlib import Path
from types import MappingProxyType

import pytest

from smdist.runtime import launcher
from smdist.runtime.environments import SageMakerEnvironment
from smdist.runtime.launcher import (
    LauncherArgs,
    LauncherArgumentError,
    build_torchrun_command,
    gpus_per_host,
    read_launcher_args,
    rendezvous_port,
    resolve_processes_per_host,
    resolve_training_script,
    run_forwarding_signals,
)
from smdist.runtime.torchrun_command import WHEN_READY, when_ready_prefix

REPO = Path(__file__).resolve().parents[3]


# --- the launcher's settings come from SMDIST_* variables; argv is the script's ----------------


def test_every_argument_reaches_the_script_untouched_and_in_order():
    argv = [
        "--epochs",
        "3",
        "--note",
        'it\'s a "quoted" value with spaces',
        "--layers",
        "['a', 'b']",
        "--smdist_training_script",  # a user's own flag of that name is theirs, not ours
        "x.py",
        "--flag",
    ]
    environ = {
        "SMDIST_TRAINING_SCRIPT": "pytorch_ddp.py",
        "SMDIST_PROCESSES_PER_HOST": "2",
        "SMDIST_MAX_RESTARTS": "1",
    }
    assert read_launcher_args(environ, argv) == LauncherArgs(
        training_script="pytorch_ddp.py", processes_per_host=2, max_restarts=1, script_args=argv
    )


def test_defaults_are_auto_processes_and_no_restarts():
    args = read_launcher_args({"SMDIST_TRAINING_SCRIPT": "train.py"}, [])
    assert (args.processes_per_host, args.max_restarts, args.script_args) == (None, 0, [])


@pytest.mark.parametrize(
    ("environ", "message"),
    [
        ({}, "SMDIST_TRAINING_SCRIPT is not set"),
        ({"SMDIST_TRAINING_SCRIPT": "  "}, "SMDIST_TRAINING_SCRIPT is not set"),
        (
            {"SMDIST_TRAINING_SCRIPT": "a.py", "SMDIST_PROCESSES_PER_HOST": "eight"},
            "SMDIST_PROCESSES_PER_HOST='eight' is not valid: expected 'auto'",
        ),
        (
            {"SMDIST_TRAINING_SCRIPT": "a.py", "SMDIST_PROCESSES_PER_HOST": "0"},
            "whole number >= 1",
        ),
        (
            {"SMDIST_TRAINING_SCRIPT": "a.py", "SMDIST_MAX_RESTARTS": "-1"},
            "SMDIST_MAX_RESTARTS='-1' is not valid",
        ),
    ],
)
def test_malformed_launcher_settings_are_explained(environ, message):
    with pytest.raises(LauncherArgumentError, match=message):
        read_launcher_args(environ, ["--epochs", "3"])


# --- processes, ports, script ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("requested", "gpus", "expected"), [(None, 8, 8), (None, 0, 1), (3, 8, 3), (2, 0, 2)]
)
def test_auto_means_one_process_per_gpu_and_one_on_cpu(requested, gpus, expected):
    assert resolve_processes_per_host(requested, gpus) == expected


def test_gpu_count_comes_from_sagemaker_before_the_driver():
    announced = SageMakerEnvironment(
        MappingProxyType(
            {"SM_HOSTS": '["algo-1"]', "SM_CURRENT_HOST": "algo-1", "SM_NUM_GPUS": "4"}
        )
    )
    unannounced = SageMakerEnvironment(
        MappingProxyType({"SM_HOSTS": '["algo-1"]', "SM_CURRENT_HOST": "algo-1"})
    )
    assert gpus_per_host(announced, count_devices=lambda: 99) == 4
    assert gpus_per_host(unannounced, count_devices=lambda: 2) == 2


@pytest.mark.parametrize(
    ("environ", "port"),
    [
        ({}, 7777),  # the container's MASTER_PORT
        ({"MASTER_PORT": "7777"}, 7777),
        ({"MASTER_PORT": "7777", "SMDIST_RDZV_PORT": "30001"}, 30001),
    ],
)
def test_rendezvous_port_precedence(environ, port):
    assert rendezvous_port(environ) == port


def test_malformed_rendezvous_port_names_the_variable():
    with pytest.raises(LauncherArgumentError, match="SMDIST_RDZV_PORT='99999' is not valid"):
        rendezvous_port({"SMDIST_RDZV_PORT": "99999"})


def test_script_is_found_in_the_first_directory_that_has_it(tmp_path):
    first, second = tmp_path / "cwd", tmp_path / "code"
    first.mkdir()
    second.mkdir()
    (second / "train.py").write_text("")
    assert resolve_training_script("train.py", [first, second]) == (second / "train.py").resolve()
    absolute = second / "train.py"
    assert resolve_training_script(str(absolute), [first]) == absolute.resolve()


def test_missing_script_lists_where_it_was_looked_for(tmp_path):
    with pytest.raises(LauncherArgumentError) as error:
        resolve_training_script("nope.py", [tmp_path])
    assert "SMDIST_TRAINING_SCRIPT='nope.py' was not found" in str(error.value)
    assert str(tmp_path / "nope.py") in str(error.value)


# --- the command -------------------------------------------------------------------------------


def command_for(node_rank: int, **overrides) -> list[str]:
    arguments = dict(
        python="/usr/bin/python3",
        num_hosts=2,
        processes_per_host=8,
        node_rank=node_rank,
        rdzv_host="algo-1",
        rdzv_port=29400,
        rdzv_id="job-1",
        max_restarts=2,
        script="/opt/ml/code/pytorch_ddp.py",
        script_args=["--epochs", "3", "--note", "a b"],
    )
    arguments.update(overrides)
    return build_torchrun_command(**arguments)


# What every host's command starts and ends with: torchrun, the sizes, the script and its args.
SECOND_HOST_HEAD = [
    "/usr/bin/python3",
    "-m",
    "torch.distributed.run",
    "--nnodes",
    "2",
    "--nproc_per_node",
    "8",
    "--node_rank",
    "1",
]
SCRIPT_AND_ARGS = ["/opt/ml/code/pytorch_ddp.py", "--epochs", "3", "--note", "a b"]


def test_torchrun_command_for_the_second_host():
    assert command_for(1, local_addr="algo-2") == [
        *SECOND_HOST_HEAD,
        "--rdzv_backend",
        "c10d",
        "--rdzv_endpoint",
        "algo-1:29400",
        "--rdzv_id",
        "job-1",
        "--rdzv_conf",
        "is_host=false",
        "--max_restarts",
        "2",
        "--local_addr",
        "algo-2",
        *SCRIPT_AND_ARGS,
    ]


def test_without_restarts_the_rendezvous_is_static_on_the_first_host():
    # Nothing to coordinate across hosts, so no c10d: its first joiner polls once a second.
    assert command_for(1, max_restarts=0) == [
        *SECOND_HOST_HEAD,
        "--master_addr",
        "algo-1",
        "--master_port",
        "29400",
        *SCRIPT_AND_ARGS,
    ]


def test_only_the_first_host_hosts_the_rendezvous_store():
    assert "is_host=true" in command_for(0)
    assert "is_host=false" in command_for(1)


def test_without_local_addr_the_option_is_left_out_for_older_torch():
    assert "--local_addr" not in command_for(0)


# --- main: configuration errors stop before anything starts --------------------------------------


def sagemaker_environ(**extra: str) -> dict[str, str]:
    environ = {"SM_HOSTS": '["127.0.0.1"]', "SM_CURRENT_HOST": "127.0.0.1", "SM_NUM_GPUS": "0"}
    environ.update(extra)
    return environ


def test_main_exits_2_when_the_training_script_is_missing(tmp_path, capsys):
    code = launcher.main(
        [], sagemaker_environ(SMDIST_TRAINING_SCRIPT="missing.py"), search_dirs=[tmp_path]
    )
    assert code == 2
    assert "missing.py' was not found" in capsys.readouterr().err


def test_main_exits_2_on_a_malformed_host_list(tmp_path, capsys):
    (tmp_path / "train.py").write_text("")
    code = launcher.main(
        [],
        sagemaker_environ(SM_HOSTS="algo-1", SMDIST_TRAINING_SCRIPT="train.py"),
        search_dirs=[tmp_path],
    )
    assert code == 2
    assert "SM_HOSTS='algo-1' is not valid" in capsys.readouterr().err


def test_main_exits_1_naming_hosts_that_never_resolve(tmp_path, capsys):
    (tmp_path / "train.py").write_text("")
    environ = sagemaker_environ(
        SM_HOSTS='["127.0.0.1","smdist-missing-host.invalid"]',
        SMDIST_HOSTS_TIMEOUT_S="0",
        SMDIST_TRAINING_SCRIPT="train.py",
    )
    code = launcher.main([], environ, search_dirs=[tmp_path])
    assert code == 1
    assert "smdist-missing-host.invalid" in capsys.readouterr().err


# --- running the child -------------------------------------------------------------------------


def test_child_exit_code_is_returned():
    assert run_forwarding_signals([sys.executable, "-c", "raise SystemExit(3)"], {}) == 3


def test_child_killed_by_a_signal_reports_128_plus_the_signal():
    command = [sys.executable, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGKILL)"]
    assert run_forwarding_signals(command, {}) == 128 + 9


def test_sigterm_to_the_launcher_reaches_the_child_and_reads_as_stopped(tmp_path):
    """A launcher process gets SIGTERM; its child records it and fails; the launcher says 143."""
    ready, got = tmp_path / "ready", tmp_path / "got"
    child = textwrap.dedent(
        f"""
        import pathlib, signal, sys, time
        def stop(signum, frame):
            pathlib.Path({str(got)!r}).write_text(signal.Signals(signum).name)
            sys.exit(7)
        signal.signal(signal.SIGTERM, stop)
        pathlib.Path({str(ready)!r}).write_text("ready")
        time.sleep(60)
        """
    )
    parent = textwrap.dedent(
        f"""
        import sys
        from smdist.runtime.launcher import run_forwarding_signals
        sys.exit(run_forwarding_signals([sys.executable, "-c", {child!r}], {{}}))
        """
    )
    process = subprocess.Popen([sys.executable, "-c", parent], cwd=REPO)
    try:
        for _ in range(300):
            if ready.exists() or process.poll() is not None:
                break
            time.sleep(0.05)
        assert ready.exists(), "the child never started"
        process.terminate()
        assert process.wait(timeout=30) == 143
        assert got.read_text() == "SIGTERM"
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=10)


def test_the_line_that_waits_for_the_first_hosts_store_keeps_torchruns_arguments():
    torchrun = command_for(1, max_restarts=0)
    waiting = [*when_ready_prefix(torchrun[0], "algo-1", 29400, seconds=60), *torchrun[3:]]
    assert waiting[:7] == [torchrun[0], str(WHEN_READY), "algo-1", "29400", "60", "--", "--nnodes"]
    assert WHEN_READY.is_file() and WHEN_READY.parent == Path(launcher.__file__).parent
