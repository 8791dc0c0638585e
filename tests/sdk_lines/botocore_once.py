"""One botocore loader per test module: imported by a module, the fixture applies to it."""

from __future__ import annotations

import functools
from collections.abc import Iterator

import pytest


@pytest.fixture(scope="module", autouse=True)
def one_botocore_loader() -> Iterator[None]:
    """Every botocore session the module makes (a test's, smdist's, the SDK's) reads botocore's
    data through one loader, as the clients of one session do: the SageMaker service model and
    the endpoints are parsed once for the module instead of for every session, which was most
    of a case's CPU time. The data and what is done with it are unchanged."""
    import botocore.loaders
    import botocore.session

    loader = functools.cache(botocore.loaders.create_loader)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(botocore.loaders, "create_loader", loader)
        patch.setattr(botocore.session, "create_loader", loader)
        yield
