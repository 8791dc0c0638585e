"""The sbatch script of a job, in the shape of AWS's HyperPod Slurm examples
(aws-samples/awsome-distributed-training, ``3.test_cases/pytorch/*/slurm/*.sbatch``).

``#SBATCH`` lines ask for the job's nodes whole (``--nodes=N --exclusive --wait-all-nodes=1``),
one task per node, the spec's ``max_run`` as the time limit, a requeue after a failure of the
cluster's (``--requeue``, the log appended to), and the output in the job folder
(``logs/%x_%j.out``). The batch step then:

1. names the job's nodes (``scontrol show hostnames``): they are SM_HOSTS, in order;
2. writes ``node.json``, what every node's first step reads (a quoted here-document: nothing in
   it is expanded);
3. runs one ``srun`` step, with HyperPod's ``--auto-resume=1`` where ``/opt/sagemaker_cluster``
   exists (plain Slurm refuses the flag), every line labelled with its task (``--label``), the
   other nodes stopped when one fails (``--kill-on-bad-exit=1``), in ``code.image_uri``'s
   container under pyxis when the job has one;
4. records the step's exit code in the job folder, which outlives Slurm's memory of the job.

Every value is quoted with ``shlex.quote``; no line is built from a value unquoted.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from smdist.backends.hyperpod_slurm.layout import JobFolder

HERE_DOCUMENT_END = "SMDIST_NODE_JSON"
# libfabric settings of HyperPod's PyTorch examples on EFA instances, besides FI_PROVIDER (which
# the container contract sets): no huge pages (os.fork() in data loaders fails with "Cannot
# allocate memory" otherwise), no CUDA sync memops (faster FSDP).
EFA_EXTRAS = (("FI_EFA_USE_HUGE_PAGE", "0"), ("FI_EFA_SET_CUDA_SYNC_MEMOPS", "0"))


@dataclass(frozen=True)
class BatchJob:
    """What the script says: the job folder, its nodes and time, how each node starts."""

    folder: JobFolder
    nodes: int
    max_run: int  # seconds
    node_settings: dict[str, Any]
    python: str
    summary: str
    partition: str | None = None
    efa: bool = False
    container_image: str | None = None  # pyxis's spelling of code.image_uri
    container_mounts: tuple[str, ...] = field(default=())


def time_limit(seconds: int) -> str:
    """sbatch's ``--time`` (days-hours:minutes:seconds) for ``seconds``."""
    days, rest = divmod(max(int(seconds), 1), 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{days}-{hours:02d}:{minutes:02d}:{secs:02d}"


def pyxis_image(image_uri: str) -> str:
    """``image_uri`` as pyxis's ``--container-image`` takes it: a squashfs file as it is, an
    image of a registry as ``registry#repository:tag``."""
    if image_uri.startswith("/") or image_uri.endswith(".sqsh"):
        return image_uri
    registry, slash, rest = image_uri.partition("/")
    if slash and ("." in registry or ":" in registry):
        return f"{registry}#{rest}"
    return image_uri


def directives(job: BatchJob) -> list[str]:
    """The ``#SBATCH`` lines."""
    options = [
        f"--job-name={job.folder.name}",
        f"--nodes={job.nodes}",
        "--ntasks-per-node=1",
        "--exclusive",
        "--wait-all-nodes=1",
        f"--time={time_limit(job.max_run)}",
        "--requeue",
        "--open-mode=append",
        f"--output={job.folder.output_pattern}",
    ]
    if job.partition:
        options.append(f"--partition={job.partition}")
    return [f"#SBATCH {shlex.quote(option)}" for option in options]


def step_command(job: BatchJob) -> str:
    """The ``srun`` line of the one step: every node's first step, with its container."""
    words = ["--label", "--kill-on-bad-exit=1"]
    if job.container_image:
        words.append(f"--container-image={job.container_image}")
        words.append(f"--container-mounts={','.join(f'{m}:{m}' for m in job.container_mounts)}")
    quoted = " ".join(shlex.quote(word) for word in words)
    return f'srun ${{AUTO_RESUME}} {quoted} "$PYTHON" "$JOB_DIR/{job.folder.node_program.name}"' \
        ' "$JOB_DIR"'  # fmt: skip


def _environment_lines(job: BatchJob) -> list[str]:
    if not job.efa:
        return []
    lines = ["# EFA (the catalogue's, for this instance type): HyperPod's libfabric settings"]
    return lines + [f"export {name}={shlex.quote(value)}" for name, value in EFA_EXTRAS]


def body(job: BatchJob) -> list[str]:
    """The batch step's lines, after the directives."""
    settings = json.dumps(job.node_settings, indent=1, sort_keys=True)
    return [
        "set -uo pipefail",
        "",
        f"JOB_DIR={shlex.quote(str(job.folder.path))}",
        f"PYTHON={shlex.quote(job.python)}",
        "# The job's nodes in order: SM_HOSTS, and each node's rank.",
        'SMDIST_SLURM_HOSTS="$(scontrol show hostnames "$SLURM_JOB_NODELIST" | paste -s -d, -)"',
        "export SMDIST_SLURM_HOSTS",
        *_environment_lines(job),
        "# What every node's first step reads: the job bound to its folder.",
        f"cat > \"$JOB_DIR/{job.folder.node_settings.name}\" <<'{HERE_DOCUMENT_END}'",
        *settings.splitlines(),
        HERE_DOCUMENT_END,
        "",
        f'rm -f "$JOB_DIR/{job.folder.exit_code.name}"',
        'echo "smdist-slurm: job $SLURM_JOB_ID, run $((${SLURM_RESTART_COUNT:-0} + 1)), on'
        ' $SMDIST_SLURM_HOSTS"',
        "# HyperPod re-runs the step on a replaced node after a hardware fault (auto-resume);",
        "# plain Slurm refuses the flag.",
        'AUTO_RESUME=""',
        "if [ -d /opt/sagemaker_cluster ]; then",
        '    AUTO_RESUME="--auto-resume=1"',
        "fi",
        step_command(job),
        "status=$?",
        f'echo "$status" > "$JOB_DIR/{job.folder.exit_code.name}"',
        'exit "$status"',
    ]


def script(job: BatchJob) -> str:
    """The whole sbatch script."""
    return "\n".join(["#!/bin/bash", f"# {job.summary}", *directives(job), "", *body(job)]) + "\n"


def mounts(job_root: str, *folders: str) -> tuple[str, ...]:
    """The folders a container sees where they lie: the job root, and every other one given
    that is not under it."""
    found = [job_root]
    for folder in folders:
        if not any(folder == kept or folder.startswith(kept.rstrip("/") + "/") for kept in found):
            found.append(folder)
    return tuple(found)


def sbatch_lines(text: str) -> Sequence[str]:
    """The ``#SBATCH`` lines of a script (what ``sbatch --test-only`` reads)."""
    return [line for line in text.splitlines() if line.startswith("#SBATCH")]
