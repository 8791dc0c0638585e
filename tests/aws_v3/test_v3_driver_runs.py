"""smdist's SDK v3 driver trains what v3 cannot launch, as SageMaker would run it.

The ``sagemaker`` backend (SDK v3 installed) submits a user's own script to the moto server:
the code and ``sm_drivers`` channels are uploaded, the request captured. The emulated container
(``emulated_container``) lays both out on 2 hosts and runs the request's command verbatim:
v3's ``sm_train.sh`` starts ``smdist_driver.py``, which gives the script what the training
toolkit would (TF_CONFIG for MultiWorkerMirrored; one mpirun across the hosts for Horovod).
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from smdist.backends import sagemaker as backend
from smdist.backends.local.hosts.namespaced.probe import SYSTEM_PATH
from smdist.planning.plan import plan
from smdist.spec.job import JobSpec

from .conftest import BUCKET, ROLE
from .emulated_container import IMAGE_ENV, run_request, run_request_past_torch_exit_aborts
from .sdk_once import one_botocore_loader, sdk_config_schema_checked_once  # noqa: F401
from .test_v3_runs import describe

# Real jobs: training frameworks run in emulated containers (`-m "not integration"` skips).
pytestmark = pytest.mark.integration

USER_SCRIPTS = Path(__file__).resolve().parents[1] / "integration" / "user_scripts"


def submitted_request(script_dir: str, strategy: dict, code: dict, hps: dict, tmp_path,
                      boto_session, captured: list[dict]) -> dict:  # fmt: skip
    source = tmp_path / "source"
    shutil.copytree(USER_SCRIPTS / script_dir, source)
    spec = JobSpec.from_dict(
        {
            "name": f"v3-driver-{script_dir}".replace("_", "-"),
            "strategy": strategy,
            "cluster": {"instance_type": "ml.c5.xlarge", "instance_count": 2},
            "code": {"entry_point": "train.py", "source_dir": str(source), **code},
            "hyperparameters": hps,
        }
    )
    backend.launch(plan(spec), bucket=BUCKET, role=ROLE, boto_session=boto_session)
    (request,) = captured
    assert request["AlgorithmSpecification"]["ContainerEntrypoint"] == ["/bin/bash"]
    return request


def needs(python: Path, module: str) -> None:
    import subprocess

    probe = f"import importlib.util as u, sys; sys.exit(u.find_spec({module!r}) is None)"
    if subprocess.run([str(python), "-c", probe], capture_output=True).returncode:
        pytest.skip(f"the image python has no {module}")


def test_keras_mwms_script_trains_through_smdists_driver(
    boto_session,
    bucket,
    captured_requests,
    container_python,
    tmp_path,
):
    needs(container_python, "tensorflow")
    request = submitted_request(
        "keras_mwms", {"kind": "mwms"}, {"framework_version": "2.14", "py_version": "py310"},
        {"epochs": 1, "steps_per_epoch": 2}, tmp_path, boto_session, captured_requests,
    )  # fmt: skip
    results = run_request(
        request, boto_session.client("s3"), hosts=2, python=container_python,
        root=tmp_path / "hosts", timeout=420,
    )  # fmt: skip
    assert [r.returncode for r in results] == [0, 0], describe(results)
    lines = [re.search(r"user-script task=worker:(\d) workers=(\d) .*weights=(\w+)", r.output)
             for r in results]  # fmt: skip
    assert [m and m.group(1, 2) for m in lines] == [("0", "2"), ("1", "2")], describe(results)
    assert lines[0].group(3) == lines[1].group(3)  # one model, kept in sync across the hosts
    assert "Running SmdistDriver Driver" in results[0].output
    assert (results[0].root / "model" / "1").is_dir()


def test_horovod_script_runs_under_one_mpirun_across_both_hosts(
    boto_session,
    bucket,
    captured_requests,
    container_python,
    tmp_path,
):
    needs(container_python, "horovod")
    request = submitted_request(
        "horovod_mpi", {"kind": "horovod", "processes_per_host": 1},
        {"image_uri": "123456789012.dkr.ecr.us-west-2.amazonaws.com/horovod-training:0.28.1"},
        {"steps": 3}, tmp_path, boto_session, captured_requests,
    )  # fmt: skip
    results = run_request(
        request, boto_session.client("s3"), hosts=2, python=container_python,
        root=tmp_path / "hosts", timeout=420,
    )  # fmt: skip
    assert [r.returncode for r in results] == [0, 0], describe(results)
    output = results[0].output
    ranks = sorted(set(re.findall(r"user-script rank=(\d) local_rank=0 world=2", output)))
    assert ranks == ["0", "1"], describe(results)  # v3's own MPI driver would run one host
    # The MPIRunner's command (smdist.contract.commands), not a smaller one of smdist's.
    started = re.search(r"smdist driver: (\[\"mpirun\".*\])", output)
    assert started, describe(results)
    argv = json.loads(started.group(1))
    exports = [argv[i + 1] for i, token in enumerate(argv) if token == "-x"]
    interface = argv[argv.index("btl_tcp_if_include") + 1]
    assert exports[:5] == ["NCCL_MIN_NRINGS=4", f"NCCL_SOCKET_IFNAME={interface}",
                           "NCCL_DEBUG=INFO", "LD_LIBRARY_PATH", "PATH"]  # fmt: skip
    assert "SM_HOSTS" in exports and "FI_PROVIDER=efa" not in exports  # c5: no EFA
    assert argv[argv.index("train.py") - 1] in ("--", "mpi4py")
    digests = set(re.findall(r"weights=(\w+)", output))
    assert len(digests) == 1
    assert (results[0].root / "model" / "model.pt").is_file()


def test_ddp_with_restarts_runs_smdists_torchrun_launcher_on_both_hosts(
    boto_session, bucket, captured_requests, container_python, tmp_path
):
    request = submitted_request(
        "torchrun_argparse", {"kind": "pytorch_ddp", "max_restarts": 1, "processes_per_host": 1},
        {"framework_version": "2.3.0", "py_version": "py311"},
        {"steps": 3}, tmp_path, boto_session, captured_requests,
    )  # fmt: skip
    results = run_request_past_torch_exit_aborts(
        request, boto_session.client("s3"), hosts=2, python=container_python,
        root=tmp_path / "hosts", timeout=420,
        finished=lambda output: len(re.findall(r"user-script rank=\d .*weights=", output)) == 2,
    )  # fmt: skip
    assert [r.returncode for r in results] == [0, 0], describe(results)
    assert "Running SmdistDriver Driver" in results[0].output
    ranks = {}
    for result in results:
        for rank, digest in re.findall(r"user-script rank=(\d) .*world=2 steps=3 weights=(\w+)",
                                       result.output):  # fmt: skip
            ranks[rank] = (result.host, digest)
    assert sorted(ranks) == ["0", "1"], describe(results)
    assert {host for host, _ in ranks.values()} == {"algo-1", "algo-2"}
    assert len({digest for _, digest in ranks.values()}) == 1  # DDP kept them in sync


# The ready entry points of the strategies the user scripts above do not cover. Off SageMaker
# they run on the libraries' stand-ins (smddp over gloo, SMP v1 and v2 on the CPU).
# name -> (strategy, instance type, hosts, the v3 driver that runs it)
READY = {
    "ddp-torch_distributed": (
        {"kind": "pytorch_ddp", "launcher": "torch_distributed"},
        "ml.g5.xlarge",
        2,
        "Torchrun",
    ),
    # p4d: 8 ranks per host, as SageMaker would start them. One host: v3's own Torchrun
    # driver across two hosts is proved by the DDP runs (here and in test_v3_runs), and every
    # rank is a torch process (8 small ones here, not 16).
    "smp-v2": ({"kind": "sdmp", "version": 2}, "ml.p4d.24xlarge", 1, "Torchrun"),
    # One 8-GPU host too (smddp's instance types all have 8 GPUs): smddp's mpirun across two
    # hosts (host list, SMDATAPARALLEL_* exports, 16 ranks) is proved under v3 by the sddp row
    # of test_v3_script_contract, and this entry point's training across hosts by the local
    # backend's two-host sddp run (notebooks/04_sddp.ipynb, test_notebooks).
    "sddp": ({"kind": "sddp"}, "ml.p4d.24xlarge", 1, "SmdistDriver"),
    "smp-v1": (
        {"kind": "sdmp", "version": 1, "partitions": 2, "processes_per_host": 1},
        "ml.p3.16xlarge",
        2,
        "SmdistDriver",
    ),
}


# The emulated hosts share this machine's few cores, as the local backend's do: one thread per
# rank (what the local backend gives its hosts' ranks, cores // ranks). mpirun, unlike torchrun,
# sets no OMP_NUM_THREADS, and 8 ranks each running a thread pool as large as the machine
# oversubscribe it many times over (a p4d gives each of its 8 ranks 12 vCPUs).
SHARED_CORES = {**IMAGE_ENV, "OMP_NUM_THREADS": "1"}


@pytest.mark.parametrize("name", list(READY))
def test_ready_entry_point_trains_as_v3_would_run_it(
    name, boto_session, bucket, captured_requests, container_python, tmp_path
):
    strategy, instance_type, hosts, driver = READY[name]
    spec = JobSpec.from_dict(
        {
            "name": f"v3-ready-{name}".replace("_", "-"),
            "strategy": strategy,
            "cluster": {"instance_type": instance_type, "instance_count": hosts},
            "code": {"image_uri": "123456789012.dkr.ecr.us-west-2.amazonaws.com/training:1"},
            # Two steps: the torch entry points take max_steps (steps_per_epoch is
            # TensorFlow's); without it they trained samples / global batch steps (16 on 8 ranks).
            "hyperparameters": {"epochs": 1, "max_steps": 2},
        }
    )
    backend.launch(plan(spec), bucket=BUCKET, role=ROLE, boto_session=boto_session)
    (request,) = captured_requests
    results = run_request_past_torch_exit_aborts(
        request, boto_session.client("s3"), hosts=hosts, python=container_python,
        root=tmp_path / "hosts", timeout=420, image_env=SHARED_CORES,
        finished=lambda output: "model saved to" in output,  # by rank 0, after the last step
    )  # fmt: skip
    assert [r.returncode for r in results] == [0] * hosts, describe(results)
    assert f"Running {driver} Driver" in results[0].output
    output = "".join(r.output for r in results)
    assert re.search(r"\[metrics\].*loss=", output), describe(results)
    assert any((results[0].root / "model").iterdir())  # the model, on the first host


def image_path_without_mpi(directory: Path) -> str:
    """A PATH of this machine's tools (SYSTEM_PATH's, linked into ``directory``) but Open MPI's:
    an image without mpirun."""
    directory.mkdir(parents=True)
    for folder in SYSTEM_PATH.split(":"):
        for tool in sorted(Path(folder).glob("*")) if Path(folder).is_dir() else []:
            name = tool.name
            if name.startswith(("mpi", "orte", "prte", "ompi")) or (directory / name).exists():
                continue
            (directory / name).symlink_to(tool)
    return str(directory)


def test_an_image_without_mpirun_fails_at_once_saying_so(
    boto_session, bucket, captured_requests, container_python, tmp_path
):
    request = submitted_request(
        "horovod_mpi", {"kind": "horovod", "processes_per_host": 1},
        {"image_uri": "123456789012.dkr.ecr.us-west-2.amazonaws.com/no-mpi:1"},
        {"steps": 3}, tmp_path, boto_session, captured_requests,
    )  # fmt: skip
    path = image_path_without_mpi(tmp_path / "image-bin")
    assert shutil.which("mpirun", path=f"{container_python.parent}:{path}") is None
    request["Environment"] = {**(request.get("Environment") or {}), "PATH": path}
    results = run_request(
        request, boto_session.client("s3"), hosts=2, python=container_python,
        root=tmp_path / "hosts", timeout=120,
    )  # fmt: skip
    first = results[0]
    assert first.returncode not in (0, None), describe(results)
    assert not first.timed_out  # it did not wait HOST_WAIT_SECONDS for ssh
    assert "smdist driver: mpirun is not in this image" in first.output, describe(results)
    assert "ssh never answered" not in first.output
    failure = (first.root / "output" / "failure").read_text()
    assert "mpirun is not in this image" in failure and "openmpi-bin" in failure


def test_parameter_server_runs_the_tensorflow_toolkits_steps_through_smdists_driver(
    boto_session, bucket, captured_requests, container_python, tmp_path
):
    needs(container_python, "tensorflow")
    spec = JobSpec.from_dict(
        {
            "name": "v3-ready-parameter-server",
            "strategy": {"kind": "parameter_server"},
            "cluster": {"instance_type": "ml.c5.2xlarge", "instance_count": 2},
            "code": {"framework_version": "2.14", "py_version": "py310"},
            "hyperparameters": {"epochs": 1, "samples": 64, "batch_size": 16, "log_every": 2},
        }
    )
    backend.launch(plan(spec), bucket=BUCKET, role=ROLE, boto_session=boto_session)
    (request,) = captured_requests
    results = run_request(
        request, boto_session.client("s3"), hosts=2, python=container_python,
        root=tmp_path / "hosts", timeout=420,
    )  # fmt: skip
    assert [r.returncode for r in results] == [0, 0], describe(results)
    assert "Running SmdistDriver Driver" in results[0].output
    # Each host's parameter server on the toolkit's port, then the script: algo-1 coordinates.
    for index, result in enumerate(results):
        assert f"parameter server ps:{index}" in result.output, describe(results)
    assert re.search(r"\[metrics\].*loss=", results[0].output), describe(results)
    assert any((results[0].root / "model").iterdir())  # the coordinator's model
