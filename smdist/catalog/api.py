"""What the SageMaker API itself accepts, read from the dated ``sagemaker_api.json`` snapshot.

Name patterns, maximum lengths and counts, the training instance types and the Regions come from
botocore's SageMaker service model, copied by ``python -m smdist.catalog.snapshot`` so that no
limit is typed in by hand and botocore need not be installed. The file is parsed on first use
(a few hundred microseconds); this module uses only the standard library.
"""

from __future__ import annotations

import functools
import json
import re
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import Any

_FILE = "sagemaker_api.json"
# Java-style Unicode classes in the service model's patterns, which Python's re lacks: a value
# is matched after mapping each such character to an ASCII stand-in of the same class.
_UNICODE_CLASSES = {"L": "a", "N": "0", "Z": " "}
_ASCII_CLASSES = {"L": "a-zA-Z", "N": "0-9", "Z": " "}
_UNICODE_CLASS = re.compile(r"\\p\{([LNZ])\}")

_HERE = Path(__file__).resolve().parent  # the data files ship beside this module


@dataclass(frozen=True)
class ApiField:
    """One value CreateTrainingJob takes: its limits as the service model states them.

    ``minimum``/``maximum`` bound a string's length, a list's or map's entries, or an
    integer's value. ``documented_max`` is a ceiling stated only in the API documentation.
    """

    name: str
    member: str
    shape: str
    type: str
    minimum: int | None
    maximum: int | None
    pattern: str | None
    enum: tuple[str, ...]
    documented_max: int | None

    @property
    def limit(self) -> int:
        """The highest value (or length, or count) the API accepts."""
        value = self.maximum if self.maximum is not None else self.documented_max
        if value is None:
            raise LookupError(f"the SageMaker API states no maximum for {self.member}")
        return value

    @functools.cached_property
    def _compiled(self) -> re.Pattern[str] | None:
        if self.pattern is None:
            return None
        return re.compile(_UNICODE_CLASS.sub(lambda m: _ASCII_CLASSES[m.group(1)], self.pattern))

    @property
    def regex(self) -> str:
        """An anchored Python regex for the pattern and the length bounds (no Unicode classes)."""
        if self.pattern and _UNICODE_CLASS.search(self.pattern):
            raise ValueError(f"{self.member}: use matches(); its pattern has Unicode classes")
        low = self.minimum or 0
        high = "" if self.maximum is None else str(self.maximum)
        pattern = self.pattern or r"[\s\S]*"
        return rf"\A(?=[\s\S]{{{low},{high}}}\Z)(?:{pattern})\Z"

    def matches(self, value: str) -> bool:
        """Whether ``value`` has an accepted length and matches the API's pattern."""
        if self.minimum is not None and len(value) < self.minimum:
            return False
        if self.maximum is not None and len(value) > self.maximum:
            return False
        compiled = self._compiled
        if compiled is None:
            return True
        if _UNICODE_CLASS.search(self.pattern or ""):
            value = "".join(_ascii_stand_in(char) for char in value)
        return compiled.fullmatch(value) is not None


def _ascii_stand_in(char: str) -> str:
    if char.isascii():
        return char
    return _UNICODE_CLASSES.get(unicodedata.category(char)[0], "\x00")


@functools.lru_cache(maxsize=1)
def snapshot() -> dict[str, Any]:
    """The whole snapshot as stored (date, botocore version, fields, regions)."""
    text = (_HERE / _FILE).read_text(encoding="utf-8")
    return json.loads(text)


@functools.cache
def field(name: str) -> ApiField:
    """The API's statement about one value, by smdist's name for it (e.g. ``keep_alive``)."""
    fields = snapshot()["fields"]
    if name not in fields:
        raise KeyError(f"{_FILE} has no field {name!r}; known: {', '.join(sorted(fields))}")
    entry = fields[name]
    return ApiField(
        name=name,
        member=entry["member"],
        shape=entry["shape"],
        type=entry["type"],
        minimum=entry.get("min"),
        maximum=entry.get("max"),
        pattern=entry.get("pattern"),
        enum=tuple(entry.get("enum", ())),
        documented_max=entry.get("documented_max"),
    )


def snapshot_date() -> str:
    return str(snapshot()["snapshot_date"])


def botocore_version() -> str:
    return str(snapshot()["botocore_version"])


@functools.lru_cache(maxsize=1)
def training_instance_types() -> frozenset[str]:
    """Every instance type CreateTrainingJob accepts (the TrainingInstanceType enum)."""
    return frozenset(field("instance_type").enum)


@functools.lru_cache(maxsize=1)
def regions() -> tuple[str, ...]:
    """Every Region SageMaker is offered in, over all AWS partitions, sorted."""
    return tuple(sorted({name for names in snapshot()["regions"].values() for name in names}))


def partition_of(region: str) -> str | None:
    """The AWS partition (aws, aws-cn, aws-us-gov, ...) holding ``region``, if any."""
    for partition, names in snapshot()["regions"].items():
        if region in names:
            return partition
    return None
