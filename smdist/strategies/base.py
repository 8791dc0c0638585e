"""What every distribution strategy shares: framework, processes per host, MPI options, checks.

A strategy is a pydantic model that knows the framework it runs with, validates itself against a
cluster, and renders two values, once, for the plan: the ``Launch`` (how the container starts
the ranks, with the toolkit hyperparameters that pick its runner) and SDK v2's ``distribution``
argument. Nothing outside planning calls the rendering: every backend reads the plan. Cross-field
and cluster checks return ``Problem`` values (errors and warnings) instead of raising, so a user
sees every problem at once. The shared field types live beside it: ``processes_per_host`` in
``smdist.strategies.processes``, ``custom_mpi_options`` in ``smdist.strategies.mpi_options``.
"""

from collections.abc import Mapping
from typing import Any, ClassVar, Literal

from pydantic import Field, SerializerFunctionWrapHandler, model_serializer

from smdist import catalog
from smdist.contract.groups import DISTRIBUTION_GROUPS, name_hosts
from smdist.contract.launch import Launch, Launcher, resolve_processes_per_host
from smdist.errors import Problem, SpecError
from smdist.spec import topology
from smdist.spec.base import StrictModel
from smdist.spec.cluster import Cluster
from smdist.spec.topology import Topology
from smdist.strategies.mpi_options import MPIOptionsMixin as MPIOptionsMixin
from smdist.strategies.mpi_options import check_custom_mpi_options as check_custom_mpi_options
from smdist.strategies.mpi_options import mpi_options_field as mpi_options_field
from smdist.strategies.processes import ProcessesPerHost as ProcessesPerHost

Framework = Literal["pytorch", "tensorflow"]


