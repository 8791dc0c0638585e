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
# run supervises the job in this process; --backend is accepted so that `--backend local` reads
# as it does for status, logs and stop, and any other value is pointed to `smdist submit`.
RunBackendOption = Annotated[
    str, typer.Option("--backend", help="local: emulated hosts here (SageMaker: smdist submit)")
]
# Accepted and ignored: run is always local. Hidden, but kept so that scripts and CI jobs
# written when --help still listed it keep working (README: "Running locally").
LocalFlag = Annotated[bool, typer.Option("--local", hidden=True)]
AssignmentsOption = Annotated[
    list[str] | None,
    typer.Option(
        "--set",
        "-H",
        metavar="name=value",
        help="override a hyperparameter (repeatable)",
    ),
]
RunRootOption = Annotated[Path, typer.Option(help="where jobs, logs and checkpoints are kept")]

# ---- submit --------------------------------------------------------------------------------
SubmitWaitFlag = Annotated[
    bool, typer.Option("--wait", help="wait for the job; exit 1 if it fails")
]
DryRunFlag = Annotated[
    bool,
    typer.Option(
        "--dry-run",
        help="print what would be sent (the CreateTrainingJob request, the sbatch script); "
        "send nothing",
    ),
]
SubmitBackendOption = Annotated[
    str,
    typer.Option(
        help="where to send it: sagemaker, sagemaker-local, hyperpod-slurm, hyperpod-eks "
        "(smdist.backends)"
    ),
]
BucketOption = Annotated[str | None, typer.Option(help="S3 bucket for code (default: SDK's)")]
RoleOption = Annotated[str | None, typer.Option(help="IAM role ARN when the job file has none")]
LogsFlag = Annotated[bool, typer.Option(help="stream the job's logs while waiting")]

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

# ---- status, logs, stop, jobs ----------------------------------------------------------------
BackendOption = Annotated[
    str,
    typer.Option(
        help="auto: the job or study of that name kept on this machine under --root (or the "
        "job at that path) if there is one, else the SageMaker job; or a backend's name "
        "(smdist.backends: local, sagemaker, sagemaker-local, hyperpod-slurm, hyperpod-eks)"
    ),
]
JobsBackendOption = Annotated[
    str,
    typer.Option(
        help="whose jobs to list: local (under --root), sagemaker, sagemaker-local, "
        "hyperpod-slurm, hyperpod-eks"
    ),
]
RootOption = Annotated[Path, typer.Option(help="where local jobs are kept (smdist run --root)")]
LookupPollOption = Annotated[
    float | None, typer.Option("--poll", help="seconds between status polls", hidden=True)
]
TrainingJobOption = Annotated[
    str | None,
    typer.Option(
        "--job", help="a tuning job's trial (training job) to show; default: the best one"
    ),
]
