"""Hostile values reach the user's script byte for byte, under every launcher, and run nothing.

A hyperparameter or environment value may hold any text: quotes, ``$()``, backticks, ``;``,
newlines, an assignment such as ``CUDA_VISIBLE_DEVICES=';touch x;#'``, an mpirun flag, unicode.
Each launcher the local backend uses (smdist's torchrun launcher, SageMaker's
torch_distributed torchrun, one mpirun across the hosts for smddp and Horovod, TF_CONFIG with a
process per host) runs a real two-host job whose script records what it received; the test
checks every value arrived exactly and that none of the commands hidden in them ran.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from local_jobs import assert_nothing_left, smdist_run

pytestmark = pytest.mark.integration

RECORDER = """
import json, os, sys

record = {
    "argv": sys.argv[1:],
    "env": {name: os.environ.get(name) for name in os.environ if name.startswith("PAYLOAD_")},
    "hp_env": {n: v for n, v in os.environ.items() if n.startswith("SM_HP_")},
}
rank = os.environ.get("RANK") or os.environ.get("OMPI_COMM_WORLD_RANK") or "0"
host = os.environ.get("SM_CURRENT_HOST", "?")
where = os.path.join(os.environ["SM_MODEL_DIR"], f"record-{host}-{rank}-{os.getpid()}.json")
with open(where, "w", encoding="utf-8") as handle:
    json.dump(record, handle)
print("recorded", where, flush=True)
"""


def payloads(trap: Path) -> list[str]:
    """Values a careless or hostile job file may hold; each names a file it would create."""
    return [
        f"CUDA_VISIBLE_DEVICES=';touch {trap}/p1;#",
        f'"; touch {trap}/p2; echo "',
        f"$(touch {trap}/p3)",
        f"`touch {trap}/p4`",
        f"a;b && touch {trap}/p5 | cat",
        f"line1\ntouch {trap}/p6\nline3",
        "ünïcödé \u202e رتل — 🚀 'single' \"double\"",
        "--injected=flag",
        "  spaces at both ends  ",
        "back\\slash and\ttab",
        f"PATH=/nowhere:$PATH; touch {trap}/p7",
        f"-x LD_PRELOAD=/nowhere.so --host evil ; touch {trap}/p8",
        f"'$(touch {trap}/p9)'\\",
    ]


LAUNCHERS = [
    pytest.param(
        {"kind": "pytorch_ddp", "launcher": "torchrun"},
        "ml.c5.xlarge",
        marks=pytest.mark.torch,
        id="torchrun-launcher",
    ),
    pytest.param(
        {"kind": "pytorch_ddp", "launcher": "torch_distributed"},
        "ml.g5.xlarge",
        marks=pytest.mark.torch,
        id="torch_distributed",
    ),
    pytest.param({"kind": "sddp"}, "ml.p4d.24xlarge", id="mpirun-smddp"),
    pytest.param(
        {"kind": "horovod", "framework": "pytorch"},
        "ml.g5.xlarge",
        marks=pytest.mark.horovod,
        id="horovod-mpirun",
    ),
    pytest.param({"kind": "mwms"}, "ml.c5.xlarge", id="tf_config"),
]


@pytest.mark.parametrize(("strategy", "instance_type"), LAUNCHERS)
def test_hostile_values_arrive_exactly_and_run_nothing(strategy, instance_type, tmp_path):
    if strategy["kind"] == "horovod":
        pytest.importorskip("horovod")
    trap = tmp_path / "trap"
    trap.mkdir()
    values = payloads(trap)
    source = tmp_path / "src"
    source.mkdir()
    (source / "record.py").write_text(RECORDER)
    hyperparameters = {f"h{index}": value for index, value in enumerate(values)}
    environment = {f"PAYLOAD_{index}": value for index, value in enumerate(values)}
    job = tmp_path / "job.yaml"
    job.write_text(
        yaml.safe_dump(
            {
                "name": "hostile",
                "strategy": strategy,
                "cluster": {"instance_type": instance_type, "instance_count": 2},
                "code": {"source_dir": str(source), "entry_point": "record.py"},
                "hyperparameters": hyperparameters,
                "environment": environment,
            },
            allow_unicode=True,
        ),
        encoding="utf-8",
    )

    run = smdist_run(job, tmp_path, "--processes-per-host", "1", timeout=240)

    assert run.returncode == 0, run.output
    assert sorted(path.name for path in trap.iterdir()) == [], "a hidden command ran"
    records = sorted((run.job_dir() / "hosts").glob("*/model/record-*.json"))
    assert {path.parts[-3] for path in records} == {"algo-1", "algo-2"}, run.output
    for path in records:
        record = json.loads(path.read_text(encoding="utf-8"))
        argv = record["argv"]
        for name, value in hyperparameters.items():
            position = argv.index(f"--{name}")
            assert argv[position + 1] == value, (name, argv[position + 1])
            assert record["hp_env"][f"SM_HP_{name.upper()}"] == value
        assert record["env"] == environment
    assert_nothing_left(run.job_dir())
