"""Stand-in for ``smdistributed.dataparallel.torch.torch_smddp``: importing it registers the
``smddp`` process-group backend (NCCL on GPU hosts, gloo on CPU), as the real module does.
What it does and does not reproduce: ``smdist.runtime.smddp``."""

from smdist.runtime.smddp import register_stand_in

SMDIST_STAND_IN = True
register_stand_in()
