"""The local backend end to end: every strategy through ``smdist run``, scripts written for
plain torchrun and for SageMaker running unchanged, the Python API, inputs and outputs.

Every run is a real ``smdist`` process (or ``smdist.fit``) with real frameworks, emulated hosts
and a timeout; after each one the process table is searched for anything the job left behind.
"""

from __future__ import annotations

import json
import re
import tarfile
import textwrap
from pathlib import Path

import pytest
from local_jobs import (
    EXAMPLES,
    Run,
    assert_a_sound_finish,
    assert_nothing_left,
    checksums,
    free_port,
    smdist_run,
    tar_names,
)
from torch_exit import EXIT_ABORT, past_torch_exit_aborts

pytestmark = pytest.mark.integration


# ---- every strategy's ready script end to end, each launcher on both topologies -------------
TORCH = [pytest.mark.torch]
# Every strategy's ready script runs end to end on the local backend with run_end_to_end's
# checks (every rank ends with the same weights, a model, nothing left), and each of the local
# backend's launchers runs on 2 hosts x 1 and on 1 host x 2:
# - smdist's torchrun launcher (a plain process per host): DDP 2x1 here, 1x2 through
#   `smdist.fit` in test_fit_runs_locally_by_default_and_returns_a_finished_job;
# - SageMaker's torch_distributed (torchrun on every host): DDP 2x1 and SMP v2 1x2 here;
# - one mpirun across the hosts (Horovod, SMP v1): Horovod-PyTorch and SMP v1 2x1 in their
#   notebooks (test_notebooks, through `smdist.fit`, with these checks); through `smdist run`,
#   Horovod-PyTorch 1x2 and Horovod-TensorFlow 2x1 in
#   test_horovod_under_sagemakers_mpirun_trains_and_saves_once (Horovod-TensorFlow's 1x2 is
#   horovodrun's, in test_horovod_entry_points) and SMP v1 2 hosts x 2 in
#   test_sagemaker_library_scripts;
# - smddp's mpirun: SDDP 2x1 in its notebook, 2 hosts x 2 processes through `smdist run` in
#   test_sagemaker_library_scripts (test_smddp_*);
# - MultiWorkerMirrored (one worker per host, whatever was asked): 1x2 here, 2x1 in its
#   notebook.
# The notebooks' runs are the same jobs through `smdist.fit` that `smdist run` of the examples
# would start (the same launch, hosts and script): running both cost the suite four jobs.
# SMP v2 on 2 hosts (sharded within a host, replicated across them) is in
# notebooks/08_smp_v2.ipynb and on 2 hosts x 2 in test_sagemaker_library_scripts.
EVERY_STRATEGY = [
    pytest.param("pytorch_ddp", 2, 1, marks=TORCH, id="ddp-torchrun-launcher-2hostsx1"),
    pytest.param("pytorch_ddp_torch_distributed", 2, 1, marks=TORCH,
                 id="ddp-torch_distributed-2hostsx1"),
    pytest.param("smp_v2", 1, 2, marks=TORCH, id="smp-v2-1hostx2"),
    pytest.param("mwms", 1, 2, marks=pytest.mark.tf, id="mwms-1hostx2"),
]  # fmt: skip
# The smallest training that still logs metric lines: two steps, a line after each.
TINY = {"epochs": 1, "max_steps": 2, "samples": 64, "log_every": 1, "batch_size": 16}
TINY_ARGS = [arg for name, value in TINY.items() for arg in ("-H", f"{name}={value}")]
_METRICS = re.compile(r"\[metrics\] step=(\d+) .*?loss=([-+\d.e]+)")


def run_end_to_end(example: str, tmp_path: Path, hosts: int, per_host: int, *args: str) -> Run:
    """``smdist run`` of an example, again under torch_exit's rule when a rank aborted at exit
    after every rank had finished; asserts what every strategy's job must show."""
    # MultiWorkerMirroredStrategy runs one worker per host, whatever was asked.
    world = hosts * (1 if example == "mwms" else per_host)
    run = past_torch_exit_aborts(
        lambda _: smdist_run(
            EXAMPLES / f"{example}.yaml",
            tmp_path,
            "--hosts",
            str(hosts),
            "--processes-per-host",
            str(per_host),
            *args,
            env={"CI": ""},  # not CI: only the output not being a terminal keeps the status off
        ),  # fmt: skip
        lambda run: (
            run.returncode != 0
            and sorted(checksums(run.output)) == list(range(world))  # every rank finished
            and EXIT_ABORT.search(run.output) is not None
        ),
    )
    assert run.returncode == 0, run.output
    assert "[metrics] step=" in run.output
    assert f"algo-{hosts} " in run.output  # lines are labelled by their host
    # Written to a file (as to a pipe): the plain lines, no status line, no control sequences.
    assert "samples/s" not in run.output and "running 00:" not in run.output
    written = b"".join(log.read_bytes() for log in tmp_path.glob("smdist-run-*.log"))
    assert b"\x1b" not in written and b"\r" not in written  # as written: read_text drops \r
    assert_a_sound_finish(run.output, world, run.job_dir(), tmp_path)
    return run


