"""Whether an outcome or a CLI run is what a case requires, as a list of reasons it is not.

The test and the summary command (``python -m hostile``) share these, so both say the same.
"""

from __future__ import annotations

import json
import re

from hostile.accepted import Accepted
from hostile.build import Case
from hostile.harness import CliResult, Outcome

CPU_LIMIT = 1.0  # seconds of process time for load + plan of any file
CLI_WALL_LIMIT = 10.0  # seconds for the whole `smdist validate` subprocess on a busy machine
EXIT_INVALID = 2


def names_field(path: str, text: str, field: str) -> bool:
    """A problem names ``field`` by its path, or by quoting it in the message."""
    if path == field or path.startswith((field + ".", field + "[")):
        return True
    quoted = rf"['\"]{re.escape(field)}['\"]|(?<![\w.]){re.escape(field)}:"
    return re.search(quoted, text) is not None


def refused_faults(case: Case, outcome: Outcome) -> list[str]:
    """Why ``outcome`` is not the refusal ``case`` requires (empty: it is)."""
    if outcome.kind != "refused":
        detail = f": {outcome.error}" if outcome.error else ""
        return [f"{outcome.kind}{detail}"]
    faults = []
    errors = outcome.errors
    if not errors:
        faults.append("refused with warnings only")
    if case.fields and not any(names_field(p, t, f) for p, t in errors for f in case.fields):
        shown = "; ".join(t for _, t in errors)[:400]
        faults.append(f"names none of {list(case.fields)}: {shown}")
    if case.says and not any(re.search(case.says, t) for _, t in errors):
        shown = "; ".join(t for _, t in errors)[:400]
        faults.append(f"does not say /{case.says}/: {shown}")
    if outcome.cpu >= CPU_LIMIT:
        faults.append(f"took {outcome.cpu:.2f} s of CPU")
    return faults


def cli_refused_faults(case: Case, result: CliResult) -> list[str]:
    faults = []
    if "Traceback" in result.stdout + result.stderr:
        last = (result.stderr.strip().splitlines() or [""])[-1]
        faults.append(f"traceback: {last[:300]}")
    if result.returncode != EXIT_INVALID:
        faults.append(f"exit code {result.returncode}")
    if case.fields and not any(field in result.stderr for field in case.fields):
        faults.append(f"stderr names none of {list(case.fields)}: {result.stderr[-300:]!r}")
    if case.says and not re.search(case.says, result.stderr):
        faults.append(f"stderr does not say /{case.says}/")
    if result.wall >= CLI_WALL_LIMIT:
        faults.append(f"took {result.wall:.1f} s")
    return faults


def accepted_faults(case: Accepted, outcome: Outcome) -> list[str]:
    if outcome.kind != "accepted" or outcome.wire is None:
        shown = outcome.error or "; ".join(t for _, t in outcome.errors)[:400]
        return [f"{outcome.kind}: {shown}"]
    if case.where == "hyperparameters":
        sent = outcome.wire["hyperparameters"].get(case.name)
        delivered = None if sent is None else json.loads(sent)
    else:
        delivered = outcome.wire["environment"].get(case.name)
    if delivered != case.value:
        return [f"delivered {delivered!r}, not {case.value!r}"]
    if outcome.cpu >= CPU_LIMIT:
        return [f"took {outcome.cpu:.2f} s of CPU"]
    return []
