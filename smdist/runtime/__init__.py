"""Code that runs inside the training container.

Standard library only at import time: this package is bundled into the uploaded source and
runs in SageMaker Deep Learning Containers (where smdist itself is not installed), under the
local backend, and under plain torchrun / mpirun / horovodrun. Framework imports (torch,
tensorflow) happen inside the functions that need them.
"""
