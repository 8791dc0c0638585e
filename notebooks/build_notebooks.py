"""Write the strategy notebooks from one template, so they stay alike and in sync.

Each notebook: build the strategy, show the plan (table + topology picture), show the argument
each SageMaker SDK line takes (v2 ``distribution=``, v3 ``distributed=`` / ``ModelTrainer``), run
the job locally on two emulated hosts, plot the loss curve from its metric lines, open the model,
and submit the same spec to SageMaker when AWS settings are present (otherwise show the dry-run
request).

The notebooks are stored executed, so a reader browsing the repository sees the plan, the
picture, the result and the plot. After changing the template run
``python notebooks/build_notebooks.py --execute`` (needs torch, TensorFlow, Horovod and
matplotlib; name notebook files to run only those, e.g. ``08_smp_v2.ipynb``); it runs each
notebook against the local backend and stores it with its outputs,
scrubbed of run-specific values (``notebook_run.py``). Without ``--execute`` it only reports
which stored notebooks' cells differ from the template. ``tests/integration/test_notebooks.py``
checks the stored cells equal the template and the stored outputs have a fresh run's shape.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import textwrap
import time
from dataclasses import dataclass
from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook
from notebook_run import AWS_VARIABLES, execute, scrub

HERE = Path(__file__).resolve().parent
# Modules a notebook needs beyond torch (all need matplotlib for the loss plot).
NEEDS = {
    "02_mwms.ipynb": ("tensorflow", "tf_keras"),
    "03_horovod.ipynb": ("horovod",),
    "07_parameter_server.ipynb": ("tensorflow", "tf_keras"),
}
PLOT_NEEDS = ("matplotlib",)


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
    estimator: str  # the SDK v2 estimator class that takes ``distribution=``
    local_hosts: int = 2
    local_processes: int = 1
    # Why framework_version stays on an image past its support (no supported image carries the
    # strategy's library): a comment above it in the setup cell; "" for a supported pin.
    pin_note: str = ""


NOTEBOOKS = (
    Notebook(
        "01_pytorch_ddp.ipynb",
        "PyTorch DDP with smdist's torchrun launcher",
        "Every host runs smdist's launcher, which starts `torch.distributed.run` with a c10d "
        "rendezvous on the first host (c10d because `max_restarts` asks for restarts; without "
        "restarts it uses a static one). No `distribution` dict is needed; the launcher finds "
        "the training script in the job's environment (`SMDIST_TRAINING_SCRIPT`, like smdist's "
        "other settings), so the script's arguments are exactly your hyperparameters.",
        "PyTorchDDP",
        'PyTorchDDP(launcher="torchrun", max_restarts=1)',
        "ml.g5.xlarge",
        "2.13.0",
        "py312",
        "PyTorch",
    ),
    Notebook(
        "02_mwms.ipynb",
        "TensorFlow MultiWorkerMirroredStrategy",
        "One worker per host, workers found through `TF_CONFIG`, which the SageMaker "
        "TensorFlow container builds from the host list (smdist's local backend does the same).",
        "MWMS",
        'MWMS(communication="ring")',
        "ml.g5.xlarge",
        "2.21",
        "py312",
        "TensorFlow",
        pin_note="The 2.16 and later TensorFlow images ship Keras 3 alone; the ready TensorFlow "
        "scripts train on Keras 2, so they install the matching tf-keras at start (the job "
        "needs a package index it can reach: no network isolation).",
    ),
    Notebook(
        "03_horovod.ipynb",
        "Horovod (PyTorch) over MPI",
        "SageMaker starts Horovod with mpirun across the hosts; locally smdist starts one "
        "`horovodrun` spanning the emulated hosts.",
        "Horovod",
        'Horovod(framework="pytorch", processes_per_host=1)',
        "ml.p3.2xlarge",
        "2.0.0",
        "py310",
        "PyTorch",
        pin_note="Horovod left the PyTorch training images after 2.0.0, so no supported image "
        "carries it (the plan's one warning); a newer version needs code.image_uri (an image "
        "of your own with Horovod).",
    ),
    Notebook(
        "04_sddp.ipynb",
        "SageMaker Distributed Data Parallel (smddp)",
        'The script initialises `torch.distributed` with `backend="smddp"`. On SageMaker that '
        "is AWS's collective library; locally smdist's stand-in maps it to gloo on CPUs.",
        "SDDP",
        "SDDP()",
        "ml.p4d.24xlarge",
        "2.2.0",
        "py310",
        "PyTorch",
        pin_note="Every image with SMDDP is past its support (the PyTorch 2.6 and later images "
        "carry none: the plan's one warning); a newer version needs code.image_uri (an image of "
        "your own with SMDDP).",
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
        "PyTorch",
        pin_note="SMP v1 is archived: the images that carry it (PyTorch up to 2.0.0) are past "
        "their support (the plan's one warning).",
    ),
    Notebook(
        "07_parameter_server.ipynb",
        "TensorFlow ParameterServerStrategy",
        "SageMaker's TensorFlow container starts a parameter server on every host, then the "
        "script once per host with `TF_CONFIG`: the first host coordinates, the others train "
        "(smdist's local backend starts the same processes on its emulated hosts).",
        "ParameterServer",
        "ParameterServer()",
        "ml.c5.2xlarge",
        "2.21",
        "py312",
        "TensorFlow",
        pin_note="The 2.16 and later TensorFlow images ship Keras 3 alone; the ready TensorFlow "
        "scripts train on Keras 2, so they install the matching tf-keras at start (the job "
        "needs a package index it can reach: no network isolation).",
    ),
    Notebook(
        "08_smp_v2.ipynb",
        "SageMaker model parallel v2 (SMP v2, FSDP based)",
        "SMP v2 is PyTorch FSDP with SageMaker's extras: parameters are sharded over "
        "`hybrid_shard_degree` ranks and replicated across those groups, and SageMaker starts "
        "torchrun with one process per GPU. The script calls `torch.sagemaker.init()`; locally "
        "smdist's SMP v2 stand-in runs plain FSDP over gloo (no tensor parallelism) and says what "
        "it does not reproduce: the plan shows the real grouping.",
        "SDMP",
        "SDMP(version=2, hybrid_shard_degree=2)",
        "ml.p4d.24xlarge",
        "2.5.1",
        "py311",
        "PyTorch",
        pin_note="Every SMP v2 image (PyTorch 2.0 to 2.5.1) is past its support (the PyTorch 2.6 "
        "and later images carry no SMP: the plan's one warning); a newer version needs "
        "code.image_uri (an image of your own with SMP v2).",
    ),
)


def _setup_cell(nb: Notebook) -> str:
    name = Path(nb.file).stem.split("_", 1)[1].replace("_", "-")
    return (
        "import json\n"
        "import os\n"
        "import re\n"
        "import tarfile\n"
        "from urllib.parse import urlparse\n\n"
        "import smdist\n"
        "from smdist import Cluster, JobSpec\n"
        "from smdist.runtime.metrics import metric_definitions\n"
        f"from smdist.strategies import {nb.imports}\n\n"
        "spec = JobSpec(\n"
        f'    name="{name}-notebook",\n'
        f"    strategy={nb.strategy},\n"
        f'    cluster=Cluster(instance_type="{nb.instance_type}", instance_count=2),\n'
        '    region="us-west-2",\n'
        + _pin_comment(nb)
        + f'    code={{"framework_version": "{nb.framework}", "py_version": "{nb.py_version}"}},\n'
        "    hyperparameters={\n"
        '        "epochs": 1,\n'
        '        "max_steps": 16,\n'
        '        "batch_size": 32,\n'
        '        "learning_rate": 0.1,  # high enough for the loss to fall visibly in 16 steps\n'
        '        "checkpoint_every": 8,\n'
        '        "log_every": 1,  # a metric line every step: 16 points on the loss curve\n'
        "    },\n"
        ")\n"
        "# Submitting needs a role and credentials; without them the cells below stay offline.\n"
        'aws_ready = bool(os.environ.get("SMDIST_ROLE")) and bool(\n'
        '    os.environ.get("AWS_PROFILE") or os.environ.get("AWS_ACCESS_KEY_ID")\n'
        ")"
    )


def _pin_comment(nb: Notebook) -> str:
    """``nb.pin_note`` as comment lines above the setup cell's ``code=``."""
    if not nb.pin_note:
        return ""
    lines = textwrap.wrap(nb.pin_note, width=88, initial_indent="# ", subsequent_indent="# ")
    return "".join(f"    {line}\n" for line in lines)


