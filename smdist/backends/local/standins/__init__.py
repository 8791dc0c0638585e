"""SageMaker's own libraries under their real import names, for the emulated hosts only.

Scripts written for SageMaker import ``smdistributed.dataparallel.torch.torch_smddp``,
``smdistributed.dataparallel.torch.distributed`` (SMDDP's older API),
``smdistributed.modelparallel.torch`` (SMP v1) or ``torch.sagemaker`` (SMP v2). Those libraries
exist only in AWS's Deep Learning Containers. The local backend puts this directory on the
``PYTHONPATH`` of every emulated host's processes: its ``sitecustomize`` appends a finder to the
end of ``sys.meta_path`` that answers those names with smdist's stand-ins
(``smdist.runtime.smddp``, ``smdist.runtime.smp``, ``smdist.runtime.smp_v2``), so

- the script runs unchanged;
- a real library, where installed, always wins: the finder is asked only after every other
  finder found nothing;
- nothing of this reaches a SageMaker job: this directory is not in the code bundle (only
  ``smdist/runtime`` is), so in the container the real libraries answer.

Hand-written because it is smdist's own: no library maps module names for one set of processes.
"""

from __future__ import annotations

from pathlib import Path

SITE_DIR = Path(__file__).resolve().parent  # what goes on the emulated hosts' PYTHONPATH

__all__ = ["SITE_DIR"]
