"""Which SageMaker training instance types exist.

smdist's catalogue knows the instances it has facts for. botocore's SageMaker service model, when
boto3 is installed, lists every type the CreateTrainingJob API accepts; it is consulted only for
names the catalogue does not know, because loading it costs far more than the catalogue lookup.
"""

from __future__ import annotations

import functools
import importlib.util

from smdist import catalog

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
    if name in LOCAL_INSTANCE_TYPES or catalog.instance(name) is not None:
        return True
    listed = botocore_training_instance_types()
    return listed is not None and name in listed


def suggestions(name: str) -> list[str]:
    return catalog.closest_instance_types(name, n=3)