_V3_CELL = (
    "# SDK v3 (sagemaker 3.x): ModelTrainer(distributed=...), and smdist.model_trainer(plan, ...)\n"
    "# for a configured ModelTrainer that is not submitted yet: trainer.train() is yours.\n"
    "from importlib.metadata import PackageNotFoundError, version\n\n"
    "try:\n"
    '    sdk = version("sagemaker")\n'
    "except PackageNotFoundError:\n"
    "    sdk = None\n"
    'if not (sdk or "").startswith("3."):\n'
    '    found = f"sagemaker {sdk} is installed" if sdk else "sagemaker is not installed"\n'
    "    print(f\"SDK v3 is not installed ({found}): pip install 'smdist[sagemaker]'\")\n"
    "else:\n"
    "    try:\n"
    "        print(repr(smdist.model_trainer_distributed(plan)))\n"
    '        if aws_ready and os.environ.get("SMDIST_BUCKET"):\n'
    "            trainer = smdist.model_trainer(\n"
    '                plan, role=os.environ["SMDIST_ROLE"], bucket=os.environ["SMDIST_BUCKET"]\n'
    "            )\n"
    '            print(f"ModelTrainer {trainer.base_job_name} is ready: trainer.train() submits")\n'
    "    except smdist.SpecError as error:  # what this strategy or spec cannot do on v3\n"
    "        print(error)"
)

