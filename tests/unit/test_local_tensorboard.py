"""A local job's TensorBoard logs: each host's folder made and named in its
``tensorboardoutputconfig.json`` (as its processes see it), and the closing lines saying
where the hosts' logs are kept and how to view them."""

from __future__ import annotations

import json
from pathlib import Path

from smdist.backends.local.data.tensorboard import (
    CONFIG_FILE,
    kept_tensorboard,
    prepare_tensorboard,
)
from smdist.backends.local.hosts.folders import EmulatedHost
from smdist.spec.job import JobSpec

OPT_ML = Path("/opt/ml")


def spec(**tensorboard: str) -> JobSpec:
    return JobSpec.model_validate(
        {
            "name": "tb",
            "strategy": {"kind": "pytorch_ddp"},
            "cluster": {"instance_type": "ml.c5.xlarge", "instance_count": 2},
            "tensorboard": tensorboard,
        }
    )


def hosts(base: Path, inside: Path | None = None) -> list[EmulatedHost]:
    made = [
        EmulatedHost(f"algo-{i + 1}", i, "127.0.0.1", base / f"algo-{i + 1}", inside=inside)
        for i in range(2)
    ]
    for host in made:
        host.create([])
    return made


def config(host: EmulatedHost) -> dict:
    return json.loads((host.config_dir / CONFIG_FILE).read_text())


def test_hosts_in_namespaces_are_told_the_literal_path_and_get_their_own_folder(tmp_path):
    made = hosts(tmp_path, inside=OPT_ML)
    lines = prepare_tensorboard(spec(), made)
    for host in made:
        assert config(host) == {"LocalPath": "/opt/ml/output/tensorboard"}
        assert (host.base / "output" / "tensorboard").is_dir()
    assert lines == [
        f"TensorBoard: each host's /opt/ml/output/tensorboard is kept in "
        f"{tmp_path / '<host>' / 'output' / 'tensorboard'} (SageMaker uploads it to "
        "s3://<bucket>/<job>/tensorboard while the job runs)"
    ]


def test_hosts_sharing_this_machine_are_told_their_own_folder(tmp_path):
    made = hosts(tmp_path)
    lines = prepare_tensorboard(spec(local_path="/opt/ml/tb", s3_uri="s3://bkt/tb"), made)
    for host in made:
        assert config(host) == {"LocalPath": str(host.base / "tb")}
    assert "s3://bkt/tb" in lines[0]
    assert "$SM_INPUT_CONFIG_DIR/tensorboardoutputconfig.json" in lines[1]


def test_a_path_outside_opt_ml_is_named_as_it_is_and_not_kept(tmp_path):
    made = hosts(tmp_path, inside=OPT_ML)
    (line,) = prepare_tensorboard(spec(local_path="/logs/tb"), made)
    assert "outside /opt/ml" in line and "not kept" in line
    assert config(made[0]) == {"LocalPath": "/logs/tb"}
    assert kept_tensorboard(made) == []


def test_the_closing_lines_name_every_host_that_wrote_logs_and_how_to_view_them(tmp_path):
    made = hosts(tmp_path, inside=OPT_ML)
    prepare_tensorboard(spec(), made)
    assert kept_tensorboard(made) == [
        f"TensorBoard: no host wrote to its folder ({made[0].base / 'output' / 'tensorboard'}, ...)"
    ]
    folders = [host.base / "output" / "tensorboard" for host in made]
    for folder in folders:
        (folder / "events.out.tfevents.1").write_text("event")
    logs, view = kept_tensorboard(made)
    assert logs == f"TensorBoard logs of algo-1 {folders[0]}, algo-2 {folders[1]}"
    assert view == (
        f"TensorBoard: view them with tensorboard --logdir_spec algo-1:{folders[0]},"
        f"algo-2:{folders[1]}"
    )


def test_a_job_without_tensorboard_says_nothing_of_it(tmp_path):
    made = hosts(tmp_path)
    assert prepare_tensorboard(spec().model_copy(update={"tensorboard": None}), made) == []
    assert kept_tensorboard(made) == []
