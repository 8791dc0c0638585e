"""Channel and hyperparameter names that SDK v3's container script cannot export.

SDK v3's ``scripts/environment.py`` writes each channel as ``export SM_CHANNEL_<NAME>='…'``
(the name upper-cased, nothing else changed) and each hyperparameter as ``export
SM_HP_<NAME>='…'`` (upper-cased, ``-`` turned into ``_``), and ``sm_train.sh`` sources that file
under ``set -e``. A name bash does not take as a variable name (``SM_CHANNEL_TRAIN-DATA``,
``SM_HP_LR.DECAY``: "not a valid identifier") ends the job before any driver runs. The API
and SDK v2's toolkit (which sets the variables from Python) take such names.

One rule, two severities: under SDK v3 ``carriage_problems`` refuses the name; the pure checks
warn about it on every line, since the installed SDK is no business of the planner.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from smdist.errors import Problem, Severity

# What bash takes after the SM_CHANNEL_ / SM_HP_ prefix: ASCII letters, digits and _.
_SHELL_NAME_TAIL = re.compile(r"\A[A-Za-z0-9_]+\Z")
_NOT_SHELL = re.compile(r"[^A-Za-z0-9_]")


@dataclass(frozen=True)
class ExportedName:
    """One name as v3's container script exports it."""

    path: str  # the spec field: inputs.<name> / hyperparameters.<name>
    name: str
    prefix: str  # SM_CHANNEL_ / SM_HP_
    tail: str  # the name as environment.py writes it after the prefix
    valid: str  # what would be valid, with a suggestion

    @property
    def variable(self) -> str:
        return self.prefix + self.tail

    @property
    def exportable(self) -> bool:
        return bool(_SHELL_NAME_TAIL.match(self.tail))


def exported_names(channels: Iterable[str], hyperparameters: Iterable[str]) -> list[ExportedName]:
    """Every channel and hyperparameter name with the variable v3's script exports for it."""
    names = [
        ExportedName(
            f"inputs.{name}",
            name,
            "SM_CHANNEL_",
            name.upper(),
            f"letters, digits and _ (e.g. {_NOT_SHELL.sub('_', name)})",
        )
        for name in channels
    ]
    names += [
        ExportedName(
            f"hyperparameters.{name}",
            name,
            "SM_HP_",
            name.replace("-", "_").upper(),
            f"letters, digits, _ and - (e.g. {_NOT_SHELL.sub('_', name)})",
        )
        for name in hyperparameters
    ]
    return names


def unexportable_name_problems(
    channels: Iterable[str], hyperparameters: Iterable[str], severity: Severity
) -> list[Problem]:
    """A Problem for each name v3's container script cannot export (``severity`` as given)."""
    where = (
        "SDK v3 cannot run this name (SDK v2 can)"
        if severity == "warning"
        else "the job would end before any driver runs"
    )
    problems = []
    for found in exported_names(channels, hyperparameters):
        if found.exportable:
            continue
        valid = found.valid
        if severity == "error":
            valid += ", or submit through SDK v2 (smdist[sagemaker-v2])"
        problems.append(
            Problem(
                found.path,
                f"SDK v3's container script (sm_train.sh) exports it as {found.variable}, "
                f"which bash refuses ('not a valid identifier'): {where}",
                found.name,
                valid,
                severity=severity,
            )
        )
    return problems
