"""What a user's script sees under SDK v3: the README's v3 table, checked cell by cell.

README "What your script sees" has a table per SDK line. ``tests/integration/
test_script_contract.py`` runs the v2 table's rows on the local backend (the training toolkit's
contract); this module reads the v3 table (between the ``script-contract-v3`` markers). Each row
is submitted through the ``sagemaker`` backend with SDK v3 installed (the request captured on
its way to the moto server), with the hyperparameters and channel the README names, and the
request's command runs verbatim on two emulated hosts (``emulated_container``: v3's real
``sm_train.sh`` and drivers, smdist's driver) with a script that records what each rank got.
A row runs once; each of its cells is a test.

A ``(v2: ...)`` remark is checked too: against the v2 table's row for the same strategy (SMP v1
against Horovod's, SMP v2 against ``torch_distributed``'s: the README says they start alike),
whose own test measures it, or against what the toolkit computed in
``tests/fixtures/sagemaker_training_env.json`` (sagemaker-training 5.1.4). Where the argv, rank
variables, ``SM_CURRENT_HOST`` or working directory differ from the v2 row, the cell must carry
such a remark, and where they do not it must not.
"""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from smdist.backends import sagemaker as backend
from smdist.contract.environment import (
    command_line_arguments,
    decode_hyperparameters,
    split_hyperparameters,
)
from smdist.planning.plan import plan
from smdist.spec.job import JobSpec

from .conftest import BUCKET, ROLE
from .emulated_container import run_request
from .sdk_once import one_botocore_loader, sdk_config_schema_checked_once  # noqa: F401
from .test_v3_runs import describe

# Real jobs: training frameworks run in emulated containers (`-m "not integration"` skips).
pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
TOOLKIT_RECORDING = ROOT / "tests" / "fixtures" / "sagemaker_training_env.json"
IMAGE = "123456789012.dkr.ecr.us-west-2.amazonaws.com/training:1"
CODE_DIR = "/opt/ml/input/data"
SHARED_COLUMNS = ("argv", "rank variables", "`SM_CURRENT_HOST`", "working directory")

RECORDER = """\
import json, os, socket, sys

host = socket.gethostname()
record = {"argv": sys.argv[1:], "cwd": os.getcwd(), "env": dict(os.environ), "host": host}
with open(os.path.join("/opt/ml/model", f"seen-{host}-{os.getpid()}.json"), "w") as handle:
    json.dump(record, handle)
"""


# ---- the README ------------------------------------------------------------------------------
def contract_block(marker: str) -> str:
    text = README.read_text()
    return text.split(f"<!-- {marker}:begin", 1)[1].split(f"<!-- {marker}:end", 1)[0]


def table_rows(block: str) -> list[dict[str, str]]:
    lines = [line for line in block.splitlines() if line.startswith("|")]
    header = [cell.strip() for cell in lines[0].strip("|").split("|")]
    return [
        dict(zip(header, [cell.strip() for cell in line.strip("|").split("|")], strict=True))
        for line in lines[2:]
    ]


def code_spans(text: str) -> list[str]:
    return re.findall(r"`([^`]+)`", text)


def split_remarks(cell: str) -> tuple[str, list[str]]:
    """(the cell without its ``(v2: ...)`` remarks, the remarks' texts)."""
    remarks = re.findall(r"\(v2: ([^()]*)\)", cell)
    return re.sub(r"\s*\(v2: [^()]*\)", "", cell), remarks


V3_BLOCK = contract_block("script-contract-v3")
V3_ROWS = table_rows(V3_BLOCK)
V2_ROWS = table_rows(contract_block("script-contract"))
# "Each row: two hosts, hyperparameters `{...}`, an input channel `train`."
HYPERPARAMETERS = yaml.safe_load(re.search(r"hyperparameters `(\{[^`]+\})`", V3_BLOCK).group(1))
CHANNELS = code_spans(re.search(r"input channels? (`[^.;]+)", V3_BLOCK).group(1))
HOSTS = {"two": 2, "three": 3}[re.search(r"Each row: (\w+) hosts", V3_BLOCK).group(1)]
# "- *v3-only*: `SM_...` ... (what they are)" lines after the table: the name groups its cells
# refer to.
GROUPS = {
    match.group(1): set(code_spans(match.group(2).split(" (")[0]))
    for match in re.finditer(r"^- \*([\w-]+)\*:(.*)$", V3_BLOCK, re.MULTILINE)
}


