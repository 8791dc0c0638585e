"""SageMaker local mode: SageMaker's own training containers on this machine, via Docker.

The SDK's local mode (``instance_type="local"`` / ``"local_gpu"``) runs the Deep Learning
Container images with Docker Compose, one container per instance. smdist runs it through
whichever SDK line is installed, as the ``sagemaker`` backend does: SDK v2's estimator with a
``LocalSession``, or SDK v3's ``ModelTrainer(training_mode=Mode.LOCAL_CONTAINER)``.

Before anything is staged: the SDK line, Docker and its daemon, the Docker Compose that SDK
line accepts (its own check), and for GPU types Docker's NVIDIA runtime and enough GPUs.

The job runs in a supervising process of its own (``supervisor``) and lives in
``<root>/jobs/<name>/`` as a local job does: ``job.json``, ``logs/job.log``, and ``output/``
for ``model.tar.gz`` unless ``output_dir`` says where. So ``smdist submit --backend
sagemaker-local`` returns once the job has started, as a SageMaker submit does, and ``smdist
status`` / ``logs`` / ``stop NAME`` work on it; ``--wait`` and ``fit`` follow it.

Credentials: with long-lived keys the SDKs write ``AWS_ACCESS_KEY_ID`` and
``AWS_SECRET_ACCESS_KEY`` in plain text into the compose file they generate. smdist does not
let them unless asked (``pass_aws_credentials=True``), and then the file is removed when the
job ends. Without them the containers get no AWS credentials (enough for file:// data).

Options: ``pass_aws_credentials``, ``region``, ``boto_session``, ``bucket``, ``role``,
``output_dir``, ``root`` (default ``.smdist``), ``grace`` (seconds from a stop to SIGKILL,
default 30), ``container_config`` (Compose service settings for every container) and
``shm_size`` (its ``shm_size``), ``poll_seconds``.
"""

from __future__ import annotations

from smdist.backends.lazy_exports import lazy_exports

# The package stays light (the command line reads the options of every backend).
_EXPORTS = ("LocalModeJob", "check_machine", "launch", "local_instance_type")
__getattr__ = lazy_exports(__name__, dict.fromkeys(_EXPORTS, "starting"))
__all__ = list(_EXPORTS)
