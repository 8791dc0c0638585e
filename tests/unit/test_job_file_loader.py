"""Job files are read strictly: what YAML or lax typing would let through is refused, by field.

Every case writes a real file and loads it through ``smdist.load``; the command-line cases run
the real ``smdist validate`` in a subprocess: exit 2, the field on stderr, never a traceback.
"""

from __future__ import annotations

import resource
import subprocess
import sys
import time
from pathlib import Path

import pytest

import smdist
from smdist import Cluster, JobSpec, PyTorchDDP
from smdist.cli.app import _assignment
from smdist.errors import SpecError
from smdist.yaml_text import MAX_DEPTH, MAX_DOCUMENT_BYTES, MAX_VALUES

JOB = """\
name: strict
strategy:
  kind: pytorch_ddp
cluster:
  instance_type: ml.p3.16xlarge
  instance_count: 2
max_run: 3600
"""


def write(tmp_path: Path, content: str | bytes, name: str = "job.yaml") -> Path:
    path = tmp_path / name
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return path


def refusal(path: Path) -> str:
    """The one-line problems ``smdist.load`` refuses ``path`` with."""
    with pytest.raises(SpecError) as caught:
        smdist.load(path)
    return "\n".join(str(p) for p in caught.value.problems)


def smdist_cli() -> list[str]:
    script = Path(sys.executable).with_name("smdist")
    return [str(script)] if script.exists() else [sys.executable, "-m", "smdist.cli.app"]


