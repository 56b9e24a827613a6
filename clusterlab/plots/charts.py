"""Plots that take frames and draw; they compute nothing of their own.

Each function draws one figure on `ax` (a new figure when it is None) and returns the axes, so that
it can be used alone in a notebook cell or composed into a widget. The frames come from the
analysis API (`Lab`, `Attribution`) or from `clusterlab.widgets.frames`; every plot states the
columns it reads.
"""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING

import polars as pl

from clusterlab import taxonomy

if TYPE_CHECKING:
    from matplotlib.axes import Axes

_PEAK = "#4c72b0"
_LOST = "#dd8452"
_GAP = "#b0b0b0"
_KEPT = "#55a868"
_ATTEMPT = "#8fb3d9"
_STARTUP = "#d0dcea"
_BAD = "#c44e52"
LABEL_PT = 7
LANE_STEP = 0.3  # attempts are 1 apart on the y axis
MAX_LANES = 4
MAX_LABELS = 12  # incident labels on a timeline before they become unreadable


LABEL_CHARS = 60  # of a label drawn from data: past that it is cut (a 20 kB name must not size the figure)


def plain(text, limit: int = LABEL_CHARS) -> str:
    """Text from data as a matplotlib label: `$` escaped so that mathtext never parses it, control
    characters (NUL and the like) shown as U+FFFD, and cut to `limit` characters with an ellipsis."""
    s = "" if text is None else str(text)
    s = "".join("\ufffd" if (ord(c) < 32 and c not in "\n\t") or ord(c) == 127 else c for c in s)
    if len(s) > limit:
        s = s[:limit - 1] + "…"
    return s.replace("$", r"\$")


def mode_color(mode: str | None) -> str:
    """A stable colour per failure mode, the same in every plot."""
    import matplotlib

    modes = list(taxonomy.MODES)
    if mode not in modes:
        return _GAP
    return matplotlib.colors.to_hex(matplotlib.colormaps["tab20"](modes.index(mode) % 20))


def _axes(ax: Axes | None, size: tuple[float, float]) -> Axes:
    """The axes to draw on: the caller's, or those of a new figure of `size` inches."""
    if ax is not None:
        return ax
    import matplotlib.pyplot as plt

    _, ax = plt.subplots(figsize=size, layout="constrained")
    return ax


def _empty(ax: Axes, title: str, message: str) -> Axes:
    """An axes that says there is nothing to draw, rather than an empty box."""
    ax.set_title(title)
    ax.text(0.5, 0.5, message, ha="center", va="center", transform=ax.transAxes, color="#666666")
    ax.set_xticks([])
    ax.set_yticks([])
    return ax


def run_timeline(attempts: pl.DataFrame, incidents: pl.DataFrame | None = None,
                 checkpoints: pl.DataFrame | None = None, ax: Axes | None = None,
                 window: tuple[dt.datetime, dt.datetime] | None = None) -> Axes:
    """Attempts as bars, incidents as coloured bands labelled mode @ host, checkpoints as ticks.

    attempts: attempt, start_ts, end_ts[, first_step_ts]; incidents: root_ts, exit_ts, failure_mode,
    host[, gpu_hours_lost]; checkpoints: attempt, ts, action[, ok]. `window` limits the time axis.
    """
    import matplotlib.dates as mdates

    ax = _axes(ax, (10, 1.6 + 0.45 * max(attempts.height, 1)))
    if not attempts.height:
        return _empty(ax, "timeline", "no attempts")
    for a in attempts.iter_rows(named=True):
        start, end = mdates.date2num(a["start_ts"]), mdates.date2num(a["end_ts"])
        ax.barh(a["attempt"], end - start, left=start, height=0.5, color=_ATTEMPT, edgecolor="#4c72b0")
        if a.get("first_step_ts") is not None:  # start-up (init, checkpoint load) in a lighter shade
            ax.barh(a["attempt"], mdates.date2num(a["first_step_ts"]) - start, left=start, height=0.5,
                    color=_STARTUP, edgecolor="#4c72b0")
    lo, hi = mdates.date2num(attempts["start_ts"].min()), mdates.date2num(attempts["end_ts"].max())
    if window is not None:
        lo, hi = mdates.date2num(window[0]), mdates.date2num(window[1])
    lanes = _draw_incidents(ax, incidents, attempts, (lo, hi))
    _draw_checkpoints(ax, checkpoints)
    ys = attempts["attempt"].to_list()
    ax.set_yticks(ys, [f"attempt {k}" for k in ys])
    # attempt 1 on top; room above it for the label lanes
    ax.set_ylim(max(ys) + 0.7, min(ys) - 0.85 - LANE_STEP * max(lanes, 1))
    ax.xaxis.set_major_formatter(mdates.ConciseDateFormatter(ax.xaxis.get_major_locator()))
    if window is not None:
        ax.set_xlim(lo, hi)
    ax.set_title("attempts, incidents and checkpoints")
    return ax


