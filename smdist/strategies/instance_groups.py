"""The strategies whose runner SageMaker's training toolkit confines to instance groups of a
heterogeneous cluster (``sagemaker_training.environment``: MPI, PyTorch DDP / torch_distributed
and SMDataParallel honour ``sagemaker_distribution_instance_groups``)."""

from pydantic import Field

from smdist.spec.base import StrictModel


class InstanceGroupsMixin(StrictModel):
    instance_groups: list[str] = Field(
        [],
        description="heterogeneous clusters: the one instance group that runs the distributed "
        "program (the other groups run the script once per host)",
    )
