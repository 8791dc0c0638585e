"""Train with SageMaker Distributed Data Parallel (SMDDP): DDP on the ``smddp`` backend.

Since SMDDP 1.4 the library is a torch.distributed backend: a DDP script imports it and asks
for ``init_process_group(backend="smddp")``; nothing else changes. This entry point is exactly
that: ``pytorch_ddp.py`` run on the smddp backend. SageMaker starts it with mpirun (the
``smdistributed.dataparallel`` distribution), one process per GPU; torchrun works too.

Inside SageMaker's PyTorch containers the real library provides the backend. Anywhere else
``smdist.runtime.smddp`` registers a stand-in of the same name over NCCL (GPUs) or gloo (CPUs)
and says so in the log, so the script runs unchanged under the local backend or a plain
``mpirun -np 2``.
"""

from __future__ import annotations

import sys
from pathlib import Path

from smdist.runtime.smddp import BACKEND_NAME, use_smddp
from smdist.runtime.torch_training import run_entry_point

try:  # the sibling script: found beside this file in a job's code directory
    import pytorch_ddp
except ImportError:  # run as a module of the installed package
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import pytorch_ddp


def main(argv: list[str] | None = None) -> int:
    use_smddp()  # the real smdistributed.dataparallel.torch.torch_smddp where installed
    return pytorch_ddp.main(argv, backend=BACKEND_NAME)


if __name__ == "__main__":
    run_entry_point(lambda: main(sys.argv[1:]))
