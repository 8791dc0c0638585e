"""The local backend's pure parts: the container's SM_* environment, arguments, local layout,
the ssh stand-in's rewriting, log attribution and the choice of a failure's root cause."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from smdist.backends.local.hosts.folders import EmulatedHost
from smdist.backends.local.hosts.namespaced import sshd
from smdist.backends.local.hosts.shared.ssh_stand_in import split_ssh_arguments
from smdist.backends.local.preparation.layout import LOCAL_COLLECTIVE_TIMEOUT, plan_layout
from smdist.backends.local.processes.commands import (
    build_commands,
    local_image,
    local_launch,
    local_mpirun,
    map_host_directory,
)
from smdist.backends.local.processes.environment import clean_environment
from smdist.backends.local.processes.proctree import program_name
from smdist.backends.local.reports.failure import root_cause
from smdist.backends.local.reports.logs import attribute
from smdist.checks.reading import load
from smdist.contract.commands import Launcher, program_command
from smdist.contract.environment import (
    HostConfig,
    Machine,
    command_line_arguments,
    decode_hyperparameters,
    input_data_config,
    resource_config,
    sm_variables,
    training_environment,
)
from smdist.errors import SpecError
from smdist.planning.plan import plan
from smdist.spec.job import JobSpec

REFERENCE = Path(__file__).resolve().parents[1] / "fixtures" / "sagemaker_training_env.json"
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
SCENARIOS = sorted(k for k in json.loads(REFERENCE.read_text()) if not k.startswith("_"))


def _reference(name: str) -> dict:
    return json.loads(REFERENCE.read_text())[name]


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_sm_variables_match_the_sagemaker_training_toolkit(scenario):
    recorded = _reference(scenario)
    given = recorded["inputs"]
    base = Path("/jobs/x/hosts/algo-9")
    config = HostConfig(
        given["hyperparameters"],
        resource_config(given["hosts"], given["current_host"], given["instance_type"], "lo"),
        input_data_config(given["channels"]),
    )
    environment = training_environment(
        base,
        config,
        Machine(num_cpus=7, num_gpus=0),
        job_name=given["job_name"],
        framework_module=given["framework_module"],
    )
    expected = {
        name: value.replace("{base}", str(base))
        .replace('"{num_cpus}"', "7")
        .replace("{num_cpus}", "7")
        for name, value in recorded["env"].items()
    }
    assert sm_variables(environment) == expected


def test_arguments_are_sorted_and_built_with_str_like_the_container():
    decoded = decode_hyperparameters(
        {
            "use_amp": "true",
            "layers": "[64, 32]",
            "opts": '{"b": 2, "a": "x"}',
            "k": "3",
            "name": '"run one"',
            "raw": "not json",
        }
    )
    assert command_line_arguments(decoded) == [
        "-k", "3",
        "--layers", "[64, 32]",
        "--name", "run one",
        "--opts", "a=x,b=2",
        "--raw", "not json",
        "--use_amp", "True",
    ]  # fmt: skip


def test_program_runs_as_python_script_or_directly_never_through_a_shell():
    image = local_image("py")
    assert program_command(image, "train.py", ["--a", "1"]) == ["py", "--", "train.py", "--a", "1"]
    assert program_command(image, "train.sh", ["--a", "x y; $(id)"]) == [
        "./train.sh",
        "--a",
        "x y; $(id)",
    ]


# ---- layout --------------------------------------------------------------------------------
def _plan(example: str, **changes):
    spec = load(EXAMPLES / f"{example}.yaml")
    if changes:
        data = spec.model_dump(mode="json", by_alias=True, exclude_unset=True)
        for key, value in changes.items():
            data[key] = {**data.get(key, {}), **value} if isinstance(value, dict) else value
        spec = JobSpec.from_dict(data)
    return plan(spec)


def _layout(example: str, cpus: int = 2, gpus=(), **options):
    return plan_layout(
        _plan(example),
        job_name="job-1",
        region="us-west-2",
        cpus=cpus,
        gpus=list(gpus),
        **options,
    )


@pytest.mark.parametrize(
    ("example", "launcher"),
    [
        ("pytorch_ddp", Launcher.PROGRAM),
        ("mwms", Launcher.TF_CONFIG),
        ("pytorch_ddp_torch_distributed", Launcher.TORCHRUN),
        ("smp_v2", Launcher.TORCHRUN),
        ("smp_v1", Launcher.MPIRUN),
        ("sddp", Launcher.SMDDP),
        ("horovod_pytorch", Launcher.MPIRUN),
        ("horovod_tensorflow", Launcher.MPIRUN),
    ],
)
def test_each_distribution_gets_the_launcher_its_container_uses(example, launcher):
    assert _layout(example).launcher == launcher


def test_processes_per_host_are_capped_by_the_cpus_and_say_so():
    layout = _layout("sddp", cpus=4)  # 8 GPUs per host on SageMaker, 2 hosts here
    assert layout.processes_per_host == 2
    assert any("instead of 8" in note for note in layout.notes)
    assert json.loads(layout.wire_hyperparameters["sagemaker_job_name"]) == "job-1"


def test_hosts_and_processes_can_be_overridden():
    layout = _layout("pytorch_ddp", hosts=1, processes_per_host=2)
    assert (layout.hosts, layout.processes_per_host) == (1, 2)
    # One value says what runs: the resized plan's launch and topology, and its shipped launch.
    assert layout.plan.launch.processes_per_host == 2
    assert (len(layout.plan.topology.hosts), layout.plan.topology.world_size) == (1, 2)
    assert layout.plan.launch.hosts == ("algo-1",)
    assert "SMDIST_PROCESSES_PER_HOST" not in layout.environment


def test_gpus_are_shared_out_between_the_hosts():
    layout = _layout("pytorch_ddp_torch_distributed", gpus=["0", "1", "2", "3"])
    assert layout.gpus_per_host == 2
    assert layout.host_gpus == [["0", "1"], ["2", "3"]]
    assert layout.processes_per_host == 2


def test_gpu_settings_fall_back_to_cpu_equivalents_with_a_note():
    spec_plan = _plan("pytorch_ddp", strategy={"backend": "nccl"})
    layout = plan_layout(spec_plan, job_name="j", region="r", cpus=2, gpus=[])
    assert layout.environment["SMDIST_BACKEND"] == "gloo"
    assert any("nccl -> gloo" in note for note in layout.notes)
    assert any("run on CPU" in note for note in layout.notes)


def test_ready_scripts_get_a_short_collective_timeout_unless_the_spec_sets_one():
    assert _layout("pytorch_ddp").environment["SMDIST_COLLECTIVE_TIMEOUT"] == str(
        LOCAL_COLLECTIVE_TIMEOUT
    )
    chosen = _plan("pytorch_ddp", strategy={"collective_timeout": 7})
    layout = plan_layout(chosen, job_name="j", region="r", cpus=2, gpus=[])
    assert layout.environment["SMDIST_COLLECTIVE_TIMEOUT"] == "7"


def test_smp_v1_grows_the_processes_until_the_partitions_divide_the_world():
    auto = _plan("smp_v1", strategy={"processes_per_host": "auto"})  # partitions: 2
    layout = plan_layout(auto, job_name="j", region="r", cpus=1, gpus=[], hosts=1)
    assert layout.processes_per_host == 2
    with pytest.raises(SpecError, match="multiple of the model-parallel degree 2"):
        _layout("smp_v1", hosts=1, processes_per_host=3)


def test_an_explicit_processes_per_host_is_kept_and_oversubscribes_with_a_note():
    layout = _layout("smp_v1", cpus=2, hosts=2)  # processes_per_host: 8, as the user wrote
    assert layout.processes_per_host == 8
    assert any("8 as the spec asks, oversubscribing" in note for note in layout.notes)
    auto = _plan("pytorch_ddp", strategy={"processes_per_host": "auto"})
    assert plan_layout(auto, job_name="j", region="r", cpus=2, gpus=[]).processes_per_host == 1


def test_smp_v2_hybrid_shard_degree_shrinks_to_the_local_world():
    layout = _layout("smp_v2")  # hybrid_shard_degree 8 on 16 GPUs; 2 ranks here
    assert json.loads(layout.wire_hyperparameters["mp_parameters"])["hybrid_shard_degree"] == 2


# ---- MPI across emulated hosts ------------------------------------------------------------
def test_mpirun_gives_each_host_its_directory_and_the_launching_hosts_values(tmp_path):
    layout = _layout("smp_v1")
    hosts = [
        EmulatedHost(f"algo-{i + 1}", i, f"127.0.0.{11 + i}", tmp_path / f"h{i}") for i in (0, 1)
    ]
    main_env = {
        "SM_CURRENT_HOST": "algo-1",
        "SM_MODEL_DIR": f"{hosts[0].base}/model",
        "SM_USER_ARGS": '["--epochs", "1"]',
        "PATH": "/usr/bin",
        "OTHER": "kept by inheritance only",
        "SMDIST_LOCAL_HOSTS": json.dumps({"algo-1": {"base": str(hosts[0].base), "gpus": ""}}),
    }
    host_arguments = [["--epochs", "1"], ["--epochs", "1", "--model_dir", str(hosts[1].model)]]
    command = local_mpirun(
        local_launch(layout, ["algo-1", "algo-2"]), local_image("py"), hosts, main_env,
        host_arguments, program="train.py", ssh=Path("/x/ssh"), host_gpus=layout.host_gpus,
    )  # fmt: skip
    contexts = " ".join(command).split(" : ")
    assert len(contexts) == 2
    assert f"-wdir {hosts[1].code}" in contexts[1]
    assert f"SM_MODEL_DIR={hosts[1].base}/model" in contexts[1]
    assert "SM_CURRENT_HOST=algo-1" in contexts[1]  # SageMaker exports the launcher's value
    assert "-x NCCL_DEBUG=VERSION" in contexts[0] and "-x NCCL_DEBUG=VERSION" in contexts[1]
    assert "-verbose" in contexts[0] and "OTHER=" not in " ".join(command)
    assert "SMDIST_LOCAL_HOSTS" not in " ".join(command)  # the stand-in's map is not rewritten
    assert contexts[0].endswith("py -- train.py --epochs 1")
    assert contexts[1].endswith(f"py -- train.py --epochs 1 --model_dir {hosts[1].model}")


@pytest.mark.parametrize("reader", [split_ssh_arguments, sshd.split_ssh_arguments])
def test_both_ssh_stand_ins_read_options_before_and_after_the_host_as_openssh_does(reader):
    assert reader(["-o", "StrictHostKeyChecking=no", "algo-2", "date"]) == ("algo-2", ["date"])
    assert reader(["user@algo-1", "-p", "22", "-o", "X=1", "cd /a ; run"]) == (
        "algo-1",
        ["cd /a ; run"],
    )
    # -P and -Q take a value in OpenSSH 9; "-xp 22": the last letter takes the next word.
    assert reader(["-P", "tag", "-xp", "22", "-T", "root@algo-2", "orted", "-mca", "ess"]) == (
        "algo-2",
        ["orted", "-mca", "ess"],
    )


def test_host_directories_are_mapped_in_whole_path_components_only():
    main, other = "/j/hosts/algo-1", "/j/hosts/algo-2"
    assert map_host_directory("/j/hosts/algo-1/model", main, other) == "/j/hosts/algo-2/model"
    assert map_host_directory('{"model":"/j/hosts/algo-1"}', main, other) == (
        '{"model":"/j/hosts/algo-2"}'
    )
    assert map_host_directory("/j/hosts/algo-10/code", main, other) == "/j/hosts/algo-10/code"


def test_a_shell_environment_of_another_cluster_does_not_leak_into_hosts():
    cleaned = clean_environment(
        {"PATH": "/bin", "SM_HOSTS": "[]", "TF_CONFIG": "{}", "RANK": "3", "OMPI_X": "1"}
    )
    assert cleaned == {"PATH": "/bin"}


# ---- logs and failures ---------------------------------------------------------------------
RANKS = ["algo-1", "algo-1", "algo-2", "algo-2"]  # mpirun's ranks 2 and 3 ran on algo-2


def test_rank_tags_name_the_rank_and_its_host():
    assert attribute("[1,2]<stderr>:boom", "algo-1", "mpirun", RANKS) == [("algo-2", 2, "boom")]
    assert attribute("[1,3]<stdout>:", "algo-1", "mpirun", RANKS) == [("algo-2", 3, "")]
    assert attribute("plain", "algo-2", None, []) == [("algo-2", None, "plain")]
    # torchrun's workers share the host's output, unbuffered: rank 3's traceback may start
    # before rank 2's newline. Each is a line of its own, so the traceback is rank 3's.
    glued = "rank 2 step 2[rank3]: Traceback (most recent call last):"
    assert attribute(glued, "algo-2", None, []) == [
        ("algo-2", None, "rank 2 step 2"),
        ("algo-2", None, "[rank3]: Traceback (most recent call last):"),
    ]
    assert attribute("[rank3]: KeyError: 'x'", "algo-2", None, []) == [
        ("algo-2", None, "[rank3]: KeyError: 'x'")
    ]
    # A user's own logging format that names the rank mid-line stays one line.
    mine = "2026-11-30 12:00:01 INFO [rank0]: loss=0.25"
    assert attribute(mine, "algo-1", None, []) == [("algo-1", None, mine)]
    assert attribute("mpirun noticed", "algo-1", "mpirun", RANKS) == [
        ("algo-1", None, "mpirun noticed")
    ]


def test_tags_of_the_same_rank_inside_a_line_join_its_pieces():
    assert attribute("[1,0]<stdout>:a[1,0]<stdout>:", "algo-1", "mpirun", RANKS) == [
        ("algo-1", 0, "a")
    ]
    pieces = "[1,1]<stderr>:ValueError[1,1]<stderr>:: [1,1]<stderr>:rank 1 fell over"
    assert attribute(pieces, "algo-1", "mpirun", RANKS) == [
        ("algo-1", 1, "ValueError: rank 1 fell over")
    ]


def test_another_ranks_tag_inside_a_line_splits_it_there():
    merged = (
        "[1,2]<stdout>:old-api rank=2 local_rank=0 local_size=2"
        "[1,0]<stdout>:old-api rank=0 local_rank=0 local_size=2"
    )
    assert attribute(merged, "algo-1", "mpirun", RANKS) == [
        ("algo-2", 2, "old-api rank=2 local_rank=0 local_size=2"),
        ("algo-1", 0, "old-api rank=0 local_rank=0 local_size=2"),
    ]


def test_interleaved_pieces_of_several_ranks_each_go_to_their_own_rank():
    line = "[1,3]<stdout>:step 5[1,1]<stderr>:warn[1,1]<stderr>:ing[1,2]<stdout>:[1,0]<stdout>:ok"
    assert attribute(line, "algo-2", "mpirun", RANKS) == [
        ("algo-2", 3, "step 5"),
        ("algo-1", 1, "warning"),
        ("algo-1", 0, "ok"),
    ]


def _traceback(host, rank, message, start):
    body = ["Traceback (most recent call last):", '  File "x.py", line 1, in <module>', message]
    return [(start + i, host, rank, line) for i, line in enumerate(body)]


def test_root_cause_is_the_crash_not_the_peers_connection_error():
    lines = (
        _traceback("algo-1", None, "[rank0]: RuntimeError: Connection closed by peer", 1)
        + _traceback("algo-2", None, "RuntimeError: boom", 10)
        + _traceback("algo-2", None, "torch.distributed.elastic.x.ChildFailedError:", 20)
    )
    # The peer's error came first, but it reports a consequence.
    lines = [(i, h, r, t.replace("[rank0]: ", "")) for i, h, r, t in lines]
    found = root_cause(lines, ["algo-1", "algo-2"])
    assert (found.host, found.message) == ("algo-2", "RuntimeError: boom")


def test_root_cause_reads_torch_rank_prefixes():
    lines = [
        (1, "algo-2", None, "[rank3]: Traceback (most recent call last):"),
        (2, "algo-2", None, "[rank3]:   File 'x.py', line 1"),
        (3, "algo-2", None, "[rank3]: ValueError: bad shard"),
    ]
    found = root_cause(lines, ["algo-2"])
    assert (found.rank, found.message) == (3, "ValueError: bad shard")


def test_without_a_traceback_mpiruns_report_names_the_failed_rank():
    lines = [
        (1, "algo-2", 3, "segfault in my extension"),
        (2, "algo-1", None, "a non-zero exit code. Per user-direction, the job has been aborted."),
        (3, "algo-1", None, "  Process name: [[26363,1],3]"),
    ]
    found = root_cause(lines, ["algo-1", "algo-2"])
    assert (found.host, found.rank) == ("algo-2", 3)
    assert "segfault in my extension" in found.message


def test_launcher_names_are_recognised_behind_python():
    assert program_name(["/v/bin/python", "-m", "torch.distributed.run", "x"]) == (
        "torch.distributed.run"
    )
    assert program_name(["python3", "-u", "--", "/c/launch_torchrun.py"]) == "launch_torchrun.py"
    assert program_name(["/usr/bin/mpirun", "-np", "2"]) == "mpirun"


def test_smddp_mpirun_exports_exactly_the_data_parallel_runners_variables(tmp_path):
    layout = _layout("sddp", hosts=2, processes_per_host=1)
    hosts = [
        EmulatedHost(f"algo-{i + 1}", i, f"127.0.0.{11 + i}", tmp_path / f"h{i}") for i in (0, 1)
    ]
    main_env = {
        "SM_CURRENT_HOST": "algo-1",
        "SM_MODEL_DIR": f"{hosts[0].base}/model",
        "SM_RESOURCE_CONFIG": json.dumps({"current_instance_type": "ml.p4d.24xlarge"}),
        "PATH": "/usr/bin",
    }
    launch = local_launch(layout, ["algo-1", "algo-2"])
    command = local_mpirun(
        launch, local_image("py"), hosts, main_env, [["--a", "1"], ["--a", "1"]],
        program="train.py", ssh=Path("/x/ssh"), host_gpus=layout.host_gpus,
    )  # fmt: skip
    contexts = " ".join(command).split(" : ")
    exported = [command[i + 1] for i, word in enumerate(command) if word == "-x"]
    assert not [name for name in exported if name.startswith("SM_")]
    assert exported[: len(exported) // 2] == [
        "NCCL_SOCKET_IFNAME=lo",
        "NCCL_DEBUG=INFO",
        "LD_LIBRARY_PATH",
        "PATH",
        "SMDATAPARALLEL_USE_HOMOGENEOUS=1",
        "FI_PROVIDER=efa",
        "RDMAV_FORK_SAFE=1",
        "NCCL_DEBUG=VERSION",  # the spec's custom_mpi_options, where the runner puts them
        "SMDATAPARALLEL_SERVER_ADDR=algo-1",
        "SMDATAPARALLEL_SERVER_PORT=7592",
        "SAGEMAKER_INSTANCE_TYPE=ml.p4d.24xlarge",
    ]
    assert f"-wdir {hosts[1].code}" in contexts[1]
    assert contexts[1].endswith("py -- train.py --a 1")


def test_a_local_run_says_it_does_not_install_requirements_txt(tmp_path):
    from smdist.backends.local.preparation.setup import prepare_notes

    (tmp_path / "train.py").write_text("print('hi')\n")
    (tmp_path / "requirements.txt").write_text("tiny-package==1.0\n")
    spec = JobSpec.from_dict(
        {
            "name": "reqs",
            "strategy": {"kind": "pytorch_ddp"},
            "cluster": {"instance_type": "ml.c5.xlarge", "instance_count": 2},
            "code": {
                "entry_point": "train.py",
                "source_dir": str(tmp_path),
                "framework_version": "2.3.0",
                "py_version": "py311",
            },  # fmt: skip
        }
    )
    job_plan = plan(spec)
    layout = plan_layout(job_plan, job_name="j", region="r", cpus=2, gpus=[])
    (note,) = [n for n in prepare_notes(job_plan, layout, None) if "requirements.txt" in n]
    assert "this local run does not install requirements.txt" in note
    (tmp_path / "requirements.txt").unlink()
    assert not [n for n in prepare_notes(job_plan, layout, None) if "requirements.txt" in n]


def test_emulated_hosts_get_no_efa_settings_whatever_the_instance_type():
    job = _plan("sddp")  # ml.p4d.24xlarge: EFA with RDMA read on SageMaker
    assert (job.launch.efa, job.launch.efa_rdma) == (True, True)
    local = local_launch(_layout("sddp", hosts=2, processes_per_host=1), ["a", "b"])
    assert (local.efa, local.efa_rdma, local.interface) == (False, False, "lo")


def test_hosts_after_the_first_start_the_toolkits_torchrun_once_the_store_answers(tmp_path):
    """SageMaker's torchrun command, unchanged, on every host; on the hosts after the first it
    is started by the runtime's torchrun_when_ready.py (its own copy in the host's code)."""
    layout = _layout("pytorch_ddp_torch_distributed")
    hosts = [
        EmulatedHost(f"algo-{i + 1}", i, f"127.0.0.{11 + i}", tmp_path / f"h{i}") for i in (0, 1)
    ]
    environments = [{"SM_USER_ARGS": '["--epochs", "1"]'} for _ in hosts]
    first, second = build_commands(
        local_launch(layout, ["algo-1", "algo-2"]), layout, hosts, environments,
        program="train.py", python="py", master_port=7777, bin_dir=tmp_path / "bin",
    )  # fmt: skip
    torchrun = ["py", "-m", "torch.distributed.run"]
    assert first.argv[:3] == torchrun and "algo-1" in first.argv
    helper = str(hosts[1].code / "smdist" / "runtime" / "torchrun_when_ready.py")
    assert second.argv[:6] == ["py", helper, "algo-1", "7777", "60", "--"]
    rank = first.argv.index("--node_rank") + 1
    expected = [*first.argv[3:rank], "1", *first.argv[rank + 1 :]]
    assert second.argv[6:] == expected  # the same torchrun arguments, as node 1
