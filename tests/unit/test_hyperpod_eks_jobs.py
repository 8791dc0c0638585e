"""A HyperPodPyTorchJob's status as the operator reports it, and where a job is sent: kubectl's
rules for the kubeconfig, its context and the namespace."""

from __future__ import annotations

import json

import pytest

from smdist.backends.base import JobStatus
from smdist.backends.hyperpod_eks.job import status_of
from smdist.backends.hyperpod_eks.kubeconfig import dry_run_namespace, target
from smdist.errors import SpecError


def conditions(*types: str) -> dict:
    listed = [{"type": t, "status": "False"} for t in types[:-1]]
    return {"status": {"conditions": [*listed, {"type": types[-1], "status": "True"}]}}


@pytest.mark.parametrize(
    ("types", "status"),
    [
        (("Created",), JobStatus.IN_PROGRESS),
        (("Created", "Running"), JobStatus.IN_PROGRESS),
        (("Created", "Running", "Restarting"), JobStatus.IN_PROGRESS),
        (("Created", "Running", "Completed"), JobStatus.COMPLETED),
        (("Created", "Running", "Failed"), JobStatus.FAILED),
    ],
)
def test_the_status_is_the_last_true_condition(types, status):
    assert status_of(conditions(*types)) is status


def test_a_job_without_conditions_runs_a_deleting_one_stops_and_a_deleted_one_stopped():
    assert status_of({}) is JobStatus.IN_PROGRESS
    assert status_of({"metadata": {"deletionTimestamp": "2026-11-29T00:00:00Z"}}) is (
        JobStatus.STOPPING
    )
    assert status_of(None) is JobStatus.STOPPED


def kubeconfig(path, current="a"):
    path.write_text(json.dumps({
        "current-context": current,
        "contexts": [{"name": "a", "context": {"namespace": "team-a"}}, {"name": "b"}],
    }))  # fmt: skip
    return path


def test_kubectls_rules_choose_the_file_the_context_and_the_namespace(tmp_path):
    path = kubeconfig(tmp_path / "config")
    assert target(None, None, None, {"KUBECONFIG": str(path)}).namespace == "team-a"
    assert target(path, "b", None).namespace == "default"
    assert target(path, "b", "mine").namespace == "mine"


def test_a_missing_file_or_context_is_named_with_what_is_valid(tmp_path):
    with pytest.raises(SpecError) as missing:
        target(tmp_path / "none", None, None)
    assert [p.path for p in missing.value.problems] == ["kubeconfig"]
    with pytest.raises(SpecError) as wrong:
        target(kubeconfig(tmp_path / "config"), "c", None)
    (problem,) = wrong.value.problems
    assert (problem.path, problem.valid) == ("context", "a, b")
    with pytest.raises(SpecError) as unset:
        target(kubeconfig(tmp_path / "other", current=""), None, None)
    assert "has no current-context" in unset.value.problems[0].message


def test_a_dry_run_needs_no_kubeconfig(tmp_path):
    assert dry_run_namespace(tmp_path / "none", None, None) == "default"
    assert dry_run_namespace(kubeconfig(tmp_path / "config"), None, None) == "team-a"
