"""Which kubeconfig and context a job goes to, read before the ``kubernetes`` client loads: a
missing file or context is a SpecError (exit 2) naming the option and what would be valid.

kubectl's rules: ``--kubeconfig``, else the first file of ``$KUBECONFIG``, else
``~/.kube/config``; ``--context``, else the file's ``current-context``; the namespace is
``--namespace``, else the context's, else ``default``. EKS's ``aws eks get-token`` exec
credentials are in the file as kubectl reads them, and the client runs them the same way.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from smdist.errors import OPTION, Problem, SpecError

DEFAULT_NAMESPACE = "default"
DEFAULT_PATH = Path("~/.kube/config")
HOW = "`aws eks update-kubeconfig --name <cluster>` writes one"


@dataclass(frozen=True)
class Target:
    """Where a job goes: the kubeconfig file, its context, the namespace."""

    kubeconfig: Path
    context: str
    namespace: str


def kubeconfig_path(given: Path | None, environ: dict[str, str] | None = None) -> Path:
    environ = dict(os.environ) if environ is None else environ
    if given is not None:
        return Path(given).expanduser()
    listed = [part for part in environ.get("KUBECONFIG", "").split(os.pathsep) if part]
    return Path(listed[0]).expanduser() if listed else DEFAULT_PATH.expanduser()


def read(path: Path) -> dict[str, Any]:
    """The kubeconfig at ``path``; SpecError naming ``kubeconfig`` when it cannot be read."""
    try:
        loaded = yaml.safe_load(path.read_text())
    except FileNotFoundError:
        problem = Problem("kubeconfig", "no kubeconfig file is there", str(path), HOW)
        raise SpecError([problem], OPTION) from None
    except (OSError, yaml.YAMLError) as error:
        why = f"cannot be read as a kubeconfig: {error}"
        raise SpecError([Problem("kubeconfig", why, str(path), HOW)], OPTION) from None
    if not isinstance(loaded, dict):
        why = "is not a kubeconfig (a YAML mapping with contexts)"
        raise SpecError([Problem("kubeconfig", why, str(path), HOW)], OPTION)
    return loaded


def _contexts(config: dict[str, Any]) -> dict[str, dict[str, Any]]:
    found = {}
    for entry in config.get("contexts") or []:
        if isinstance(entry, dict) and isinstance(entry.get("name"), str):
            found[entry["name"]] = entry.get("context") or {}
    return found


def target(
    kubeconfig: Path | None, context: str | None, namespace: str | None,
    environ: dict[str, str] | None = None,
) -> Target:  # fmt: skip
    """The job's target; SpecError naming ``kubeconfig`` or ``context`` when one is missing."""
    path = kubeconfig_path(kubeconfig, environ)
    config = read(path)
    contexts = _contexts(config)
    chosen = context or config.get("current-context")
    if not chosen or chosen not in contexts:
        valid = ", ".join(sorted(contexts)) or f"none in {path}: {HOW}"
        why = (
            f"is no context of {path}"
            if chosen
            else f"is not set, and {path} has no current-context"
        )
        raise SpecError([Problem("context", why, chosen, valid)], OPTION)
    return Target(path, chosen, namespace or contexts[chosen].get("namespace") or DEFAULT_NAMESPACE)


def dry_run_namespace(
    kubeconfig: Path | None, context: str | None, namespace: str | None,
    environ: dict[str, str] | None = None,
) -> str:  # fmt: skip
    """The namespace a dry run shows: the one a submit would use where the kubeconfig says,
    else ``default`` (a dry run needs no kubeconfig)."""
    if namespace is not None:
        return namespace
    try:
        return target(kubeconfig, context, None, environ).namespace
    except SpecError:
        return DEFAULT_NAMESPACE
