"""Which SageMaker training instance types exist.

The catalogue's snapshot of botocore's SageMaker service model lists every type the
CreateTrainingJob API accepts. The installed botocore, when there is one, is consulted only for
names the snapshot does not know (types newer than it), because loading it costs far more.
"""

import functools
import importlib.util

from smdist import catalog
from smdist.catalog import api

LOCAL_INSTANCE_TYPES = ("local", "local_gpu")  # SageMaker SDK local mode


@functools.lru_cache(maxsize=1)
def botocore_training_instance_types() -> frozenset[str] | None:
    """Every TrainingInstanceType in botocore's service model, or None without botocore."""
    if importlib.util.find_spec("botocore") is None:
        return None
    import botocore.session

    model = botocore.session.get_session().get_service_model("sagemaker")
    return frozenset(model.shape_for("TrainingInstanceType").enum)


def is_known_instance_type(name: str) -> bool:
    """A local-mode name, or a type CreateTrainingJob accepts: the catalogue's snapshot of the
    service model first, then (for types newer than the snapshot) the installed botocore."""
    if name in LOCAL_INSTANCE_TYPES or name in api.training_instance_types():
        return True
    info = catalog.instance(name)
    if info is not None and not info.training:
        return False
    listed = botocore_training_instance_types()
    return listed is not None and name in listed


def suggestions(name: str) -> list[str]:
    info = catalog.instance(name)
    if info is not None and not info.training:
        # An inference-only Neuron instance: the training instances with Neuron chips.
        neuron = (catalog.instance(t) for t in catalog.known_instance_types())
        return [i.instance_type for i in neuron if i and i.training and "neuron" in i.libraries]
    return catalog.closest_instance_types(name, n=3)


def check_instance_type(value: str) -> str:
    """``value`` if it is a training instance type; otherwise a ValueError that suggests one."""
    if is_known_instance_type(value):
        return value
    close = suggestions(value)
    hint = f"did you mean {' or '.join(repr(c) for c in close)}? " if close else ""
    prefix = (
        ""
        if value.startswith("ml.") or value in LOCAL_INSTANCE_TYPES
        else ("SageMaker training instance types start with 'ml.'; ")
    )
    raise ValueError(
        f"{value!r} is not a SageMaker training instance type; {prefix}{hint}"
        "see `smdist instances` for the catalogue"
    )
