"""Plots that take frames (or an Attribution) and draw; they compute nothing of their own."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from clusterlab.attribution import Attribution


def ledger_waterfall(a: Attribution, ax=None):
    """From steady-state MFU (or all GPU-hours) down to effective, one bar per lost category."""
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(8, 3.5))
    led = a.ledger.filter(a.ledger["gpu_hours"] > 0)
    use_mfu = a.steady_mfu is not None
    top = (a.steady_mfu * 100) if use_mfu else a.gpu_hours
    unit = "MFU (%)" if use_mfu else "GPU-hours"
    labels, lefts, widths = ["steady"], [0.0], [top]
    level = top
    for row in led.filter(led["category"] != "productive").sort("gpu_hours", descending=True).iter_rows(named=True):
        size = row["lost_mfu"] * 100 if use_mfu else row["gpu_hours"]
        level -= size
        labels.append(row["category"])
        lefts.append(level)
        widths.append(size)
    labels.append("effective")
    lefts.append(0.0)
    widths.append(level)
    colors = ["#4c72b0"] + ["#dd8452"] * (len(labels) - 2) + ["#55a868"]
    ax.barh(labels[::-1], widths[::-1], left=lefts[::-1], color=colors[::-1])
    ax.set_xlabel(unit)
    ax.set_title(f"{a.run}: where the {unit.split(' ')[0]} went")
    return ax