def strategy_of(row: dict[str, str]) -> dict[str, Any]:
    return yaml.safe_load(code_spans(row["strategy"])[0])


def row_id(row: dict[str, str]) -> str:
    return code_spans(row["strategy"])[0]


def v2_counterpart(strategy: dict[str, Any]) -> dict[str, str]:
    """The v2 table's row a v3 row is compared with."""
    wanted = dict(strategy)
    if wanted["kind"] == "sdmp":  # README: SMP v1 starts like Horovod, v2 like torch_distributed
        wanted = (
            {"kind": "horovod"}
            if wanted.get("version", 1) == 1
            else {"kind": "pytorch_ddp", "launcher": "torch_distributed"}
        )
    for row in V2_ROWS:
        given = strategy_of(row)
        if given["kind"] == wanted["kind"] and given.get("launcher") == wanted.get("launcher"):
            return row
    raise AssertionError(f"the v2 table has no row for {strategy}")


# ---- the toolkit's recorded SM_* set ---------------------------------------------------------
def per_job(name: str) -> bool:
    """SM_CHANNEL_<NAME> and SM_HP_<NAME> depend on the job, not on the line."""
    return name.startswith(("SM_CHANNEL_", "SM_HP_"))


RECORDED = {k: v for k, v in json.loads(TOOLKIT_RECORDING.read_text()).items() if k[0] != "_"}
TOOLKIT_ENV = RECORDED["horovod_pytorch_two_hosts"]["env"]
TOOLKIT_NAMES = {name for name in TOOLKIT_ENV if not per_job(name)}


def test_the_toolkit_recordings_agree_on_the_sm_names():
    for scenario in RECORDED.values():
        assert {name for name in scenario["env"] if not per_job(name)} == TOOLKIT_NAMES


def test_the_name_groups_are_what_they_say():
    assert set(GROUPS) == {"v3-only", "toolkit-only"}
    assert GROUPS["toolkit-only"] <= TOOLKIT_NAMES
    assert not GROUPS["v3-only"] & TOOLKIT_NAMES


def test_the_v3_table_documents_every_strategy_kind_and_both_drivers():
    kinds = {strategy_of(row)["kind"] for row in V3_ROWS}
    assert kinds == {"pytorch_ddp", "horovod", "sddp", "mwms", "sdmp"}
    assert {code_spans(row["driver"])[0] for row in V3_ROWS} == {"Torchrun", "SmdistDriver"}
    assert {strategy_of(row)["kind"] for row in V2_ROWS} <= kinds


# ---- one emulated run per row ----------------------------------------------------------------
@dataclass(frozen=True)
class Run:
    records: list[dict[str, Any]]  # one per rank
    outputs: dict[str, str]  # host -> its container's output
    world_size: int
    v2_argv: list[str]  # what the training toolkit gives under SDK v2, for the same job


_RUNS: dict[str, Run | str] = {}  # row -> its run, or why it failed


def job_spec(row: dict[str, str], source: Path) -> JobSpec:
    return JobSpec.from_dict(
        {
            "name": "contract-v3",
            "strategy": strategy_of(row),
            "cluster": {"instance_type": code_spans(row["instance"])[0], "instance_count": HOSTS},
            "code": {"source_dir": str(source), "entry_point": "seen.py", "image_uri": IMAGE},
            "inputs": {name: f"s3://{BUCKET}/data/{name}" for name in CHANNELS},
            "hyperparameters": HYPERPARAMETERS,
        }
    )


def v2_arguments(wire: dict[str, str]) -> list[str]:
    """The script's argv under SDK v2: the toolkit's, from the v2 wire hyperparameters."""
    return command_line_arguments(split_hyperparameters(decode_hyperparameters(wire))[0])


