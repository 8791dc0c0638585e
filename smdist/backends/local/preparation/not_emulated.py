"""The settings a local job shows but cannot reproduce here: each is named in the job's opening
notes, so nothing a user set is dropped without a word."""

from __future__ import annotations

from smdist.spec.job import JobSpec


def not_emulated_notes(spec: JobSpec) -> list[str]:
    cluster, notes = spec.cluster, []
    if cluster.volume_size is not None:
        notes.append(
            f"cluster.volume_size: {cluster.volume_size} GB per host applies on SageMaker; "
            "the hosts here write to this machine's disk"
        )
    plans = [cluster.training_plan] + [p.training_plan for p in cluster.instance_preferences]
    if any(plans):
        notes.append("training plan: reserved capacity applies on SageMaker only")
    if cluster.placement is not None:
        notes.append("cluster.placement: UltraServer placement applies on SageMaker only")
    if spec.retry is not None:
        notes.append(
            f"retry.max_attempts: {spec.retry.max_attempts} retries of AWS-side failures apply "
            "on SageMaker; a local job is not retried"
        )
    if spec.infra_check:
        notes.append("infra_check: SageMaker checks its hosts first; there are none to check here")
    if spec.remote_debug:
        notes.append(
            "remote_debug: on SageMaker a shell through SSM; here the hosts are this machine's "
            "processes"
        )
    if spec.mlflow is not None:
        notes.append("mlflow: SageMaker's managed MLflow is not contacted by a local job")
    return notes