_METRICS_CELL = (
    "# The regexes SageMaker is given for this job (metric_definitions) read the job's log.\n"
    'patterns = {d["Name"]: re.compile(d["Regex"]) for d in metric_definitions()}\n'
    "curve = {}\n"
    "for line in job.logs():\n"
    '    step, loss = (patterns[n].search(line) for n in ("train:step", "train:loss"))\n'
    "    if step and loss:\n"
    "        curve[int(float(step[1]))] = float(loss[1])  # the last line of a step wins\n"
    "steps = sorted(curve)\n"
    "first, last = curve[steps[0]], curve[steps[-1]]\n"
    'assert last < first, f"loss did not fall: {first:.4f} -> {last:.4f}"\n'
    "print(\n"
    '    f"loss fell from {first:.4f} at step {steps[0]} to {last:.4f} at step {steps[-1]} "\n'
    '    f"({len(steps)} metric points)"\n'
    ")"
)

_PLOT_CELL = (
    "try:\n"
    "    import matplotlib.pyplot as plt\n"
    "except ImportError:\n"
    '    print("matplotlib is not installed (pip install matplotlib); the curve as a table:")\n'
    "    for step in steps:\n"
    '        print(f"{step:>6}  {curve[step]:.4f}")\n'
    "else:\n"
    "    figure, axes = plt.subplots(figsize=(6, 3))\n"
    '    axes.plot(steps, [curve[s] for s in steps], marker=".")\n'
    '    axes.set(xlabel="step", ylabel="loss (train:loss)", title=spec.name)\n'
    "    axes.grid(alpha=0.3)\n"
    "    plt.show()"
)

_SUBMIT_CELL = (
    "from smdist.backends import sagemaker as sm\n\n"
    "if aws_ready:\n"
    '    cloud_job = smdist.fit(spec, backend="sagemaker", wait=False)\n'
    "    print(cloud_job.name, cloud_job.status)\n"
    "else:\n"
    '    print("No AWS settings: not submitting. The request would be:")\n'
    "    request = sm.dry_run(plan).request\n"
    '    shown = {k: request[k] for k in ("ResourceConfig", "HyperParameters")}\n'
    "    print(json.dumps(shown, indent=1))"
)