def run_row(row, boto_session, captured, python, tmp_path) -> Run:
    key = row_id(row)
    if key not in _RUNS:
        try:
            _RUNS[key] = _run_row(row, boto_session, captured, python, tmp_path)
        except AssertionError as failed:
            _RUNS[key] = str(failed)
    found = _RUNS[key]
    if isinstance(found, str):
        pytest.fail(f"the run of {key} failed:\n{found}")
    return found


def _run_row(row, boto_session, captured, python, tmp_path) -> Run:
    s3 = boto_session.client("s3")
    for name in CHANNELS:
        s3.put_object(Bucket=BUCKET, Key=f"data/{name}/part-0", Body=b"0")
    source = tmp_path / "source"
    source.mkdir()
    (source / "seen.py").write_text(RECORDER)
    job = plan(job_spec(row, source))
    backend.launch(job, bucket=BUCKET, role=ROLE, boto_session=boto_session)
    (request,) = captured
    results = run_request(request, s3, hosts=HOSTS, python=python, root=tmp_path / "hosts",
                          timeout=300)  # fmt: skip
    assert [r.returncode for r in results] == [0] * HOSTS, describe(results)
    records = [
        json.loads(path.read_text())
        for result in results
        for path in sorted((result.root / "model").glob("seen-*.json"))
    ]
    spec = job.spec
    world = spec.strategy.world_size(spec.cluster)
    assert len(records) == world, describe(results)
    return Run(
        records=records,
        outputs={r.host: readable(r.output) for r in results},
        world_size=world,
        v2_argv=v2_arguments(job.wire_hyperparameters),
    )


def readable(output: str) -> str:
    """The output, with smdist's driver's JSON command lines also as plain words."""
    lines = []
    for line in output.splitlines():
        if line.startswith("smdist driver: ["):
            line = " ".join(json.loads(line.split(": ", 1)[1]))
        lines.append(line)
    return "\n".join(lines)


# ---- the cells -------------------------------------------------------------------------------
def contiguous(words: list[str], within: list[str]) -> bool:
    return any(within[i : i + len(words)] == words for i in range(len(within) - len(words) + 1))


def check_driver(cell: str, run: Run, v2_cell: str) -> None:
    """The first span is the driver sm_train.sh starts; the others are in its command line,
    on every host or (unless the cell says "on every host") on the first."""
    name, *shown = code_spans(cell)
    hosts = sorted(run.outputs) if "on every host" in cell else ["algo-1"]
    for host in sorted(run.outputs):
        assert f"Running {name} Driver" in run.outputs[host], host
    for host in hosts:
        for text in shown:
            assert text in run.outputs[host], (host, text)


def expected_argv(main: str, run: Run) -> list[str]:
    spans = code_spans(main)
    literal = [span for span in spans if span.startswith("-") and len(shlex.split(span)) > 2]
    if literal:
        return shlex.split(literal[0])
    assert main.startswith("hyperparameters"), main
    argv = list(run.v2_argv)
    for name in re.findall(r"without `([^`]+)`", main):
        position = argv.index(name)
        del argv[position : position + 2]
    for name in spans:
        if f"without `{name}`" not in main:
            assert name in argv, name
    return argv


def check_argv(cell: str, run: Run, v2_cell: str) -> None:
    main, remarks = split_remarks(cell)
    expected = expected_argv(main, run)
    for record in run.records:
        assert record["argv"] == expected
    assert bool(remarks) == (expected != run.v2_argv), (expected, run.v2_argv)
    for remark in remarks:
        for span in code_spans(remark):
            assert contiguous(shlex.split(span), run.v2_argv), (span, run.v2_argv)


def check_rank_variables(cell: str, run: Run, v2_cell: str) -> None:
    main, remarks = split_remarks(cell)
    names = code_spans(main)
    for record in run.records:
        for name in names:
            assert name in record["env"], (name, record["host"])
    # Each record is a different rank.
    assert len({record["env"][names[0]] for record in run.records}) == run.world_size
    assert bool(remarks) == (set(names) != set(code_spans(v2_cell)))


def check_current_host(cell: str, run: Run, v2_cell: str) -> None:
    main, remarks = split_remarks(cell)
    own = "own host" in main
    for record in run.records:
        assert record["env"]["SM_CURRENT_HOST"] == (record["host"] if own else "algo-1")
    assert {record["host"] for record in run.records} == set(run.outputs)  # ranks on every host
    assert bool(remarks) == (own != ("own host" in v2_cell))


