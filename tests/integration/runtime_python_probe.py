"""Runs smdist's in-container code on the interpreter that runs this file; reports in JSON.

    python runtime_python_probe.py BUNDLE WORK [--contract-only]   (writes WORK/report.json)

BUNDLE is a staged code directory (``smdist.packaging.bundle.stage``: the ready entry points,
the stub
``smdist/__init__.py``, ``smdist/runtime/``) with ``smdist_driver.py`` beside them; WORK is an
empty directory. The report has, per module of the bundle, ``ok``, ``needs <framework>`` (only
when this interpreter lacks that framework) or the failure; and the container contract's
results (TF_CONFIG, the SM_* set, argv, the per-host commands, what smdist's v3 driver and
torchrun launcher start), with WORK and this interpreter's path written as ``<work>`` and
``<python>`` so that interpreters can be compared.

It runs on old interpreters on purpose: standard library only, no syntax newer than 3.6.
"""

import importlib
import importlib.util
import json
import os
import runpy
import sys
import traceback

# What a module may lack on an interpreter without it (the image has its framework).
FRAMEWORKS = ("torch", "tensorflow", "horovod", "numpy", "keras", "tf_keras", "smdistributed")
# smdist's own dependencies, which are not shipped: the bundle must never need them.
NOT_SHIPPED = ("pydantic", "yaml", "typer", "rich", "pathspec", "boto3", "sagemaker")
HOSTS = ["algo-1", "algo-2"]


def outcome(load):
    try:
        load()
        return "ok"
    except ModuleNotFoundError as error:
        root = (error.name or "").split(".")[0]
        if root in FRAMEWORKS and importlib.util.find_spec(root) is None:
            return "needs " + root
        return "FAILED: " + "".join(traceback.format_exception_only(type(error), error)).strip()
    except BaseException as error:  # SyntaxError, TypeError of a run-time annotation, ...
        where = traceback.extract_tb(error.__traceback__)[-1:]
        at = f" at {where[0].filename}:{where[0].lineno}" if where else ""
        text = "".join(traceback.format_exception_only(type(error), error)).strip()
        return "FAILED: " + text + at


def import_everything(bundle):
    results = {}
    runtime = os.path.join(bundle, "smdist", "runtime")
    for folder, _, files in os.walk(runtime):
        for name in sorted(files):
            if not name.endswith(".py"):
                continue
            relative = os.path.relpath(os.path.join(folder, name), bundle)[:-3]
            module = relative.replace(os.sep, ".")
            if module.endswith(".__init__"):
                module = module[: -len(".__init__")]
            results[module] = outcome(lambda module=module: importlib.import_module(module))
    for name in sorted(os.listdir(bundle)):
        path = os.path.join(bundle, name)
        if not name.endswith(".py") or name == "smdist_driver.py":
            continue

        def load(path=path, name=name):
            with open(path) as handle:
                compile(handle.read(), path, "exec")  # the whole file, past its framework imports
            spec = importlib.util.spec_from_file_location("entry_" + name[:-3], path)
            spec.loader.exec_module(importlib.util.module_from_spec(spec))

        results[name] = outcome(load)
    return results


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as handle:
        handle.write(text)


def read_json(path):
    with open(path) as handle:
        return json.load(handle)


# The program smdist's driver and launcher start: it records what it was given.
RECORDER = """import json, os, sys
names = ("TF_CONFIG", "SM_HOSTS", "SM_CURRENT_HOST", "SM_USER_ARGS", "SM_HP_EPOCHS",
         "SM_CHANNEL_TRAIN", "SM_FRAMEWORK_PARAMS", "MASTER_ADDR", "MASTER_PORT")
with open(os.environ["PROBE_RECORD"], "w") as handle:
    json.dump({"argv": sys.argv, "env": {n: os.environ.get(n) for n in names}}, handle)
"""

# torchrun's module as the launcher imports it: ``main(args)`` records what torchrun was given.
TORCHRUN_RECORDER = """import json, os
def main(args=None):
    with open(os.environ["PROBE_RECORD"], "w") as handle:
        json.dump({"argv": ["torchrun"] + list(args)}, handle)
"""
SIGNAL_EXCEPTION = "class SignalException(Exception):\n    pass\n"
CHILD_FAILED = "class ChildFailedError(Exception):\n    pass\n"


