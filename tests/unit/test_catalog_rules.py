"""Jobs are checked against what SageMaker offers: Regions, containers, instance types, limits.

Each refusal names the field, the value and what would be valid.
"""

from __future__ import annotations

import copy
import subprocess
import sys

import pytest

import smdist
from smdist import catalog
from smdist.catalog import api, images
from smdist.errors import SpecError
from smdist.spec.job import JobSpec

BASE = {
    "name": "job",
    "strategy": {"kind": "pytorch_ddp"},
    "cluster": {"instance_type": "ml.g5.12xlarge", "instance_count": 2},
    "code": {"framework_version": "2.10.0", "py_version": "py313"},
    "region": "us-west-2",
}


def job(**changes) -> dict:
    data = copy.deepcopy(BASE)
    for dotted, value in changes.items():
        target = data
        *parents, last = dotted.split("__")
        for key in parents:
            target = target.setdefault(key, {})
        target[last] = value
    return data


def refusal(data: dict) -> SpecError:
    with pytest.raises(SpecError) as caught:
        smdist.plan(JobSpec.from_dict(data))
    return caught.value


def problem_at(error: SpecError, path: str):
    found = [p for p in error.problems if p.path == path]
    assert found, f"no problem at {path}: {error}"
    return found[0]


def plans(data: dict) -> smdist.Plan:
    return smdist.plan(JobSpec.from_dict(data))


# --- Regions ---------------------------------------------------------------------------------


def test_region_typo_is_refused_with_close_suggestions():
    problem = problem_at(refusal(job(region="us-westt-2")), "region")
    assert "'us-westt-2'" in str(problem)
    assert "did you mean 'us-west-2'" in problem.message
    assert "eu-west-1" in problem.message  # the valid Regions are listed


@pytest.mark.parametrize("region", ["us-west-2", "eu-central-2", "cn-northwest-1", "us-gov-east-1"])
def test_every_sagemaker_region_is_accepted(region):
    assert plans(job(region=region)).spec.region == region


def test_a_region_shaped_name_sagemaker_lacks_is_refused():
    assert "xx-nowhere-9" not in api.regions()
    problem_at(refusal(job(region="xx-nowhere-9")), "region")