def check_working_directory(cell: str, run: Run, v2_cell: str) -> None:
    main, remarks = split_remarks(cell)
    (directory,) = code_spans(main)
    for record in run.records:
        assert record["cwd"] == directory
    v2_directory = code_spans(v2_cell)[0]
    assert bool(remarks) == (directory != v2_directory)
    assert all(code_spans(remark) == [v2_directory] for remark in remarks)


def same_value(seen: str, said: str) -> bool:
    """``said`` (a README span) is ``seen``; "…" at its end stands for any rest."""
    if said.endswith("…"):
        return seen.startswith(said[:-1])
    try:
        return json.loads(seen) == json.loads(said)
    except ValueError:
        return seen == said


def check_sm_variables(cell: str, run: Run, v2_cell: str) -> None:
    """Phrases separated by "; ": the name set against the toolkit's, then single variables."""
    for phrase in cell.split("; "):
        main, remarks = split_remarks(phrase)
        if "the toolkit's" in main:
            groups = dict.fromkeys(("less", "plus"), set())
            for how, group in re.findall(r"(less|plus) \*([\w-]+)\*", main):
                groups[how] = groups[how] | GROUPS[group]
            expected = (TOOLKIT_NAMES - groups["less"]) | groups["plus"]
            for record in run.records:
                names = {n for n in record["env"] if n.startswith("SM_") and not per_job(n)}
                assert names == expected, (sorted(names - expected), sorted(expected - names))
            assert not remarks
        elif main.startswith("`SM_CHANNELS` also lists"):
            extra = code_spans(main)[1:]
            for record in run.records:
                env = record["env"]
                assert sorted(json.loads(env["SM_CHANNELS"])) == sorted([*CHANNELS, *extra])
                for name in [*CHANNELS, *extra]:
                    assert env[f"SM_CHANNEL_{name.upper()}"] == f"{CODE_DIR}/{name}"
            assert remarks == ["only yours"]
            recorded = RECORDED["horovod_pytorch_two_hosts"]
            assert json.loads(TOOLKIT_ENV["SM_CHANNELS"]) == sorted(recorded["inputs"]["channels"])
        elif re.match(r"`SM_\w+` is `", main):
            name, value = code_spans(main)
            for record in run.records:
                assert same_value(record["env"][name], value), (name, record["env"][name])
            for remark in remarks:
                (v2_value,) = code_spans(remark)
                assert same_value(TOOLKIT_ENV[name], v2_value), (name, TOOLKIT_ENV[name])
        else:
            raise AssertionError(f"no check for {phrase!r}: say it in a form this test reads")


CHECKS = {
    "driver": check_driver,
    "argv": check_argv,
    "rank variables": check_rank_variables,
    "`SM_*`": check_sm_variables,
    "`SM_CURRENT_HOST`": check_current_host,
    "working directory": check_working_directory,
}
CELLS = [(row, column) for row in V3_ROWS for column in CHECKS]


def test_every_column_of_the_v3_table_is_checked():
    assert set(V3_ROWS[0]) == {"strategy", "instance", *CHECKS}
    assert set(SHARED_COLUMNS) <= set(V2_ROWS[0])


def cell(row: dict[str, str], column: str) -> Any:
    """A row's cells share one worker (``--dist loadgroup``): the row runs once, not once per
    worker that draws one of its cells."""
    slug = re.sub(r"\W+", "-", row_id(row)).strip("-")
    group = pytest.mark.xdist_group(f"v3-script-contract-{slug}")
    return pytest.param(row, column, marks=group, id=f"{row_id(row)}-{column.strip('`')}")


@pytest.mark.parametrize(("row", "column"), [cell(row, column) for row, column in CELLS])
def test_the_script_sees_what_the_v3_table_says(
    row, column, boto_session, bucket, captured_requests, container_python, tmp_path
):
    run = run_row(row, boto_session, captured_requests, container_python, tmp_path)
    v2_row = v2_counterpart(strategy_of(row))
    CHECKS[column](row[column], run, v2_row.get(column, ""))
