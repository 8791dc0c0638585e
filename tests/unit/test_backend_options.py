"""Every backend declares its options as one model; an unknown or invalid one is refused the
same way everywhere, and the command line's flags are made from the same models."""

from __future__ import annotations

import pytest

import smdist
from smdist.backends import registry
from smdist.backends.local.options import LocalOptions
from smdist.cli import backend_flags
from smdist.errors import SpecError


@pytest.mark.parametrize("backend", sorted(registry.BACKENDS))
def test_an_unknown_option_is_refused_naming_it_before_anything_runs(backend, tmp_path):
    with pytest.raises(SpecError) as error:
        smdist.fit(
            name="x",
            strategy=smdist.PyTorchDDP(),
            cluster=smdist.Cluster(instance_type="ml.g5.xlarge", instance_count=2),
            backend=backend,
            options={"host": 2, "root": str(tmp_path)} if backend == "local" else {"host": 2},
        )
    problem = error.value.problems[0]
    assert problem.path == "options.host"
    assert f"the {backend} backend" in problem.message
    assert not (tmp_path / "jobs").exists()


def test_fresh_is_a_local_option_that_must_be_a_boolean():
    assert LocalOptions.read("local", {"fresh": True}).fresh is True
    with pytest.raises(SpecError) as error:
        LocalOptions.read("local", {"fresh": "yes"})
    problem = error.value.problems[0]
    assert problem.path == "options.fresh" and "boolean" in str(problem)


@pytest.mark.parametrize(("name", "value"), [("grace", 0), ("hosts", 0), ("max_run", -1.0)])
def test_an_out_of_range_option_is_refused_naming_it_and_what_is_valid(name, value):
    with pytest.raises(SpecError) as error:
        LocalOptions.read("local", {name: value})
    problem = error.value.problems[0]
    assert problem.path == f"options.{name}" and problem.value == value and problem.valid


def test_a_stall_timeout_of_zero_or_none_means_never():
    assert LocalOptions.read("local", {"stall_timeout": 0}).stall_timeout is None
    assert LocalOptions.read("local", {"stall_timeout": None}).stall_timeout is None
    assert LocalOptions.read("local", {}).stall_timeout == 600


def test_every_command_line_option_of_every_backend_is_a_flag_described_by_its_model():
    for name in registry.BACKENDS:
        backend = registry.get(name)
        flags = {flag.field: flag for flag in backend_flags.flags([backend])}
        for field_name, field in backend.Options.model_fields.items():
            assert field.description, f"{name}.{field_name} has no description"
            if field_name in flags:
                assert flags[field_name].help.startswith(field.description)


def test_a_flag_of_another_backend_is_refused_naming_the_backends_that_take_it():
    known = backend_flags.flags(map(registry.get, registry.names(command="submit")))
    sagemaker = registry.get("sagemaker")
    with pytest.raises(SpecError) as error:
        backend_flags.options_for(sagemaker, {"shm_size": "2gb"}, known)
    problem = error.value.problems[0]
    assert problem.path == "--shm-size" and "sagemaker-local only" in problem.message


def test_a_flag_two_backends_describe_differently_says_each_ones_meaning():
    known = backend_flags.flags(map(registry.get, ("hyperpod-slurm", "hyperpod-eks")))
    job_root = next(flag for flag in known if flag.field == "job_root")
    assert job_root.backends == ("hyperpod-slurm", "hyperpod-eks")
    slurm, eks = job_root.help.split("; hyperpod-eks: ")
    assert slurm.startswith("hyperpod-slurm: folder on the cluster's shared file system")
    assert eks.startswith("folder of the shared volume")
    region = next(flag for flag in known if flag.field == "region")
    assert region.help == "AWS region (default: the AWS configuration)"  # the same on both
