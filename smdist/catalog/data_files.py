"""The catalogue's YAML files, read through a compiled JSON twin.

People edit the YAML (it carries the sources of every fact as comments). Parsing it costs about
8 ms a process, libyaml scanning and PyYAML building a few thousand Python objects, and every
smdist command reads the catalogue before it answers; ``json`` reads the same data in a tenth
of a millisecond. So each ``NAME.yaml`` ships with ``NAME.yaml.json``: the parsed data and the
CRC-32 of the YAML text it came from. A twin whose CRC does not match its YAML (edited and not
recompiled) is ignored and the YAML parsed, so the answer is always the YAML's; a unit test
fails while a twin is stale, naming the command that recompiles them all:

    python -m smdist.catalog
"""

from __future__ import annotations

import json
import zlib
from pathlib import Path
from typing import Any

from smdist.yaml_text import parse_yaml

HERE = Path(__file__).resolve().parent
COMPILED_FILES = ("instances.yaml", "frameworks.yaml", "images.yaml")
RECOMPILE = "python -m smdist.catalog"


def twin_path(name: str) -> Path:
    return HERE / f"{name}.json"


def _crc(text: str) -> int:
    return zlib.crc32(text.encode("utf-8"))


def _twin(name: str) -> Any:
    """The twin's content as read, or None when it is missing or not JSON."""
    try:
        return json.loads(twin_path(name).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def read_data_file(name: str) -> Any:
    """The parsed content of catalogue file ``name``, from its twin when that is current."""
    text = (HERE / name).read_text(encoding="utf-8")
    twin = _twin(name)
    if isinstance(twin, dict) and twin.get("yaml_crc32") == _crc(text):
        return twin["data"]
    return parse_yaml(text)


def stale_twins() -> list[str]:
    """The files whose twin is missing or does not hold what their YAML says."""
    return [
        name
        for name in COMPILED_FILES
        if _twin(name) != _compiled((HERE / name).read_text(encoding="utf-8"))
    ]


def _compiled(text: str) -> dict[str, Any]:
    # The YAML quotes its dates and versions, so the data is JSON's own types; json.dumps
    # refuses anything else rather than writing a twin that would read back differently.
    return {"yaml_crc32": _crc(text), "data": parse_yaml(text)}


def compile_all() -> list[Path]:
    written = []
    for name in COMPILED_FILES:
        compiled = _compiled((HERE / name).read_text(encoding="utf-8"))
        path = twin_path(name)
        path.write_text(json.dumps(compiled, indent=None, sort_keys=True) + "\n", "utf-8")
        written.append(path)
    return written
