"""Code that runs inside the training container.

Standard library only at import time: this package is bundled into the uploaded source and
runs in SageMaker Deep Learning Containers (where smdist itself is not installed), under the
local backend, and under plain torchrun / mpirun / horovodrun. Framework imports (torch,
tensorflow) happen inside the functions that need them.

It runs on the image's own Python, so it keeps to Python 3.8 (``PYTHON_FLOOR``): no syntax and
no run-time construct newer than that (``X | Y``, ``list[int]`` outside annotations,
``zip(strict=)``, ``str.removeprefix``...). Every interpreter of the range is tested
(tests/integration/test_runtime_pythons.py); the catalogue refuses images whose Python is
outside it for the jobs that run this code (``smdist.checks.catalog``).
"""

import sys

# 3.8: every PyTorch image from 1.9 and every TensorFlow image from 2.6. Below are only
# PyTorch 1.8 (3.6) and TensorFlow 2.3-2.5 (3.7), long out of support.
PYTHON_FLOOR = (3, 8)
PYTHON_CEILING = (3, 13)  # the newest Python of any image in the catalogue, and tested
PYTHON_RANGE = "Python {}.{}-{}.{}".format(*PYTHON_FLOOR, *PYTHON_CEILING)

if sys.version_info[:2] < PYTHON_FLOOR:
    # Said here, before a submodule fails with a SyntaxError (an image named by code.image_uri
    # is not checked against the catalogue).
    raise RuntimeError(
        "smdist's in-container code runs on {}; this is Python {}.{}: use a training image "
        "with a newer Python".format(PYTHON_RANGE, *sys.version_info[:2])
    )
