"""YAML parsing through libyaml when PyYAML was built with it.

``yaml.safe_load`` always uses the pure-Python loader; the C loader reads the same documents
several times faster, which matters because every ``smdist`` command parses a job file and
the catalogue before it can answer.
"""

from __future__ import annotations

from typing import Any

import yaml

_SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def parse_yaml(text: str) -> Any:
    """``yaml.safe_load`` semantics, libyaml speed; raises ``yaml.YAMLError`` on bad input."""
    return yaml.load(text, Loader=_SAFE_LOADER)  # noqa: S506 - a safe loader, C or Python
