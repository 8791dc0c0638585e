"""The container contract's one builder against SageMaker's own container code.

For every example job (every strategy and launcher), each host's environment from
``contract.host.host_environment`` (what ``smdist plan --hosts`` shows, the local backend runs and
smdist's v3 driver gives the ranks) is compared with what the training container computes from
the same config files: the ``SM_*`` set and the script's arguments by the sagemaker-training
toolkit (``Environment().to_env_vars()`` / ``to_cmd_args()``), and, for PyTorch, MASTER_ADDR /
MASTER_PORT and the NCCL settings by the PyTorch container's ``training`` module. Both run in
the stand-in DLC's environment (``.ci/install-dlc-standin``), in a subprocess per host.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from smdist.checks.reading import load
from smdist.contract.environment import (
    FRAMEWORK_MODULES,
    HostConfig,
    Machine,
    input_data_config,
    resource_config,
)
from smdist.contract.host import HostSite, host_environment
from smdist.planning.plan import plan

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((REPO / "examples").glob("*.yaml"))
# The stand-in DLC's python (.ci/install-dlc-standin): sagemaker-training and the PyTorch toolkit.
DLC_PYTHON = Path(os.environ.get("SMDIST_DLC_VENV") or REPO / ".venv-dlc") / "bin" / "python"
# What the container's Python computes for the host whose /opt/ml is SAGEMAKER_BASE_DIR.
ORACLE = """
import json, os, sys
from sagemaker_training import environment
env = environment.Environment()
result = {"sm": env.to_env_vars(), "argv": env.to_cmd_args(), "framework": {}}
if sys.argv[1] == "pytorch":
    from sagemaker_pytorch_container import training
    before = dict(os.environ)
    training._set_nccl_environment(env.network_interface_name)
    training._set_distributed_environment(env)
    result["framework"] = {k: v for k, v in os.environ.items() if before.get(k) != v}
print(json.dumps(result))
"""
FRAMEWORK_NAMES = ("MASTER_ADDR", "MASTER_PORT", "NCCL_SOCKET_IFNAME", "NCCL_IB_DISABLE",
                   "NCCL_DEBUG")  # fmt: skip


def container_computes(base: Path, framework: str, job_name: str, module: str) -> dict:
    env = {"PATH": os.environ["PATH"], "SAGEMAKER_BASE_DIR": str(base),
           "TRAINING_JOB_NAME": job_name, "SAGEMAKER_TRAINING_MODULE": module}  # fmt: skip
    done = subprocess.run([str(DLC_PYTHON), "-c", ORACLE, framework], env=env,
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


@pytest.mark.skipif(not DLC_PYTHON.is_file(), reason=f"no stand-in DLC python at {DLC_PYTHON}")
@pytest.mark.parametrize("example", EXAMPLES, ids=[path.stem for path in EXAMPLES])
def test_every_hosts_environment_is_what_the_container_computes(example, tmp_path):
    job = plan(load(example))
    launch = job.launch
    machine = Machine(num_cpus=os.cpu_count() or 1, num_gpus=0)  # what the oracle's host has
    channels = input_data_config({name: s.distribution for name, s in job.spec.inputs.items()})
    module = FRAMEWORK_MODULES[job.framework]
    for index, host in enumerate(launch.hosts):
        base = tmp_path / host
        config = HostConfig(
            hyperparameters=dict(job.wire_hyperparameters),
            resource_config=resource_config(
                list(launch.hosts), host, launch.instance_type, launch.interface
            ),
            input_data_config=channels,
        )
        (base / "input" / "config").mkdir(parents=True)
        for name, content in (("hyperparameters.json", config.hyperparameters),
                              ("resourceconfig.json", config.resource_config),
                              ("inputdataconfig.json", config.input_data_config)):  # fmt: skip
            (base / "input" / "config" / name).write_text(json.dumps(content))
        built = host_environment(
            launch, index, config, machine, job_name=job.job_name, framework=job.framework,
            site=HostSite(base=base),
        )  # fmt: skip
        container = container_computes(base, job.framework, job.job_name, module)
        sm = {name: value for name, value in built.items() if name.startswith("SM_")}
        assert sm == container["sm"], f"{example.stem} {host}"
        assert json.loads(built["SM_USER_ARGS"]) == container["argv"]
        if job.framework == "pytorch":
            assert {name: built[name] for name in FRAMEWORK_NAMES} == container["framework"]
        else:
            assert not set(FRAMEWORK_NAMES) & set(built)
