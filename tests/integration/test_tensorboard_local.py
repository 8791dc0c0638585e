"""TensorBoard logs of a local job (``tensorboard:``): a real 2-host DDP job (``smdist run``,
torchrun on every host) whose every rank writes an events file; each host's folder is kept in
the job's folder, and the job's closing lines say where and how to view them.

In namespaces of their own the hosts write ``/opt/ml/output/tensorboard`` itself, as in a
SageMaker container; sharing this machine they find their folder as ``LocalPath`` in
``tensorboardoutputconfig.json``, the file SageMaker writes for it.

The jobs are ``file_system_jobs``' (one per way of running hosts), which
test_file_system_channels reads for their channels.
"""

from __future__ import annotations

import json

import pytest
from file_system_jobs import GROUP, TENSORBOARD_URI, file_system_job, host_modes
from local_jobs import assert_nothing_left

# One worker runs this module and test_file_system_channels, so each job is made once (xdist).
pytestmark = [pytest.mark.integration, pytest.mark.torch, pytest.mark.xdist_group(GROUP)]


@pytest.mark.parametrize(
    "mode", host_modes("namespaces-literal-path", "sharing-this-machine-config-file")
)
def test_each_hosts_tensorboard_folder_is_kept_and_named_at_the_end(tmp_path_factory, mode):
    job = file_system_job(mode, tmp_path_factory)
    run = job.run
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
    assert f"SageMaker uploads it to {TENSORBOARD_URI} while the job runs" in run.output
    assert_nothing_left(job.folder)
