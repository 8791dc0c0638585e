"""What an SDK v3 job cannot carry, found before any AWS call: each is a Problem naming the spec
field (``smdist submit`` exits 2; ``smdist validate`` and ``plan`` show them under SDK v3).

- names v3's container script cannot export, and a ``'`` in a hyperparameter (sm_train.sh);
- an image whose Python smdist's driver does not run on, where smdist's driver starts the job;
(what v3's ``Compute`` refuses in and beside ``instance_preferences`` CreateTrainingJob refuses
too: ``smdist.checks.capacity`` refuses it for every SDK line).
"""

from __future__ import annotations

import json

from smdist.backends.sagemaker.v3.driver_config import plan_driver_config
from smdist.checks.catalog import in_container_code, python_problems
from smdist.checks.v3_names import unexportable_name_problems
from smdist.errors import Problem
from smdist.planning.plan import Plan


def _quote_problems(plan: Plan) -> list[Problem]:
    # v3's scripts/environment.py writes every hyperparameter as `export SM_HP_X='<value>'`
    # (and all of them in SM_HPS) and sm_train.sh sources that file: a single quote in a value
    # ends the quoting, so the job breaks, or runs the rest of the value as shell code.
    return [
        Problem(
            f"hyperparameters.{name}",
            "contains a single quote, which SDK v3's container script (sm_train.sh) would run "
            "as shell code",
            value,
            "a value without ' (or submit through SDK v2: smdist[sagemaker-v2])",
        )
        for name, value in plan.hyperparameters.items()
        if "'" in json.dumps(value) or "'" in name
    ]


def carriage_problems(plan: Plan) -> list[Problem]:
    """Everything above for ``plan``; empty when SDK v3 carries the whole job."""
    spec = plan.spec
    problems = unexportable_name_problems(spec.inputs, plan.hyperparameters, "error")
    problems += _quote_problems(plan)
    # smdist's driver runs on the image's Python (a ready script's or smdist's launcher's need
    # of the same is refused with the container: catalog_checks.check_container).
    if plan_driver_config(plan).smdist and in_container_code(spec) is None:
        problems += python_problems(
            spec,
            "smdist's SDK v3 driver",
            "submit through SDK v2 (smdist[sagemaker-v2]): its toolkit starts the script",
        )
    return problems
