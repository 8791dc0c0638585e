"""``smdist plan --hosts``: what each host runs in SageMaker's container, per launcher."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from smdist.backends.sagemaker.rendering import TOOLKIT_ONLY
from smdist.checks.reading import load
from smdist.contract.environment import command_line_arguments
from smdist.planning.host_view import host_views, hosts_document, hosts_text
from smdist.planning.plan import plan

EXAMPLES = Path("examples")


def smdist(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "smdist.cli.app", *args], capture_output=True, text=True, timeout=120
    )


def example(name: str, **cluster: object):
    spec = load(EXAMPLES / f"{name}.yaml")
    if cluster:
        data = spec.model_dump(mode="json", by_alias=True, exclude_unset=True)
        data["cluster"] = {**data["cluster"], **cluster}
        spec = type(spec).from_dict(data)
    return plan(spec)


def test_every_host_gets_its_own_resourceconfig_and_sm_variables():
    views = host_views(example("pytorch_ddp_torch_distributed"))
    assert [v.name for v in views] == ["algo-1", "algo-2"]
    for view in views:
        assert view.resource_config["current_host"] == view.name
        assert view.resource_config["hosts"] == ["algo-1", "algo-2"]
        assert view.resource_config["network_interface_name"] == "eth0"
        assert view.sm_environment["SM_CURRENT_HOST"] == view.name
        assert json.loads(view.sm_environment["SM_HOSTS"]) == ["algo-1", "algo-2"]
        assert view.sm_environment["SM_NUM_GPUS"] == "4"  # ml.g5.12xlarge
        assert view.sm_environment["SM_MODEL_DIR"] == "/opt/ml/model"


@pytest.mark.parametrize("name", [p.stem for p in sorted(EXAMPLES.glob("*.yaml"))])
def test_script_arguments_are_exactly_the_users_hyperparameters(name):
    planned = example(name)
    expected = dict(planned.hyperparameters)
    # What the SDK adds besides its sagemaker_* names reaches the script in SageMaker too:
    # the TensorFlow estimator's model_dir, SMP's mp_parameters.
    for name in ("model_dir", "mp_parameters"):
        if name in planned.wire_hyperparameters:
            expected[name] = json.loads(planned.wire_hyperparameters[name])
    for view in host_views(planned):
        assert view.script_arguments == command_line_arguments(expected)
        assert json.loads(view.sm_environment["SM_USER_ARGS"]) == view.script_arguments
        if view.argv is not None:
            assert view.argv[-len(view.script_arguments) :] == view.script_arguments


def test_torchrun_runs_on_every_host_with_its_node_rank():
    views = host_views(example("pytorch_ddp_torch_distributed"))
    for view in views:
        assert view.launcher == "torchrun"
        argv = view.argv
        assert argv[:5] == ["torchrun", "--nnodes", "2", "--nproc_per_node", "4"]
        assert argv[argv.index("--master_addr") + 1] == "algo-1"
        assert argv[argv.index("--master_port") + 1] == "7777"
        assert argv[argv.index("--node_rank") + 1] == str(view.index)
        assert view.container_environment["MASTER_ADDR"] == "algo-1"


@pytest.mark.parametrize(("name", "launcher"), [("horovod_pytorch", "mpirun"), ("sddp", "smddp")])
def test_under_mpi_only_the_first_host_starts_mpirun(name, launcher):
    first, *others = host_views(example(name))
    assert first.launcher == launcher
    assert first.argv[0] == "mpirun"
    assert first.argv[first.argv.index("--host") + 1].startswith("algo-1")
    program_at = len(first.argv) - len(first.script_arguments) - 1
    assert first.argv[program_at - 3 : program_at] == ["python", "-m", "mpi4py"]
    assert others and all(view.argv is None for view in others)
    assert all("waits" in view.role for view in others)


def test_mpirun_exports_sm_variables_and_smddp_exports_none():
    horovod = host_views(example("horovod_pytorch"))[0].argv
    assert "SM_HOSTS" in horovod and "SM_USER_ARGS" in horovod
    sddp = host_views(example("sddp"))[0].argv
    assert not any(token.startswith("SM_") for token in sddp)
    assert "smddprun" in sddp
    assert "SMDATAPARALLEL_SERVER_ADDR=algo-1" in sddp


def test_mwms_hosts_get_tf_config_with_their_own_index():
    for view in host_views(example("mwms")):
        tf_config = json.loads(view.container_environment["TF_CONFIG"])
        assert tf_config["task"] == {"type": "worker", "index": view.index}
        assert tf_config["cluster"]["worker"] == ["algo-1:8890", "algo-2:8890"]
        assert view.argv[:3] == ["python", "--", "tensorflow_mwms.py"]


def test_a_large_cluster_is_shown_compactly():
    planned = example("smp_v1", instance_count=64)
    document = hosts_document(planned)
    assert [h["host"] for h in document["hosts"]] == ["algo-1", "algo-2", "algo-3", "algo-64"]
    assert document["omitted"] == {"count": 60, "first": "algo-4", "last": "algo-63"}
    assert document["hosts"][-1]["resourceconfig"]["current_host"] == "algo-64"
    text = "\n".join(hosts_text(planned, limit=2))
    assert "62 more host(s), algo-2 to algo-63" in text
    assert "algo-1:8,algo-2:8,...,algo-64:8 (64 hosts)" in text
    assert max(map(len, text.splitlines())) < 1200


def test_cli_plan_hosts_json_and_text():
    result = smdist("plan", "--hosts", "--json", str(EXAMPLES / "mwms.yaml"))
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    assert [h["host"] for h in document["hosts"]] == ["algo-1", "algo-2"]
    assert document["hosts"][1]["environment"]["SM_CURRENT_HOST"] == "algo-2"
    text = smdist("plan", "--hosts", str(EXAMPLES / "horovod_pytorch.yaml"))
    assert text.returncode == 0, text.stderr
    assert "algo-2 (host 2 of 2): starts sshd and waits" in text.stdout
    assert "runs: mpirun" in text.stdout


def test_cli_plan_hosts_refuses_bad_input_with_exit_2(tmp_path):
    job = tmp_path / "job.yaml"
    job.write_text(
        (EXAMPLES / "mwms.yaml").read_text().replace("instance_count: 2", "instance_count: 0")
    )
    result = smdist("plan", "--hosts", str(job))
    assert result.returncode == 2
    assert "cluster.instance_count" in result.stderr
    small = smdist("plan", "--hosts", "--hosts-count", "1", str(EXAMPLES / "mwms.yaml"))
    assert small.returncode == 2
    assert "--hosts-count" in small.stderr


def test_what_v3s_torchrun_driver_leaves_out_is_the_readmes_toolkit_only_group():
    readme = Path(__file__).resolve().parents[2].joinpath("README.md").read_text()
    line = next(text for text in readme.splitlines() if text.startswith("- *toolkit-only*:"))
    assert set(TOOLKIT_ONLY) == set(re.findall(r"`(SM_\w+)`", line.split(" (")[0]))


def test_every_host_shows_the_variables_every_container_sets():
    shown = smdist("plan", "examples/pytorch_ddp.yaml", "--hosts", "--json")
    assert shown.returncode == 0, shown.stderr
    hosts = json.loads(shown.stdout)["hosts"]
    assert len(hosts) == 2
    for host in hosts:
        container = host["environment"]
        assert container["PYTHONUNBUFFERED"] == "1"
        assert container["PYTHONDONTWRITEBYTECODE"] == "1"
        assert container["SAGEMAKER_REGION"]  # the spec's, else the plan's placeholder
    text = smdist("plan", "examples/pytorch_ddp.yaml", "--hosts").stdout
    assert text.count("PYTHONUNBUFFERED=1") == 2 and text.count("SAGEMAKER_REGION=") == 2


def test_the_plans_warnings_close_the_hosts_view_as_they_close_its_table(tmp_path):
    """An image past its support is a warning: `plan --hosts` says it too, text and JSON."""
    job = yaml.safe_load((EXAMPLES / "pytorch_ddp.yaml").read_text())
    job["code"] = {**job.get("code", {}), "framework_version": "2.8.0", "py_version": "py312"}
    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump(job))
    assert "warning: code.framework_version: " in smdist("plan", str(path)).stdout
    text = smdist("plan", "--hosts", str(path))
    assert text.returncode == 0, text.stderr
    last = text.stdout.rstrip().splitlines()[-1]
    assert last.startswith("warning: code.framework_version: ") and "past its support" in last
    document = json.loads(smdist("plan", "--hosts", "--json", str(path)).stdout)
    assert any("past its support" in w for w in document["warnings"]), document["warnings"]