class Strategy(StrictModel):
    """Base of every strategy; subclasses set ``kind`` and render ``distribution``."""

    # Validators are built on first use: a job builds only the strategy it names.
    model_config = {"defer_build": True}

    kind: str
    collective_timeout: int | None = Field(
        None,
        ge=1,
        le=7 * 24 * 3600,
        description="seconds a collective may block before the job fails instead of hanging",
    )

    frameworks: ClassVar[tuple[str, ...]] = ("pytorch",)
    ready_entry_point: ClassVar[str] = ""
    # What starts the ranks in the training container (the strategy's launch contract).
    container_launcher: ClassVar[Launcher] = Launcher.PROGRAM
    # The strategies that take processes_per_host from the instance's GPUs, always.
    one_process_per_gpu: ClassVar[bool] = False
    # The fields that pick the model when a dump is read back into a JobSpec.
    tag_fields: ClassVar[tuple[str, ...]] = ("kind",)
    # The distributed library the strategy needs in the SageMaker training image (the
    # catalogue's name: smddp, smp_v1, smp_v2, horovod); None: the framework alone.
    image_library: ClassVar[str | None] = None

    @classmethod
    def model_for(cls, value: Any) -> "type[Strategy]":
        """The model that validates ``value`` (a mapping or a strategy) of this ``kind``."""
        return cls

    @classmethod
    def union_member(cls) -> Any:
        """This model's member of the union of every strategy (the JSON Schema's); a model
        that is several by a field of its own gives their union (SMP's ``version``)."""
        return cls

    @model_serializer(mode="wrap")
    def _keep_tags(self, handler: SerializerFunctionWrapHandler) -> Any:
        """Every dump keeps ``kind`` (and SMP's ``version``), even one that leaves defaults or
        unset fields out: without them it would not load back as the same strategy."""
        data = handler(self)
        if isinstance(data, dict):
            data = {name: getattr(self, name) for name in self.tag_fields} | data
        return data

    @property
    def framework(self) -> str:
        return self.frameworks[0]

    @property
    def default_entry_point(self) -> str:
        """The ready script in ``entry_points/`` used when the spec names none."""
        return self.ready_entry_point

    # ---- processes -----------------------------------------------------------------------
    def requested_processes_per_host(self) -> int | Literal["auto"]:
        return 1

    def resolve_processes_per_host(self, cluster: Cluster) -> int:
        """Processes SageMaker starts on each host for this strategy on ``cluster``."""
        requested = self.requested_processes_per_host()
        as_started = None if self.one_process_per_gpu or requested == "auto" else requested
        return resolve_processes_per_host(as_started, cluster.gpus_per_host)

    def _written_processes_per_host(self) -> int | None:
        written = getattr(self, "processes_per_host", "auto")  # as the spec says it
        return None if written == "auto" else int(written)

    def world_size(self, cluster: Cluster) -> int:
        return self.resolve_processes_per_host(cluster) * cluster.instance_count

    def launch(self, cluster: Cluster, entry_point: str) -> Launch:
        """How SageMaker starts the ranks of ``entry_point`` on ``cluster``: rendered once, by
        ``plan``, into ``Plan.launch``."""
        info = cluster.info  # None for a type only botocore knows: no EFA assumed
        toolkit = self.toolkit_hyperparameters(cluster)
        mp_parameters = toolkit.get("mp_parameters")
        # Instance groups: the hosts named as SageMaker names them; the strategy's groups (else
        # the first) run the distributed program, the others the script once per host.
        given = cluster.instance_groups
        named = getattr(self, "instance_groups", [])  # the strategies that take groups have it
        chosen = [g.name for g in given if g.name in named]
        chosen = chosen or [g.name for g in given[:1]]
        groups = name_hosts(
            [(g.name, g.instance_type, g.instance_count, cluster.for_groups([g.name]).gpus_per_host)
             for g in given]
        )  # fmt: skip
        hosts = [host for group in groups if group.name in chosen for host in group.hosts]
        if groups:  # the toolkit starts the runner on these groups' hosts only
            toolkit = {**toolkit, DISTRIBUTION_GROUPS: chosen}
        return Launch(
            launcher=self.container_launcher,
            hosts=tuple(hosts or topology.host_names(cluster.instance_count)),
            processes_per_host=self.resolve_processes_per_host(cluster),
            instance_type=cluster.instance_type,
            gpus_per_host=cluster.gpus_per_host,
            processes_follow_hardware=self.one_process_per_gpu
            or self.requested_processes_per_host() == "auto",
            requested_processes_per_host=self._written_processes_per_host(),
            program=self.program(entry_point),
            efa=bool(info and info.fabric[0]),
            efa_rdma=bool(info and info.fabric[1]),
            custom_mpi_options=getattr(self, "custom_mpi_options", "") or "",
            mp_parameters=dict(mp_parameters) if isinstance(mp_parameters, dict) else None,
            toolkit_hyperparameters=toolkit,
            v3_driver=self.v3_driver(),
            instance_groups=groups,
        )

    def v3_driver(self) -> str:
        """Under SDK v3: ``torchrun`` (v3's Torchrun driver) or ``smdist`` (smdist's driver,
        which starts the ranks as the training toolkit does)."""
        return "smdist"

    @property
    def model_parallel_degree(self) -> int:
        """Ranks that hold one model replica together (1: pure data parallelism)."""
        return 1

    def topology(
        self, hosts: int, processes_per_host: int, mp_parameters: Mapping[str, Any] | None = None
    ) -> Topology:
        """Which ranks form which groups, on ``hosts`` x ``processes_per_host`` ranks
        (``mp_parameters``: the launch's, where they differ from the strategy's own)."""
        return topology.data_parallel(hosts, processes_per_host)

    # ---- on the local backend -------------------------------------------------------------
    def rank_modules(self) -> dict[str, str]:
        """The Python modules every rank imports whatever the script does, each with why: the
        local backend checks the job's Python has them before anything starts."""
        return {}

    def fit_mp_parameters(
        self, parameters: dict[str, Any], world: int
    ) -> tuple[dict[str, Any], list[str]]:
        """``parameters`` (this strategy's ``mp_parameters``) for a world of ``world`` ranks
        when the local backend runs fewer than planned, with one note per change."""
        return parameters, []

    # ---- rendering (read by planning only) ------------------------------------------------
    def render_distribution(self, cluster: Cluster) -> dict[str, Any]:
        """SDK v2's ``distribution`` argument."""
        raise NotImplementedError

    def distribution(self, cluster: Cluster) -> dict[str, Any]:
        """The SageMaker SDK v2 ``distribution`` argument, after checking ``cluster``."""
        errors = [p for p in self.check(cluster) if p.severity == "error"]
        if errors:
            raise SpecError(errors)
        return self.render_distribution(cluster)

    def toolkit_hyperparameters(self, cluster: Cluster) -> dict[str, Any]:
        """The hyperparameters SDK v2 derives from ``distribution`` (before JSON encoding):
        what the training toolkit reads to pick and size its runner."""
        raise NotImplementedError

    def smdist_environment(self, cluster: Cluster, entry_point: str) -> dict[str, str]:
        """smdist's own settings for its launcher and entry points, as ``SMDIST_*`` variables.

        They travel in the job's Environment, never as hyperparameters: SageMaker passes every
        hyperparameter to the script as ``--name value``, and a script that parses its flags
        strictly must see only its own.
        """
        if self.collective_timeout is None:
            return {}
        return {"SMDIST_COLLECTIVE_TIMEOUT": str(self.collective_timeout)}

    def program(self, entry_point: str) -> str:
        """The script SageMaker runs (``sagemaker_program``) for the user's entry point."""
        return entry_point

    # ---- checks --------------------------------------------------------------------------
    def check(
        self,
        cluster: Cluster,
        framework_version: str | None = None,
        hyperparameters: dict[str, Any] | None = None,
    ) -> list[Problem]:
        """Every error and warning for running this strategy on ``cluster``."""
        return self._check_processes(cluster)

    def local_problems(self) -> list[Problem]:
        """Errors for running this strategy on the local backend, beyond ``check``: settings
        that SageMaker runs but the local stand-ins do not (checked before any process starts)."""
        return []

    def _check_processes(self, cluster: Cluster, path: str = "strategy.processes_per_host"):
        requested = self.requested_processes_per_host()
        if self.one_process_per_gpu or requested == "auto":
            return []
        info = cluster.info
        if info is None:
            return []
        if info.gpus > 0 and requested > info.gpus:
            return [
                Problem(
                    path,
                    f"{requested} processes per host but {info.instance_type} has "
                    f"{info.gpus} GPU{'s' if info.gpus != 1 else ''}",
                    requested,
                    f"1..{info.gpus} or 'auto'",
                )
            ]
        if info.gpus == 0 and requested > info.vcpus:
            return [
                Problem(
                    path,
                    f"{requested} processes per host but {info.instance_type} has "
                    f"{info.vcpus} vCPUs and no GPU",
                    requested,
                    f"1..{info.vcpus} or 'auto'",
                )
            ]
        return []


def require_library(
    library: str,
    label: str,
    cluster: Cluster,
    framework: str,
    framework_version: str | None,
) -> list[Problem]:
    """Errors when ``library`` (smddp, smp_v1, smp_v2) does not run on the instance or version."""
    problems = []
    info = cluster.info
    if cluster.is_local_mode:
        return problems
    if info is None or library not in info.libraries:
        supported = sorted(
            t
            for t in catalog.known_instance_types()
            if library in (catalog.instance(t) or _NONE).libraries
        )
        problems.append(
            Problem(
                "cluster.instance_type",
                f"{label} does not run on {cluster.instance_type}",
                None,
                ", ".join(supported) or "none in the catalogue",
            )
        )
    if framework_version is not None:
        versions = catalog.supported_versions(library, framework)
        if not catalog.is_version_supported(library, framework, framework_version):
            problems.append(
                Problem(
                    "code.framework_version",
                    f"{label} is not available for {framework} {framework_version}",
                    None,
                    ", ".join(versions)
                    if versions
                    else f"none: {label} has no {framework} support",
                )
            )
    return problems


class _NoLibraries:
    libraries: frozenset[str] = frozenset()


_NONE = _NoLibraries()