def contract(bundle, work):
    from pathlib import Path

    from smdist.contract import commands as host_commands
    from smdist.contract import environment as cc
    from smdist.contract import hostname_shim
    from smdist.runtime import environments, launcher, tf_config, v3_driver

    results = {}
    results["tf_config"] = tf_config.build_tf_config(HOSTS, "algo-2")
    results["tf_config_ports"] = tf_config.build_tf_config(HOSTS, "algo-1", [8890, 8891])
    try:
        tf_config.build_tf_config(HOSTS, "algo-1", [8890])
    except ValueError as error:
        results["tf_config_error"] = str(error)
    sm_environ = {"SM_HOSTS": json.dumps(HOSTS), "SM_CURRENT_HOST": "algo-2"}
    results["ensure_tf_config"] = tf_config.ensure_tf_config(sm_environ)

    wire = {
        "epochs": "3",
        "lr": "0.1",
        "layers": "[64, 32]",
        "opt": '{"b": 2, "a": "x"}',
        "flag": "true",
        "name": "plain text",
        "k": "1",
        "sagemaker_program": '"train.py"',
        "sagemaker_mpi_enabled": "true",
    }
    config = cc.HostConfig(
        hyperparameters=wire,
        resource_config=cc.resource_config(HOSTS, "algo-2", "ml.g5.12xlarge", "eth0"),
        input_data_config=cc.input_data_config({"train": "FullyReplicated"}),
    )
    machine = cc.Machine(num_cpus=8, num_gpus=4)
    training_env = cc.training_environment(
        Path("/opt/ml"), config, machine, job_name="probe", framework_module="m:main"
    )
    sm = cc.sm_variables(training_env)
    results["sm_variables"] = sm
    user, _ = cc.split_hyperparameters(cc.decode_hyperparameters(wire))
    results["argv"] = cc.command_line_arguments(user)
    image = host_commands.Image(torch_version="2.0.1")
    for name in ("mpirun", "smddp", "torchrun", "program"):
        launch = host_commands.Launch(
            name, HOSTS, 4, "ml.p4d.24xlarge", efa=True, efa_rdma=True,
            custom_mpi_options="-x NCCL_DEBUG=WARN --NCCL_DEBUG INFO -mca btl_tcp_if_include eth0",
            mp_parameters={"partitions": 2} if name == "mpirun" else None,
        )  # fmt: skip
        arguments = host_commands.HostArguments(json.loads(sm["SM_USER_ARGS"]))
        arguments = host_commands.HostArguments(arguments.own, arguments.own)
        command = host_commands.host_command(
            launch, 0, image, "train.py", arguments, exported_names=sorted(sm)
        )
        results["command_" + name] = command.argv
    results["preload"] = hostname_shim.preload("/lib/a.so", "/lib/b.so")
    results["torchrun_command"] = launcher.build_torchrun_command(
        python="python", num_hosts=2, processes_per_host=4, node_rank=1, rdzv_host="algo-1",
        rdzv_port=29400, rdzv_id="job", max_restarts=3, script="train.py", script_args=["-k", "1"],
    )  # fmt: skip

    fixtures = os.path.join(os.path.dirname(os.path.dirname(__file__)), "fixtures", "environments")
    detected = {}
    for name in sorted(os.listdir(fixtures)):
        environ = read_json(os.path.join(fixtures, name))["environ"]
        try:
            found = environments.detect(environ)
            detected[name] = [found.name, environments.torch_env(found)]
        except environments.ClusterEnvironmentError as error:
            detected[name] = ["error", str(error)]
    results["environments"] = detected

    # smdist's v3 driver, as sm_train.sh runs it: smdist_driver.py in the code directory.
    base = os.path.join(work, "opt_ml")
    code = os.path.join(base, "code")
    for name, value in (
        ("hyperparameters.json", wire),
        ("resourceconfig.json", config.resource_config),
        ("inputdataconfig.json", config.input_data_config),
    ):
        write(os.path.join(base, "input", "config", name), json.dumps(value))
    write(os.path.join(code, "record.py"), RECORDER)
    os.chdir(code)
    environ = {
        "SM_INPUT_DIR": os.path.join(base, "input"),
        "SM_ENTRY_SCRIPT": "record.py",
        "SM_NUM_GPUS": "0",
        "TRAINING_JOB_NAME": "probe-job",
        "SM_SOURCE_DIR": bundle,
        "PATH": os.environ.get("PATH", ""),
    }
    for launch in ("program", "tf_config"):
        settings = {"launcher": launch, "process_count_per_node": 1, "framework": "tensorflow"}
        settings["launch"] = host_commands.Launch(launch, HOSTS, 1, "ml.c5.xlarge").to_dict()
        v3_driver.DRIVER_CONFIG = os.path.join(work, "distributed-" + launch + ".json")
        write(v3_driver.DRIVER_CONFIG, json.dumps(settings))
        record = os.path.join(work, "driver-" + launch + ".json")
        os.environ.clear()
        os.environ.update(environ, PROBE_RECORD=record)
        try:
            runpy.run_path(os.path.join(bundle, "smdist_driver.py"), run_name="__main__")
        except SystemExit as stop:
            results["driver_" + launch] = {"exit": stop.code, "ran": read_json(record)}

    # smdist's torchrun launcher, running (in its own process) a torchrun that records its
    # arguments and environment.
    fake = os.path.join(work, "fake")
    for relative, text in (
        ("torch/__init__.py", ""),
        ("torch/version.py", "__version__ = '2.1.0'\n"),
        ("torch/distributed/__init__.py", ""),
        ("torch/distributed/run.py", TORCHRUN_RECORDER),
        ("torch/distributed/elastic/__init__.py", ""),
        ("torch/distributed/elastic/multiprocessing/__init__.py", ""),
        ("torch/distributed/elastic/multiprocessing/api.py", SIGNAL_EXCEPTION),
        ("torch/distributed/elastic/multiprocessing/errors.py", CHILD_FAILED),
    ):
        write(os.path.join(fake, relative), text)
    sys.path.insert(0, fake)  # the launcher reads torch's version before it starts torchrun
    record = os.path.join(work, "launcher.json")
    environ = {
        "SM_HOSTS": '["localhost"]',
        "SM_CURRENT_HOST": "localhost",
        "SM_NUM_GPUS": "0",
        "SMDIST_TRAINING_SCRIPT": "record.py",
        "SMDIST_MAX_RESTARTS": "2",
        "TRAINING_JOB_NAME": "probe-job",
        "PYTHONPATH": fake,
        "PROBE_RECORD": record,
        "PATH": os.environ.get("PATH", ""),
    }
    try:
        exit_code = launcher.main(["--epochs", "3"], environ, [Path(code)])
    finally:  # the imports that follow must see the interpreter's own torch
        sys.path.remove(fake)
        for name in [name for name in sys.modules if name.split(".")[0] == "torch"]:
            del sys.modules[name]
    results["launcher"] = {"exit": exit_code, "ran": read_json(record)}
    return results


def main(argv):
    bundle, work = os.path.abspath(argv[1]), os.path.abspath(argv[2])
    for name in NOT_SHIPPED:
        sys.modules[name] = None  # importing it raises ModuleNotFoundError
    sys.path.insert(0, bundle)
    import smdist

    report = {"python": list(sys.version_info[:2])}
    report["smdist"] = os.path.relpath(smdist.__file__, bundle)  # the bundle's stub, not smdist
    saved = dict(os.environ), os.getcwd()
    try:
        report["contract"] = contract(bundle, work)
    except BaseException:
        report["contract"] = "FAILED: " + traceback.format_exc()
    os.environ.clear()
    os.environ.update(saved[0])
    os.chdir(saved[1])
    if "--contract-only" not in argv:
        report["imports"] = import_everything(bundle)
    text = json.dumps(report, sort_keys=True)
    text = text.replace(work, "<work>").replace(json.dumps(sys.executable)[1:-1], "<python>")
    write(os.path.join(work, "report.json"), text)  # stdout is the driver's and the programs'


if __name__ == "__main__":
    main(sys.argv)
