"""Sending a hyperpod-eks job: the dry run's objects created as they are, the code's ConfigMap
first (the pods mount it), then the HyperPodPyTorchJob; a job the cluster refuses leaves no
ConfigMap behind."""

from __future__ import annotations

from typing import TYPE_CHECKING

from smdist.backends.hyperpod_eks.cluster import Cluster, ClusterError
from smdist.backends.hyperpod_eks.job import EksJob
from smdist.errors import OPTION, Problem, SpecError

if TYPE_CHECKING:
    from smdist.backends.hyperpod_eks.options import HyperPodEksOptions
    from smdist.backends.hyperpod_eks.submission import EksSubmission


def send(value: EksSubmission, options: HyperPodEksOptions) -> EksJob:
    """Create ``value``'s objects; the job, not waiting for it."""
    cluster = Cluster.of(options)
    if cluster.namespace != value.namespace:
        why = (
            f"the job was rendered for namespace {value.namespace}, and the context "
            f"{cluster.where.context} is in {cluster.namespace}"
        )
        raise SpecError([Problem("namespace", why, value.namespace, cluster.namespace)], OPTION)
    config_map, job = value.config_map, value.job
    cluster.create(config_map)
    try:
        cluster.create(job)
    except ClusterError:
        cluster.delete_config_map(config_map["metadata"]["name"])
        raise
    return EksJob(
        cluster, value.name, value.plan, grace=int(options.grace), poll=options.poll_seconds
    )
