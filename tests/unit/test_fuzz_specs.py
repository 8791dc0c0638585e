"""Mutated example jobs: validation refuses or accepts, quickly, and never crashes.

Hypothesis starts from every shipped example and mutates it as a careless or hostile hand
would: a leaf replaced by a hostile value of any type, keys deleted or added, types swapped,
values nested, subtrees pasted elsewhere, and the file's bytes themselves cut, doubled or
corrupted. Through the Python API (in a forked child, so a hang or a crash is a finding and not
a dead run) every file is either refused with a SpecError or accepted within 1 s of CPU, and an
accepted job plans as a submit plans it. Through ``smdist validate`` (its ``main``, in the same
kind of child, writing to streams that encode as the interpreter's do) every file exits 0 or 2
and never shows a traceback; the real script in a process of its own is proved on the hostile
corpus (``test_hostile_corpus.py``). Runs are derandomized and keep no example database, so CI
is stable.
"""

from __future__ import annotations

import copy
import datetime
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from hostile.build import EXAMPLES_DIR, make_workspace, render
from hostile.harness import Isolated, warm_up
from hostile.verdict import CPU_LIMIT
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

EXAMPLES = {p.stem: yaml.safe_load(p.read_text()) for p in sorted(EXAMPLES_DIR.glob("*.yaml"))}
CHILD_TIMEOUT = 5.0  # CPU seconds: a check may take 1; anything near this is hung

HOSTILE_VALUES: list[Any] = [
    None, True, False, 0, -1, 1, 2, 2.5, 1e308, float("inf"), float("nan"), 2**63, 10**30,
    "", " ", "auto", "0", "2", "2.5", "true", "null", "~", "yes", "[]", "{}",
    "\x00", "a\x00b", "$(touch /tmp/smdist-fuzz)", "`id`", ";id", "a && b", "a | b", "a\nb",
    "\r", "'", '"', "\\", "CUDA_VISIBLE_DEVICES=';touch /tmp/smdist-fuzz;#'",
    "\u202eabc", "\uff58", "\u0445", "\U0001f680", "x" * 3000, "-x A=1", "--flag",
    "/", "/etc/passwd", "../x.py", "src", "a_file.txt", "root_link", "train.py",
    "s3://", "s3://b/x", "s3://my-training-bucket/x", "file:///", "file:///nonexistent",
    "ml.p3.2xlarge", "ml.trn1.32xlarge", "ml.c5.xlarge", "local", "local_gpu",
    "us-westt-2", "us-west-2", "9.9.9", "2.3.0", "2.14", "py27", "py311",
    "AKIAIOSFODNN7EXAMPLE", "-----BEGIN RSA PRIVATE KEY-----\nMII\n",
    "arn:aws:iam::123456789012:role/R", "pytorch_ddp", "mwms", "horovod", "sdmp", "sddp",
    b"\x00\xff", datetime.date(2024, 1, 1),
    [], {}, [1, 2], ["a", None], {"kind": "pytorch_ddp"}, {"a": {"b": {"c": [1]}}},
]  # fmt: skip
HOSTILE_KEYS: list[Any] = [
    "x", "kind", "name", "proces_per_host", "$(id)", "a\x00", "", " ", 1, None, True,
    "hyperparameters", "sagemaker_program", "smdist_backend", "__proto__", "\u202ekey",
]  # fmt: skip

values = st.one_of(
    st.sampled_from(HOSTILE_VALUES),
    st.text(max_size=12),
    st.integers(min_value=-(2**64), max_value=2**64),
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
)
Where = tuple[Any, ...]


def _paths(node: Any, prefix: Where = ()) -> list[Where]:
    """Every place in the document: the root, each mapping value and each list item."""
    found = [prefix]
    if isinstance(node, dict):
        for key, child in node.items():
            found += _paths(child, (*prefix, key))
    elif isinstance(node, list):
        for index, child in enumerate(node):
            found += _paths(child, (*prefix, index))
    return found


def _get(node: Any, path: Where) -> Any:
    for part in path:
        node = node[part]
    return node


