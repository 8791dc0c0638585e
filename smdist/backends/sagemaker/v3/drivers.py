"""The ``sm_drivers`` channel of an SDK v3 job, and smdist's driver as a v3 ``distributed=``.

v3 ships its drivers with every job: its ``container_drivers`` directory, the ``distributed=``
config's driver over ``distributed_drivers/``, and three files rendered for the job
(``sm_train.sh``, ``sourcecode.json``, ``distributed.json``). ``write_drivers`` lays out the same
directory the way ``ModelTrainer.train()`` does, from v3's own files and templates, so the
SageMaker backend can upload it once under a content-addressed prefix instead of once per job.

v3 installs a requirements file only when ``SourceCode.requirements`` names it; SDK v2's toolkit
installs the code's ``requirements.txt`` whenever there is one. So when the shipped code has a
top-level ``requirements.txt`` smdist names it, and sm_train.sh installs it as v3 renders that.

``SmdistDriver`` is a v3 ``DistributedConfig``: ModelTrainer copies its ``driver_dir``
(``smdist/drivers``) into the channel and ``sm_train.sh`` runs ``smdist_driver.py`` on every
host. The class is built on first use: this module imports with SDK v2 installed.
"""

from __future__ import annotations

import functools
import json
import shutil
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from smdist.backends.sagemaker.v3.request import DriverConfig, plan_driver_config
from smdist.packaging import bundle as packaging
from smdist.planning.plan import Plan

DRIVER_DIR = Path(__file__).resolve().parents[3] / "drivers"  # smdist/drivers
TARBALL = "sourcedir.tar.gz"
REQUIREMENTS = "requirements.txt"  # what SDK v2's toolkit installs from the code by itself


@functools.cache
def smdist_driver_class() -> type:
    from sagemaker.train.distributed import DistributedConfig

    class SmdistDriver(DistributedConfig):
        """smdist's driver: the training toolkit's launch (TF_CONFIG, or its mpirun) for the
        strategies v3 has no launcher for."""

        launcher: str
        process_count_per_node: int
        launch: dict[str, Any] = {}  # host_commands.Launch: how the runner starts the ranks
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


def requirements_file(files: Iterable[str]) -> str | None:
    """``requirements.txt`` when the shipped code has one at its top, else None."""
    return REQUIREMENTS if REQUIREMENTS in set(files) else None


def shipped_requirements(plan: Plan, files: Iterable[str] | None = None) -> str | None:
    """``requirements_file`` of the code's file list (``files``, else the bundle's)."""
    if files is None:
        files = [arcname for _, arcname in packaging.bundle(plan)]
    return requirements_file(files)


def source_code(plan: Plan, code_uri: str, requirements: str | None = None) -> Any:
    """v3's SourceCode. With ``requirements`` sm_train.sh pip-installs that file of the code
    before the driver starts, as SDK v2's toolkit installs a requirements.txt by itself."""
    from sagemaker.core.training.configs import SourceCode

    # ignore_patterns=[]: the bundle is already smdist's exact file list.
    return SourceCode(
        source_dir=code_uri,
        entry_script=plan.entry_point,
        requirements=requirements,
        ignore_patterns=[],
    )


def write_drivers(
    plan: Plan, code_uri: str, target: Path, files: Iterable[str] | None = None
) -> None:
    """``target`` as v3 fills its ``sm_drivers`` channel for ``plan`` (code at ``code_uri``,
    holding ``files``: default, the bundle's)."""
    import sagemaker.core.utils.install_requirements as install_requirements
    from sagemaker.train import templates
    from sagemaker.train.constants import SM_CODE_CONTAINER_PATH, SM_DRIVERS_LOCAL_PATH

    requirements = shipped_requirements(plan, files)
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
        install_requirements=templates.INSTALL_REQUIREMENTS.format(requirements_file=requirements)
        if requirements
        else "",
        execute_driver=templates.EXEUCTE_DISTRIBUTED_DRIVER.format(
            driver_name=type(distributed).__name__, driver_script=distributed.driver_script
        ),
    )
    with open(target / "sm_train.sh", "w", newline="\n") as handle:
        handle.write(script)
    code = source_code(plan, code_uri, requirements)
    (target / "sourcecode.json").write_text(json.dumps(code.model_dump()))
    (target / "distributed.json").write_text(json.dumps(distributed.model_dump()))
