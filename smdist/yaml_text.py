"""YAML parsing through libyaml: a fast path for smdist's own data, a strict one for job files.

``yaml.safe_load`` always uses the pure-Python loader; the C loader reads the same documents
several times faster, which matters because every ``smdist`` command parses a job file and
the catalogue before it can answer.

Job files are edited by hand, pasted together and generated, so ``parse_untrusted`` refuses
what YAML itself lets through: a duplicate key (YAML keeps the last one silently, so a pasted
``cluster:`` block replaces the first), bytes that are not UTF-8, nesting deep enough to crash
libyaml's recursive composer, and anchors whose aliases expand into millions of values (a
"billion laughs" file takes validation minutes). libyaml still scans and parses; the nodes are
composed by PyYAML's Python composer, extended here, because only there can every alias, key
and nesting level be checked as it is met, before anything is expanded.
"""

from __future__ import annotations

from typing import Any

import yaml
from yaml.composer import Composer
from yaml.nodes import MappingNode, Node, ScalarNode

_SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

MAX_DOCUMENT_BYTES = 1024 * 1024  # a job file is a few kB; SageMaker caps hyperparameters far below
MAX_DEPTH = 64  # libyaml's composer recurses in C: about 50,000 levels crash the interpreter
MAX_VALUES = 10_000  # scalars, lists and mappings after every alias is expanded
_MERGE_TAG = "tag:yaml.org,2002:merge"


class StrictYamlError(yaml.YAMLError):
    """A document YAML accepts but smdist refuses; ``path`` is the field (``""``: the file)."""

    def __init__(self, path: str, message: str, valid: str | None = None) -> None:
        super().__init__(f"{path}: {message}" if path else message)
        self.path = path
        self.message = message
        self.valid = valid


def parse_yaml(text: str) -> Any:
    """``yaml.safe_load`` semantics, libyaml speed, for smdist's own data files."""
    return yaml.load(text, Loader=_SAFE_LOADER)  # noqa: S506 - a safe loader, C or Python


def parse_untrusted(data: str | bytes) -> Any:
    """Parse a job file or a command-line value strictly.

    Raises ``StrictYamlError`` for what smdist refuses and ``yaml.YAMLError`` for bad syntax.
    """
    if len(data) > MAX_DOCUMENT_BYTES:
        raise StrictYamlError(
            "", f"is larger than {MAX_DOCUMENT_BYTES:,} bytes", "a job file of at most 1 MiB"
        )
    text = decode_utf8(data) if isinstance(data, bytes) else data
    loader = _StrictLoader(text)
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()


def decode_utf8(data: bytes) -> str:
    """UTF-8 text (a leading byte-order mark dropped), or an error naming the first bad byte."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise StrictYamlError(
            "",
            f"byte 0x{data[exc.start]:02x} at offset {exc.start} (line {line}) is not UTF-8",
            "a UTF-8 text file",
        ) from None


class _StrictComposer(Composer):
    """PyYAML's composer, counting values, depth and keys as the nodes are built."""

    def _start_checks(self) -> None:
        self.anchors: dict[str, Node] = {}
        self._path: list[str] = []  # field path of the node being composed
        self._values = 0  # values in the document so far, aliases expanded
        self._sizes: dict[int, int] = {}  # id(anchored node) -> its expanded value count

    def compose_node(self, parent: Node | None, index: Any) -> Node:
        if isinstance(index, int):
            self._path.append(f"[{index}]")
        elif isinstance(index, ScalarNode):
            self._path.append(self._key_segment(index.value))
        else:  # the document root or a mapping key: the path stays the parent's
            self._path.append("")
        try:
            if len(self._path) > MAX_DEPTH:
                raise self._too_deep()
            if self.check_event(yaml.AliasEvent):
                return self._alias()
            anchor = self.peek_event().anchor
            before = self._count(1)
            node = super().compose_node(parent, index)
            if anchor is not None:
                self._sizes[id(node)] = self._values - before
            return node
        except yaml.MarkedYAMLError as exc:
            # libyaml >= 0.2.6 (PyYAML 6.0.4 wheels) scans a flow collection ahead and stops at
            # its own nesting limit before this composer reaches MAX_DEPTH: the same refusal.
            if "nesting depth" in (exc.problem or ""):
                raise self._too_deep() from None
            raise
        finally:
            self._path.pop()

    def _too_deep(self) -> StrictYamlError:
        return StrictYamlError(
            "".join(self._path[:8]) + "...",
            f"nests deeper than {MAX_DEPTH} levels",
            f"at most {MAX_DEPTH} levels of lists and mappings",
        )

    def _alias(self) -> Node:
        event = self.peek_event()
        node = self.anchors.get(event.anchor)
        if node is None:  # undefined: PyYAML's own error says so
            return super().compose_node(None, None)
        self.get_event()
        size = self._sizes.get(id(node))
        where = (
            f"alias *{event.anchor} (line {event.start_mark.line + 1}) of anchor "
            f"&{event.anchor} (line {node.start_mark.line + 1})"
        )
        if size is None:
            raise StrictYamlError(self._where(), f"{where} is used inside its own anchor")
        self._count(size, where)
        return node

    def _count(self, size: int, alias: str = "") -> int:
        before = self._values
        self._values += size
        if self._values > MAX_VALUES:
            cause = f"{alias} expands to {size:,} values and the" if alias else "the"
            raise StrictYamlError(
                self._where(),
                f"{cause} document would hold more than {MAX_VALUES:,} values",
                f"at most {MAX_VALUES:,} values, aliases counted in full",
            )
        return before

    def _where(self) -> str:
        return "".join(self._path)

    def _key_segment(self, key: str) -> str:
        return f".{key}" if self._where() else key

    def compose_mapping_node(self, anchor: str | None) -> MappingNode:
        node = super().compose_mapping_node(anchor)
        first_line: dict[Any, int] = {}
        for key, _ in node.value:
            identity = self._key_identity(key)
            if identity is None:
                continue
            line = key.start_mark.line + 1
            if identity in first_line:
                name = key.value
                raise StrictYamlError(
                    self._where() + self._key_segment(name),
                    f"duplicate key {name!r} on lines {first_line[identity]} and {line}; "
                    "YAML would keep only the second",
                    "each key once per mapping",
                )
            first_line[identity] = line
        return node

    def _key_identity(self, key: Node) -> Any:
        """What the key becomes in the mapping (``1`` and ``true`` collide), None: not checked."""
        if not isinstance(key, ScalarNode):
            return None  # a list or mapping as a key: the constructor refuses it
        if key.tag == _MERGE_TAG:
            return ("<<",)
        try:
            value = self.construct_object(key)  # type: ignore[attr-defined]
            hash(value)
        except (yaml.YAMLError, TypeError, ValueError):
            return (key.tag, key.value)
        return value  # as in the constructed dict: 1, 1.0 and true are one key


class _StrictLoader(_StrictComposer, _SAFE_LOADER):  # type: ignore[misc,valid-type]
    def __init__(self, stream: str) -> None:
        _SAFE_LOADER.__init__(self, stream)
        self._start_checks()


__all__ = [
    "MAX_DEPTH",
    "MAX_DOCUMENT_BYTES",
    "MAX_VALUES",
    "StrictYamlError",
    "decode_utf8",
    "parse_untrusted",
    "parse_yaml",
]
