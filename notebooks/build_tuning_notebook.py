"""Write ``06_tuning.ipynb``: a search on this machine first, then the same spec on SageMaker.

The notebook tunes a PyTorch DDP job's learning rate and batch size with ``smdist.tune``: three
trials (a small search, each trial being a whole distributed job), each a real local job on two
emulated hosts, shown as a table and a plot; then the same spec as a SageMaker tuning job (sent
when AWS settings are present, otherwise its dry-run request). Stored executed, like the
strategy notebooks: after changing the cells run
``python notebooks/build_tuning_notebook.py --execute`` (needs torch, optuna, pandas and
matplotlib). ``tests/integration/test_tuning_notebook.py`` checks the stored cells equal these
and the stored outputs have a fresh run's shape.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook
from notebook_run import AWS_VARIABLES, execute, scrub

HERE = Path(__file__).resolve().parent
FILE = "06_tuning.ipynb"
NEEDS = ("torch", "optuna", "pandas", "matplotlib")

_SETUP = """\
import json
import os
from urllib.parse import urlparse

import smdist

learning_rate = {"type": "continuous", "min": 1e-4, "max": 0.1, "scaling": "Logarithmic"}
spec = smdist.JobSpec(
    name="ddp-tuning",
    strategy=smdist.PyTorchDDP(),
    cluster=smdist.Cluster(instance_type="ml.g5.xlarge", instance_count=2),
    region="us-west-2",
    code={"framework_version": "2.13.0", "py_version": "py312"},
    hyperparameters={"epochs": 1, "max_steps": 12, "log_every": 4},
    tuning={
        "objective": {"metric": "train:loss", "type": "Minimize"},  # the [metrics] lines
        "parameters": {
            "learning_rate": learning_rate,
            "batch_size": {"type": "categorical", "values": [32, 64]},
        },
        "strategy": "Bayesian",
        "max_jobs": 3,  # each trial is a whole job: raise it for a real search
        "max_parallel_jobs": 2,
        "random_seed": 1,
    },
)
# Submitting needs a role and credentials; without them the last cell stays offline.
aws_ready = bool(os.environ.get("SMDIST_ROLE")) and bool(
    os.environ.get("AWS_PROFILE") or os.environ.get("AWS_ACCESS_KEY_ID")
)"""

_LOCAL = """\
result = smdist.tune(spec, options={"hosts": 2, "processes_per_host": 1})
best = result.best
print(f"{result.name}: {result.status}, {len(result.trials)} trials")
print(f"best: trial {best.number}, train:loss={best.objective:.4f}, values {best.values}")
print("model:", os.path.relpath(urlparse(best.model).path))"""

_SAGEMAKER = """\
from smdist.backends.sagemaker import tuning as sagemaker_tuning

if aws_ready:
    tuning_job = smdist.tune(spec, backend="sagemaker", wait=False)
    print(tuning_job.name, tuning_job.status)
else:
    print("No AWS settings: not submitting. The tuning job's request would hold:")
    request = sagemaker_tuning.dry_run(smdist.plan(spec)).request
    definition = request["TrainingJobDefinition"]
    print(json.dumps(request["HyperParameterTuningJobConfig"]["ParameterRanges"], indent=1))
    print("instances per trial:", definition["ResourceConfig"]["InstanceCount"])
    print("fixed:", sorted(definition["StaticHyperParameters"]))"""


def cells() -> list:
    return [
        new_markdown_cell(
            "# Tuning a distributed job: here first, then on SageMaker\n\n"
            "The job's `tuning:` section says what to search. `smdist.tune` runs the search on "
            "this machine, every trial a real local job on two emulated hosts, with Optuna "
            "choosing the values and the objective read from each trial's log with the metric "
            "definitions SageMaker would use. The same spec then goes to SageMaker as a tuning "
            "job whose every trial is the job `smdist submit` sends, distribution included."
        ),
        new_code_cell(_SETUP),
        new_markdown_cell("## The search on this machine: 3 trials × 2 emulated hosts"),
        new_code_cell(_LOCAL),
        new_code_cell('result.dataframe().drop(columns=["name", "model"])'),
        new_code_cell("import matplotlib.pyplot as plt\n\nresult.plot()\nplt.show()"),
        new_markdown_cell(
            "## The same spec as a SageMaker tuning job\n\nSent when AWS settings are present "
            "(`SMDIST_ROLE` and credentials); the dry run shows the request either way. Its "
            "trials run the strategy as `smdist submit` does: the fixed hyperparameters are "
            "submit's, the distribution's `sagemaker_*` values included."
        ),
        new_code_cell(_SAGEMAKER),
    ]


def build() -> nbformat.NotebookNode:
    notebook = new_notebook(cells=cells())
    notebook.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    for index, cell in enumerate(notebook.cells):
        cell["id"] = f"cell-{index}"
    return notebook


def sources(notebook: nbformat.NotebookNode) -> list[tuple[str, str, str]]:
    return [(cell.id, cell.cell_type, cell.source) for cell in notebook.cells]


def executed() -> str:
    with tempfile.TemporaryDirectory(prefix="smdist-notebook-") as directory:
        workdir = Path(directory)
        return nbformat.writes(scrub(execute(build(), workdir), workdir))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--execute", action="store_true", help="run it and store its outputs")
    args = parser.parse_args(argv)
    path = HERE / FILE
    if not args.execute:
        stored = nbformat.read(path, as_version=4) if path.exists() else None
        if stored is None or sources(stored) != sources(build()):
            print(f"{FILE}: cells differ from the template; run with --execute")
            return 1
        return 0
    from importlib.util import find_spec

    missing = [name for name in NEEDS if find_spec(name) is None]
    if missing:
        print(f"cannot execute, modules not installed: {missing}", file=sys.stderr)
        return 1
    for variable in AWS_VARIABLES:
        os.environ.pop(variable, None)
    started = time.monotonic()
    path.write_text(executed())
    print(f"wrote {FILE} executed ({time.monotonic() - started:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
