"""How a Plan made for SageMaker instances runs on this one machine.

The spec's cluster says what SageMaker would run. Locally its ``instance_count`` hosts are
emulated (``hosts`` overrides the count), the processes per host follow the strategy but are
capped by what the machine can hold (``processes_per_host`` overrides), and settings that
need GPUs fall back to their CPU equivalents when the emulated hosts get none. Every change is
one line in ``notes``, so the same spec file serves both places and nothing changes silently.

The plan is resized here, once, for all hosts (``Plan.resized``: the emulated hosts, the local
process count, SMP settings that no longer fit the smaller world; its topology follows), and the
resized plan is what runs and is bound, so the wire hyperparameters follow from the same value
as on SageMaker. smdist's ``SMDIST_*`` settings are adapted too: the collective backend, and a
short collective timeout for the ready scripts so that a hung rank fails the job instead of
blocking it for half an hour.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from smdist.backends.local.preparation.host_groups import group_host_count, host_gpus_of
from smdist.contract.commands import Launch, Launcher
from smdist.errors import Problem, SpecError
from smdist.planning.submission import CONTAINER_MODEL_DIR

if TYPE_CHECKING:
    from smdist.planning.plan import Plan

# Seconds a collective may block in the ready scripts when the spec sets no collective_timeout.
LOCAL_COLLECTIVE_TIMEOUT = 120
CONTAINER_CODE_URI = "file:///opt/ml/code"


def local_gpus() -> list[str]:
    """GPU ids this process may use: CUDA_VISIBLE_DEVICES, else the driver's device list."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        return [d.strip() for d in visible.split(",") if d.strip() and d.strip() != "-1"]
    try:
        count = len(os.listdir("/proc/driver/nvidia/gpus"))
    except OSError:
        return []
    return [str(index) for index in range(count)]


@dataclass(frozen=True)
class LocalLayout:
    hosts: int
    gpus_per_host: int  # 0: the hosts run on CPU
    host_gpus: list[list[str]]  # CUDA_VISIBLE_DEVICES of each host
    plan: Plan  # the plan resized to the emulated hosts: what runs here
    wire_hyperparameters: dict[str, str]
    environment: dict[str, str]  # the plan's (the user's and smdist's SMDIST_* settings)
    notes: list[str] = field(default_factory=list)

    @property
    def launch(self) -> Launch:
        return self.plan.launch

    @property
    def launcher(self) -> Launcher:
        return self.launch.launcher

    @property
    def processes_per_host(self) -> int:  # training processes on each host
        return self.launch.processes_per_host

    @property
    def world_size(self) -> int:  # the ranks: the distribution hosts' processes
        return self.launch.world_size


def _problem(option: str, message: str, value: Any, valid: str) -> SpecError:
    return SpecError([Problem(option, message, value, valid)])


def plan_layout(
    plan: Plan,
    *,
    job_name: str,
    region: str,
    hosts: int | None = None,
    processes_per_host: int | None = None,
    use_gpus: bool | None = None,
    cpus: int | None = None,
    gpus: list[str] | None = None,
) -> LocalLayout:
    """The plan on this machine: its hosts, their processes and GPUs, its launch resized and
    bound, its settings adapted; every change one line in ``notes``."""
    notes: list[str] = []
    unsupported = plan.spec.strategy.local_problems()
    if unsupported:  # before anything is prepared or started
        raise SpecError(unsupported)
    cpus = cpus or os.cpu_count() or 1
    gpus = local_gpus() if gpus is None else gpus
    if use_gpus is False:
        gpus = []
    host_count = _host_count(plan, hosts, notes)
    gpus_per_host, host_gpus = host_gpus_of(plan.launch, host_count, gpus)
    ranked = len(plan.launch.hosts) if plan.launch.instance_groups else host_count
    per_host = _processes_per_host(plan, ranked, processes_per_host, cpus, gpus_per_host, notes)
    per_host = _fit_model_parallel(plan, ranked, per_host, processes_per_host, notes)
    if plan.gpus_per_host and not gpus_per_host:
        notes.append(_cpu_fallback_note(plan))
    world = ranked * per_host
    mp_parameters = plan.launch.mp_parameters
    if mp_parameters is not None:
        mp_parameters = _adapt_mp_parameters(mp_parameters, plan, world, gpus_per_host, notes)
    names = [f"algo-{index + 1}" for index in range(host_count)]
    # Instance groups keep their hosts: every group's count runs, as on SageMaker.
    here = plan.resized(
        plan.launch.hosts if plan.launch.instance_groups else names, per_host, mp_parameters
    )
    return LocalLayout(
        hosts=host_count,
        gpus_per_host=gpus_per_host,
        host_gpus=host_gpus,
        plan=here,
        wire_hyperparameters=_bound_hyperparameters(here, job_name, region),
        environment=_adapt_environment(plan, gpus_per_host, notes),
        notes=notes,
    )


