"""The ``smdist`` command: plan, validate, schema, instances (and the backends' verbs).

Exit codes are the contract CI relies on: 0 success, 1 job failure, 2 invalid configuration.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer

from smdist.errors import SpecError

EXIT_OK, EXIT_JOB_FAILED, EXIT_INVALID = 0, 1, 2

app = typer.Typer(
    name="smdist",
    help="Typed, pre-checked distributed training on Amazon SageMaker.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

JobFile = Annotated[Path, typer.Argument(help="job spec (YAML)", show_default=False)]


def _stderr():
    from rich.console import Console

    return Console(stderr=True)


def _fail_invalid(exc: SpecError) -> None:
    console = _stderr()
    console.print("[bold red]invalid job spec[/]", highlight=False)
    for problem in exc.problems:
        console.print(f"  - {problem}", highlight=False, markup=False)
    raise typer.Exit(EXIT_INVALID)


def _load_plan(path: Path):
    from smdist.plan import plan
    from smdist.spec import load

    try:
        return plan(load(path))
    except SpecError as exc:
        _fail_invalid(exc)


@app.command("plan")
def plan_command(
    job_file: JobFile,
    as_json: Annotated[bool, typer.Option("--json", help="print the plan as JSON")] = False,
) -> None:
    """Check a job and show exactly what SageMaker would run."""
    plan = _load_plan(job_file)
    if as_json:
        typer.echo(json.dumps(plan.to_dict(), indent=2))
        return
    from rich.console import Console

    from smdist.display import plan_renderable

    Console().print(plan_renderable(plan))


@app.command()
def validate(job_file: JobFile) -> None:
    """Exit 0 when the job is valid, 2 with the problems on stderr when it is not."""
    plan = _load_plan(job_file)
    console = _stderr()
    for warning in plan.warnings:
        console.print(f"warning: {warning}", style="yellow", highlight=False, markup=False)
    typer.echo(f"{job_file}: valid ({plan.spec.strategy.kind}, world size {plan.world_size})")


@app.command()
def schema() -> None:
    """Print the JSON Schema of job files (for editors and CI linters)."""
    from smdist.spec import json_schema

    typer.echo(json.dumps(json_schema(), indent=2))


@app.command()
def instances(
    family: Annotated[str | None, typer.Option(help="only this family, e.g. p4d")] = None,
) -> None:
    """List the instance catalogue: GPUs, memory, EFA, price, libraries."""
    from rich.console import Console
    from rich.table import Table

    from smdist import catalog

    table = Table(
        "instance type",
        "GPUs",
        "GPU",
        "vCPUs",
        "EFA",
        "$/hour",
        "libraries",
        title=f"catalogue of {catalog.catalog_date()} ({catalog.price_region()})",
    )
    for name in catalog.known_instance_types():
        info = catalog.instance(name)
        if info is None or (family and info.family != family):
            continue
        table.add_row(
            name + (" (retired)" if info.retired else ""),
            str(info.gpus),
            info.gpu_model or "-",
            str(info.vcpus),
            "yes" if info.efa else "",
            f"{info.price_per_hour:.3f}" if info.price_per_hour else "-",
            ", ".join(sorted(info.libraries)),
        )
    Console().print(table)


def main(argv: list[str] | None = None) -> int:
    try:
        app(args=argv, prog_name="smdist", standalone_mode=True)
    except SystemExit as exc:
        code = exc.code
        return code if isinstance(code, int) else (0 if code is None else EXIT_INVALID)
    return EXIT_OK


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