def _draw_incidents(ax: Axes, incidents: pl.DataFrame | None, attempts: pl.DataFrame,
                    span: tuple[float, float]) -> int:
    """Bands from root cause to exit; labels on the costliest ones, each in the first lane above the attempts
    where it overlaps no other label. Returns the number of lanes used."""
    import matplotlib.dates as mdates

    if incidents is None or not incidents.height:
        return 0
    order = incidents.sort("gpu_hours_lost", descending=True, nulls_last=True) \
        if "gpu_hours_lost" in incidents.columns else incidents
    labelled = set(order.head(MAX_LABELS)["incident_id"].to_list()) if "incident_id" in order.columns else set()
    top = attempts["attempt"].min() - 0.55
    lo, hi = span
    per_inch = (hi - lo) * 1.1 / max(ax.figure.get_figwidth() - 1.3, 1.0)  # data units per inch of axes
    lanes: list[list[tuple[float, float]]] = []
    for inc in incidents.sort("root_ts").iter_rows(named=True):
        if inc["root_ts"] is None:
            continue
        color = mode_color(inc["failure_mode"])
        start = mdates.date2num(inc["root_ts"])
        end = mdates.date2num(inc["exit_ts"]) if inc.get("exit_ts") is not None else start
        if end > start:
            ax.axvspan(start, end, color=color, alpha=0.35, lw=0)
        ax.axvline(start, color=color, lw=1.5)
        if labelled and inc.get("incident_id") not in labelled:
            continue
        label = plain(f"{inc['failure_mode']} @ {inc['host'] or 'no host'}")
        right = hi > lo and (start - lo) / (hi - lo) > 0.6  # in the right part: the label runs to the left
        width = (len(label) + 2) * LABEL_PT * 0.65 / 72 * per_inch  # a generous estimate of DejaVu Sans
        extent = (start - width, start) if right else (start, start + width)
        lane = next((k for k, used in enumerate(lanes)
                     if all(extent[1] < a or extent[0] > b for a, b in used)), len(lanes))
        if lane >= MAX_LANES:
            continue  # no room: the band stays, the incidents table names it
        if lane == len(lanes):
            lanes.append([])
        lanes[lane].append(extent)
        ax.text(start, top - LANE_STEP * lane, f" {label} ", fontsize=LABEL_PT, color="black", va="center",
                ha="right" if right else "left",
                bbox={"boxstyle": "round,pad=0.15", "fc": color, "alpha": 0.6, "lw": 0})
    return len(lanes)


def _draw_checkpoints(ax: Axes, checkpoints: pl.DataFrame | None) -> None:
    """Saves as ticks above their attempt's bar, loads as triangles, failed saves as red crosses."""
    if checkpoints is None or not checkpoints.height:
        return
    ck = checkpoints.filter(pl.col("ts").is_not_null(), pl.col("attempt").is_not_null())
    ok = pl.col("ok").fill_null(True) if "ok" in ck.columns else pl.lit(True)
    styles = [(pl.col("action").eq("save") & ok, "|", "#333333", "save"),
              (pl.col("action").eq("load"), "v", "#333333", "load"),
              (pl.col("action").eq("save") & ~ok, "x", _BAD, "failed save")]
    for cond, marker, color, label in styles:
        part = ck.filter(cond)
        if part.height:
            ax.plot(part["ts"].to_list(), (part["attempt"] - 0.33).to_list(), ls="none", marker=marker,
                    color=color, ms=7, label=label)
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=7, frameon=False)


