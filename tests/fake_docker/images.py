"""The images the fake Docker CLI plays: what their Dockerfiles set, on this machine's python.

The PyTorch training DLC for SageMaker: aws/deep-learning-containers
``docker/pytorch/Dockerfile.cpu``, stage ``sagemaker`` (with its base ``runtime-base``), as
built for ``pytorch:2.13-cpu-amzn2023-sagemaker`` (``.github/config/image/pytorch/
2.13-sagemaker-cpu.yml``: torch 2.13.0, Python 3.12; its lock file holds sagemaker-training
5.1.1 and sagemaker-pytorch-training 3.0.0). Its ``ENV`` lines, PATH aside (the fake puts the
image python's directory first, as ``/opt/venv/bin`` is there): below. Not played: its
``ENTRYPOINT ["bash", "-m", "start_with_right_hostname.sh"]`` (for ``train`` it compiles an
LD_PRELOAD library that makes gethostname() answer the SageMaker host name, then runs
``train``; here the hostname stays the container id, which every container's /etc/hosts
resolves), ``WORKDIR /workspace`` (the fake's containers start in ``/``: the fake makes no
directory outside ``/opt/ml`` on the host) and ``CMD ["/bin/bash"]`` (local mode always gives
a command or an entrypoint).
"""

from __future__ import annotations

from .docker import FakeImage

PYTORCH_TRAINING_ENV = {
    # runtime-base
    "PYTHONDONTWRITEBYTECODE": "1",
    "PYTHONUNBUFFERED": "1",
    "PYTHONIOENCODING": "UTF-8",
    "LANG": "C.UTF-8",
    "LC_ALL": "C.UTF-8",
    "DLC_CONTAINER_TYPE": "training",
    # sagemaker
    "SAGEMAKER_TRAINING_MODULE": "sagemaker_pytorch_container.training:main",
    "UV_PROJECT_ENVIRONMENT": "/opt/venv",
    "LD_LIBRARY_PATH": "/opt/amazon/openmpi/lib:/usr/local/lib:",
}


def pytorch_training_image(python: str) -> FakeImage:
    """The PyTorch training DLC, its python played by ``python`` (a virtual environment with
    torch, sagemaker-training and sagemaker-pytorch-training: ``.ci/install-dlc-standin``)."""
    return FakeImage(python=str(python), env=dict(PYTORCH_TRAINING_ENV), command=["/bin/bash"])
