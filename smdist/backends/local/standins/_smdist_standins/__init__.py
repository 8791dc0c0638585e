"""The finder behind smdist's stand-ins for SageMaker's libraries (see
``smdist.backends.local.standins``). Standard library only: it runs at interpreter start."""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
# Real module name -> the stand-in file here (None: a package that only holds the others).
MODULES: dict[str, str | None] = {
    "smdistributed": None,
    "smdistributed.dataparallel": None,
    "smdistributed.dataparallel.torch": None,
    "smdistributed.dataparallel.torch.torch_smddp": "torch_smddp",
    "smdistributed.dataparallel.torch.distributed": "dataparallel_distributed",
    "smdistributed.dataparallel.torch.parallel": None,
    "smdistributed.dataparallel.torch.parallel.distributed": "dataparallel_ddp",
    "smdistributed.modelparallel": None,
    "smdistributed.modelparallel.torch": "modelparallel_torch",
    "smdistributed.modelparallel.tensorflow": "modelparallel_tensorflow",
    "torch.sagemaker": "torch_sagemaker",
}


class _Namespace(importlib.abc.Loader):
    """An empty package: its submodules come from this finder too."""

    def create_module(self, spec):  # noqa: ANN001, ANN201 - the Loader protocol
        return None

    def exec_module(self, module) -> None:  # noqa: ANN001
        module.SMDIST_STAND_IN = True


class StandInFinder(importlib.abc.MetaPathFinder):
    """Answers SageMaker's library names; last on ``sys.meta_path``, so real ones win."""

    def find_spec(self, fullname, path=None, target=None):  # noqa: ANN001, ANN201
        if fullname not in MODULES:
            return None
        stem = MODULES[fullname]
        if stem is None:
            spec = importlib.machinery.ModuleSpec(fullname, _Namespace(), is_package=True)
            spec.submodule_search_locations = []
            return spec
        return importlib.util.spec_from_file_location(fullname, HERE / f"{stem}.py")


def install() -> None:
    if not any(isinstance(finder, StandInFinder) for finder in sys.meta_path):
        sys.meta_path.append(StandInFinder())