def _host_count(plan: Plan, hosts: int | None, notes: list[str]) -> int:
    """The emulated hosts: ``hosts``, else the spec's instance count; with instance groups,
    every group's hosts (``hosts`` cannot change them)."""
    if plan.launch.instance_groups:
        return group_host_count(plan.launch, hosts, notes)
    instance_count = plan.spec.cluster.instance_count
    host_count = hosts or instance_count
    if host_count < 1:
        raise _problem("hosts", "must be at least 1", host_count, "an integer >= 1")
    if host_count != instance_count:
        notes.append(
            f"emulating {host_count} host{'s' if host_count > 1 else ''} "
            f"(the spec's cluster has {instance_count})"
        )
    return host_count


def _processes_per_host(
    plan: Plan, hosts: int, explicit: int | None, cpus: int, gpus_per_host: int, notes: list[str]
) -> int:
    """The processes on each host (before SMP's fit): one TensorFlow worker; else ``explicit``
    (``--processes-per-host``, or the spec's count for a strategy that SageMaker runs with one
    process per GPU); else the spec's, kept when the user wrote it and capped by this machine
    when the strategy chose it."""
    spec = plan.spec
    launcher = plan.launch.launcher
    requested = plan.launch.processes_per_host
    capacity = gpus_per_host if gpus_per_host else max(1, cpus // hosts)
    if launcher.tf_config:  # one TensorFlow worker per host
        if explicit not in (None, 1):
            notes.append(
                f"processes per host: 1 ({launcher.description}: one worker on each host; "
                f"--processes-per-host {explicit} does not apply)"
            )
        return 1
    written = plan.launch.requested_processes_per_host  # as the spec says it
    if explicit is None and spec.strategy.one_process_per_gpu and written is not None:
        # SageMaker starts one per GPU whatever the spec says: the count written in the spec
        # is for the emulated hosts, as --processes-per-host is (the strategy warns of it).
        explicit = written
        if written != requested:
            notes.append(
                f"processes per host: {written} as strategy.processes_per_host asks "
                f"(SageMaker starts {requested}, one per GPU)"
            )
    if explicit is not None:
        if explicit < 1:
            raise _problem("processes_per_host", "must be at least 1", explicit, "an integer >= 1")
        return explicit
    share = _machine_share(cpus, gpus_per_host, hosts)
    if not plan.launch.processes_follow_hardware:
        # The rank layout the user wrote is what local testing must exercise: kept, even when
        # it oversubscribes this machine.
        if requested > capacity:
            notes.append(
                f"processes per host: {requested} as the spec asks, oversubscribing this "
                f"machine ({share})"
            )
        return requested
    per_host = min(requested, capacity)
    if per_host != requested:
        notes.append(
            f"processes per host: {per_host} here instead of {requested} on "
            f"{spec.cluster.instance_type} (this machine has {share})"
        )
    return per_host


def _machine_share(cpus: int, gpus_per_host: int, hosts: int) -> str:
    """What each emulated host gets of this machine, in words: ``N GPU host``, ``N CPUs for M
    hosts``."""
    what = f"{gpus_per_host} GPU" if gpus_per_host else f"{cpus} CPUs for {hosts}"
    return f"{what} host{'s' if hosts > 1 and not gpus_per_host else ''}"


def _cpu_fallback_note(plan: Plan) -> str:
    """The note for an instance type with GPUs emulated without any."""
    collectives = "gloo" if plan.framework == "pytorch" else "ring (gRPC)"
    return (
        f"no GPU for the emulated hosts: {plan.spec.cluster.instance_type} has "
        f"{plan.gpus_per_host} GPU{'s' if plan.gpus_per_host > 1 else ''} per host; here they "
        f"run on CPU with CPU equivalents ({collectives} collectives, fp32)"
    )


def _fit_model_parallel(
    plan: Plan, hosts: int, per_host: int, explicit: int | None, notes: list[str]
) -> int:
    """SMP needs the model-parallel degree to divide the world size; grow the processes."""
    strategy = plan.spec.strategy
    degree = strategy.model_parallel_degree
    if degree == 1:
        return per_host
    if (hosts * per_host) % degree == 0:
        return per_host
    if explicit is not None:
        raise _problem(
            "processes_per_host",
            f"{hosts} hosts x {explicit} processes is not a multiple of the model-parallel "
            f"degree {degree} (partitions x tensor_parallel_degree)",
            explicit,
            f"a number of processes per host that makes hosts x processes a multiple of {degree}",
        )
    grown = per_host
    while (hosts * grown) % degree:
        grown += 1
    notes.append(
        f"processes per host: {grown} so that the model-parallel degree {degree} divides the "
        f"world size ({hosts} x {grown})"
    )
    return grown


def _bound_hyperparameters(plan: Plan, job_name: str, region: str) -> dict[str, str]:
    """The wire hyperparameters, bound as on SageMaker with the container's own paths (each
    host's directories stand in for them)."""
    submission = plan.bind(
        job_name=job_name,
        region=region,
        bucket=None,
        role=plan.spec.role,
        code_uri=CONTAINER_CODE_URI,
        model_dir=CONTAINER_MODEL_DIR if plan.framework == "tensorflow" else None,
    )
    return dict(submission.wire_hyperparameters)


def _adapt_environment(plan: Plan, gpus_per_host: int, notes: list[str]) -> dict[str, str]:
    environment = dict(plan.environment)
    if not gpus_per_host:
        for name, gpu_value, cpu_value in (
            ("SMDIST_BACKEND", "nccl", "gloo"),
            ("SMDIST_COMMUNICATION", "nccl", "ring"),
        ):
            if environment.get(name) == gpu_value:
                environment[name] = cpu_value
                notes.append(f"{name}: {gpu_value} -> {cpu_value} (no GPU here)")
    if plan.source_dir is None and "SMDIST_COLLECTIVE_TIMEOUT" not in environment:
        environment["SMDIST_COLLECTIVE_TIMEOUT"] = str(LOCAL_COLLECTIVE_TIMEOUT)
        notes.append(
            f"collective timeout: {LOCAL_COLLECTIVE_TIMEOUT} s (a local default; set "
            "strategy.collective_timeout to choose)"
        )
    return environment


def _adapt_mp_parameters(
    parameters: dict[str, Any], plan: Plan, world: int, gpus_per_host: int, notes: list[str]
) -> dict[str, Any]:
    parameters = dict(parameters)
    strategy = plan.spec.strategy
    if not gpus_per_host:
        for precision in ("fp16", "bf16"):
            if parameters.get(precision):
                parameters[precision] = False
                notes.append(f"mp_parameters.{precision}: true -> false (no GPU here)")
    parameters, fitted = strategy.fit_mp_parameters(parameters, world)
    notes += fitted
    return parameters
