"""Slurm's commands, as argv lists run on the ``Head``, and what their answers mean.

- ``sbatch --parsable`` submits (its answer: the job id, ``;cluster`` after it on a federation);
- ``scontrol -o show job`` describes a job while the controller remembers it (``MinJobAge``,
  300 s by default, after its end); ``sacct`` after that where the cluster keeps accounting
  (many have no slurmdbd: ``sacct`` then fails, "accounting storage is disabled");
- ``scancel --signal=TERM`` signals every step of a job but the batch shell, so the batch step
  lives on to record the exit code; ``scancel`` then ends the job (SIGTERM, then SIGKILL after
  the cluster's KillWait);
- ``srun --help`` lists pyxis's ``--container-image`` where pyxis is installed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import PurePosixPath

from smdist.backends.hyperpod_slurm.head import Head
from smdist.errors import CANNOT_RUN_HERE, Problem, SpecError

_PAIR = re.compile(r"(\w+)=(\S*)")
ACCOUNTING_OFF = "accounting storage is disabled"


@dataclass(frozen=True)
class SlurmState:
    """A job as Slurm describes it: its state (``RUNNING``, ``COMPLETED`` ...), restarts
    (requeues), exit code (``code:signal``), nodes and the reason it waits or ended."""

    state: str
    restarts: int = 0
    exit_code: str = ""
    nodes: str = ""
    reason: str = ""
    source: str = "scontrol"


def version(head: Head) -> str:
    """sbatch's version on the head; SpecError (exit 2, the head node named) without one."""
    done = head.run(["sbatch", "--version"])
    if done.returncode != 0:
        said = done.stderr.decode(errors="replace").strip()
        raise head.unreachable(f"sbatch --version failed on {head.where}: {said}")
    return done.stdout.decode(errors="replace").strip()


def has_pyxis(head: Head) -> bool:
    """Whether srun takes pyxis's ``--container-image`` there."""
    done = head.run(["srun", "--help"])
    return b"--container-image" in done.stdout + done.stderr


def submit(head: Head, script: PurePosixPath) -> int:
    """Submit the script (already in the job folder); its Slurm job id."""
    done = head.run(["sbatch", "--parsable", str(script)])
    answer = done.stdout.decode(errors="replace").strip()
    if done.returncode != 0 or not answer.split(";")[0].isdigit():
        said = done.stderr.decode(errors="replace").strip() or answer
        raise SpecError(
            [Problem("sbatch", f"refused the job: {said}", str(script))], CANNOT_RUN_HERE
        )
    return int(answer.split(";")[0])


def check_directives(head: Head, script: PurePosixPath) -> tuple[bool, str]:
    """(whether ``sbatch --test-only`` accepts the script's ``#SBATCH`` lines, its words)."""
    done = head.run(["sbatch", "--test-only", str(script)])
    return done.returncode == 0, (done.stderr + done.stdout).decode(errors="replace").strip()


def describe(head: Head, job_id: int) -> SlurmState | None:
    """The job as ``scontrol`` remembers it, else as accounting does; None when neither
    does (the job ended long enough ago, and the cluster keeps no accounting)."""
    done = head.run(["scontrol", "-o", "show", "job", str(job_id)])
    if done.returncode == 0:
        fields = dict(_PAIR.findall(done.stdout.decode(errors="replace")))
        if fields.get("JobState"):
            return SlurmState(
                state=fields["JobState"],
                restarts=int(fields.get("Restarts", "0") or 0),
                exit_code=fields.get("ExitCode", ""),
                nodes=fields.get("NodeList", ""),
                reason=fields.get("Reason", ""),
            )
    return accounting(head, job_id)


def accounting(head: Head, job_id: int) -> SlurmState | None:
    """The job's allocation as ``sacct`` keeps it; None without accounting or a record."""
    format_ = "State,ExitCode,NodeList,Reason"
    done = head.run(["sacct", "-j", str(job_id), "-X", "-n", "-P", "-o", format_])
    text = done.stdout.decode(errors="replace").strip()
    if done.returncode != 0 or ACCOUNTING_OFF in text.lower() or not text:
        return None
    state, exit_code, nodes, reason = (text.splitlines()[-1].split("|") + [""] * 4)[:4]
    return SlurmState(
        state=state.split()[0] if state else "",
        exit_code=exit_code,
        nodes=nodes,
        reason=reason,
        source="sacct",
    )


def signal_steps(head: Head, job_id: int, signal: str = "TERM") -> bool:
    """Send ``signal`` to every step of the job (not the batch shell); whether scancel took it."""
    return head.run(["scancel", f"--signal={signal}", str(job_id)]).returncode == 0


def cancel(head: Head, job_id: int) -> bool:
    return head.run(["scancel", str(job_id)]).returncode == 0
