"""SageMaker HyperPod's EKS clusters on the backend interface: a job is a HyperPodPyTorchJob.

``dry_run`` is the job's objects (``submission.build``): its ConfigMap of code and its
HyperPodPyTorchJob, shown as the YAML ``kubectl apply -f -`` takes; ``send`` creates those
objects with the ``kubernetes`` client from the user's kubeconfig (``sending``); ``attach`` and
``list`` read them back from the cluster, with their pods and the pods' logs (``view``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from smdist.backends.base import Backend
from smdist.backends.hyperpod_eks.options import HyperPodEksOptions
from smdist.errors import Problem

if TYPE_CHECKING:
    from smdist.backends.hyperpod_eks.submission import EksSubmission
    from smdist.planning.plan import Plan


class HyperPodEksBackend(Backend):
    name = "hyperpod-eks"
    summary = "a HyperPodPyTorchJob on a SageMaker HyperPod EKS cluster (kubeconfig)"
    Options = HyperPodEksOptions
    finds_jobs_here = False  # the cluster keeps the jobs
    title = "HyperPod EKS"
    file_inputs_here = False  # file:///fsx/... is a folder of the shared volume
    lookup_needs = (
        "a kubeconfig (--kubeconfig, $KUBECONFIG or ~/.kube/config) with a context",
        "credentials the cluster accepts (`aws eks update-kubeconfig` writes EKS's)",
    )

    def submission_problems(self, plan: Plan) -> list[Problem]:
        # lazy: this backend's checks, for a job sent to it
        from smdist.backends.hyperpod_eks.checks import refusals

        return refusals(plan, HyperPodEksOptions())

    def dry_run(self, plan: Plan, options: HyperPodEksOptions) -> EksSubmission:
        # lazy: the rendering, for a job sent here
        from smdist.backends.hyperpod_eks.submission import build

        return build(plan, options)

    def show(self, plan: Plan, value: EksSubmission) -> tuple[str, list[str]]:
        lines = [
            f"{value.name}: HyperPodPyTorchJob in namespace {value.namespace}; apply it with "
            "`kubectl apply -f -`",
            *(f"note: {note}" for note in value.notes),
        ]
        return value.to_yaml().rstrip("\n"), lines

    def send(self, value: EksSubmission, options: HyperPodEksOptions) -> Any:
        # lazy: the kubernetes client, when a job is sent
        from smdist.backends.hyperpod_eks.sending import send

        return send(value, options)

    def launched(self, job: Any) -> list[str]:
        return [
            f"{job.name}: HyperPodPyTorchJob in namespace {job.namespace}; follow it with "
            f"`smdist logs -f {job.name} --backend hyperpod-eks`, stop it with "
            f"`smdist stop {job.name} --backend hyperpod-eks`"
        ]

    def attach(self, name: str, options: HyperPodEksOptions) -> Any:
        # lazy: the kubernetes client, for status, logs and stop
        from smdist.backends.hyperpod_eks.view import find

        return find(name, options)

    def list(self, options: HyperPodEksOptions) -> list[Any]:
        # lazy: the kubernetes client, for `smdist jobs` only
        from smdist.backends.hyperpod_eks.view import rows

        return rows(options)

    def unreachable(self, options: HyperPodEksOptions) -> str | None:
        # lazy: the kubeconfig's reading, for a name found nowhere here
        from smdist.backends.hyperpod_eks.kubeconfig import kubeconfig_path

        path = kubeconfig_path(options.kubeconfig)
        return None if path.is_file() else f"no kubeconfig at {path} to look on HyperPod EKS"