@pytest.mark.parametrize(("example", "hosts", "per_host"), EVERY_STRATEGY)
def test_every_strategy_runs_end_to_end(example, hosts, per_host, tmp_path):
    run_end_to_end(example, tmp_path, hosts, per_host, *TINY_ARGS)


HOROVOD = [
    pytest.param(
        "horovod_pytorch", 1, 2, "model.pt", marks=[*TORCH, pytest.mark.horovod], id="torch"
    ),  # fmt: skip
    pytest.param(
        "horovod_tensorflow",
        2,
        1,
        "1/saved_model.pb",
        marks=[pytest.mark.tf, pytest.mark.horovod],
        id="tf",
    ),  # fmt: skip
]
# 8 steps of a global batch of 32, a metric line every 2: the loss falls within them.
HOROVOD_TRAINING = {"epochs": 1, "samples": 256, "batch_size": 16, "learning_rate": 0.05,
                    "log_every": 2}  # fmt: skip


@pytest.mark.parametrize(("example", "hosts", "per_host", "model_file"), HOROVOD)
def test_horovod_under_sagemakers_mpirun_trains_and_saves_once(
    example, hosts, per_host, model_file, tmp_path
):
    """SageMaker launches a Horovod job with one mpirun across its hosts (here the PyTorch
    example on one host with two ranks, the TensorFlow one on two hosts with one each): the
    ready script lowers its loss, its ranks agree and the model is saved once. Also these
    examples' end-to-end runs through `smdist run` (run_end_to_end's checks): Horovod-PyTorch's
    on 2 hosts x 1 is notebooks/03_horovod.ipynb's (test_notebooks); Horovod-TensorFlow's two
    ranks on one host run under horovodrun in test_horovod_entry_points."""
    training = [a for name, value in HOROVOD_TRAINING.items() for a in ("-H", f"{name}={value}")]
    run = run_end_to_end(example, tmp_path, hosts, per_host, *training)
    assert f"2 processes on {hosts} host(s), MPI" in run.output
    metrics = [(int(step), float(loss)) for step, loss in _METRICS.findall(run.output)]
    assert metrics and metrics[-1][0] == HOROVOD_TRAINING["samples"] // 32, run.output
    assert metrics[-1][1] < metrics[0][1], metrics
    assert run.output.count("model saved to") == 1, "the model must be saved by one rank only"
    assert model_file in tar_names(run.job_dir() / "output" / "model.tar.gz")


# ---- scripts written for SageMaker or for torchrun run unchanged ----------------------------
SAGEMAKER_SCRIPT = '''
    """Written for SageMaker: SM_* variables, /opt/ml paths, hosts by name, argparse flags."""
    import argparse, json, os, socket, sys, time
    from pathlib import Path

    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int)
    parser.add_argument("--use_amp")
    parser.add_argument("--layers")
    parser.add_argument("--opts")
    parser.add_argument("--name")
    args, _ = parser.parse_known_args()
    hosts = json.loads(os.environ["SM_HOSTS"])
    me = os.environ["SM_CURRENT_HOST"]
    channel = Path(os.environ["SM_CHANNEL_TRAIN"])
    mine = {
        "host": me,
        "files": sorted(p.name for p in channel.iterdir()),
        "argv": sys.argv[1:],
        "hp_layers": os.environ["SM_HP_LAYERS"],
        "hps": json.loads(os.environ["SM_HPS"]),
        "args": vars(args),
    }
    if me == hosts[0]:
        server = socket.create_server((hosts[0], args.port))
        server.settimeout(60)
        reports = [mine]
        for _ in hosts[1:]:
            connection, _ = server.accept()
            reports.append(json.loads(connection.makefile().readline()))
        out = Path(os.environ["SM_OUTPUT_DATA_DIR"]) / "reports.json"
        out.write_text(json.dumps(reports))
        (Path(os.environ["SM_MODEL_DIR"]) / "model.txt").write_text("trained")
    else:
        for _ in range(100):
            try:
                connection = socket.create_connection((hosts[0], args.port), timeout=5)
                break
            except OSError:
                time.sleep(0.2)
        connection.sendall((json.dumps(mine) + "\\n").encode())
    print(f"{me} done", flush=True)
'''


