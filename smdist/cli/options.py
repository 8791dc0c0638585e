"""The typed arguments and options of the ``smdist`` commands, each with its ``--help`` text."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from smdist.version import __version__

# ---- shared --------------------------------------------------------------------------------
JobFile = Annotated[Path, typer.Argument(help="job spec (YAML)", show_default=False)]
JobName = Annotated[str, typer.Argument(help="training job name", show_default=False)]
RegionOption = Annotated[str | None, typer.Option(help="AWS region (default: AWS config)")]
PollOption = Annotated[float, typer.Option(help="seconds between status polls", hidden=True)]

# ---- run -----------------------------------------------------------------------------------
# run is always local; --backend is accepted so that `--backend local` reads as it does for
# status, logs and stop, and any other value is pointed to `smdist submit` (cli.local).
RunBackendOption = Annotated[
    str, typer.Option("--backend", help="local: emulated hosts here (SageMaker: smdist submit)")
]
# Accepted and ignored: run is always local. Hidden, but kept so that scripts and CI jobs
# written when --help still listed it keep working (README: "Running locally").
LocalFlag = Annotated[bool, typer.Option("--local", hidden=True)]
HostsOption = Annotated[
    int | None, typer.Option("--hosts", min=1, help="emulated hosts (default: instance_count)")
]
ProcessesPerHostOption = Annotated[
    int | None,
    typer.Option("--processes-per-host", min=1, help="default: the strategy's, capped here"),
]
AssignmentsOption = Annotated[
    list[str] | None,
    typer.Option(
        "--set",
        "-H",
        metavar="name=value",
        help="override a hyperparameter (repeatable)",
    ),
]
MaxRunOption = Annotated[
    float | None, typer.Option("--max-run", min=1, help="seconds (default: the spec's)")
]
StallTimeoutOption = Annotated[
    float,
    typer.Option(help="fail when no process prints for this many seconds (0: never)"),
]
GraceOption = Annotated[float, typer.Option(min=0.1, help="seconds from SIGTERM to SIGKILL")]
CpuFlag = Annotated[bool, typer.Option("--cpu", help="run on CPU even where GPUs exist")]
RunRootOption = Annotated[Path, typer.Option(help="where jobs, logs and checkpoints are kept")]
FreshFlag = Annotated[
    bool,
    typer.Option(
        "--fresh",
        help="start without the checkpoints earlier runs kept (they are moved aside, not "
        "deleted, once this job has written its own)",
    ),
]
NamespacesFlag = Annotated[
    bool | None,
    typer.Option(
        "--namespaces/--no-namespaces",
        help="each host in Linux namespaces of its own: /opt/ml at its real path, its own "
        "hostname, network and ports (default: where this machine can make them); "
        "--no-namespaces shares this machine's files and network",
        show_default=False,
    ),
]

# ---- submit --------------------------------------------------------------------------------
SubmitWaitFlag = Annotated[
    bool, typer.Option("--wait", help="wait for the job; exit 1 if it fails")
]
DryRunFlag = Annotated[
    bool, typer.Option("--dry-run", help="print the CreateTrainingJob request; call no AWS API")
]
SubmitBackendOption = Annotated[str, typer.Option(help="sagemaker or sagemaker-local")]
BucketOption = Annotated[str | None, typer.Option(help="S3 bucket for code (default: SDK's)")]
RoleOption = Annotated[str | None, typer.Option(help="IAM role ARN when the job file has none")]
LogsFlag = Annotated[bool, typer.Option(help="stream the job's logs while waiting")]
ShmSizeOption = Annotated[
    str | None,
    typer.Option(help="sagemaker-local: /dev/shm size of each container, e.g. 2gb"),
]

# ---- the others ----------------------------------------------------------------------------
DebugFlag = Annotated[
    bool, typer.Option("--debug", help="show an error's traceback (also: SMDIST_DEBUG=1)")
]


def _show_version(wanted: bool) -> None:
    if wanted:
        typer.echo(f"smdist {__version__}")
        raise typer.Exit()


# --version alone, as git, gh and kubectl: no short flag taken from commands to come
VersionFlag = Annotated[
    bool,
    typer.Option(
        "--version", callback=_show_version, is_eager=True, help="print smdist's version and exit"
    ),
]
PlanJsonFlag = Annotated[bool, typer.Option("--json", help="print the plan as JSON")]
HostsFlag = Annotated[
    bool, typer.Option("--hosts", help="show what each host runs in SageMaker's container")
]
HostsCountOption = Annotated[
    int, typer.Option(min=2, help="with --hosts: hosts shown, the first ones and the last")
]
FamilyOption = Annotated[str | None, typer.Option(help="only this family, e.g. p4d")]
JobsJsonFlag = Annotated[bool, typer.Option("--json", help="print the list as JSON")]
DescribeJsonFlag = Annotated[bool, typer.Option("--json", help="print DescribeTrainingJob")]
FollowFlag = Annotated[bool, typer.Option("--follow", "-f", help="until the job ends")]
StopWaitFlag = Annotated[bool, typer.Option("--wait", help="wait until it has stopped")]
