"""The ``smdist`` command: plan, validate, schema, instances, run, and SageMaker's verbs.

Exit codes are the contract CI relies on, one rule for every command (``smdist.exit_codes``):

- 0: success (the job completed, the spec is valid, the request was made);
- 1: a job ran and failed, or was stopped (Ctrl-C, SIGTERM, max_run);
- 2: something to fix before anything can run, in the job or on this machine: an invalid job
  file or option, an unreadable file, a missing tool (mpirun, Docker, horovod or torch in this
  environment), missing AWS credentials or role, a request AWS refused;
- 70: a bug in smdist itself, never the user's input.

Commands raise; ``main`` alone turns an error into its exit code and a message saying what to
fix, never a traceback unless ``smdist --debug ...`` (or ``SMDIST_DEBUG=1``) asks for it.
"""

from __future__ import annotations

import json
import os
import sys

import typer

from smdist.backends import registry
from smdist.cli import assignments as cli_assignments
from smdist.cli import backend_flags, job_commands, terminal
from smdist.cli import help as cli_help
from smdist.cli import options as opt
from smdist.cli import start_commands as starting
from smdist.cli import tuning as cli_tuning
from smdist.cli.init_file import init_command
from smdist.cli.job_files import load_plan
from smdist.exit_codes import EXIT_INVALID, EXIT_OK, debug_requested, report

app = cli_help.Typer(  # flags show as flags in --help, not as "<bool>"
    name="smdist",
    help="Typed, pre-checked distributed training on Amazon SageMaker.",
    no_args_is_help=True,
    add_completion=True,  # smdist --install-completion [SHELL] / --show-completion [SHELL]
    pretty_exceptions_enable=False,
)

_debug = [False]  # set by --debug before a command runs; read by main() when one raises


def _skip_pydantic_plugin_search() -> None:
    """Pydantic plugins observe an application's validation; the smdist command's own job
    models have none to serve, and finding them reads every installed package's metadata
    (some 10 ms a command, before a local job's hosts can start). A user who names plugins
    in PYDANTIC_DISABLE_PLUGINS keeps pydantic's own handling."""
    if "PYDANTIC_DISABLE_PLUGINS" in os.environ:
        return
    try:
        from pydantic.plugin import _loader
    except ImportError:  # a pydantic without plugins: nothing to skip
        return
    if getattr(_loader, "_plugins", ()) is None:  # not searched yet
        _loader._plugins = {}


@app.callback()
def _global_options(debug: opt.DebugFlag = False, version: opt.VersionFlag = False) -> None:
    _debug[0] = debug
    _skip_pydantic_plugin_search()  # here, not for --help / --version: they build no models


@app.command("plan")
def plan_command(
    job_file: opt.JobFile,
    as_json: opt.PlanJsonFlag = False,
    hosts: opt.HostsFlag = False,
    hosts_count: opt.HostsCountOption = 4,
) -> None:
    """Check a job and show exactly what SageMaker would run (--hosts: on each host)."""
    plan = load_plan(job_file, submittable=True)
    shown_for = registry.get(registry.DEFAULT_SUBMIT_BACKEND)  # what plan shows: SageMaker's
    if hosts:
        # lazy: the host builder, for --hosts only
        from smdist.planning import host_view

        line = shown_for.host_line(plan)  # the installed SDK line's container
        if as_json:
            typer.echo(json.dumps(host_view.hosts_document(plan, hosts_count, line), indent=2))
        else:
            typer.echo("\n".join(host_view.hosts_text(plan, hosts_count, line)))
        return
    rendering = shown_for.rendering(plan)  # what the installed SDK line sends
    if as_json:
        typer.echo(json.dumps({**plan.to_dict(), **rendering.to_dict()}, indent=2))
        return
    from rich.console import Console

    # lazy: the plan's table (html, json), for this command only
    from smdist.planning.display import plan_renderable

    Console().print(plan_renderable(plan, rendering))


@app.command()
def validate(job_file: opt.JobFile) -> None:
    """Exit 0 when the job is valid, 2 with the problems on stderr when it is not."""
    plan = load_plan(job_file, submittable=True)
    console = terminal.stderr()
    for warning in plan.warnings:
        terminal.warn(console, warning)
    typer.echo(f"{job_file}: valid ({plan.spec.strategy.kind}, world size {plan.world_size})")


@app.command()
def schema() -> None:
    """Print the JSON Schema of job files (for editors and CI linters)."""
    # lazy: the job's pydantic models, built only for this command
    from smdist.spec.job import json_schema

    typer.echo(json.dumps(json_schema(), indent=2))


@app.command()
def instances(family: opt.FamilyOption = None) -> None:
    """List the instance catalogue: GPUs, memory, EFA, price, libraries."""
    from rich.console import Console

    # lazy: the catalogue's data files, read for this command only
    from smdist.cli.instance_table import instance_table

    Console().print(instance_table(family))


# ---- run, submit (start_commands); status, logs, stop, jobs (job_commands) ------------------
LOCAL_ROOT = cli_assignments.LOCAL_ROOT
_assignment = cli_assignments._assignment  # --set name=value (its tests import it from here)
app.command()(backend_flags.with_flags(starting.run, starting.RUN_FLAGS, several=False))
app.command()(backend_flags.with_flags(starting.submit, starting.SUBMIT_FLAGS, several=True))
app.command("tune")(cli_tuning.tune_command)
app.command("init")(init_command)
for _command in (job_commands.status, job_commands.logs, job_commands.stop, job_commands.jobs):
    app.command()(_command)


_COMPLETION_OPTIONS = ("--show-completion", "--install-completion")
# typer's mode where the completion options take the shell's name (bash, zsh, fish,
# powershell, pwsh) instead of detecting the shell smdist runs under
_NAMED_SHELL_MODE = "_TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION"


def _names_a_shell(argv: list[str]) -> bool:
    """``smdist --show-completion zsh``: typer would detect the shell that runs smdist and
    drop the name, so bash would get bash's script; a named shell gets its own (an unknown
    name is refused with the valid ones, exit 2)."""
    for index, word in enumerate(argv):
        if word.startswith(tuple(f"{option}=" for option in _COMPLETION_OPTIONS)):
            return True
        if word in _COMPLETION_OPTIONS and index + 1 < len(argv):
            return not argv[index + 1].startswith("-")
    return False


def main(argv: list[str] | None = None) -> int:
    """Run the command line; returns the exit code (see the module docstring)."""
    _debug[0] = False
    words = sys.argv[1:] if argv is None else argv
    named_shell = _names_a_shell(words) and _NAMED_SHELL_MODE not in os.environ
    if named_shell:
        os.environ[_NAMED_SHELL_MODE] = "1"
    try:
        app(args=argv, prog_name="smdist", standalone_mode=True)
    except SystemExit as exc:  # click's usage errors (2) and every command's typer.Exit
        code = exc.code
        return code if isinstance(code, int) else (0 if code is None else EXIT_INVALID)
    except Exception as error:  # noqa: BLE001 - the one place errors become exit codes
        return report(error, terminal.stderr(), debug=debug_requested(_debug[0]))
    finally:
        if named_shell:
            del os.environ[_NAMED_SHELL_MODE]
    return EXIT_OK


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