def validate(path: Path) -> tuple[subprocess.CompletedProcess, float]:
    """``smdist validate path`` in a subprocess, and the CPU seconds the subprocess used."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    result = subprocess.run(
        [*smdist_cli(), "validate", str(path)], capture_output=True, text=True, timeout=120
    )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return result, cpu


def assert_refused_by_cli(path: Path, *texts: str) -> subprocess.CompletedProcess:
    result, _ = validate(path)
    output = result.stdout + result.stderr
    assert result.returncode == 2, output
    assert "Traceback" not in output
    for text in texts:
        assert text in result.stderr, result.stderr
    return result


def alias_bomb(levels: int = 8, width: int = 10) -> str:
    """The "billion laughs" document: each anchor repeats the previous one ``width`` times."""
    lines = [JOB + "hyperparameters:", "  a0: &a0 [" + ", ".join(['"lol"'] * width) + "]"]
    for level in range(1, levels + 1):
        aliases = ", ".join([f"*a{level - 1}"] * width)
        lines.append(f"  a{level}: &a{level} [{aliases}]")
    return "\n".join(lines) + "\n"


# ---- duplicate keys ------------------------------------------------------------------------
def test_a_second_cluster_block_is_refused_naming_both_lines(tmp_path):
    pasted = JOB + "cluster:\n  instance_type: ml.p4d.24xlarge\n  instance_count: 64\n"
    path = write(tmp_path, pasted)
    message = refusal(path)
    assert message.startswith("cluster: duplicate key 'cluster'")
    assert "lines 4 and 8" in message
    assert_refused_by_cli(path, "cluster", "lines 4 and 8")


def test_a_duplicate_nested_key_names_its_path_and_lines(tmp_path):
    path = write(tmp_path, JOB.replace("  instance_count: 2\n", "  instance_count: 2\n" * 2))
    message = refusal(path)
    assert message.startswith("cluster.instance_count: duplicate key 'instance_count'")
    assert "lines 6 and 7" in message


def test_keys_that_become_one_key_are_duplicates(tmp_path):
    path = write(tmp_path, JOB + "hyperparameters: {1: a, 1.0: b}\n")
    assert "duplicate key" in refusal(path)


def test_a_merge_of_defaults_still_works_and_may_be_overridden(tmp_path):
    text = JOB + (
        "hyperparameters:\n"
        "  <<: &defaults {epochs: 2, lr: 0.1}\n"
        "  lr: 0.5\n"
        "environment:\n"
        "  <<: {NCCL_DEBUG: INFO}\n"
    )
    spec = smdist.load(write(tmp_path, text))
    assert spec.hyperparameters == {"epochs": 2, "lr": 0.5}
    assert spec.environment == {"NCCL_DEBUG": "INFO"}


# ---- bytes ---------------------------------------------------------------------------------
def test_bytes_that_are_not_utf8_are_refused_naming_offset_and_line(tmp_path):
    data = JOB.encode() + b"hyperparameters:\n  note: caf\xe9\n"
    offset = data.index(b"\xe9")
    path = write(tmp_path, data)
    message = refusal(path)
    assert f"byte 0xe9 at offset {offset} (line 9) is not UTF-8" in message
    assert message.startswith(str(path))
    assert_refused_by_cli(path, f"offset {offset}", "line 9")


def test_a_utf8_byte_order_mark_is_accepted(tmp_path):
    spec = smdist.load(write(tmp_path, b"\xef\xbb\xbf" + JOB.encode()))
    assert spec.name == "strict"


def test_a_nul_character_is_bad_yaml_not_a_crash(tmp_path):
    path = write(tmp_path, JOB + 'hyperparameters: {note: "a\x00b"}\n')
    assert "not valid YAML" in refusal(path)
    assert_refused_by_cli(path, "not valid YAML")


def test_a_file_larger_than_the_limit_is_refused_unread(tmp_path):
    path = write(tmp_path, JOB + "# " + "x" * MAX_DOCUMENT_BYTES + "\n")
    assert "is larger than" in refusal(path)


# ---- anchors, aliases and nesting ----------------------------------------------------------
def test_an_alias_bomb_is_refused_naming_the_anchor_within_a_second(tmp_path):
    path = write(tmp_path, alias_bomb())
    start = time.process_time()
    message = refusal(path)
    assert time.process_time() - start < 1.0
    assert message.startswith("hyperparameters.a")
    assert "alias *a" in message and "of anchor &a" in message
    assert f"more than {MAX_VALUES:,} values" in message
    result, cpu = validate(path)
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stdout + result.stderr
    assert "anchor &a" in result.stderr
    # The bomb costs the CLI under a second more than an ordinary job file does (it took 15 s
    # before); measured against that file, the bound holds on a slow or loaded machine too.
    _, ordinary = validate(write(tmp_path, JOB, name="ordinary.yaml"))
    assert cpu < ordinary + 1.0


def test_an_alias_inside_its_own_anchor_is_refused(tmp_path):
    path = write(tmp_path, JOB + "hyperparameters:\n  loop: &loop [1, *loop]\n")
    message = refusal(path)
    assert message.startswith("hyperparameters.loop[1]")
    assert "alias *loop" in message and "inside its own anchor" in message


def test_nesting_deeper_than_the_limit_is_refused_without_a_crash(tmp_path):
    depth = 100_000  # libyaml's own composer overflows the C stack at this depth
    path = write(tmp_path, JOB + "hyperparameters:\n  deep: " + "[" * depth + "]" * depth + "\n")
    message = refusal(path)
    assert message.startswith("hyperparameters.deep")  # [0]... too, where the composer got that far
    assert f"nests deeper than {MAX_DEPTH} levels" in message
    assert_refused_by_cli(path, "nests deeper")


def test_an_undefined_alias_is_bad_yaml_naming_the_file(tmp_path):
    path = write(tmp_path, JOB + "hyperparameters: {a: *missing}\n")
    message = refusal(path)
    assert "not valid YAML" in message and "missing" in message and str(path) in message


# ---- strict scalars ------------------------------------------------------------------------
STRICT = [
    ("max-run-true", "max_run: 3600", "max_run: true", "max_run", "True"),
    ("max-run-quoted", "max_run: 3600", 'max_run: "3600"', "max_run", "'3600'"),
    ("count-quoted", "instance_count: 2", 'instance_count: "2"', "cluster.instance_count", "'2'"),
    ("count-fraction", "instance_count: 2", "instance_count: 2.5", "cluster.instance_count", "2.5"),
    ("count-float", "instance_count: 2", "instance_count: 2.0", "cluster.instance_count", "2.0"),
    (
        "strategy-int-quoted",
        "kind: pytorch_ddp",
        'kind: pytorch_ddp\n  max_restarts: "3"',
        "strategy.max_restarts",
        "'3'",
    ),
    ("bool-one", "max_run: 3600", "max_run: 3600\nspot: {enabled: 1}", "spot.enabled", "1"),
    ("bool-yes", "max_run: 3600", 'max_run: 3600\nspot: {enabled: "yes"}', "spot.enabled", "yes"),
    (
        "bool-false-quoted",
        "max_run: 3600",
        'max_run: 3600\nnetwork: {isolation: "false"}',
        "network.isolation",
        "false",
    ),
    ("name-number", "name: strict", "name: 123", "name", "123"),
    (
        "env-number",
        "max_run: 3600",
        "max_run: 3600\nenvironment: {SEED: 1}",
        "environment.SEED",
        "1",
    ),
]


@pytest.mark.parametrize(("old", "new", "field", "shown"), [c[1:] for c in STRICT],
                         ids=[c[0] for c in STRICT])  # fmt: skip
def test_a_loosely_typed_value_is_refused_naming_the_field(tmp_path, old, new, field, shown):
    assert old in JOB
    message = refusal(write(tmp_path, JOB.replace(old, new, 1)))
    assert message.startswith(f"{field}: "), message
    assert shown in message


@pytest.mark.parametrize("case", ["max-run-true", "count-quoted", "bool-one"])
def test_the_command_line_refuses_loose_values_with_exit_2(tmp_path, case):
    _, old, new, field, _ = next(c for c in STRICT if c[0] == case)
    assert_refused_by_cli(write(tmp_path, JOB.replace(old, new, 1)), field)


def test_strings_from_yaml_still_pick_literal_choices(tmp_path):
    text = JOB.replace("kind: pytorch_ddp", "kind: pytorch_ddp\n  launcher: torchrun") + (
        "inputs:\n  train: {uri: 's3://bucket/data', distribution: ShardedByS3Key}\n"
    )
    spec = smdist.load(write(tmp_path, text))
    assert spec.strategy.launcher == "torchrun"
    assert spec.inputs["train"].distribution == "ShardedByS3Key"
    result, _ = validate(write(tmp_path, text, "ok.yaml"))
    assert result.returncode == 0, result.stderr


def test_hyperparameters_stay_free_form_and_keep_their_types(tmp_path):
    text = JOB + (
        "hyperparameters:\n"
        "  epochs: 3\n  quoted: '3'\n  lr: 0.5\n  flag: true\n  none: null\n"
        "  layers: [64, '64', 0.5]\n  nested: {a: {b: [1]}}\n"
    )
    spec = smdist.load(write(tmp_path, text))
    assert spec.hyperparameters == {
        "epochs": 3,
        "quoted": "3",
        "lr": 0.5,
        "flag": True,
        "none": None,
        "layers": [64, "64", 0.5],
        "nested": {"a": {"b": [1]}},
    }
    assert type(spec.hyperparameters["epochs"]) is int
    assert type(spec.hyperparameters["flag"]) is bool


def test_typed_objects_and_nested_dicts_both_validate():
    typed = JobSpec(
        name="typed",
        strategy=PyTorchDDP(max_restarts=1),
        cluster=Cluster(instance_type="ml.p3.16xlarge", instance_count=2),
    )
    plain = JobSpec.from_dict(
        {
            "name": "typed",
            "strategy": {"kind": "pytorch_ddp", "max_restarts": 1},
            "cluster": {"instance_type": "ml.p3.16xlarge", "instance_count": 2},
        }
    )
    assert typed == plain


def test_typed_objects_are_strict_too():
    with pytest.raises(ValueError, match="instance_count"):
        Cluster(instance_type="ml.p3.16xlarge", instance_count="2")
    with pytest.raises(ValueError, match="max_restarts"):
        PyTorchDDP(max_restarts=True)


# ---- command-line assignments go through the same loader ------------------------------------
def test_set_values_are_read_as_yaml_scalars():
    assert _assignment("epochs=1") == ("epochs", 1)
    assert _assignment("lr=0.5") == ("lr", 0.5)
    assert _assignment("flag=true") == ("flag", True)
    assert _assignment("name=abc") == ("name", "abc")
    assert _assignment("sizes=[1, 2]") == ("sizes", [1, 2])
    assert _assignment("text=a: b: c") == ("text", "a: b: c")  # not YAML: kept as written


def test_set_values_refuse_duplicate_keys_and_alias_bombs():
    with pytest.raises(SpecError, match=r"hyperparameters\.opt\.a: duplicate key"):
        _assignment("opt={a: 1, a: 2}")
    bomb = "&a [" + ",".join(["x"] * 200) + "]"
    bomb = f"[{bomb}, " + ", ".join(["*a"] * 100) + "]"
    with pytest.raises(SpecError, match=r"hyperparameters\.big\[\d+\]: alias \*a"):
        _assignment(f"big={bomb}")


def test_default_collections_are_not_shared_between_jobs():
    # The mutable defaults are plain values (cheaper than builtin default factories to build):
    # pydantic copies them for every job, so filling one job's dicts leaves the next one empty.
    first = JobSpec(name="a", strategy=PyTorchDDP(), cluster=Cluster(instance_type="ml.g5.xlarge"))
    first.hyperparameters["lr"] = 0.1
    first.environment["A"] = "1"
    first.tags["team"] = "x"
    first.network.subnets.append("subnet-0123456789abcdef0")
    second = JobSpec(name="b", strategy=PyTorchDDP(), cluster=Cluster(instance_type="ml.g5.xlarge"))
    assert second.hyperparameters == {} and second.environment == {} and second.tags == {}
    assert second.network.subnets == [] and second.inputs == {} and second.metric_definitions == []
