"""Users' own training scripts, written for other launchers and libraries, run unchanged.

``user_scripts/<style>/train.py`` are scripts smdist did not design for: strict argparse under
torchrun, a SageMaker-container script, PyTorch Lightning, Hugging Face accelerate, DeepSpeed
ZeRO-1, Keras under MultiWorkerMirroredStrategy and Horovod under mpirun. Each runs once
through ``smdist run``, under one strategy it fits and one topology (2 emulated hosts x 1
process or 1 host x 2 processes); together they use every launcher and both topologies, and the
strategies themselves run both topologies in test_local_backend. Every rank must finish with the
same weights, and the job's model.tar.gz must hold the file the script wrote.
"""

from __future__ import annotations

import importlib.util
import re
import textwrap
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml
from local_jobs import Run, assert_nothing_left, smdist_run, tar_names
from torch_exit import EXIT_ABORT, past_torch_exit_aborts

SCRIPTS = Path(__file__).resolve().parent / "user_scripts"
# What every script prints once it has trained: "user-script ... rank=R ... weights=<digest>"
# (TF: task=worker:R). Ranks share stdout unbuffered, so two reports can share a line.
_DONE = "user-script "
_RANK = re.compile(r"(?<![\w])(?:rank=|task=worker:)(\d+)")
_WEIGHTS = re.compile(r"weights=([0-9a-f]{16})")

pytestmark = pytest.mark.integration

# (strategy id, the job file's strategy, instance type, marks)
DDP_TORCHRUN = ("ddp-torchrun", {"kind": "pytorch_ddp", "launcher": "torchrun"}, "ml.c5.xlarge")
# torch_distributed runs only on GPU instances on SageMaker; locally it falls back to CPU.
DDP_TORCH_DISTRIBUTED = (
    "ddp-torch_distributed",
    {"kind": "pytorch_ddp", "launcher": "torch_distributed"},
    "ml.g5.xlarge",
)
MWMS = ("mwms", {"kind": "mwms"}, "ml.g5.xlarge")
HOROVOD = ("horovod", {"kind": "horovod", "framework": "pytorch"}, "ml.c5.xlarge")


@dataclass(frozen=True)
class Style:
    """One user script: where it is, what it needs, how it is run, what it leaves."""

    name: str
    strategy: tuple[str, dict[str, Any], str]
    topology: tuple[int, int]  # (hosts, processes per host)
    model_files: tuple[str, ...]
    hyperparameters: dict[str, Any] = field(default_factory=dict)
    libraries: tuple[str, ...] = ("torch",)
    marks: tuple[pytest.MarkDecorator, ...] = (pytest.mark.torch,)
    shows: str = ""  # what every rank's report must say (its hyperparameters arrived)
    one_worker_per_host: bool = False  # MultiWorkerMirroredStrategy
    train_channel: bool = False


STYLES = [
    Style(  # smdist's torchrun over 2 hosts runs users' scripts in test_emulated_hosts
        "torchrun_argparse",
        DDP_TORCHRUN,
        (1, 2),
        ("model.pt",),
        {"steps": 3, "batch-size": 4},
        shows="steps=3",
    ),
    Style(
        "sagemaker_style",
        DDP_TORCHRUN,
        (1, 2),
        ("model.pth", "hyperparameters.json"),
        {"epochs": 2, "lr": 0.2},
        shows="epochs=2",
        train_channel=True,
    ),
    Style(
        "lightning_ddp",
        DDP_TORCH_DISTRIBUTED,
        (2, 1),
        ("model.ckpt",),
        {"max_steps": 3},
        shows="steps=3",
        libraries=("torch", "lightning"),
    ),
    Style(
        "accelerate_torchrun",
        DDP_TORCHRUN,
        (1, 2),
        ("model.safetensors",),
        {"epochs": 1},
        libraries=("torch", "accelerate"),
    ),
    Style(
        "deepspeed_zero1",
        DDP_TORCH_DISTRIBUTED,
        (1, 2),
        ("model.pt",),
        {"steps": 3},
        shows="steps=3",
        libraries=("torch", "deepspeed"),
    ),
    Style(
        "keras_mwms",
        MWMS,
        (2, 1),
        ("1/saved_model.pb",),
        {"epochs": 1, "steps_per_epoch": 3},
        libraries=("tensorflow", "tf_keras"),
        marks=(pytest.mark.tf,),
        one_worker_per_host=True,
    ),
    Style(
        "horovod_mpi",
        HOROVOD,
        (2, 1),
        ("model.pt",),
        {"steps": 3},
        libraries=("torch", "horovod"),
        marks=(pytest.mark.torch, pytest.mark.horovod),
    ),
]