def ledger_waterfall(ledger: pl.DataFrame, steady_mfu: float | None, gpu_hours: float, run: str,
                     ax: Axes | None = None, from_peak: bool = True) -> Axes:
    """From peak (or steady-state) MFU down to effective MFU, one bar per lost category.

    `ledger` has `category, gpu_hours, lost_mfu` (`Attribution.ledger`). Without an MFU (no FLOPs or GPU
    model known) it falls back to GPU-hours, from all (`gpu_hours`) to productive.
    """
    ax = _axes(ax, (8, 4))
    led = ledger.filter((pl.col("gpu_hours") > 0) & (pl.col("category") != "productive"))
    led = led.sort("gpu_hours", descending=True)
    use_mfu = steady_mfu is not None
    scale = 100.0 if use_mfu else 1.0
    unit = "MFU (% of peak)" if use_mfu else "GPU-hours"
    steps: list[tuple[str, float, float, str]] = []  # label, left, width, colour
    if use_mfu and from_peak:
        steps += [("peak", 0.0, 100.0, _PEAK), ("below peak (steady state)", steady_mfu * 100,
                                                100 - steady_mfu * 100, _GAP)]
    else:
        steps.append(("steady state" if use_mfu else "all", 0.0, (steady_mfu * 100) if use_mfu else gpu_hours,
                      _PEAK))
    level = (steady_mfu * 100) if use_mfu else gpu_hours
    for row in led.iter_rows(named=True):
        size = row["lost_mfu"] * scale if use_mfu else row["gpu_hours"]
        level -= size
        steps.append((row["category"], level, size, _LOST))
    steps.append(("effective" if use_mfu else "productive", 0.0, level, _KEPT))
    labels, lefts, widths, colors = zip(*steps, strict=True)
    ys = range(len(steps))
    ax.barh(ys, widths, left=lefts, color=colors)
    for y, left, width in zip(ys, lefts, widths, strict=True):
        ax.text(left + width, y, f" {width:.2f}" if use_mfu else f" {width:,.1f}", va="center", fontsize=8)
    ax.set_yticks(list(ys), [plain(x) for x in labels], fontsize=8)
    ax.invert_yaxis()
    ax.set_xlim(0, max(lefts[i] + widths[i] for i in ys) * 1.12)
    ax.set_xlabel(unit)
    ax.set_title(f"{plain(run)}: where the {'MFU' if use_mfu else 'GPU-hours'} went")
    return ax


def lost_hours_heatmap(wide: pl.DataFrame, ax: Axes | None = None) -> Axes:
    """Lost GPU-hours by host (rows) and day (columns): a frame with `host` and one column per day."""
    days = [c for c in wide.columns if c != "host"]
    ax = _axes(ax, (max(4, 1.1 * len(days) + 2.5), max(2.0, 0.3 * wide.height + 1.2)))
    if not wide.height or not days:
        return _empty(ax, "lost GPU-hours by host and day", "no lost GPU-hours")
    values = wide.select(days).to_numpy()
    im = ax.imshow(values, aspect="auto", cmap="Oranges", vmin=0)
    ax.set_xticks(range(len(days)), days, rotation=30, ha="right", fontsize=8)
    ax.set_yticks(range(wide.height), [plain(h) for h in wide["host"].to_list()], fontsize=8)
    if values.size <= 400:  # numbers in the cells while they still fit
        peak = values.max() or 1.0
        for (r, c), v in _cells(values):
            ax.text(c, r, f"{v:.1f}", ha="center", va="center", fontsize=7,
                    color="white" if v > peak * 0.6 else "black")
    ax.figure.colorbar(im, ax=ax, label="GPU-hours lost")
    ax.set_title("lost GPU-hours by host and day")
    return ax


def _cells(values) -> list[tuple[tuple[int, int], float]]:
    """The non-zero cells of a matrix with their positions."""
    return [((r, c), float(v)) for r, row in enumerate(values) for c, v in enumerate(row) if v]


def step_time_boxes(stats: pl.DataFrame, ax: Axes | None = None) -> Axes:
    """Per-host step compute time as boxes (quartiles, p1–p99 whiskers, max); stragglers in red.

    stats: host, p01, q1, median, q3, p99, max[, straggler, fleet_median_s, hosts_total], one row per
    host in the order to draw them (slowest first).
    """
    ax = _axes(ax, (8, 1.2 + 0.28 * max(stats.height, 1)))
    if not stats.height:
        return _empty(ax, "step time by host", "no per-rank step timings")
    rows = stats.to_dicts()
    boxes = [{"label": plain(r["host"]), "whislo": r["p01"], "q1": r["q1"], "med": r["median"], "q3": r["q3"],
              "whishi": r["p99"], "fliers": [r["max"]] if r["max"] > r["p99"] else []} for r in rows]
    art = ax.bxp(boxes, orientation="horizontal", patch_artist=True, showfliers=True, widths=0.6,
                 flierprops={"marker": "o", "ms": 3, "mfc": "none"})
    for patch, r in zip(art["boxes"], rows, strict=True):
        patch.set_facecolor(_BAD if r.get("straggler") else _ATTEMPT)
    if "fleet_median_s" in stats.columns:
        ax.axvline(rows[0]["fleet_median_s"], ls="--", lw=1, color="#555555", label="median of all hosts")
        ax.legend(loc="lower right", fontsize=7, frameon=False)
    ax.invert_yaxis()
    ax.tick_params(axis="y", labelsize=8)
    ax.set_xlabel("compute time per step (s), slowest rank of the host")
    total = rows[0].get("hosts_total") or len(rows)
    shown = f"the {len(rows)} slowest of {total} hosts" if total > len(rows) else f"{total} hosts"
    ax.set_title(f"step time by host ({shown}; red: straggler incident)")
    return ax