@pytest.mark.torch
def test_a_script_written_for_sagemaker_runs_unchanged(tmp_path):
    source = tmp_path / "src"
    source.mkdir()
    (source / "train.py").write_text(textwrap.dedent(SAGEMAKER_SCRIPT))
    data = tmp_path / "data"
    data.mkdir()
    for index in range(5):
        (data / f"part-{index}.csv").write_text(f"{index}\n")
    job = tmp_path / "job.yaml"
    job.write_text(
        textwrap.dedent(
            f"""
            name: sagemaker-script
            strategy: {{kind: pytorch_ddp, processes_per_host: 1}}
            cluster: {{instance_type: ml.c5.xlarge, instance_count: 2}}
            code: {{source_dir: src, entry_point: train.py}}
            inputs:
              train: {{uri: "file://{data}", distribution: ShardedByS3Key}}
            hyperparameters:
              port: {free_port()}
              use_amp: true
              layers: [64, 32]
              opts: {{b: 2, a: x}}
              name: run one
            """
        )
    )
    run = smdist_run(job, tmp_path)
    assert run.returncode == 0, run.output
    output = run.job_dir() / "output" / "output.tar.gz"
    with tarfile.open(output) as tar:
        reports = {r["host"]: r for r in json.load(tar.extractfile("reports.json"))}
    assert sorted(reports) == ["algo-1", "algo-2"]
    # ShardedByS3Key: each host gets its own share, together all of them.
    files = [reports[h]["files"] for h in ("algo-1", "algo-2")]
    assert not set(files[0]) & set(files[1])
    assert sorted(files[0] + files[1]) == [f"part-{i}.csv" for i in range(5)]
    # Delivered as the container delivers them: str() of the JSON-decoded value.
    report = reports["algo-2"]
    assert report["args"]["use_amp"] == "True"
    assert report["args"]["layers"] == "[64, 32]"
    assert report["args"]["opts"] == "a=x,b=2"
    assert report["args"]["name"] == "run one"
    assert report["hp_layers"] == "[64,32]"
    assert report["hps"]["opts"] == {"a": "x", "b": 2}
    assert "trained" in (run.job_dir() / "hosts" / "algo-1" / "model" / "model.txt").read_text()
    assert_nothing_left(tmp_path)


TORCHRUN_SCRIPT = """
    import os
    import torch
    import torch.distributed as dist

    dist.init_process_group("gloo")
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    assert dist.get_rank() == rank and dist.get_world_size() == world
    total = torch.tensor([float(rank + 1)])
    dist.all_reduce(total)
    print(f"torchrun-script rank={rank} local_rank={os.environ['LOCAL_RANK']} "
          f"world={world} sum={int(total.item())}", flush=True)
    dist.destroy_process_group()
"""


@pytest.mark.torch
def test_a_script_written_for_torchrun_runs_unchanged_and_jobs_do_not_collide(tmp_path):
    import smdist
    from smdist.backends import JobStatus

    source = tmp_path / "src"
    source.mkdir()
    (source / "train.py").write_text(textwrap.dedent(TORCHRUN_SCRIPT))
    common = {"code": {"source_dir": str(source), "entry_point": "train.py"}}
    launcher_mode = smdist.JobSpec.from_dict(
        {
            "name": "torchrun-script",
            "strategy": {"kind": "pytorch_ddp", "processes_per_host": 1},
            "cluster": {"instance_type": "ml.c5.xlarge", "instance_count": 2},
            **common,
        }
    )
    sagemaker_mode = smdist.JobSpec.from_dict(
        {
            "name": "torchrun-script-td",
            "strategy": {"kind": "pytorch_ddp", "launcher": "torch_distributed"},
            "cluster": {"instance_type": "ml.g5.12xlarge", "instance_count": 1},
            **common,
        }
    )
    root = tmp_path / ".smdist"
    # Both at once: each job picks its own free ports.
    jobs = [
        smdist.fit(launcher_mode, wait=False, options={"root": root}),
        smdist.fit(sagemaker_mode, wait=False, options={"root": root, "processes_per_host": 2}),
    ]
    for job in jobs:
        assert job.wait(timeout=300) is JobStatus.COMPLETED, "\n".join(job.logs())
        # Two ranks share their host's output: one's report may land on the other's line.
        text = "\n".join(job.logs())
        reports = re.findall(r"torchrun-script rank=(\d) local_rank=\d world=(\d) sum=(\d)", text)
        assert sorted(reports) == [("0", "2", "3"), ("1", "2", "3")], text
    assert_nothing_left(tmp_path)