def _set(root: Any, path: Where, value: Any) -> Any:
    if not path:
        return value
    _get(root, path[:-1])[path[-1]] = value
    return root


def _swapped(value: Any) -> list[Any]:
    """The same value in the wrong type: what YAML makes of a careless edit."""
    return [[value], {"value": value}, str(value), None, [[value]], {"": value}, True]


@st.composite
def mutated_jobs(draw: st.DrawFn) -> bytes:
    document: Any = copy.deepcopy(EXAMPLES[draw(st.sampled_from(sorted(EXAMPLES)))])
    for _ in range(draw(st.integers(min_value=1, max_value=4))):
        places = _paths(document)
        path = draw(st.sampled_from(places))
        operation = draw(st.sampled_from(["replace", "delete", "add", "swap", "paste"]))
        target = _get(document, path)
        if operation == "replace":
            document = _set(document, path, copy.deepcopy(draw(values)))
        elif operation == "delete" and path and isinstance(_get(document, path[:-1]), dict):
            del _get(document, path[:-1])[path[-1]]
        elif operation == "add" and isinstance(target, dict):
            target[draw(st.sampled_from(HOSTILE_KEYS))] = copy.deepcopy(draw(values))
        elif operation == "swap":
            document = _set(document, path, draw(st.sampled_from(_swapped(target))))
        elif operation == "paste":
            source = copy.deepcopy(_get(document, draw(st.sampled_from(places))))
            document = _set(document, path, source)
    data = render(document)
    # Now and then the bytes themselves: a cut, a doubled or dropped line, a stray byte.
    edit = draw(st.sampled_from(["none"] * 6 + ["cut", "double", "drop", "byte"]))
    lines = data.splitlines(keepends=True) or [b""]
    where = draw(st.integers(min_value=0, max_value=len(lines) - 1))
    if edit == "cut":
        data = data[: draw(st.integers(min_value=0, max_value=len(data)))]
    elif edit == "double":
        data = b"".join(lines[: where + 1] + lines[where:])
    elif edit == "drop":
        data = b"".join(lines[:where] + lines[where + 1 :])
    elif edit == "byte":
        at = draw(st.integers(min_value=0, max_value=len(data)))
        data = data[:at] + draw(st.binary(min_size=1, max_size=3)) + data[at:]
    return data


FUZZ = settings(
    max_examples=300,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("fuzz")
    make_workspace(root)
    return root


@pytest.fixture(scope="module")
def isolated() -> Iterator[Isolated]:
    """One forked child for every example (a fork per example cost more than its check),
    forked once everything is imported and built; a hang or a crash replaces it."""
    warm_up(EXAMPLES_DIR / "pytorch_ddp.yaml")
    checks = Isolated()
    yield checks
    checks.close()


@pytest.mark.timeout(600)
@FUZZ
@given(data=mutated_jobs())
def test_a_mutated_job_is_refused_or_planned(
    workspace: Path, isolated: Isolated, data: bytes
) -> None:
    job = workspace / "job.yaml"
    job.write_bytes(data)
    outcome = isolated.validate(job, deep=True, timeout=CHILD_TIMEOUT)
    assert outcome.kind in ("refused", "accepted"), f"{outcome.kind}: {outcome.error}"
    assert outcome.cpu < CPU_LIMIT, f"{outcome.cpu:.2f} s of CPU"
    if outcome.kind == "refused":
        assert outcome.errors, "refused with warnings only"


@pytest.mark.timeout(600)
@settings(FUZZ, max_examples=20)
@given(data=mutated_jobs())
def test_smdist_validate_exits_0_or_2_without_a_traceback(
    workspace: Path, isolated: Isolated, data: bytes
) -> None:
    job = workspace / "cli-job.yaml"
    job.write_bytes(data)
    result = isolated.cli("validate", str(job), cwd=workspace)
    assert "Traceback" not in result.stdout + result.stderr, result.stderr[-2000:]
    assert result.returncode in (0, 2), result.stderr[-2000:]
