"""What a user's script sees, per strategy: the README's table, checked row by row.

The README documents, for every launcher, the arguments, rank variables, host identity and
working directory a script gets. This test reads that table (between the ``script-contract``
markers) and runs each row as a real two-host job whose script records what it received, so the
documentation and the behaviour cannot drift apart.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml
from local_jobs import smdist_run

pytestmark = pytest.mark.integration

README = Path(__file__).resolve().parents[2] / "README.md"
HYPERPARAMETERS = {"epochs": 3, "flag": True, "layers": [64, 32], "note": "a b"}
# As the training toolkit builds them: sorted, str() of the JSON-decoded value.
EXPECTED_ARGS = ["--epochs", "3", "--flag", "True", "--layers", "[64, 32]", "--note", "a b"]

RECORDER = """
import json, os, sys

record = {"argv": sys.argv[1:], "cwd": os.getcwd(), "env": dict(os.environ)}
marker = os.environ.get("RANK") or os.environ.get("OMPI_COMM_WORLD_RANK") or str(os.getpid())
where = os.path.join(os.environ["SM_MODEL_DIR"], f"seen-{marker}.json")
with open(where, "w") as handle:
    json.dump(record, handle)
"""


def contract_rows() -> list[dict[str, str]]:
    text = README.read_text()
    block = text.split("<!-- script-contract:begin", 1)[1].split("<!-- script-contract:end", 1)[0]
    lines = [line for line in block.splitlines() if line.startswith("|")]
    header = [cell.strip() for cell in lines[0].strip("|").split("|")]
    rows = []
    for line in lines[2:]:
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        rows.append(dict(zip(header, cells, strict=True)))
    return rows


def code_spans(cell: str) -> list[str]:
    return re.findall(r"`([^`]+)`", cell)


ROWS = contract_rows()


def test_the_readme_documents_every_strategy_kind():
    kinds = {yaml.safe_load(code_spans(row["strategy"])[0])["kind"] for row in ROWS}
    assert kinds == {"pytorch_ddp", "horovod", "sddp", "mwms"} | (kinds & {"sdmp"})


@pytest.mark.parametrize("row", ROWS, ids=[code_spans(row["strategy"])[0] for row in ROWS])
def test_the_script_sees_what_the_readme_says(row, tmp_path):
    strategy = yaml.safe_load(code_spans(row["strategy"])[0])
    if strategy["kind"] == "horovod":
        pytest.importorskip("horovod")
    source = tmp_path / "src"
    source.mkdir()
    (source / "seen.py").write_text(RECORDER)
    job = tmp_path / "job.yaml"
    job.write_text(
        yaml.safe_dump(
            {
                "name": "contract",
                "strategy": strategy,
                "cluster": {"instance_type": code_spans(row["instance"])[0], "instance_count": 2},
                "code": {"source_dir": str(source), "entry_point": "seen.py"},
                "hyperparameters": HYPERPARAMETERS,
            }
        )
    )

    run = smdist_run(job, tmp_path, "--processes-per-host", "1", timeout=240)

    assert run.returncode == 0, run.output
    seen = sorted((run.job_dir() / "hosts").glob("*/model/seen-*.json"))
    assert len(seen) == 2, run.output
    rank_variables = code_spans(row["rank variables"])
    first_values = set()
    for path in seen:
        host_dir = path.parents[1]
        record = json.loads(path.read_text())
        argv = list(record["argv"])
        if "--model_dir" in row["argv"]:
            position = argv.index("--model_dir")
            del argv[position : position + 2]
        assert argv == EXPECTED_ARGS
        env = record["env"]
        assert not [name for name in env if name.lower().startswith("smdist_training")]
        for name in rank_variables:
            assert name in env, (name, sorted(env))
        first_values.add(env[rank_variables[0]])
        if "own host" in row["`SM_CURRENT_HOST`"]:
            assert env["SM_CURRENT_HOST"] == host_dir.name
        else:
            assert env["SM_CURRENT_HOST"] == "algo-1"
        # Each host's folder is its /opt/ml (the record landed in this host's model folder).
        assert code_spans(row["working directory"]) == ["/opt/ml/code"]
        assert record["cwd"] == "/opt/ml/code"
        assert env["SM_MODEL_DIR"] == "/opt/ml/model"
    # Each record comes from a different rank / worker.
    assert len(first_values) == 2
