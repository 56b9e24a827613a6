"""The scorecard's plots, drawn from its frames (nothing computed here), as PNG bytes."""

from __future__ import annotations

import io

import polars as pl

from clusterlab.account import ledger
from clusterlab.plots import charts as plots
from clusterlab.reports import fmt

# One colour per ledger category, productive first; the same in every plot.
COLORS = dict(zip(ledger.CATEGORIES, ["#4c72b0", "#dd8452", "#c44e52", "#8172b3", "#937860", "#da8bc3", "#8c8c8c",
                                      "#ccb974", "#64b5cd", "#e5e5e5"], strict=True))


def _figure(width: float, height: float):
    from matplotlib.figure import Figure  # no pyplot: no global state, no GUI backend

    return Figure(figsize=(width, height), dpi=110, layout="constrained")


def png(fig) -> bytes:
    """A figure as PNG bytes."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", metadata={"Software": None})  # no tool URL inside the file
    return buf.getvalue()


def ledger_by_provider(frame: pl.DataFrame):
    """Stacked bars: each provider's GPU-hours by ledger category (`Scorecard.ledger`)."""
    per = frame.group_by("provider", "category").agg(pl.col("gpu_hours").sum())
    providers = sorted(per["provider"].unique().to_list())
    fig = _figure(8, 1.3 + 0.55 * max(len(providers), 1))
    ax = fig.subplots()
    left = [0.0] * len(providers)
    for cat in ledger.CATEGORIES:
        vals = {r["provider"]: r["gpu_hours"] for r in per.filter(pl.col("category") == cat).iter_rows(named=True)}
        widths = [vals.get(p, 0.0) for p in providers]
        if any(widths):  # NOTE: bars by position, names as plain labels: a `$` in a name is never mathtext
            ax.barh(range(len(providers)), widths, left=left, color=COLORS[cat], label=cat)
            left = [a + b for a, b in zip(left, widths, strict=True)]
    ax.set_yticks(range(len(providers)), [plots.plain(p) for p in providers])
    ax.set_xlabel("GPU-hours")
    ax.set_title("Where each provider's GPU-hours went")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.3), fontsize=7, ncol=5, frameon=False)
    ax.invert_yaxis()
    return fig


# Blame → bar colour in the failure-mode mix. `none` is the ledger's loss that no incident caused:
# routine checkpoint saves and start-up, which is nobody's fault and not "unknown".
BLAME_COLORS = {"provider": "#c44e52", "user": "#4c72b0", "unknown": "#8c8c8c", "none": "#c9dcb8"}
BLAME_LABELS = {"provider": "provider's fault", "user": "user's fault", "unknown": "blame unknown",
                "none": "no incident (routine)"}


def failure_modes(frame: pl.DataFrame):
    """Horizontal bars: lost GPU-hours by failure mode, one group per provider (`Scorecard.failure_modes`)."""
    rows = frame.filter(pl.col("gpu_hours_lost") > 0).sort(["provider", "gpu_hours_lost"], descending=[False, True])
    labels = [f"{r['provider']} · {fmt.mode_label(r['failure_mode'])}" for r in rows.iter_rows(named=True)]
    fig = _figure(8, 1.1 + 0.3 * max(len(labels), 1))
    ax = fig.subplots()
    blames = [b if b in BLAME_COLORS else "unknown" for b in rows["blame"]]
    # NOTE: bars by position, labels set after: two providers' labels never merge into one bar
    ax.barh(range(len(labels)), rows["gpu_hours_lost"].to_list(), color=[BLAME_COLORS[b] for b in blames])
    ax.set_yticks(range(len(labels)), [plots.plain(x) for x in labels])
    ax.set_xlabel("GPU-hours lost")
    ax.set_title("Failure-mode mix")
    ax.invert_yaxis()
    # the colour key as a legend the layout makes room for (a key spelled in the axis label ran off the figure)
    from matplotlib.patches import Patch

    shown = [b for b in BLAME_COLORS if b in blames]
    fig.legend([Patch(color=BLAME_COLORS[b]) for b in shown], [BLAME_LABELS[b] for b in shown], ncol=len(shown),
               loc="outside lower center", fontsize=8, frameon=False)
    return fig


FLEET_SHOWN = 15  # hosts in the fleet plot: the table's first ones (costliest first)


def fleet_hosts(frame: pl.DataFrame):
    """Two panels of the week's fleet table (`Scorecard.fleet_hosts`), one bar per host: GPU-hours its incidents
    lost, and hours its fault episodes kept it in repair; each host labelled with its faults this week, repeat
    offenders (the relaunch rule) marked."""
    rows = frame.filter((pl.col("incidents") + pl.col("episodes")) > 0).head(FLEET_SHOWN)
    # NOTE: a trace's node ids are UUIDs: 14 characters tell them apart and leave the panels their width
    labels = [f"{r['host'][:14]} · {r['incidents'] + r['episodes']}" for r in rows.iter_rows(named=True)]
    fig = _figure(8, 1.4 + 0.3 * max(len(labels), 1))
    lost_ax, repair_ax = fig.subplots(1, 2, sharey=True)
    colors = ["#c44e52" if f else "#4c72b0" for f in rows["repeat_offender"]]
    lost_ax.barh(range(len(labels)), rows["gpu_hours_lost"].fill_null(0.0).to_list(), color=colors)
    repair_ax.barh(range(len(labels)), rows["repair_hours"].to_list(), color=colors)
    lost_ax.set_yticks(range(len(labels)), [plots.plain(x) for x in labels])
    for ax, what in ((lost_ax, "GPU-h lost (incidents)"), (repair_ax, "hours in repair (episodes)")):
        ax.set_xlabel(what)
        ax.set_xlim(left=0)
    lost_ax.invert_yaxis()
    fig.suptitle("Hosts by faults this week (host · faults) and what they cost; red: the relaunch rule's repeat "
                 "offenders", fontsize=9)
    return fig


def waterfall(a):
    """A run's ledger waterfall (steady → effective MFU), from `clusterlab.plots.charts`."""
    fig = _figure(8, 3.2)
    plots.ledger_waterfall(a.ledger, a.steady_mfu, a.gpu_hours, a.run, ax=fig.subplots())
    return fig


def scorecard_figures(sc) -> dict[str, bytes]:
    """name → PNG of each plot the scorecard shows (none when the week has no ledger rows)."""
    out: dict[str, bytes] = {}
    if sc.ledger.height:
        out["ledger"] = png(ledger_by_provider(sc.ledger))
    if sc.failure_modes.filter(pl.col("gpu_hours_lost") > 0).height:
        out["failure-modes"] = png(failure_modes(sc.failure_modes))
    if sc.fleet_hosts.filter((pl.col("incidents") + pl.col("episodes")) > 0).height:
        out["fleet-hosts"] = png(fleet_hosts(sc.fleet_hosts))
    for run, a in sorted(sc.attributions.items()):
        out[f"waterfall-{run}"] = png(waterfall(a))
    return out
