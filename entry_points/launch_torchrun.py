"""SageMaker entry point for the pytorch_ddp strategy in ``torchrun`` launcher mode.

SageMaker runs this once per host; it starts torchrun, which starts the training script named
by the ``SMDIST_TRAINING_SCRIPT`` variable once per GPU (once on a CPU host). See
``smdist.runtime.launcher`` for the arguments it understands.
"""

import sys

from smdist.runtime import launcher

if __name__ == "__main__":
    sys.exit(launcher.main())
