"""The steady-state breakdown: the gap between peak and steady-state MFU, split by where a step's time goes.

From the per-rank step records (`rank_steps`: `step_s`, `compute_s`, `comm_s`, `data_s`) of the steady
steps (those no slower than STEADY_RATIO x the median step), each component's share of the step time:

- `exposed_comm`: communication the step waited for (`comm_s`: what compute did not hide);
- `data_loading`: the GPU waiting for the host's data (`data_s`);
- `idle`: the rest of the step outside every region (`step_s` less the three);
- `compute_below_peak`: the compute share less the steady-state MFU (the share of the step the model's
  FLOPs would take at the GPUs' peak).

The four add up to 1 − steady MFU exactly (in MFU points: x 100), overall, per host and per stretch of
steps over time. Where the run has only the training log's step lines, the breakdown says it needs
per-rank records instead of guessing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import duckdb
import polars as pl

from clusterlab import store

if TYPE_CHECKING:
    from matplotlib.axes import Axes

COMPONENTS = ["exposed_comm", "data_loading", "compute_below_peak", "idle"]
STEADY_RATIO = 1.10  # a step this much slower than the median step is not steady (a stall, a save)
REGION_SLACK = 0.01  # regions may overrun their step by this share (and 1 ms) from timer jitter ...
REGION_SLACK_S = 0.001  # ... beyond that the record is inconsistent and left out, with a note
TIME_BINS = 20  # stretches of steps the breakdown over time has
NEEDS_RANKS = ("the steady-state breakdown needs per-rank step records with compute_s, comm_s or data_s "
               "(clusterlab.torchtools.instrument writes them); this run has only the training log's step lines")


@dataclass
class SteadyState:
    """Where the steady-state step goes, in seconds and MFU points: overall, per host, over time."""

    run: str
    steady_mfu: float | None
    overall: pl.DataFrame  # component, seconds_per_step, share, mfu_points
    by_host: pl.DataFrame  # host, records, step_s, then one column of MFU points per component
    over_time: pl.DataFrame  # attempt, first_step, last_step, start_ts, records, step_s, components
    notes: list[str] = field(default_factory=list)

    @property
    def available(self) -> bool:
        return self.overall.height > 0

    def to_dict(self) -> dict:
        return {"steady_mfu": self.steady_mfu, "components": COMPONENTS, "overall": self.overall.to_dicts(),
                "by_host": self.by_host.to_dicts(), "over_time": self.over_time.to_dicts(), "notes": self.notes}

    def plot(self, ax: Axes | None = None) -> Axes:
        """Stacked MFU points lost per stretch of steps over time."""
        return plot_over_time(self.over_time, self.run, ax=ax)


def _records(con: duckdb.DuckDBPyConnection, run: str, group: str | None, bins: int) -> pl.DataFrame:
    """Mean seconds per step of each region over the steady records, grouped by `group` (SQL over rank_steps)."""
    keys, grouping = (f"{group}, ", f"GROUP BY {group} ORDER BY {group}") if group else ("", "")
    return store.frame(con, f"""
        WITH r AS (
            SELECT attempt, host, step, ts, step_s, coalesce(comm_s, 0) AS comm, coalesce(data_s, 0) AS data,
                   -- NOTE: without a compute region, compute is the step less the others (instrument's rule)
                   coalesce(compute_s, step_s - coalesce(comm_s, 0) - coalesce(data_s, 0)) AS compute
            FROM rank_steps
            WHERE run = $run AND step IS NOT NULL AND step_s > 0
              AND (compute_s IS NOT NULL OR comm_s IS NOT NULL OR data_s IS NOT NULL)
        ),
        m AS (SELECT median(step_s) AS med, min(step) AS lo, max(step) AS hi FROM r),
        steady AS (
            SELECT r.*, (r.step - m.lo) * $bins // (m.hi - m.lo + 1) AS bin FROM r, m
            WHERE r.step_s <= m.med * $ratio
              AND r.compute + r.comm + r.data <= r.step_s * (1 + $slack) + $slack_s
        )
        SELECT {keys}count(*) AS records, min(ts) AS start_ts, min(step) AS first_step,
               max(step) AS last_step, avg(step_s) AS step_s, avg(compute) AS compute_s, avg(comm) AS comm_s,
               avg(data) AS data_s
        FROM steady {grouping}""",
        {"run": run, "bins": bins, "ratio": STEADY_RATIO, "slack": REGION_SLACK, "slack_s": REGION_SLACK_S})


def _points(frame: pl.DataFrame, steady_mfu: float | None) -> pl.DataFrame:
    """Each component's MFU points from mean seconds per step: its share of the step, x 100."""
    share = {"exposed_comm": pl.col("comm_s"), "data_loading": pl.col("data_s"),
             "idle": pl.col("step_s") - pl.col("compute_s") - pl.col("comm_s") - pl.col("data_s"),
             "compute_below_peak": (pl.col("compute_s") - pl.col("step_s") * steady_mfu) if steady_mfu is not None
             else pl.lit(None, pl.Float64)}
    return frame.with_columns(**{k: 100 * v / pl.col("step_s") for k, v in share.items()})


def breakdown(con: duckdb.DuckDBPyConnection, run: str, steady_mfu: float | None,
              bins: int = TIME_BINS) -> SteadyState:
    """The steady-state breakdown of a run (`steady_mfu` from its attribution; None: MFU unknown)."""
    notes: list[str] = []
    counts = store.frame(con, """
        SELECT count(*) FILTER (WHERE compute_s IS NOT NULL OR comm_s IS NOT NULL OR data_s IS NOT NULL) AS regions,
               count(*) FILTER (WHERE coalesce(compute_s, 0) + coalesce(comm_s, 0) + coalesce(data_s, 0)
                                      > step_s * (1 + $slack) + $slack_s) AS overrun
        FROM rank_steps WHERE run = $run""", {"run": run, "slack": REGION_SLACK, "slack_s": REGION_SLACK_S})
    regions, overrun = counts.row(0)
    if not regions:
        empty = pl.DataFrame(schema={"component": pl.String, "seconds_per_step": pl.Float64, "share": pl.Float64,
                                     "mfu_points": pl.Float64})
        return SteadyState(run, steady_mfu, empty, pl.DataFrame(), pl.DataFrame(), [NEEDS_RANKS])
    if overrun:
        first = store.frame(con, """SELECT f.path, r.line FROM rank_steps r JOIN ingested_files f USING (file_id)
            WHERE r.run = $run AND coalesce(compute_s, 0) + coalesce(comm_s, 0) + coalesce(data_s, 0)
                  > step_s * (1 + $slack) + $slack_s ORDER BY f.path, r.line LIMIT 1""",
                            {"run": run, "slack": REGION_SLACK, "slack_s": REGION_SLACK_S}).row(0)
        notes.append(f"{overrun} per-rank record(s) whose regions add up to more than their step were left out "
                     f"(first: {first[0]} line {first[1]})")
    if steady_mfu is None:
        notes.append("steady-state MFU unknown: compute below peak is not split from compute")
    whole = _points(_records(con, run, None, bins), steady_mfu)
    row = whole.row(0, named=True)
    seconds = {"exposed_comm": row["comm_s"], "data_loading": row["data_s"],
               "idle": row["step_s"] - row["compute_s"] - row["comm_s"] - row["data_s"],
               "compute_below_peak": None if steady_mfu is None else row["compute_s"] - row["step_s"] * steady_mfu}
    overall = pl.DataFrame({"component": COMPONENTS, "seconds_per_step": [seconds[c] for c in COMPONENTS],
                            "mfu_points": [row[c] for c in COMPONENTS]}).with_columns(
        share=pl.col("seconds_per_step") / row["step_s"]).select("component", "seconds_per_step", "share",
                                                                  "mfu_points")
    if steady_mfu is not None and seconds["compute_below_peak"] < 0:
        notes.append("compute took less than the model's FLOPs would at peak: the FLOPs per token or the GPU's "
                     "peak in run.toml is wrong")
    keep = ["records", "step_s", *COMPONENTS]
    by_host = _points(_records(con, run, "host", bins), steady_mfu).select("host", *keep)
    over_time = _points(_records(con, run, "attempt, bin", bins), steady_mfu).select(
        "attempt", "first_step", "last_step", "start_ts", *keep)
    return SteadyState(run, steady_mfu, overall, by_host, over_time, notes)


def plot_over_time(over_time: pl.DataFrame, run: str, ax: Axes | None = None) -> Axes:
    """Reads `first_step`, `last_step` and the COMPONENTS columns (MFU points): one stacked bar per stretch."""
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(8, 3.5))
    if not over_time.height:
        ax.text(0.5, 0.5, NEEDS_RANKS, ha="center", va="center", wrap=True, fontsize=8, transform=ax.transAxes)
        ax.set_axis_off()
        return ax
    x = list(range(over_time.height))
    bottom = [0.0] * over_time.height
    for name in COMPONENTS:
        values = [v or 0.0 for v in over_time[name].to_list()]
        ax.bar(x, values, bottom=bottom, label=name.replace("_", " "))
        bottom = [b + v for b, v in zip(bottom, values, strict=True)]
    ax.set_xticks(x, [f"{a}:{lo}-{hi}" for a, lo, hi in over_time.select("attempt", "first_step", "last_step")
                      .iter_rows()], rotation=60, fontsize=7)
    ax.set_xlabel("attempt:steps")
    ax.set_ylabel("MFU points below peak")
    ax.set_title(f"{run}: where the steady-state step goes", fontsize=9)
    ax.legend(fontsize=7, loc="upper right")
    return ax