def _cases() -> list[Any]:
    cases = []
    for style in STYLES:
        strategy_id, strategy, instance_type = style.strategy
        hosts, per_host = style.topology
        cases.append(
            pytest.param(
                style,
                strategy,
                instance_type,
                hosts,
                per_host,
                marks=list(style.marks),
                id=f"{style.name}-{strategy_id}-{hosts}x{per_host}",
            )
        )
    return cases


def _require(libraries: tuple[str, ...]) -> None:
    missing = [name for name in libraries if importlib.util.find_spec(name) is None]
    if missing:
        pytest.skip(
            f"{', '.join(missing)} not installed (bash .ci/install-user-libs, "
            ".ci/install-tensorflow or .ci/install-horovod installs it)"
        )


def _write_job(style: Style, strategy: dict, instance_type: str, hosts: int, tmp: Path) -> Path:
    job: dict[str, Any] = {
        "name": f"user-{style.name.replace('_', '-')}",
        "strategy": strategy,
        "cluster": {"instance_type": instance_type, "instance_count": hosts},
        "code": {"source_dir": str(SCRIPTS / style.name), "entry_point": "train.py"},
        "hyperparameters": style.hyperparameters,
    }
    if style.train_channel:
        data = tmp / "data"
        data.mkdir()
        for part in range(2):  # rows of y = 3x + 1
            rows = [f"{x / 20:.3f},{3 * x / 20 + 1:.3f}" for x in range(part, 20, 2)]
            (data / f"part-{part}.csv").write_text("\n".join(rows) + "\n")
        job["inputs"] = {"train": data.as_uri()}
    path = tmp / "job.yaml"
    path.write_text(yaml.safe_dump(job, sort_keys=False))
    return path


def _reports(output: str) -> dict[int, tuple[str, str]]:
    """{rank: (its report line, its weights digest)} of the ranks that finished training."""
    found = {}
    for report in output.split(_DONE)[1:]:
        report = report.split("\n", 1)[0]
        rank, weights = _RANK.search(report), _WEIGHTS.search(report)
        if rank and weights:
            found[int(rank.group(1))] = (report, weights.group(1))
    return found


def _aborted_at_exit(run: Run, world: int) -> bool:
    """The job failed only because a rank aborted after the script had finished everywhere."""
    return (
        run.returncode != 0
        and len(_reports(run.output)) == world
        and EXIT_ABORT.search(run.output) is not None
    )


@pytest.mark.parametrize(("style", "strategy", "instance_type", "hosts", "per_host"), _cases())
def test_a_users_script_runs_unchanged(style, strategy, instance_type, hosts, per_host, tmp_path):
    _require(style.libraries)
    job = _write_job(style, strategy, instance_type, hosts, tmp_path)
    world = hosts if style.one_worker_per_host else hosts * per_host
    topology = ("--hosts", str(hosts), "--processes-per-host", str(per_host))
    run = past_torch_exit_aborts(
        lambda _: smdist_run(job, tmp_path, *topology, timeout=240),
        lambda run: _aborted_at_exit(run, world),
    )
    assert run.returncode == 0, run.output
    reports = _reports(run.output)
    assert sorted(reports) == list(range(world)), run.output
    digests = {rank: digest for rank, (_, digest) in reports.items()}
    assert len(set(digests.values())) == 1, f"replicas diverged: {digests}\n{run.output}"
    assert all(style.shows in line for line, _ in reports.values()), run.output
    names = tar_names(run.job_dir() / "output" / "model.tar.gz")
    for expected in style.model_files:
        assert expected in names or f"./{expected}" in names, textwrap.shorten(
            f"{expected} not in model.tar.gz: {names}", 2000
        )
    assert_nothing_left(tmp_path)
