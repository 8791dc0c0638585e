"""Write the strategy notebooks from one template, so the five stay alike and in sync.

Each notebook: build the strategy, show the plan (table + topology picture), run it locally on
two emulated hosts, read the metrics and the model, and submit the same spec to SageMaker when
AWS settings are present (otherwise show the dry-run request). Run this file after changing the
template; ``tests/integration/test_notebooks.py`` checks the committed notebooks match it.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

HERE = Path(__file__).resolve().parent


@dataclass(frozen=True)
class Notebook:
    file: str
    title: str
    intro: str
    imports: str
    strategy: str
    instance_type: str
    framework: str  # code.framework_version for the SageMaker submission
    py_version: str
    local_hosts: int = 2
    local_processes: int = 1


NOTEBOOKS = (
    Notebook(
        "01_pytorch_ddp.ipynb",
        "PyTorch DDP with smdist's torchrun launcher",
        "Every host runs smdist's launcher, which starts `torch.distributed.run` with a c10d "
        "rendezvous on the first host (c10d because `max_restarts` asks for restarts; without "
        "restarts it uses a static one). No `distribution` dict is needed; the training script "
        "travels as a hyperparameter.",
        "PyTorchDDP",
        'PyTorchDDP(launcher="torchrun", max_restarts=1)',
        "ml.p3.2xlarge",
        "2.3.0",
        "py311",
    ),
    Notebook(
        "02_mwms.ipynb",
        "TensorFlow MultiWorkerMirroredStrategy",
        "One worker per host, workers found through `TF_CONFIG`, which the SageMaker "
        "TensorFlow container builds from the host list (smdist's local backend does the same).",
        "MWMS",
        'MWMS(communication="ring")',
        "ml.g5.xlarge",
        "2.14",
        "py310",
    ),
    Notebook(
        "03_horovod.ipynb",
        "Horovod (PyTorch) over MPI",
        "SageMaker starts Horovod with mpirun across the hosts; locally smdist starts one "
        "`horovodrun` spanning the emulated hosts.",
        "Horovod",
        'Horovod(framework="pytorch", processes_per_host=1)',
        "ml.p3.2xlarge",
        "2.0.0",  # the last PyTorch training image that carries Horovod
        "py310",
    ),
    Notebook(
        "04_sddp.ipynb",
        "SageMaker Distributed Data Parallel (smddp)",
        "The script initialises `torch.distributed` with `backend=\"smddp\"`. On SageMaker that "
        "is AWS's collective library; locally smdist's stand-in maps it to gloo on CPUs.",
        "SDDP",
        "SDDP()",
        "ml.p4d.24xlarge",
        "2.2.0",
        "py310",
    ),
    Notebook(
        "05_smp.ipynb",
        "SageMaker model parallel (SMP v1)",
        "Each replica is pipelined over `partitions` devices with `microbatches` per batch; "
        "replicas train data-parallel. Locally smdist's SMP stand-in keeps the data-parallel "
        "semantics (every rank holds the whole model): the plan shows the real grouping.",
        "SDMP",
        'SDMP(version=1, partitions=2, microbatches=4, ddp=True, placement_strategy="cluster")',
        "ml.p3.16xlarge",
        "1.13.1",
        "py39",
    ),
)


def cells(nb: Notebook) -> list:
    return [
        new_markdown_cell(f"# {nb.title}\n\n{nb.intro}\n\nThe same spec runs on this machine "
                          "(emulated SageMaker hosts, no Docker) and on SageMaker."),
        new_code_cell(
            "import json\n"
            "import os\n"
            "import tarfile\n"
            "from urllib.parse import urlparse\n\n"
            "import smdist\n"
            "from smdist import Cluster, JobSpec\n"
            "from smdist.runtime.metrics import parse_metrics\n"
            f"from smdist.strategies import {nb.imports}\n\n"
            "spec = JobSpec(\n"
            f'    name="{Path(nb.file).stem.split("_", 1)[1].replace("_", "-")}-notebook",\n'
            f"    strategy={nb.strategy},\n"
            f'    cluster=Cluster(instance_type="{nb.instance_type}", instance_count=2),\n'
            '    region="us-west-2",\n'
            f'    code={{"framework_version": "{nb.framework}", '
            f'"py_version": "{nb.py_version}"}},\n'
            '    hyperparameters={"epochs": 1, "max_steps": 40, "batch_size": 32, '
            '"checkpoint_every": 20},\n'
            ")"
        ),
        new_markdown_cell("## The plan: what SageMaker will run\n\nChecked against the "
                          "instance catalogue; nothing is fetched or started."),
        new_code_cell("plan = smdist.plan(spec)\nplan"),
        new_code_cell("print(json.dumps(plan.distribution, indent=2))\n"
                      "plan.wire_hyperparameters"),
        new_markdown_cell(f"## Run it here: {nb.local_hosts} emulated hosts × "
                          f"{nb.local_processes} process"),
        new_code_cell(
            "job = smdist.fit(spec, logs=False, options={"
            f'"hosts": {nb.local_hosts}, "processes_per_host": {nb.local_processes}}})\n'
            "print(job.name, job.status)\n"
            'assert job.status.value == "Completed", job.failure_reason'
        ),
        new_markdown_cell("## Metrics and model"),
        new_code_cell(
            "metrics = [m for m in map(parse_metrics, job.logs()) if m and 'loss' in m]\n"
            "first, last = metrics[0], metrics[-1]\n"
            'print(f"loss {first[\'loss\']:.4f} at step {first[\'step\']:.0f}")\n'
            'print(f"loss {last[\'loss\']:.4f} at step {last[\'step\']:.0f}")\n'
            "assert last['loss'] < first['loss']"
        ),
        new_code_cell(
            "with tarfile.open(urlparse(job.model_artifacts).path) as archive:\n"
            "    print(job.model_artifacts)\n"
            "    print(archive.getnames())"
        ),
        new_markdown_cell("## Submit the same spec to SageMaker\n\nSkipped unless AWS settings "
                          "are present (`SMDIST_ROLE` and credentials); the dry run shows the "
                          "request either way."),
        new_code_cell(
            "from smdist.backends import sagemaker as sm\n\n"
            'aws_ready = bool(os.environ.get("SMDIST_ROLE")) and bool(\n'
            '    os.environ.get("AWS_PROFILE") or os.environ.get("AWS_ACCESS_KEY_ID"))\n'
            "if aws_ready:\n"
            '    cloud_job = smdist.fit(spec, backend="sagemaker", wait=False)\n'
            "    print(cloud_job.name, cloud_job.status)\n"
            "else:\n"
            '    print("No AWS settings: not submitting. The request would be:")\n'
            "    request = sm.dry_run(plan).request\n"
            '    print(json.dumps({k: request[k] for k in ("ResourceConfig", '
            '"HyperParameters")}, indent=1))'
        ),
    ]


def build(nb: Notebook):
    notebook = new_notebook(cells=cells(nb))
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                       "language": "python"}
    for index, cell in enumerate(notebook.cells):
        cell["id"] = f"cell-{index}"  # stable ids: rebuilding gives identical files
    return notebook


def render(nb: Notebook) -> str:
    return nbformat.writes(build(nb))


def main() -> int:
    for nb in NOTEBOOKS:
        (HERE / nb.file).write_text(render(nb))
        print(f"wrote {nb.file}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
