"""Checks of a job against the counts and lengths CreateTrainingJob states (tags, VPC lists,
input channels, image URI), answered from the catalogue before the code upload. No I/O."""

from __future__ import annotations

from smdist.catalog import api
from smdist.errors import Problem
from smdist.spec.job import JobSpec


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
