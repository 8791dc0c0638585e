"""The command line's one exit-code rule, and how an error that ends a command is shown.

CI scripts branch on ``smdist``'s exit code, so every command follows one rule:

- 0: success (the job completed, the spec is valid, the request was made);
- 1: a job ran and failed, or was stopped (Ctrl-C, SIGTERM, max_run);
- 2: something to fix before anything can run, in the job or on this machine: an invalid job
  file or option, an unreadable file, a missing tool (mpirun, Docker, horovod or torch in
  this environment), missing AWS credentials or role, a request AWS refused;
- 70: a bug in smdist itself (sysexits' EX_SOFTWARE), never the user's input.

Exit 2 is decided here and nowhere else: a ``SetupError`` (``SpecError``, the local backend's
``PrepareError``), an ``OSError`` or an AWS error raised by a command. Each is shown as what to
fix, never as a traceback; the traceback is for ``--debug`` (or ``SMDIST_DEBUG=1``).
"""

from __future__ import annotations

import os
import traceback
from typing import Any

from smdist.errors import SetupError, SpecError

EXIT_OK, EXIT_JOB_FAILED, EXIT_INVALID, EXIT_INTERNAL = 0, 1, 2, 70
DEBUG_VARIABLE = "SMDIST_DEBUG"


def aws_errors() -> tuple[type[Exception], ...]:
    try:
        from boto3.exceptions import Boto3Error  # S3UploadFailedError wraps a refused upload
        from botocore.exceptions import BotoCoreError, ClientError
    except ImportError:  # boto3 comes with the sagemaker extras only
        return ()
    return (BotoCoreError, ClientError, Boto3Error)


def exit_code_for(error: BaseException) -> int:
    """2 for what the user fixes before a job can run, 70 for anything else a command raised.

    A job that ran and failed never raises out of a command (its status gives 1), so an error
    here happened before any job ran: the job file, an option, this machine or AWS refused.
    """
    if isinstance(error, (SetupError, OSError, *aws_errors())):
        return EXIT_INVALID
    return EXIT_INTERNAL


def error_lines(error: BaseException) -> list[str]:
    """What to fix: one line, or a heading and one line per problem of a spec."""
    if isinstance(error, SpecError):
        return [error.header, *(f"  - {problem}" for problem in error.problems)]
    if isinstance(error, (SetupError, OSError)):
        return [f"cannot run here: {error}"]
    if isinstance(error, aws_errors()):
        return [f"AWS error: {error}"]
    return [
        f"internal error in smdist: {type(error).__name__}: {error} (`smdist --debug ...` or "
        f"{DEBUG_VARIABLE}=1 shows the traceback; please report it)"
    ]


def debug_requested(flag: bool) -> bool:
    """``--debug`` given, or SMDIST_DEBUG set to 1/true/yes."""
    return flag or os.environ.get(DEBUG_VARIABLE, "").strip().lower() in ("1", "true", "yes")


def report(error: BaseException, console: Any, debug: bool = False) -> int:
    """Print ``error`` on ``console`` (a rich Console on stderr); return its exit code.

    With ``debug`` the traceback comes first, so the last line is always what to fix.
    """
    if debug:
        text = "".join(traceback.format_exception(error)).rstrip()
        console.print(text, highlight=False, markup=False, soft_wrap=True)
    head, *rest = error_lines(error)
    console.print(head, style="bold red", highlight=False, markup=False, soft_wrap=True)
    for line in rest:
        console.print(line, highlight=False, markup=False, soft_wrap=True)
    return exit_code_for(error)
