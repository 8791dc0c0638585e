"""Scripts written for SageMaker's own libraries run unchanged on the local backend.

``user_scripts/sagemaker_libraries/*.py`` import the libraries under their real names, as
AWS documents them: SMDDP's modern API (``torch_smddp`` + ``backend="smddp"``) and its older
one (``smdistributed.dataparallel.torch.distributed`` and its ``DistributedDataParallel``),
SMP v1 (``smdistributed.modelparallel.torch``) and SMP v2 (``torch.sagemaker``). None of those
libraries is installed here: on the emulated hosts smdist's stand-ins answer the names
(``smdist.backends.local.standins``). Each script runs through ``smdist run`` on 2 hosts x 2
processes, reports what it saw (``sm-library {json}`` per rank) and packs a model.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from local_jobs import Run, smdist_cli, smdist_run, tar_names
from torch_exit import EXIT_ABORT, past_torch_exit_aborts

SCRIPTS = Path(__file__).resolve().parent / "user_scripts" / "sagemaker_libraries"


# torch 2.13 over gloo: a rank can abort in its exit handlers after the script has finished
# (as in test_user_scripts); only that is retried, any other failure fails at once.
def run_script(job: Path, tmp_path: Path, *args: str) -> Run:
    """The job, in a fresh place for each attempt (``torch_exit``'s rule: again only after an
    abort at exit; these scripts print nothing common at their end, so any such abort counts)."""

    def attempt(number: int) -> Run:
        place = tmp_path / f"attempt-{number}"
        place.mkdir()
        return smdist_run(job, place, *args)

    return past_torch_exit_aborts(
        attempt, lambda run: run.returncode != 0 and EXIT_ABORT.search(run.output) is not None
    )


pytestmark = [pytest.mark.integration, pytest.mark.torch]


def _job(tmp_path: Path, script: str, strategy: dict[str, Any], instance_type: str, **extra):
    code = tmp_path / "code"
    code.mkdir()
    shutil.copy(SCRIPTS / script, code / "train.py")
    spec = {
        "name": script.removesuffix(".py").replace("_", "-"),
        "strategy": strategy,
        "cluster": {"instance_type": instance_type, "instance_count": 2},
        "code": {"entry_point": "train.py", "source_dir": str(code)},
        **extra,
    }
    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path


def reports(run: Run) -> dict[int, dict[str, Any]]:
    found = {}
    decoder = json.JSONDecoder()
    # Ranks share stdout unbuffered: two reports can share a line.
    for piece in run.output.split("sm-library ")[1:]:
        report, _ = decoder.raw_decode(piece)
        found[report["rank"]] = report
    return found


def _completed(run: Run) -> dict[int, dict[str, Any]]:
    assert run.returncode == 0, run.output[-4000:]
    seen = reports(run)
    assert sorted(seen) == [0, 1, 2, 3], run.output[-4000:]
    assert {report["world"] for report in seen.values()} == {4}
    model = run.job_dir() / "output" / "model.tar.gz"
    assert "model.pt" in tar_names(model)
    return seen


SDDP = {"kind": "sddp"}


def test_smddp_modern_api_runs_unchanged_beside_a_projects_own_sitecustomize(tmp_path):
    """The modern-API script from a code directory that ships its own sitecustomize.py: it
    still runs, and the stand-ins still answer (the other scripts run without one)."""
    job = _job(tmp_path, "smddp_modern.py", SDDP, "ml.p4d.24xlarge", hyperparameters={"steps": 3})
    (tmp_path / "code" / "sitecustomize.py").write_text(
        "import sys\nprint('project sitecustomize ran', file=sys.stderr, flush=True)\n"
    )
    run = run_script(job, tmp_path, "--processes-per-host", "2")
    seen = _completed(run)
    assert sorted(r["local_rank"] for r in seen.values()) == [0, 0, 1, 1]
    assert len({r["weights"] for r in seen.values()}) == 1  # one replica, averaged gradients
    assert "smddp backend is a local stand-in running gloo collectives over 4 ranks" in run.output
    assert "project sitecustomize ran" in run.output


def test_smddp_older_api_runs_unchanged(tmp_path):
    job = _job(tmp_path, "smddp_legacy.py", SDDP, "ml.p4d.24xlarge")
    run = run_script(job, tmp_path, "--processes-per-host", "2")
    seen = _completed(run)
    assert {r["rank_sum"] for r in seen.values()} == {6.0}
    assert {r["local_size"] for r in seen.values()} == {2}
    assert sorted(r["local_rank"] for r in seen.values()) == [0, 0, 1, 1]
    assert len({r["weights"] for r in seen.values()}) == 1


@pytest.mark.parametrize("placement", ["cluster", "spread"])
def test_smp_v1_tutorial_script_sees_the_librarys_ranks_and_groups(tmp_path, placement):
    from smdist.runtime.smp.topology import Topology

    strategy = {
        "kind": "sdmp",
        "version": 1,
        "partitions": 2,
        "microbatches": 2,
        "ddp": True,
        "placement_strategy": placement,
        "processes_per_host": 2,
    }
    job = _job(tmp_path, "smp_v1.py", strategy, "ml.p3.16xlarge")
    run = run_script(job, tmp_path)
    seen = _completed(run)
    grid = Topology(world_size=4, pp_size=2, tp_size=1, placement_strategy=placement)
    for rank, report in seen.items():
        assert (report["mp_size"], report["dp_size"], report["rdp_size"]) == (2, 2, 2)
        expected = {
            "pp_rank": grid.pp_rank(rank),
            "tp_rank": grid.tp_rank(rank),
            "dp_rank": grid.dp_rank(rank),
            "rdp_rank": grid.rdp_rank(rank),
            "mp_rank": grid.mp_rank(rank),
        }
        assert {key: report[key] for key in expected} == expected, (rank, report)
    # Data sharded by dp_rank: the two pipeline stages of one replica read the same samples,
    # the two replicas different ones; gradients averaged over the data-parallel group keep
    # every rank's weights equal.
    by_replica: dict[int, set] = {}
    for report in seen.values():
        by_replica.setdefault(report["dp_rank"], set()).add(tuple(report["first_samples"]))
    assert all(len(samples) == 1 for samples in by_replica.values())
    assert len({samples.pop() for samples in by_replica.values()}) == 2
    assert len({r["weights"] for r in seen.values()}) == 1
    assert "smp: SageMaker's model parallel library is not installed here" in run.output


SMP_V2 = {"kind": "sdmp", "version": 2, "hybrid_shard_degree": 2}


def test_smp_v2_script_with_tsm_and_fsdp(tmp_path):
    # Two processes per emulated host from the job file (the option's are the same: below).
    strategy = {**SMP_V2, "processes_per_host": 2}
    job = _job(tmp_path, "smp_v2.py", strategy, "ml.p4d.24xlarge")
    run = run_script(job, tmp_path)
    seen = _completed(run)
    assert "2 hosts x 2 processes emulating ml.p4d.24xlarge" in run.output
    assert "processes per host: 2 as strategy.processes_per_host asks" in run.output
    assert {r["initialized"] for r in seen.values()} == {True}
    assert {r["hybrid_shard_degree"] for r in seen.values()} == {2}
    assert {r["tp_size"] for r in seen.values()} == {1}
    assert {r["shard_group_size"] for r in seen.values()} == {2}  # hybrid: shards of 2, 2 replicas
    assert "torch.sagemaker: SageMaker's SMP v2 library is not installed here" in run.output
    # The stand-in's note says what it leaves out.
    assert "not reproduced: tensor, context and expert parallelism" in run.output


def test_smp_v2_processes_per_host_from_the_option_or_the_job_file_are_the_same(tmp_path):
    """What the hosts get is made from the job's local layout: the option's and the job file's
    are the same but for the spec's record of what it asked."""
    from smdist.backends.local.options import LocalOptions
    from smdist.backends.local.preparation.files import local_layout
    from smdist.checks.reading import load
    from smdist.planning.plan import plan

    def layout(place: str, strategy: dict[str, Any], **options: Any):
        (tmp_path / place).mkdir()
        job = _job(tmp_path / place, "smp_v2.py", strategy, "ml.p4d.24xlarge")
        return local_layout(plan(load(job)), "smp-v2", LocalOptions(**options))

    by_option = layout("option", SMP_V2, processes_per_host=2)
    by_file = layout("job-file", {**SMP_V2, "processes_per_host": 2})
    assert (by_option.hosts, by_option.processes_per_host) == (2, 2)
    assert by_option.plan.topology == by_file.plan.topology
    assert by_option.plan.launch == dataclasses.replace(
        by_file.plan.launch, requested_processes_per_host=None
    )
    assert by_option.wire_hyperparameters == by_file.wire_hyperparameters
    assert by_option.environment == by_file.environment


def test_smp_v2_tensor_parallelism_is_refused_locally_before_any_rank_starts(tmp_path):
    strategy = {"kind": "sdmp", "version": 2, "tensor_parallel_degree": 2}
    job = _job(tmp_path, "smp_v2.py", strategy, "ml.p4d.24xlarge")
    run = smdist_run(job, tmp_path)
    assert run.returncode == 2, run.output
    assert "strategy.tensor_parallel_degree: 2 needs SageMaker's SMP v2 library" in run.output
    assert "valid: 1 for smdist run" in run.output
    assert "Traceback" not in run.output
    assert not (tmp_path / ".smdist" / "jobs").exists()  # nothing prepared, nothing started
    # A SageMaker job of the same spec is valid: the limit is the local stand-in's.
    spec = yaml.safe_load(job.read_text())
    spec["code"]["framework_version"] = "2.5.1"  # SageMaker picks the SMP v2 image by it
    (tmp_path / "sagemaker.yaml").write_text(yaml.safe_dump(spec))
    checked = smdist_cli(tmp_path, "validate", "sagemaker.yaml")
    assert checked.returncode == 0, checked.stderr
    assert "valid (sdmp, world size 16)" in checked.stdout
