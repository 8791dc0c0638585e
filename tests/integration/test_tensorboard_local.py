"""TensorBoard logs of a local job (``tensorboard:``): a real 2-host DDP job (``smdist run``,
torch) whose every rank writes an events file; each host's folder is kept in the job's folder,
and the job's closing lines say where and how to view them.

In namespaces of their own the hosts write ``/opt/ml/output/tensorboard`` itself, as in a
SageMaker container; sharing this machine they find their folder as ``LocalPath`` in
``tensorboardoutputconfig.json``, the file SageMaker writes for it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from local_jobs import assert_nothing_left, smdist_run

from smdist.backends.local.hosts.namespaced.probe import namespace_support

pytestmark = [pytest.mark.integration, pytest.mark.torch]

SCRIPT = Path(__file__).resolve().parent / "user_scripts" / "file_system_channels"
NAMESPACES = namespace_support().mode is not None


def write_job(directory: Path, how: str) -> Path:
    data = directory / "data"
    data.mkdir()
    (data / "rows.txt").write_text("".join(f"{i} 1 2 3 {i + 6}\n" for i in range(8)))
    job = {
        "name": "tensorboard",
        "strategy": {"kind": "pytorch_ddp", "launcher": "torchrun"},
        "cluster": {"instance_type": "ml.c5.xlarge", "instance_count": 2},
        "code": {"source_dir": str(SCRIPT), "entry_point": "train.py"},
        "inputs": {"train": data.as_uri()},
        "hyperparameters": {"tensorboard": how},
        "tensorboard": {"s3_uri": "s3://my-bucket/tensorboard"},
    }
    path = directory / "job.yaml"
    path.write_text(yaml.safe_dump(job, sort_keys=False))
    return path


@pytest.mark.parametrize(
    ("mode", "how"),
    [
        pytest.param(
            "--namespaces", "literal", id="namespaces-literal-path",
            marks=pytest.mark.skipif(not NAMESPACES, reason=f"{namespace_support().problem}"),
        ),
        pytest.param("--no-namespaces", "config", id="sharing-this-machine-config-file"),
    ],
)  # fmt: skip
def test_each_hosts_tensorboard_folder_is_kept_and_named_at_the_end(tmp_path, mode, how):
    job = write_job(tmp_path, how)
    run = smdist_run(job, tmp_path, "--hosts", "2", "--processes-per-host", "1", mode)
    assert run.returncode == 0, run.output
    hosts = run.job_dir() / "hosts"
    folders = {name: hosts / name / "output" / "tensorboard" for name in ("algo-1", "algo-2")}
    for rank, (name, folder) in enumerate(sorted(folders.items())):
        assert [path.name for path in folder.iterdir()] == [f"events.out.tfevents.{rank}.{name}"]
        config = json.loads((hosts / name / "input" / "config" / "tensorboardoutputconfig.json")
                            .read_text())  # fmt: skip
        seen = "/opt/ml/output/tensorboard" if mode == "--namespaces" else str(folder)
        assert config == {"LocalPath": seen}
    closing = [line for line in run.output.splitlines() if "[upload] TensorBoard" in line]
    assert closing, run.output
    kept = f"TensorBoard logs of algo-1 {folders['algo-1']}, algo-2 {folders['algo-2']}"
    assert kept in closing[0], closing
    spec = ",".join(f"{name}:{folder}" for name, folder in sorted(folders.items()))
    assert closing[1].endswith(f"view them with tensorboard --logdir_spec {spec}")
    assert "SageMaker uploads it to s3://my-bucket/tensorboard while the job runs" in run.output
    assert_nothing_left(tmp_path)