def cells(nb: Notebook) -> list:
    return [
        new_markdown_cell(
            f"# {nb.title}\n\n{nb.intro}\n\nThe same spec runs on this machine "
            "(emulated SageMaker hosts, no Docker) and on SageMaker."
        ),
        new_code_cell(_setup_cell(nb)),
        new_markdown_cell(
            "## The plan: what SageMaker will run\n\nChecked against the "
            "instance catalogue; nothing is fetched or started."
        ),
        new_code_cell("plan = smdist.plan(spec)\nplan"),
        new_markdown_cell(
            "## Your own SDK calls\n\nIf you write the SageMaker SDK call yourself, the "
            "strategy gives you its argument for either SDK line: `strategy.distribution("
            "cluster)` for an SDK v2 estimator, `smdist.model_trainer_distributed(plan)` "
            "(or a whole `smdist.model_trainer(plan, ...)`) for SDK v3's `ModelTrainer`."
        ),
        new_code_cell(
            "# SDK v2 (sagemaker 2.x): the estimator's distribution= argument, as in\n"
            f"#   {nb.estimator}(entry_point=..., instance_count=2, distribution=distribution)\n"
            "distribution = spec.strategy.distribution(spec.cluster)\n"
            "print(json.dumps(distribution, indent=2))"
        ),
        new_code_cell(_V3_CELL),
        new_markdown_cell(
            f"## Run it here: {nb.local_hosts} emulated hosts × {nb.local_processes} process"
        ),
        new_code_cell(
            "job = smdist.fit(spec, logs=False, options={"
            f'"hosts": {nb.local_hosts}, "processes_per_host": {nb.local_processes}}})\n'
            "print(job.name, job.status)\n"
            'assert job.status.value == "Completed", job.failure_reason'
        ),
        new_markdown_cell("## Metrics and model"),
        new_code_cell(_METRICS_CELL),
        new_code_cell(_PLOT_CELL),
        new_code_cell(
            "archive = urlparse(job.model_artifacts).path\n"
            "print(os.path.relpath(archive))\n"
            "with tarfile.open(archive) as model:\n"
            "    print(model.getnames())"
        ),
        new_markdown_cell(
            "## Submit the same spec to SageMaker\n\nSkipped unless AWS settings "
            "are present (`SMDIST_ROLE` and credentials); the dry run shows the "
            "request either way."
        ),
        new_code_cell(_SUBMIT_CELL),
    ]


def build(nb: Notebook) -> nbformat.NotebookNode:
    """The notebook's template: its cells without outputs."""
    notebook = new_notebook(cells=cells(nb))
    notebook.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    for index, cell in enumerate(notebook.cells):
        cell["id"] = f"cell-{index}"  # stable ids: rebuilding gives identical files
    return notebook


def sources(notebook: nbformat.NotebookNode) -> list[tuple[str, str, str]]:
    """Each cell's id, type and source: what must equal the template."""
    return [(cell.id, cell.cell_type, cell.source) for cell in notebook.cells]


def sources_match(nb: Notebook) -> bool:
    """Whether the stored ``nb`` has the template's cells."""
    path = HERE / nb.file
    stored = nbformat.read(path, as_version=4) if path.exists() else None
    return stored is not None and sources(stored) == sources(build(nb))


def missing_modules(nb: Notebook) -> list[str]:
    """The modules ``nb`` needs that are not importable here."""
    from importlib.util import find_spec

    return [m for m in (*NEEDS.get(nb.file, ()), *PLOT_NEEDS) if find_spec(m) is None]


def executed(nb: Notebook) -> str:
    """``nb`` executed against the local backend, scrubbed, as the text to store."""
    with tempfile.TemporaryDirectory(prefix="smdist-notebook-") as directory:
        workdir = Path(directory)
        notebook = execute(build(nb), workdir)
        return nbformat.writes(scrub(notebook, workdir))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--execute",
        action="store_true",
        help="run each notebook against the local backend and store it with its outputs",
    )
    parser.add_argument("names", nargs="*", help="notebook files (default: all)")
    args = parser.parse_args(argv)
    chosen = [nb for nb in NOTEBOOKS if not args.names or nb.file in args.names]
    unknown = set(args.names) - {nb.file for nb in NOTEBOOKS}
    if unknown:
        parser.error(f"unknown notebook {sorted(unknown)}; valid: {[n.file for n in NOTEBOOKS]}")
    if not args.execute:  # check only: writing un-executed notebooks would drop their outputs
        stale = [nb.file for nb in chosen if not sources_match(nb)]
        for name in stale:
            print(f"{name}: cells differ from the template; run with --execute")
        return 1 if stale else 0
    missing = {nb.file: missing_modules(nb) for nb in chosen if missing_modules(nb)}
    if missing:
        print(f"cannot execute, modules not installed: {missing}", file=sys.stderr)
        return 1
    for variable in AWS_VARIABLES:
        os.environ.pop(variable, None)
    for nb in chosen:
        started = time.monotonic()
        (HERE / nb.file).write_text(executed(nb))
        print(f"wrote {nb.file} executed ({time.monotonic() - started:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
