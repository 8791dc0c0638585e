"""What the installed SDK line makes of a plan: the call, its launch argument and the
hyperparameters, as ``smdist plan`` shows them.

Under SDK v3 a job is a ``ModelTrainer`` whose ``distributed=`` driver starts the ranks, and
its hyperparameters are the user's only (``v3_request.hyperparameters``); under v2 it is an
estimator with a ``distribution`` and the toolkit's ``sagemaker_*`` hyperparameters. Both are
rendered from the same plan, by the functions that build the requests.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from smdist.backends.sagemaker import sdk_v3_installed
from smdist.planning.plan import Plan

V3_CALLER = "sagemaker.train.ModelTrainer"


@dataclass(frozen=True)
class SdkRendering:
    line: str  # "v3" or "v2"
    caller: str  # the SDK class the job is for
    launch_argument: str  # "distributed" (v3) or "distribution" (v2)
    launch_value: dict[str, Any]
    hyperparameters: dict[str, str]  # as CreateTrainingJob carries them

    def to_dict(self) -> dict[str, Any]:
        return {
            "sdk": self.line,
            "estimator": self.caller,
            self.launch_argument: self.launch_value,
            "hyperparameters": self.hyperparameters,
        }


def sdk_rendering(plan: Plan, line: str | None = None) -> SdkRendering:
    """``plan`` under SDK ``line`` (default: the installed one; v2 when none is installed)."""
    if line is None:
        line = "v3" if sdk_v3_installed() else "v2"
    if line == "v2":
        return SdkRendering(
            "v2", plan.estimator, "distribution", plan.distribution, plan.wire_hyperparameters
        )
    from smdist.backends.sagemaker.v3 import request as v3_request  # lazy: v3's modules for v3

    config = v3_request.plan_driver_config(plan)
    return SdkRendering(
        "v3",
        V3_CALLER,
        "distributed",
        {config.name: config.settings},
        v3_request.hyperparameters(plan),
    )