def step_time_over_time(series: pl.DataFrame, stragglers: list[str] | None = None,
                        windows: pl.DataFrame | None = None, ax: Axes | None = None) -> Axes:
    """Step compute time over time: the spread of all hosts as a grey band, named hosts as lines (stragglers
    in red), straggler incidents shaded, so a slow stretch of a few dozen steps is seen where and how long
    it was. series: ts, series (median | p10 | p90 | host:<name>), value (`frames.host_step_series`);
    windows: root_ts, exit_ts of the incidents to shade."""
    import matplotlib.dates as mdates

    ax = _axes(ax, (8, 2.6))
    if not series.height:
        return _empty(ax, "step time over time", "no per-rank step timings")
    wide = series.pivot(on="series", index="ts", values="value", aggregate_function="max").sort("ts")
    # a pause longer than 20 buckets (between attempts) breaks the lines instead of bridging it
    gap = wide["ts"].diff().dt.total_seconds()
    cut = gap > 20 * max(float(gap.median() or 0.0), 1e-9)
    breaks = wide.filter(cut).select(pl.col("ts") - pl.duration(microseconds=1))
    wide = pl.concat([wide, breaks], how="diagonal").sort("ts")
    ts = wide["ts"].to_list()
    for w in (windows.iter_rows(named=True) if windows is not None else []):
        if w["root_ts"] is not None and w["exit_ts"] is not None:
            ax.axvspan(mdates.date2num(w["root_ts"]), mdates.date2num(w["exit_ts"]), color=_BAD, alpha=0.12, lw=0)
    if {"p10", "p90"} <= set(wide.columns):
        ax.fill_between(ts, wide["p10"].to_numpy(), wide["p90"].to_numpy(), color="#cccccc", lw=0,
                        label="all hosts, p10–p90")
    if "median" in wide.columns:
        ax.plot(ts, wide["median"].to_numpy(), color="#555555", lw=1, label="median of all hosts")
    hosts = sorted(c for c in wide.columns if c.startswith("host:"))
    for k, col in enumerate(hosts):
        host = col.removeprefix("host:")
        slow = host in (stragglers or [])
        ax.plot(ts, wide[col].to_numpy(), lw=1.2, color=_BAD if slow else f"C{k % 10}",
                label=plain(host) + (" (straggler)" if slow else ""))
    ax.legend(loc="upper left", fontsize=7, frameon=False, ncol=min(len(hosts) + 2, 4))
    ax.margins(y=0.35)  # headroom for the legend above the lines
    ax.xaxis.set_major_formatter(mdates.ConciseDateFormatter(ax.xaxis.get_major_locator()))
    ax.set_ylabel("compute s / step", fontsize=8)
    ax.set_title("step time over time (slowest rank of each host)")
    return ax


def failure_mix(mix: pl.DataFrame, ax: Axes | None = None, value: str = "gpu_hours_lost") -> Axes:
    """Stacked bars per provider of `value` (gpu_hours_lost or incidents) by failure mode.

    mix: provider, failure_mode, and the `value` column; one row per (provider, failure_mode).
    """
    # what would draw nothing (incidents that cost nothing known) is left out: an empty bar or a legend entry
    # without a bar says nothing
    had, label = mix.height, "GPU-hours lost" if value == "gpu_hours_lost" else value
    mix = mix.filter(pl.col(value).fill_null(0) > 0)
    providers = mix["provider"].unique(maintain_order=True).to_list() if mix.height else []
    ax = _axes(ax, (8, 1.5 + 0.5 * max(len(providers), 1)))
    if not mix.height:
        return _empty(ax, "failure modes by provider", f"no {label} known" if had else "no incidents")
    lefts = dict.fromkeys(providers, 0.0)
    for mode in mix["failure_mode"].unique(maintain_order=True).to_list():
        part = mix.filter(pl.col("failure_mode") == mode)
        ps, vs = part["provider"].to_list(), part[value].fill_null(0).to_list()
        # NOTE: bars by position, names set after as plain labels: a name is never parsed nor merged
        ax.barh([providers.index(p) for p in ps], vs, left=[lefts[p] for p in ps], color=mode_color(mode),
                label=plain(mode))
        for p, v in zip(ps, vs, strict=True):
            lefts[p] += v
    ax.set_yticks(range(len(providers)), [plain(p) for p in providers])
    ax.invert_yaxis()
    ax.set_xlabel(label)
    # NOTE: a column of more than eight entries outgrows a one- or two-provider figure and is cut at its bottom
    modes = mix["failure_mode"].n_unique()
    ax.legend(fontsize=7, frameon=False, loc="upper left", bbox_to_anchor=(1.0, 1.0), ncol=1 + (modes - 1) // 8)
    ax.set_title("failure modes by provider")
    return ax
