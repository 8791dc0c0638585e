"""The table ``smdist instances`` prints: the instance catalogue, one row a type."""

from __future__ import annotations

from smdist import catalog


def instance_table(family: str | None):
    """A rich ``Table`` of the catalogued instance types (only ``family``'s when given)."""
    from rich.table import Table

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
    return table