def test_region_typo_exits_2_on_the_command_line(tmp_path):
    path = tmp_path / "job.yaml"
    text = "name: j\nstrategy: {kind: pytorch_ddp}\ncluster: {instance_type: ml.g5.xlarge}\n"
    path.write_text(text + "region: us-westt-2\n")
    done = subprocess.run(
        [sys.executable, "-m", "smdist.cli.app", "validate", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2, done.stderr
    assert "region" in done.stderr and "us-west-2" in done.stderr
    assert "Traceback" not in done.stderr


# --- framework_version and py_version --------------------------------------------------------


def test_unknown_framework_version_is_refused_listing_the_valid_ones():
    problem = problem_at(refusal(job(code__framework_version="9.9.9")), "code.framework_version")
    assert problem.value == "9.9.9"
    assert "2.10.0" in problem.valid and "2.8.0" in problem.valid
    assert "image_uri" in problem.valid


def test_unknown_tensorflow_version_is_refused():
    data = job(strategy={"kind": "mwms"}, code__framework_version="9.9.9", code__py_version=None)
    problem = problem_at(refusal(data), "code.framework_version")
    assert "2.21.0" in problem.valid


def test_py_version_the_image_was_not_built_for_is_refused():
    problem = problem_at(refusal(job(code__py_version="py38")), "code.py_version")
    assert problem.value == "py38" and problem.valid == "py313"


def test_todays_containers_are_accepted():
    assert plans(job()).spec.code.framework_version == "2.10.0"
    assert plans(job(code__framework_version="2.9", code__py_version="py312"))
    tf = job(strategy={"kind": "mwms"}, code__framework_version="2.21", code__py_version="py312")
    assert plans(tf)


def test_image_uri_lifts_the_container_rules():
    data = job(code__framework_version="9.9.9", code__image_uri="123456789012.dkr.ecr.x/y:z")
    assert plans(data)
    horovod = job(strategy={"kind": "horovod"}, code__image_uri="123456789012.dkr.ecr.x/h:1")
    assert plans(horovod)


def test_patch_shorthand_selects_the_newest_patch_release():
    assert images.find_image("tensorflow-training", "2.14").version == "2.14.1"
    assert images.find_image("pytorch-training", "2.3").version == "2.3.0"
    assert images.find_image("pytorch-training", "2.3.1") is None


# --- the strategy's library must be in the image ----------------------------------------------


@pytest.mark.parametrize(
    ("strategy", "version", "py"),
    [
        ({"kind": "horovod"}, "2.3.0", "py311"),
        ({"kind": "horovod", "framework": "tensorflow"}, "2.14", "py310"),
        ({"kind": "sddp"}, "2.6.0", "py312"),
        ({"kind": "sdmp", "partitions": 2}, "2.1.0", "py310"),
    ],
)
def test_strategy_whose_library_the_image_lacks_is_refused(strategy, version, py):
    data = job(strategy=strategy, code__framework_version=version, code__py_version=py)
    data["cluster"] = {"instance_type": "ml.p4d.24xlarge", "instance_count": 2}
    problem = problem_at(refusal(data), "code.framework_version")
    assert "does not carry" in problem.message and "image_uri" in problem.message
    assert "image_uri" in problem.valid


def test_horovod_runs_in_the_last_images_that_carry_it():
    data = job(strategy={"kind": "horovod"}, code__framework_version="2.0.0")
    assert plans({**data, "code": {"framework_version": "2.0.0", "py_version": "py310"}})
    tf = {"framework_version": "2.12", "py_version": "py310"}
    assert plans({**data, "strategy": {"kind": "horovod", "framework": "tensorflow"}, "code": tf})


def test_smp_v2_uses_the_smp_images():
    data = job(strategy={"kind": "sdmp", "version": 2}, code__framework_version="2.5.1")
    data["code"]["py_version"] = "py311"
    data["cluster"] = {"instance_type": "ml.p4d.24xlarge", "instance_count": 2}
    assert plans(data)
    data["code"]["framework_version"] = "2.10.0"
    problem = problem_at(refusal(data), "code.framework_version")
    assert "smdistributed-modelparallel" in problem.message and "2.5.1" in problem.valid


def test_no_image_after_2_5_carries_smdistributed():
    for image in images.training_images("pytorch-training"):
        if smdist.catalog.compare_versions(image.version, "2.6") >= 0:
            assert not image.libraries & {"smddp", "smp_v1", "smp_v2"}, image.version


# --- TensorFlow on Trainium / Inferentia ------------------------------------------------------


@pytest.mark.parametrize(
    "strategy",
    [{"kind": "mwms"}, {"kind": "horovod", "framework": "tensorflow"}],
    ids=["mwms", "horovod-tensorflow"],
)
@pytest.mark.parametrize("instance_type", ["ml.trn1.32xlarge", "ml.trn2.48xlarge"])
def test_tensorflow_strategies_refuse_trainium(strategy, instance_type):
    data = job(strategy=strategy, cluster={"instance_type": instance_type, "instance_count": 2})
    del data["code"]
    problem = problem_at(refusal(data), "cluster.instance_type")
    assert "Trainium" in problem.message and instance_type in problem.message
    assert "ml.g5.xlarge" in problem.valid


def test_smp_v1_tensorflow_refuses_trainium():
    strategy = {"kind": "sdmp", "framework": "tensorflow", "partitions": 2}
    data = job(strategy=strategy, cluster={"instance_type": "ml.trn1.32xlarge"})
    del data["code"]
    assert problem_at(refusal(data), "cluster.instance_type").valid


def test_pytorch_still_runs_on_trainium():
    data = job(
        strategy={"kind": "pytorch_ddp", "launcher": "torch_distributed"},
        cluster={"instance_type": "ml.trn1.32xlarge", "instance_count": 2},
    )
    del data["code"]
    assert plans(data)


def test_inferentia_is_not_a_training_instance():
    data = job(cluster={"instance_type": "ml.inf2.xlarge"})
    problem = problem_at(refusal(data), "cluster.instance_type")
    assert "not a SageMaker training instance type" in problem.message
    assert "ml.trn1.32xlarge" in problem.message  # the Neuron instances that do train


# --- instance types: the API's enum ----------------------------------------------------------


def test_instance_type_outside_the_api_enum_is_refused_with_suggestions():
    error = refusal(job(cluster={"instance_type": "ml.g5.12xlarg"}))
    problem = problem_at(error, "cluster.instance_type")
    assert "'ml.g5.12xlarge'" in problem.message


def test_api_instance_types_beyond_the_catalogue_are_accepted_with_a_warning():
    data = job(strategy={"kind": "pytorch_ddp"}, cluster={"instance_type": "ml.g7.48xlarge"})
    del data["code"]
    plan = plans(data)
    (warning,) = [w for w in plan.warnings if w.path == "cluster.instance_type"]
    assert "no facts" in warning.message
    assert catalog.unknown_instance_types()["ml.g7.48xlarge"] in warning.message  # the reason
    assert plan.topology.processes_per_host == 1  # 'auto': one, not a guess


def test_processes_per_host_auto_is_one_per_gpu_on_the_new_gpu_types():
    for instance_type, gpus in (("ml.g7e.48xlarge", 8), ("ml.g7e.12xlarge", 2)):
        data = job(cluster={"instance_type": instance_type, "instance_count": 2})
        data["strategy"] = {"kind": "pytorch_ddp", "processes_per_host": "auto"}
        plan = plans(data)
        assert plan.topology.processes_per_host == gpus
        assert plan.topology.world_size == 2 * gpus


@pytest.mark.parametrize("local", ["local", "local_gpu"])
def test_local_mode_instance_types_still_work(local):
    data = job(cluster={"instance_type": local, "instance_count": 1})
    assert plans(data).spec.cluster.instance_type == local


# --- limits the API states ---------------------------------------------------------------------


def test_keep_alive_up_to_the_api_maximum_is_valid():
    assert plans(job(keep_alive=21600)).spec.keep_alive == 21600


def test_keep_alive_above_the_api_maximum_is_refused():
    error = refusal(job(keep_alive=21601))
    problem = problem_at(error, "keep_alive")
    assert "21600" in str(problem)


def test_max_run_above_28_days_is_refused():
    assert plans(job(max_run=28 * 86400))
    assert "2419200" in str(problem_at(refusal(job(max_run=28 * 86400 + 1)), "max_run"))


def test_too_many_tags_are_refused():
    tags = {f"k{i}": "v" for i in range(api.field("tags").limit + 1)}
    problem = problem_at(refusal(job(tags=tags)), "tags")
    assert problem.valid == "at most 50"


@pytest.mark.parametrize(
    ("key", "value"), [("bad;key", "v"), ("k", "bad;value"), ("aws:reserved", "v"), ("k" * 129, "")]
)
def test_unusable_tags_are_refused(key, value):
    problem = problem_at(refusal(job(tags={key: value})), f"tags.{key}")
    assert problem.valid


def test_unicode_tags_are_accepted():
    assert plans(job(tags={"Équipe": "données 2026"}))


def test_too_many_subnets_are_refused():
    subnets = [f"subnet-{i:017x}" for i in range(17)]
    groups = ["sg-0123456789abcdef0"]
    data = job(network={"subnets": subnets, "security_group_ids": groups})
    assert problem_at(refusal(data), "network.subnets").valid == "1-16"


def test_too_many_input_channels_are_refused():
    inputs = {f"c{i}": "s3://bucket/data" for i in range(21)}
    assert problem_at(refusal(job(inputs=inputs)), "inputs").valid == "1-20"


def test_over_long_s3_uri_is_refused_naming_the_limit():
    uri = "s3://bucket/" + "k" * 1100
    problem = problem_at(refusal(job(output_path=uri)), "output_path")
    assert "1024" in problem.message
