"""``smdist init STRATEGY [FILE]``: a commented job file to start from, one per strategy.

The file says what each field is for, pins the image a SageMaker job would use, and trains
for seconds: ``smdist validate`` accepts it and ``smdist run`` runs it as written. An existing
file is never replaced without ``--force``; a strategy it does not know is refused with the
ones it does (exit 2 for both).
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Annotated, Any

import typer

from smdist.errors import OPTION, Problem, SpecError
from smdist.strategies.starters import HYPERPARAMETERS, STARTERS, Field, Starter

COMMENT_COLUMN = 36  # comments line up here, past the longest "  name: value"
WIDTH = 100  # a comment that would run past it goes on its own line, above its field


def _strategies(incomplete: str) -> list[str]:
    """What the shell completes STRATEGY with (``smdist --install-completion``)."""
    return [name for name in STARTERS if name.startswith(incomplete)]


StrategyArgument = Annotated[
    str,
    typer.Argument(
        help=f"one of: {', '.join(STARTERS)}", show_default=False, autocompletion=_strategies
    ),
]
FileArgument = Annotated[
    Path | None,
    typer.Argument(help="where to write it (default: STRATEGY.yaml)", show_default=False),
]
ForceFlag = Annotated[bool, typer.Option("--force", help="replace FILE if it exists")]


def init_command(strategy: StrategyArgument, file: FileArgument = None, force: ForceFlag = False):
    """Write a commented job file for a strategy, ready for validate, run and submit."""
    text = job_file_text(strategy)
    path = file or Path(f"{strategy}.yaml")
    if path.exists() and not force:
        raise SpecError(
            [Problem(str(path), "exists already", None, "--force to replace it, or another FILE")],
            OPTION,
        )
    path.write_text(text)
    typer.echo(f"wrote {path}: check it with `smdist validate {path}`, run it here with "
               f"`smdist run {path}`")  # fmt: skip


def job_file_text(strategy: str) -> str:
    """The commented YAML of ``strategy``'s starter."""
    starter = STARTERS.get(strategy)
    if starter is None:
        raise SpecError(
            [
                Problem(
                    "STRATEGY", "is no strategy smdist init knows", strategy, ", ".join(STARTERS)
                )
            ],
            OPTION,
        )
    name = strategy.replace("_", "-")
    lines = [
        *textwrap.wrap(starter.title, WIDTH, initial_indent="# ", subsequent_indent="# "),
        "# Check it: smdist validate FILE   Run it here (emulated hosts): smdist run FILE",
        "# See what SageMaker would run: smdist plan FILE   Send it: smdist submit FILE",
        _line(Field("name", name, "the job's name; each run adds a timestamp"), 0),
        _line(Field("strategy", None, "how the processes start and talk to each other"), 0),
        *(_line(item, 2) for item in starter.strategy),
        _line(Field("cluster", None, "the hosts; `smdist instances` lists the types"), 0),
        _line(starter.instance_type, 2),
        _line(Field("instance_count", 2, "hosts (here: emulated hosts)"), 2),
        _line(Field("code", None, "no entry_point: smdist's ready script for it runs"), 0),
        "  # To run your own script, add entry_point: train.py and source_dir: src",
        *_versions(starter),
        _line(Field("hyperparameters", None, "the script's arguments: --name value"), 0),
        *(_line(item, 2) for item in HYPERPARAMETERS),
        _line(Field("max_run", 3600, "seconds before SageMaker stops the job; bounds its cost"), 0),
    ]
    return "\n".join(lines) + "\n"


def _versions(starter: Starter) -> list[str]:
    framework = starter.framework
    lines = [f"  # {starter.version_note}"] if starter.version_note else []
    return [
        *lines,
        _line(Field("framework_version", starter.framework_version, f"{framework} image"), 2),
        _line(Field("py_version", starter.py_version, "its Python"), 2),
    ]


def _line(item: Field, indent: int) -> str:
    text = f"{' ' * indent}{item.name}:"
    if item.value is not None:
        text += f" {_scalar(item.value)}"
    if not item.comment:
        return text
    beside = f"{text.ljust(COMMENT_COLUMN - 1)} # {item.comment}"
    if len(beside) <= WIDTH:
        return beside
    return f"{' ' * indent}# {item.comment}\n{text}"


def _scalar(value: Any) -> str:
    """``value`` as YAML writes it; a version always quoted, so that 2.20 stays 2.20."""
    if isinstance(value, str) and value[:1].isdigit():
        return json.dumps(value)
    import yaml  # here: smdist --help imports this module

    return yaml.safe_dump(value, default_flow_style=True, width=1000).removesuffix("\n...\n")
