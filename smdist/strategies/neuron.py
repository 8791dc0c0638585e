"""TensorFlow does not train on AWS Neuron chips (Trainium, Inferentia) through these strategies.

Neuron instances train with PyTorch through torch-neuronx and the torch_distributed launcher;
there is no TensorFlow training container for them, so MultiWorkerMirroredStrategy, Horovod and
SMP v1 with TensorFlow must be refused there before a job is created.
"""

from smdist import catalog
from smdist.errors import Problem
from smdist.spec.cluster import Cluster

NEURON_ACCELERATORS = {"trainium": "Trainium", "inferentia": "Inferentia"}
# Instance families by name, for types newer than the catalogue.
_NEURON_FAMILIES = (("trn", "trainium"), ("inf", "inferentia"))


def neuron_accelerator(instance_type: str) -> str | None:
    """'trainium' or 'inferentia' when ``instance_type`` has Neuron chips, else None."""
    info = catalog.instance(instance_type)
    if info is not None:
        return info.accelerator if info.accelerator in NEURON_ACCELERATORS else None
    family = instance_type.split(".")[1] if instance_type.count(".") == 2 else ""
    for prefix, accelerator in _NEURON_FAMILIES:
        if family.startswith(prefix):
            return accelerator
    return None


def refuse_tensorflow_on_neuron(cluster: Cluster, label: str) -> list[Problem]:
    """An error naming cluster.instance_type when ``label`` (a TF strategy) would run on Neuron."""
    accelerator = neuron_accelerator(cluster.instance_type)
    if accelerator is None:
        return []
    return [
        Problem(
            "cluster.instance_type",
            f"{label} with TensorFlow does not run on {NEURON_ACCELERATORS[accelerator]} "
            f"instances ({cluster.instance_type}): there is no TensorFlow training container "
            "for AWS Neuron chips",
            cluster.instance_type,
            "a GPU or CPU instance type such as ml.g5.xlarge, ml.p4d.24xlarge or ml.c5.xlarge; "
            "or PyTorch (pytorch_ddp with torch_distributed) on Trainium",
        )
    ]
