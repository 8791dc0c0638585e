"""The ``sm_drivers`` channel of an SDK v3 job, and smdist's driver as a v3 ``distributed=``.

v3 ships its drivers with every job: its ``container_drivers`` directory, the ``distributed=``
config's driver over ``distributed_drivers/``, and three files rendered for the job
(``sm_train.sh``, ``sourcecode.json``, ``distributed.json``). ``write_drivers`` lays out the same
directory the way ``ModelTrainer.train()`` does, from v3's own files and templates, so the
SageMaker backend can upload it once under a content-addressed prefix instead of once per job.

``SmdistDriver`` is a v3 ``DistributedConfig``: ModelTrainer copies its ``driver_dir``
(``smdist/drivers``) into the channel and ``sm_train.sh`` runs ``smdist_driver.py`` on every
host. The class is built on first use: this module imports with SDK v2 installed.
"""

from __future__ import annotations

import functools
import json
import shutil
from pathlib import Path
from typing import Any

from smdist.backends.sagemaker.v3_request import DriverConfig, plan_driver_config
from smdist.planning import Plan

DRIVER_DIR = Path(__file__).resolve().parents[2] / "drivers"
TARBALL = "sourcedir.tar.gz"


@functools.cache
def smdist_driver_class() -> type:
    from sagemaker.train.distributed import DistributedConfig

    class SmdistDriver(DistributedConfig):
        """smdist's driver: the training toolkit's launch (TF_CONFIG, or its mpirun) for the
        strategies v3 has no launcher for."""

        launcher: str
        process_count_per_node: int
        mpi_options: str = ""
        framework: str = "pytorch"
        toolkit_hyperparameters: dict[str, str] = {}

        @property
        def driver_dir(self) -> str:
            return str(DRIVER_DIR)

        @property
        def driver_script(self) -> str:
            return "smdist_driver.py"

    return SmdistDriver


def distributed_object(config: DriverConfig) -> Any:
    """The v3 ``distributed=`` object for a driver config."""
    if config.smdist:
        return smdist_driver_class()(**config.settings)
    from sagemaker.train.distributed import SMP, Torchrun

    smp = config.settings.get("smp")
    return Torchrun(
        process_count_per_node=config.settings["process_count_per_node"],
        smp=SMP(**smp) if smp else None,
    )


def source_code(plan: Plan, code_uri: str) -> Any:
    from sagemaker.core.training.configs import SourceCode

    # ignore_patterns=[]: the bundle is already smdist's exact file list.
    return SourceCode(source_dir=code_uri, entry_script=plan.entry_point, ignore_patterns=[])


def write_drivers(plan: Plan, code_uri: str, target: Path) -> None:
    """``target`` as v3 fills its ``sm_drivers`` channel for ``plan`` (code at ``code_uri``)."""
    import sagemaker.core.utils.install_requirements as install_requirements
    from sagemaker.train import templates
    from sagemaker.train.constants import SM_CODE_CONTAINER_PATH, SM_DRIVERS_LOCAL_PATH

    config = plan_driver_config(plan)
    distributed = distributed_object(config)
    bytecode = shutil.ignore_patterns("__pycache__", "*.pyc")
    shutil.copytree(SM_DRIVERS_LOCAL_PATH, target, dirs_exist_ok=True, ignore=bytecode)
    shutil.copy2(install_requirements.__file__, target / "scripts" / "install_requirements.py")
    shutil.copytree(
        distributed.driver_dir, target / "distributed_drivers", dirs_exist_ok=True, ignore=bytecode
    )
    working_dir = f"cd {SM_CODE_CONTAINER_PATH} \n"
    if code_uri.endswith(".tar.gz"):
        working_dir += f"tar -xzf {code_uri.rsplit('/', 1)[-1]} \n"
    script = templates.TRAIN_SCRIPT_TEMPLATE.format(
        working_dir=working_dir,
        install_requirements="",
        execute_driver=templates.EXEUCTE_DISTRIBUTED_DRIVER.format(
            driver_name=type(distributed).__name__, driver_script=distributed.driver_script
        ),
    )
    with open(target / "sm_train.sh", "w", newline="\n") as handle:
        handle.write(script)
    (target / "sourcecode.json").write_text(json.dumps(source_code(plan, code_uri).model_dump()))
    (target / "distributed.json").write_text(json.dumps(distributed.model_dump()))
