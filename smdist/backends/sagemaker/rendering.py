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
from smdist.backends.sagemaker.v3.session import sdk_version
from smdist.planning.host_view import SdkLine
from smdist.planning.plan import Plan

V3_CALLER = "sagemaker.train.ModelTrainer"
V3_CODE_DIR = "/opt/ml/input/data/code"  # the code channel: sm_train.sh runs the driver there
# What the training toolkit sets and v3's own environment.py does not: a job v3's Torchrun
# driver starts has none of them (README "What your script sees", Under SDK v3).
TOOLKIT_ONLY = (
    "SM_CURRENT_INSTANCE_GROUP", "SM_CURRENT_INSTANCE_GROUP_HOSTS",
    "SM_DISTRIBUTION_INSTANCE_GROUPS", "SM_FRAMEWORK_MODULE", "SM_FRAMEWORK_PARAMS",
    "SM_INSTANCE_GROUPS", "SM_INSTANCE_GROUPS_DICT", "SM_IS_HETERO", "SM_MODULE_DIR",
    "SM_MODULE_NAME", "SM_OUTPUT_INTERMEDIATE_DIR", "SM_USER_ARGS", "SM_USER_ENTRY_POINT",
)  # fmt: skip


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


def host_line(plan: Plan, line: str | None = None) -> SdkLine:
    """What SDK ``line``'s request (default: the installed one's) makes of each host's
    container, for ``smdist plan --hosts``."""
    if line is None:
        line = "v3" if sdk_v3_installed() else "v2"
    version = sdk_version()
    if line == "v2":
        return SdkLine(name=f"v2 (sagemaker {version})" if version else "v2")
    from smdist.backends.sagemaker.v3 import request as v3_request  # lazy: v3's modules for v3

    config = v3_request.plan_driver_config(plan)
    hyperparameters = v3_request.hyperparameters(plan)  # no model_dir, no sagemaker_* keys
    channels = (v3_request.CODE_CHANNEL, v3_request.DRIVERS_CHANNEL)
    name = f"v3 (sagemaker {version})" if version and version.startswith("3.") else "v3"
    if config.smdist:  # smdist's driver gives the rank the toolkit's environment, from the code
        toolkit = config.settings["toolkit_hyperparameters"]
        return SdkLine(
            name=name,
            driver="smdist's driver (SmdistDriver) starts the launcher, with the toolkit's SM_*",
            hyperparameters={**hyperparameters, **toolkit},
            module_dir=V3_CODE_DIR,
            channels=channels,
            working_directory=V3_CODE_DIR,
        )
    return SdkLine(
        name=name,
        driver=f"v3's Torchrun driver runs torchrun on every host; v3's environment.py sets "
        f"the SM_*: the toolkit's less {len(TOOLKIT_ONLY)} (SM_MODULE_DIR, SM_USER_ARGS, "
        "SM_FRAMEWORK_PARAMS, ...: --json lists them), plus v3's own (SM_MASTER_ADDR, "
        "SM_CURRENT_HOST_RANK, ...), not shown",
        hyperparameters=hyperparameters,
        channels=channels,
        dropped=TOOLKIT_ONLY,
        working_directory=V3_CODE_DIR,
    )
