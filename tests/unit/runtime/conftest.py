"""Shared fixtures for the runtime unit tests: recorded environments and a clean default log."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from smdist.runtime.environments import base

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "environments"


def load_recorded(name: str) -> dict:
    return json.loads((FIXTURES / f"{name}.json").read_text(encoding="utf-8"))


@pytest.fixture
def recorded():
    """Load a recorded variable set: ``recorded("torchrun_single_node")["environ"]``."""
    return load_recorded


@pytest.fixture(autouse=True)
def _forget_logged_defaults():
    # Defaults are logged once per process; each test starts from a fresh "once".
    base._logged_defaults.clear()
    yield
    base._logged_defaults.clear()