# ---- the Python API -------------------------------------------------------------------------
@pytest.mark.smoke
@pytest.mark.torch
def test_fit_runs_locally_by_default_and_returns_a_finished_job(tmp_path, capsys):
    """Also DDP's torchrun launcher end to end on one host with two processes (see
    test_every_strategy_runs_end_to_end)."""
    import smdist
    from smdist.backends import JobStatus

    spec = smdist.load(EXAMPLES / "pytorch_ddp.yaml")
    spec = spec.model_copy(
        update={"hyperparameters": TINY, "output_path": (tmp_path / "artifacts").as_uri()}
    )
    options = {"root": tmp_path / ".smdist", "hosts": 1, "processes_per_host": 2}
    job = past_torch_exit_aborts(
        lambda _: smdist.fit(spec, options=options),
        lambda job: (
            job.status is not JobStatus.COMPLETED
            and sorted(checksums("\n".join(job.logs()))) == [0, 1]  # every rank finished
            and EXIT_ABORT.search("\n".join(job.logs())) is not None
        ),
    )
    assert job.backend == "local"
    assert job.status is JobStatus.COMPLETED, job.failure_reason
    assert job.failure_reason is None
    # output_path file://: <output_path>/<job name>/output/model.tar.gz, as SageMaker lays it out.
    expected = tmp_path / "artifacts" / job.name / "output" / "model.tar.gz"
    assert job.model_artifacts == expected.as_uri()
    assert "model.pt" in tar_names(expected)
    lines = list(job.logs())
    assert any(line.startswith("algo-1") and "[metrics] step=" in line for line in lines)
    found = checksums("\n".join(lines))
    assert sorted(found) == [0, 1] and len(set(found.values())) == 1, found
    record = json.loads((job.job_dir / "job.json").read_text())
    assert (record["status"], record["model_artifacts"]) == ("Completed", job.model_artifacts)
    assert "[metrics]" in capsys.readouterr().out  # wait(logs=True) showed the live stream
    assert_nothing_left(tmp_path)


@pytest.mark.torch
def test_s3_inputs_are_downloaded_with_boto3(tmp_path, monkeypatch):
    moto = pytest.importorskip("moto")
    import boto3

    import smdist

    for name, value in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-west-2",
    }.items():
        monkeypatch.setenv(name, value)
    source = tmp_path / "src"
    source.mkdir()
    (source / "train.py").write_text(
        "import os, pathlib\n"
        "files = sorted(p.name for p in pathlib.Path(os.environ['SM_CHANNEL_TRAIN']).rglob('*'))\n"
        "print('channel files:', ','.join(files), flush=True)\n"
    )
    with moto.mock_aws():
        s3 = boto3.client("s3", region_name="us-west-2")
        s3.create_bucket(
            Bucket="data-bucket", CreateBucketConfiguration={"LocationConstraint": "us-west-2"}
        )
        for key in ("train/a.csv", "train/sub/b.csv", "other/c.csv"):
            s3.put_object(Bucket="data-bucket", Key=key, Body=b"1\n")
        job = smdist.fit(
            name="s3-input",
            strategy={"kind": "pytorch_ddp", "processes_per_host": 1},
            cluster={"instance_type": "ml.c5.xlarge", "instance_count": 1},
            code={"source_dir": str(source), "entry_point": "train.py"},
            inputs={"train": "s3://data-bucket/train"},
            options={"root": tmp_path / ".smdist"},
            logs=False,
        )
    assert job.status.value == "Completed", "\n".join(job.logs())
    assert any("channel files: a.csv,b.csv,sub" in line for line in job.logs())


@pytest.mark.smoke
def test_an_invalid_override_exits_2(tmp_path):
    run = smdist_run(EXAMPLES / "pytorch_ddp.yaml", tmp_path, "--set", "epochs", timeout=120)
    assert run.returncode == 2, run.output
    assert "name=value" in run.output
