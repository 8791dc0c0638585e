"""What SDK v3 redoes on every request, done once per test module: imported by a module, the
fixtures apply to it (``from .sdk_once import ...  # noqa: F401``)."""

from __future__ import annotations

import copy
from collections.abc import Iterator

import pytest
from sdk_lines.botocore_once import one_botocore_loader  # noqa: F401 - re-exported


@pytest.fixture(scope="module", autouse=True)
def sdk_config_schema_checked_once() -> Iterator[None]:
    """v3 validates its config against its config schema at every config lookup (a dozen per
    ``train()``) with ``jsonschema.validate``, which first checks that schema against JSON
    Schema's meta-schema: about a quarter of a second each time, most of a request's CPU. The
    schema is a constant, so that check is made once here; every config is still validated
    against it, and any other schema is checked as before."""
    import jsonschema
    from sagemaker.core.config.config_schema import SAGEMAKER_PYTHON_SDK_CONFIG_SCHEMA as schema

    validator = jsonschema.validators.validator_for(schema)
    validator.check_schema(schema)
    checked = copy.deepcopy(schema)  # what was checked: a changed schema is checked again
    check = validator.check_schema.__func__

    def check_schema(cls, given, *args, **kwargs) -> None:
        if given is schema and given == checked:
            return
        check(cls, given, *args, **kwargs)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(validator, "check_schema", classmethod(check_schema))
        yield
