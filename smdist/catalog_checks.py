"""Checks of a job against what SageMaker offers: its training containers and its API limits.

A framework_version no container has, a py_version that image was not built for, or a strategy
whose library (smddp, SMP, Horovod) is not installed in the image would fail only after the job
was created and the image pulled. Counts and lengths the CreateTrainingJob API states (tags,
subnets, input channels, image URI) would be refused by the API only after the code upload.
Both are answered here from the catalogue, before anything runs. Nothing here performs I/O.
"""

from __future__ import annotations

from smdist.catalog import api, images
from smdist.errors import Problem
from smdist.spec import JobSpec

# What each library is called in messages, and the strategy kinds that need it.
_LIBRARY_LABELS = {
    "smddp": "SMDDP (smdistributed.dataparallel)",
    "smp_v1": "SMP v1 (smdistributed.modelparallel)",
    "smp_v2": "SMP v2 (torch.sagemaker)",
    "horovod": "Horovod",
}


def required_library(spec: JobSpec) -> str | None:
    """The library the strategy imports from the training image, if any."""
    kind = spec.strategy.kind
    if kind == "sddp":
        return "smddp"
    if kind == "sdmp":
        return f"smp_v{getattr(spec.strategy, 'version', 1)}"
    if kind == "horovod":
        return "horovod"
    return None


def check_container(spec: JobSpec) -> list[Problem]:
    """framework_version / py_version name a training image that carries the strategy's library.

    Skipped when ``code.image_uri`` names the image, and when no framework_version is given.
    """
    code = spec.code
    version = code.framework_version
    if code.image_uri is not None or version is None:
        return []
    framework = code.framework or spec.strategy.framework
    library = required_library(spec)
    repository = images.repository_for(framework, library)
    image = images.find_image(repository, version)
    available = images.training_images(repository)
    if image is None:
        return [
            Problem(
                "code.framework_version",
                f"no SageMaker {framework} training container ({repository}) has version {version}",
                version,
                ", ".join(i.version for i in available) + "; or set code.image_uri",
            )
        ]
    problems = []
    if code.py_version is not None and code.py_version not in image.py_versions:
        problems.append(
            Problem(
                "code.py_version",
                f"the {repository}:{image.version} image is built for "
                f"{', '.join(image.py_versions)} only",
                code.py_version,
                ", ".join(image.py_versions),
            )
        )
    if library is not None and library not in image.libraries:
        label = _LIBRARY_LABELS[library]
        carrying = [i.version for i in available if library in i.libraries]
        problems.append(
            Problem(
                "code.framework_version",
                f"the {repository}:{image.version} image does not carry {label}; "
                "the job needs code.image_uri naming an image that has it installed",
                version,
                (f"a version whose image has it: {', '.join(carrying)}; " if carrying else "")
                + "or code.image_uri",
            )
        )
    return problems


def check_api_limits(spec: JobSpec) -> list[Problem]:
    """Counts and lengths CreateTrainingJob states for tags, VPC lists, channels and the image."""
    problems = _check_tags(spec)
    counted = (
        ("inputs", len(spec.inputs), "input_channels", "input channels"),
        ("network.subnets", len(spec.network.subnets), "subnets", "subnets"),
        (
            "network.security_group_ids",
            len(spec.network.security_group_ids),
            "security_group_ids",
            "security groups",
        ),
    )
    for path, count, name, what in counted:
        limit = api.field(name).limit
        if count > limit:
            problems.append(
                Problem(
                    path, f"{count} {what}; SageMaker accepts at most {limit}", None, f"1-{limit}"
                )
            )
    image_uri = spec.code.image_uri
    image_limit = api.field("training_image").limit
    if image_uri is not None and not 1 <= len(image_uri) <= image_limit:
        problems.append(
            Problem(
                "code.image_uri",
                f"is {len(image_uri)} characters; SageMaker accepts 1-{image_limit}",
                None,
                "an ECR image URI such as 123456789012.dkr.ecr.us-west-2.amazonaws.com/repo:tag",
            )
        )
    return problems


def _check_tags(spec: JobSpec) -> list[Problem]:
    problems = []
    limit = api.field("tags").limit
    if len(spec.tags) > limit:
        problems.append(
            Problem(
                "tags",
                f"{len(spec.tags)} tags; SageMaker accepts at most {limit}",
                None,
                f"at most {limit}",
            )
        )
    key_field, value_field = api.field("tag_key"), api.field("tag_value")
    allowed = "letters, digits, spaces and _ . : / = + - @"
    for key, value in spec.tags.items():
        if not key_field.matches(key) or key.lower().startswith("aws:"):
            problems.append(
                Problem(
                    f"tags.{key}",
                    "is not a usable tag key",
                    key,
                    f"{key_field.minimum}-{key_field.maximum} {allowed}, not starting with aws:",
                )
            )
        if not value_field.matches(value):
            problems.append(
                Problem(
                    f"tags.{key}",
                    "value is not a usable tag value",
                    value,
                    f"at most {value_field.maximum} {allowed}",
                )
            )
    return problems
