"""Stand-in for ``smdistributed.dataparallel.torch.parallel.distributed``: the library's
``DistributedDataParallel`` (older API) as torch's, over the smddp process group."""

import torch
from torch.nn.parallel import DistributedDataParallel as _TorchDDP

SMDIST_STAND_IN = True


class DistributedDataParallel(_TorchDDP):
    """``DistributedDataParallel(module, device_ids=None, broadcast_buffers=True,
    bucket_cap_mb=25)`` as the library took it. On a CPU host (emulated hosts without GPUs)
    ``device_ids`` is dropped: torch refuses it for a CPU module."""

    def __init__(self, module, device_ids=None, broadcast_buffers=True, bucket_cap_mb=25, **kw):  # noqa: ANN001, ANN003
        on_cpu = all(p.device.type == "cpu" for p in module.parameters())
        if on_cpu or not torch.cuda.is_available():
            device_ids = None
        super().__init__(
            module,
            device_ids=device_ids,
            broadcast_buffers=broadcast_buffers,
            bucket_cap_mb=bucket_cap_mb,
            **kw,
        )
