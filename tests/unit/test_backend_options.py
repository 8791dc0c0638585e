"""Every backend declares its options; an unknown one is refused the same way everywhere."""

from __future__ import annotations

import dataclasses
import importlib
import inspect

import pytest

import smdist
from smdist.backends import BACKEND_OPTIONS, BACKENDS
from smdist.backends.local.setup import LocalOptions
from smdist.errors import SpecError


def test_the_local_options_are_the_local_backends_settings():
    assert BACKEND_OPTIONS["local"] == {field.name for field in dataclasses.fields(LocalOptions)}


@pytest.mark.parametrize("backend", ["sagemaker", "sagemaker-local"])
def test_the_declared_options_are_what_launch_takes(backend):
    launch = importlib.import_module(BACKENDS[backend]).launch
    keyword_only = {
        name
        for name, parameter in inspect.signature(launch).parameters.items()
        if parameter.kind is inspect.Parameter.KEYWORD_ONLY
    }
    assert BACKEND_OPTIONS[backend] == keyword_only


@pytest.mark.parametrize("backend", sorted(BACKENDS))
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
    assert LocalOptions.from_keywords({"fresh": True}).fresh is True
    with pytest.raises(SpecError) as error:
        LocalOptions.from_keywords({"fresh": "yes"})
    problem = error.value.problems[0]
    assert problem.path == "options.fresh" and "True or False" in str(problem)
