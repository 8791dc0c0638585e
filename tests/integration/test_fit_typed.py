"""``smdist.fit`` with typed objects runs real jobs to completion on the local backend.

The notebook's headline call builds the job from Python objects (``PyTorchDDP()``,
``Cluster(...)``, ``Code(...)``) rather than a file; these tests run it for both DDP launchers
and for Horovod, with smdist's ready scripts and with a user's strict-argparse script, and read
the packed model.
"""

from __future__ import annotations

import re
import tarfile
import textwrap
from pathlib import Path

import pytest
from torch_exit import EXIT_ABORT, past_torch_exit_aborts

import smdist
from smdist import Cluster, Code, Horovod, PyTorchDDP
from smdist.backends.base import JobStatus

pytestmark = [pytest.mark.integration, pytest.mark.torch]

# Two steps of the ready scripts: what these tests read is the job's outcome and its model.
SMALL = {"epochs": 1, "max_steps": 2, "samples": 64, "batch_size": 16, "log_every": 1}
# The typed Cluster asks for 2 hosts; the jobs run 1 host x 2 processes (the option's, as a
# notebook's `options` give its layout): 2 ranks, one launcher each. Hosts are not what these
# tests are about: each launcher's multi-host run is test_local_backend's
# (test_every_strategy_runs_end_to_end, on 2 hosts x 1).
LAYOUT = {"hosts": 1, "processes_per_host": 2}

# A user's own script with strict argparse: what it proves is the arguments and environment
# both launchers give a script and the model it leaves, so it needs no framework (plain Python
# starts in a fraction of torch's import; the ready script's DDP is the headline call's).
STRICT_SCRIPT = """
    import argparse, json, os

    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, required=True)
    args = parser.parse_args()  # strict: any flag smdist added would end the job here
    rank = int(os.environ["RANK"])
    if rank == 0:
        model = os.path.join(os.environ["SM_MODEL_DIR"], "m.json")
        with open(model, "w") as handle:
            json.dump({"steps": args.steps, "world_size": int(os.environ["WORLD_SIZE"])}, handle)
    print(f"strict-script finished rank={rank}", flush=True)
"""
# What each rank of the ready script prints last: its checksum line.
READY_FINISHED = re.compile(r"rank=(\d+) weights_checksum=")


def model_files(job) -> list[str]:
    path = Path(job.model_artifacts.removeprefix("file://"))
    with tarfile.open(path) as tar:
        return tar.getnames()


def run(tmp_path: Path, finished: re.Pattern[str] | None = None, **fields):
    """The job, run again only when a rank aborted at exit after every rank had printed its
    ``finished`` line (torch 2.13's gloo abort, local_jobs.past_torch_exit_aborts)."""
    options = {"root": str(tmp_path / ".smdist"), **LAYOUT, "grace": 5}

    def aborted_after_finishing(job) -> bool:
        text = "\n".join(job.logs())
        return (
            finished is not None
            and job.status == JobStatus.FAILED
            and len(set(finished.findall(text))) == 2  # both ranks of these 2-rank jobs
            and EXIT_ABORT.search(f"{job.failure_reason}\n{text}") is not None
        )

    return past_torch_exit_aborts(
        lambda _: smdist.fit(logs=False, options=options, **fields), aborted_after_finishing
    )


def test_the_headline_call_trains_with_the_ready_script(tmp_path):
    job = run(
        tmp_path,
        READY_FINISHED,
        name="x",
        strategy=PyTorchDDP(),
        cluster=Cluster(instance_type="ml.g5.xlarge", instance_count=2),
        hyperparameters=SMALL,
    )
    assert job.status == JobStatus.COMPLETED, job.failure_reason
    assert model_files(job) == ["model.pt"]


@pytest.mark.parametrize("launcher", ["torchrun", "torch_distributed"])
def test_a_strict_user_script_runs_under_both_launchers(launcher, tmp_path):
    source = tmp_path / "src"
    source.mkdir()
    (source / "train.py").write_text(textwrap.dedent(STRICT_SCRIPT))
    job = run(
        tmp_path,
        name="typed",
        strategy=PyTorchDDP(launcher=launcher),
        cluster=Cluster(instance_type="ml.g5.xlarge", instance_count=2),
        code=Code(source_dir=str(source), entry_point="train.py"),
        hyperparameters={"steps": 2},
    )
    assert job.status == JobStatus.COMPLETED, job.failure_reason
    assert "m.json" in [Path(name).name for name in model_files(job)]
    logs = "\n".join(job.logs())
    assert "strict-script finished rank=0" in logs and "strict-script finished rank=1" in logs


@pytest.mark.horovod
def test_horovod_built_in_python_trains_under_mpirun(tmp_path):
    pytest.importorskip("horovod")
    job = run(
        tmp_path,
        name="hvd",
        strategy=Horovod(),
        cluster=Cluster(instance_type="ml.g5.xlarge", instance_count=2),
        code={"framework_version": "2.0.0", "py_version": "py310"},  # a dict beside objects
        hyperparameters=SMALL,
    )
    assert job.status == JobStatus.COMPLETED, job.failure_reason
    assert model_files(job)
