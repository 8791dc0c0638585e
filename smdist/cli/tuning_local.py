"""``smdist tune JOB_FILE --local``: the search on this machine, shown as a table that follows it.

The trials' own logs are not printed (several run at once, and each is in its job directory:
``smdist logs <trial name>``). While the search runs, stderr shows its progress: on a terminal
a table of each trial's values, objective and status, redrawn whenever a trial starts or ends;
elsewhere one line per trial that ended. What it found (the final table, the best trial's name,
objective, values and model) goes to stdout, as ``smdist tune --wait`` prints a SageMaker
search's, so that CI can capture it; why a trial failed (its job's failure, or a metric regex
that matched no line of its log) goes to stderr. The exit code
says whether the search gave something to use: 0 when it ran to its end with at least one
completed trial, 1 when it was interrupted (Ctrl-C, SIGTERM; running it again resumes) or no
trial completed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from smdist.backends.tuning_progress import number as _number
from smdist.backends.tuning_results import FINISHED
from smdist.cli.terminal import plain, warn

if TYPE_CHECKING:
    from smdist.backends.tuning_results import Trial, TuningResult
    from smdist.planning.plan import Plan

_STATUS_STYLES = {
    "Completed": "green",
    "Running": "cyan",
    "Failed": "red",
    "Stopped": "yellow",
    "Pruned": "dim",
}


def trial_table(result: TuningResult) -> Any:
    """The trials as a rich Table: number, tuned values, objective, status; best in bold."""
    from rich.table import Table

    names = sorted({name for trial in result.trials for name in trial.values})
    best = result.best
    title = f"{result.name}: {result.objective_type.lower()} {result.objective_metric}"
    table = Table(title=title, title_justify="left")
    table.add_column("trial", justify="right")
    for name in names:
        table.add_column(name, justify="right")
    table.add_column("objective", justify="right")
    table.add_column("status")
    for trial in sorted(result.trials, key=lambda t: t.number):
        is_best = best is not None and trial.number == best.number
        cells = [str(trial.number), *(_number(trial.values.get(name)) for name in names)]
        status = f"{trial.status} (best)" if is_best else trial.status
        cells += [_number(trial.objective), status]
        style = "bold green" if is_best else _STATUS_STYLES.get(trial.status, "")
        table.add_row(*cells, style=style)
    return table


def reason_lines(result: TuningResult) -> list[str]:
    """Why each trial that failed did, one line each."""
    return [
        f"trial {trial.number} ({trial.name}) {trial.status}: {trial.reason}"
        for trial in sorted(result.trials, key=lambda t: t.number)
        if trial.reason and trial.status in FINISHED
    ]


def best_lines(result: TuningResult) -> list[str]:
    """What the search found, in plain lines (copyable values, the model's path)."""
    best: Trial | None = result.best
    done = sum(1 for trial in result.trials if trial.status == "Completed")
    head = f"{result.name}: {result.status}, {done} of {len(result.trials)} trial(s) completed"
    if best is None:
        return [head, "no trial completed with a value of the objective"]
    values = " ".join(f"{name}={value!r}" for name, value in best.values.items())
    return [
        head,
        f"best: trial {best.number} ({best.name}): {result.objective_metric}="
        f"{_number(best.objective)}",
        f"values: {values}",
        f"model: {best.model or '-'}",
    ]


def run(plan: Plan, backend: Any, options: Any, *, console: Any, out: Any = None) -> int:
    """Run the plan's search on ``backend`` (one that searches on this machine), its progress
    on ``console`` (stderr) and what it found on ``out`` (default: a console on stdout);
    returns the exit code.

    On a terminal the table is redrawn in place, then left for stdout's; elsewhere (a CI log)
    each trial's end is one line.
    """
    import warnings

    from rich.console import Console

    out = out if out is not None else Console()
    for note in backend.tune_notes(plan):
        warn(console, note)
    warnings.filterwarnings("ignore", category=UserWarning, module=r"smdist\.")  # shown above
    if console.is_terminal:
        from rich.live import Live

        # transient: the last table is stdout's, printed once below
        with Live(console=console, auto_refresh=False, transient=True) as live:

            def redraw(result: TuningResult) -> None:
                live.update(trial_table(result), refresh=True)

            result = backend.tune(plan, options.model_copy(update={"on_trial": redraw}))
        for line in reason_lines(result):  # the lines below say it where there is no table
            plain(console, line)
    else:
        result = backend.tune(plan, options, lambda line: plain(console, line))
    out.print(trial_table(result))
    for line in best_lines(result):
        plain(out, line)
    if result.status != "Completed":
        plain(console, "interrupted: run the same command again to resume the search")
        return 1
    return 0 if result.best is not None else 1
