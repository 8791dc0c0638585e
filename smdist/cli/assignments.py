"""``smdist run``'s job file: ``--set name=value`` overrides of its hyperparameters."""

from __future__ import annotations

import sys
from pathlib import Path

from smdist.errors import Problem, SpecError, suggest

LOCAL_ROOT = Path(".smdist")


def _assignment(text: str) -> tuple[str, object]:
    """``name=value`` with the value read as YAML (``1`` -> 1, ``true`` -> True, ``[1, 2]``)."""
    import yaml

    # lazy: PyYAML, for --set only (smdist --help imports this module)
    from smdist.yaml_text import StrictYamlError, parse_untrusted

    name, equals, raw = text.partition("=")
    if not equals or not name.strip():
        raise SpecError(
            [Problem("--set", "is not name=value", text, "e.g. --set epochs=1 -H max_steps=20")]
        )
    try:
        value = parse_untrusted(raw) if raw.strip() else ""
    except StrictYamlError as exc:  # an alias bomb or duplicate key: refused, not kept as text
        inner = exc.path if not exc.path or exc.path.startswith("[") else f".{exc.path}"
        where = f"hyperparameters.{name.strip()}{inner}"
        raise SpecError([Problem(where, exc.message, None, exc.valid)]) from None
    except yaml.YAMLError:
        value = raw
    return name.strip(), value


def local_spec(path: Path, assignments: list[str]):
    """The job file with ``--set`` overrides of its hyperparameters."""
    # lazy: the job models, for the commands that read a job file
    from smdist.checks.reading import from_dict, load

    spec = load(path)
    if not assignments:
        return spec
    data = spec.model_dump(mode="json", by_alias=True, exclude_unset=True)
    overrides = dict(map(_assignment, assignments))
    for note in new_name_notes(spec, overrides):
        print(f"note: {note}", file=sys.stderr)
    data["hyperparameters"] = {**spec.hyperparameters, **overrides}
    return from_dict(data, source=str(path))


def new_name_notes(spec, overrides: dict[str, object]) -> list[str]:
    """A note for each ``--set`` name neither the job file nor the ready script knows: it is
    added as a new hyperparameter, which is rarely what a typo (``epoch`` for ``epochs``) meant."""
    from dataclasses import fields

    # lazy: the ready script's options (argparse), for --set only
    from smdist.runtime.args import TrainingArgs

    known = set(spec.hyperparameters)
    if spec.code.entry_point is None:  # smdist's ready script: its own options count too
        known |= {f.name for f in fields(TrainingArgs) if f.name not in _NOT_OPTIONS}
    notes = []
    for name in overrides:
        if name in known:
            continue
        close = suggest(name, known, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        notes.append(
            f"--set {name}: the job file has no hyperparameter {name!r}, so it is added as a new "
            f"one{hint}"
        )
    return notes


_NOT_OPTIONS = frozenset(
    {"smdist_backend", "smdist_communication", "smdist_collective_timeout", "unknown", "given"}
)
