"""How a Plan looks: a rich table for the terminal, HTML + an SVG topology for notebooks."""

from __future__ import annotations

import html
import json
from typing import TYPE_CHECKING, Any

from smdist.planning.cost_text import hosts_text
from smdist.planning.cost_text import money as _money
from smdist.planning.setting_rows import setting_rows

if TYPE_CHECKING:
    from rich.console import RenderableType

    from smdist.planning.plan_value import PlanValue as Plan

# One colour per group index; cycles for large jobs.
PALETTE = (
    "#4e79a7",
    "#f28e2b",
    "#59a14f",
    "#e15759",
    "#76b7b2",
    "#edc948",
    "#b07aa1",
    "#ff9da7",
    "#9c755f",
    "#bab0ac",
)
MAX_DRAWN_HOSTS = 16


def summary_rows(plan: Plan) -> list[tuple[str, str]]:
    spec = plan.spec
    topo = plan.topology
    rows = [
        ("job", plan.job_name),
        ("strategy", f"{spec.strategy.kind} ({plan.launch.launcher.description})"),
        ("framework", f"{plan.framework} {spec.code.framework_version or '(SDK default)'}"),
        ("cluster", f"{hosts_text(spec.cluster)} ({plan.gpus_per_host} GPU/host)"),
        ("processes", f"{topo.processes_per_host} per host, world size {topo.world_size}"),
        (
            "program",
            plan.program
            + (f"  (runs {plan.entry_point})" if plan.program != plan.entry_point else ""),
        ),
        ("source_dir", plan.source_dir or "smdist ready entry points"),
        (
            "cost",
            f"{_money(plan.cost.per_hour)}/hour, {_money(plan.cost.max_run)} at max_run "
            f"({plan.cost.region} on-demand)" + "".join(f"; {n}" for n in plan.cost.notes),
        ),
    ]
    rows += setting_rows(spec)
    for kind, groups in topo.groups.items():
        shown = ", ".join(str(g) for g in groups[:4]) + (" ..." if len(groups) > 4 else "")
        rows.append((f"{kind} groups", f"{len(groups)} x {len(groups[0])}: {shown}"))
    return rows


def plan_renderable(plan: Plan, rendering: Any = None) -> RenderableType:
    """The plan as rich text; ``rendering`` (an ``SdkRendering``): what an SDK line sends,
    else SDK v2's estimator view."""
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    table = Table(show_header=False, box=None, pad_edge=False)
    table.add_column(style="bold cyan", no_wrap=True)
    table.add_column()
    # Text, never markup: a hyperparameter such as "[red]x" is shown as the user wrote it.
    for key, value in summary_rows(plan):
        table.add_row(Text(key), Text(value))
    argument, value, hyperparameters = "distribution", plan.distribution, plan.wire_hyperparameters
    if rendering is not None:
        table.add_row(Text("sdk"), Text(f"{rendering.line}: {rendering.caller}"))
        argument, value = rendering.launch_argument, rendering.launch_value
        hyperparameters = rendering.hyperparameters
    parts: list[RenderableType] = [table]
    parts.append(Text(f"\n{argument}", style="bold"))
    parts.append(Text(json.dumps(value, indent=2) if value else "(none)"))
    hps = Table("hyperparameter (wire)", "value", box=None)
    for key, value in hyperparameters.items():
        hps.add_row(Text(key), Text(value))
    parts.append(Text(""))
    parts.append(hps)
    for warning in plan.warnings:
        parts.append(Text(f"warning: {warning}", style="yellow"))
    return Group(*parts)


def topology_svg(plan: Plan, group_kind: str | None = None) -> str:
    """Hosts as rows, ranks as boxes coloured by their group (model-parallel first)."""
    topo = plan.topology
    kinds = [k for k in ("model_parallel", "shard", "data_parallel") if k in topo.groups]
    kind = group_kind or (kinds[0] if kinds else None)
    box, gap, label_width = 34, 4, 70
    hosts = topo.hosts[:MAX_DRAWN_HOSTS]
    per_host = topo.processes_per_host
    width = label_width + per_host * (box + gap) + gap
    height = len(hosts) * (box + gap) + gap + (18 if len(topo.hosts) > len(hosts) else 0)
    cells = []
    for row, host in enumerate(hosts):
        y = gap + row * (box + gap)
        cells.append(f'<text x="4" y="{y + box / 2 + 4}" font-size="12">{html.escape(host)}</text>')
        for local in range(per_host):
            rank = row * per_host + local
            index = topo.group_of(kind, rank) if kind else None
            colour = PALETTE[(index or 0) % len(PALETTE)] if kind else PALETTE[0]
            x = label_width + local * (box + gap)
            cells.append(
                f'<rect x="{x}" y="{y}" width="{box}" height="{box}" rx="4" fill="{colour}">'
                f"<title>rank {rank} ({kind or 'rank'} group {index})</title></rect>"
                f'<text x="{x + box / 2}" y="{y + box / 2 + 4}" font-size="11" fill="white" '
                f'text-anchor="middle">{rank}</text>'
            )
    if len(topo.hosts) > len(hosts):
        cells.append(
            f'<text x="4" y="{height - 4}" font-size="12">... '
            f"{len(topo.hosts) - len(hosts)} more hosts</text>"
        )
    caption = f"colour = {kind.replace('_', '-')} group" if kind else ""
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'role="img" aria-label="topology">{"".join(cells)}</svg>'
        f'<div style="font-size:11px">{html.escape(caption)}</div>'
    )


def plan_html(plan: Plan) -> str:
    rows = "".join(
        f"<tr><th style='text-align:left'>{html.escape(k)}</th><td>{html.escape(v)}</td></tr>"
        for k, v in summary_rows(plan)
    )
    hps = "".join(
        f"<tr><td><code>{html.escape(k)}</code></td><td><code>{html.escape(v)}</code></td></tr>"
        for k, v in plan.wire_hyperparameters.items()
    )
    warnings = "".join(f"<li>{html.escape(str(w))}</li>" for w in plan.warnings)
    return (
        f"<div><table>{rows}</table>{topology_svg(plan)}"
        f"<details><summary>distribution and wire hyperparameters</summary>"
        f"<pre>{html.escape(json.dumps(plan.distribution, indent=2))}</pre>"
        f"<table>{hps}</table></details>"
        + (f"<ul style='color:#a60'>{warnings}</ul>" if warnings else "")
        + "</div>"
    )
