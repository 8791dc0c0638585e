"""smdist's per-host command builder against the SageMaker training toolkit's own runners.

``tests/fixtures/toolkit_commands/recorded.json`` holds what sagemaker-training's MPIRunner,
SMDataParallelRunner, TorchDistributedRunner and ProcessRunner build for the launches in
``cases.json`` (recorded by ``record.py`` with the toolkit's own methods). The builder must give
the same argv, token for token, for the same launch and image. With SMDIST_TOOLKIT_PYTHON
naming a Python that has sagemaker-training, the recording is made again and compared too.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from smdist.catalog import instance
from smdist.contract.commands import (
    GETHOSTNAME_SHIM,
    HostArguments,
    Image,
    Launch,
    host_command,
    mpi_command,
    parse_custom_mpi_options,
)

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "toolkit_commands"
CASES = json.loads((FIXTURES / "cases.json").read_text())["cases"]
RECORDED = json.loads((FIXTURES / "recorded.json").read_text())
LAUNCH_FIELDS = (
    "launcher", "hosts", "processes_per_host", "instance_type", "efa", "efa_rdma",
    "custom_mpi_options", "mp_parameters",
)  # fmt: skip


def launch_of(case: dict) -> Launch:
    return Launch(**{key: case[key] for key in LAUNCH_FIELDS if key in case})


def image_of(case: dict) -> Image:
    return Image(
        python="python",
        hostname_shim=GETHOSTNAME_SHIM,
        smddprun=case.get("smddprun", False),
        smddpmprun=case.get("smddpmprun", False),
        torch_version=case.get("torch_version", ""),
    )


def exported_names(case: dict) -> list[str]:
    return ["SM_HOSTS", "SM_CURRENT_HOST", "SM_USER_ARGS", "SM_TRAINING_ENV"]


def built(name: str, program: str) -> list[list[str]]:
    case = CASES[name]
    launch, image = launch_of(case), image_of(case)
    arguments = RECORDED["arguments"]
    environ = {
        key: "x" for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN")
    }
    commands = []
    for index in range(len(launch.hosts)):
        command = host_command(
            launch,
            index,
            image,
            program,
            HostArguments(arguments, arguments),
            exported_names=exported_names(case),
            environ=environ if case.get("credentials") else {},
        )
        if command.argv is not None:
            commands.append(command.argv)
    if case["launcher"] == "program":
        commands = commands[:1]  # the ProcessRunner's command is the same on every host
    return commands


PAIRS = [(name, program) for name, programs in RECORDED["commands"].items() for program in programs]


@pytest.mark.parametrize(("name", "program"), PAIRS, ids=[f"{n}-{p}" for n, p in PAIRS])
def test_the_builder_gives_the_toolkits_command_token_for_token(name, program):
    assert built(name, program) == RECORDED["commands"][name][program]


def test_every_case_is_recorded():
    assert sorted(RECORDED["commands"]) == sorted(CASES)


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_catalogue_agrees_with_the_toolkits_efa_lists_for_the_recorded_types(name):
    case = CASES[name]
    if "efa" not in case:
        return
    info = instance(case["instance_type"])
    assert info is not None
    assert (info.efa, bool(info.efa_rdma)) == (case["efa"], case["efa_rdma"])


def test_credentials_are_exported_by_name_never_by_value():
    case = CASES["horovod-g5-3x4-credentials"]
    argv = built("horovod-g5-3x4-credentials", "train.py")[0]
    assert "AWS_SECRET_ACCESS_KEY" in argv
    assert not any("=x" in token and token.startswith("AWS_") for token in argv)
    assert case["credentials"]


def test_an_image_without_the_shim_or_mpi4py_gets_neither():
    launch = launch_of(CASES["horovod-cpu-2x1"])
    argv = mpi_command(launch, Image(hostname_shim=None, mpi4py=False), "train.py", []).argv()
    assert not any(token.startswith("LD_PRELOAD") for token in argv)
    assert argv[-3:] == ["python", "--", "train.py"]


@pytest.mark.parametrize(
    ("options", "nccl_debug", "others"),
    [
        ("", "INFO", []),
        ("--NCCL_DEBUG WARN -x A=1", "WARN", ["-x", "A=1"]),
        ("--NCCL_DEBUG=TRACE --mca pml ob1", "TRACE", ["--mca", "pml", "ob1"]),
        ("--NCCL_DEB VERSION", "VERSION", []),  # argparse's prefix matching, as the runners
    ],
)
def test_custom_options_are_split_as_the_runners_split_them(options, nccl_debug, others):
    assert parse_custom_mpi_options(options) == (nccl_debug, others)


def test_a_custom_option_the_runners_would_reject_is_a_value_error():
    with pytest.raises(ValueError, match="NCCL_DEBUG"):
        parse_custom_mpi_options("--NCCL_DEBUG")


@pytest.mark.skipif(
    not os.environ.get("SMDIST_TOOLKIT_PYTHON"),
    reason="SMDIST_TOOLKIT_PYTHON names no Python with sagemaker-training (pip install "
    "sagemaker-training) to record the toolkit's commands again",
)
def test_the_recording_is_what_the_installed_toolkit_builds_today():
    result = subprocess.run(
        [os.environ["SMDIST_TOOLKIT_PYTHON"], str(FIXTURES / "record.py")],
        capture_output=True,
        text=True,
        check=True,
    )
    assert json.loads(result.stdout)["commands"] == RECORDED["commands"], sys.version
