"""The fleet view: the costliest hosts across runs, with their incident history."""

from __future__ import annotations

import polars as pl

from clusterlab.reports.scorecard import week_bounds

HOST_COLUMNS = ["host", "cluster", "provider", "incidents", "runs", "failure_modes", "gpu_hours_lost", "usd_lost",
                "first_incident", "last_incident"]
_SCHEMA = {"host": pl.String, "cluster": pl.String, "provider": pl.String, "incidents": pl.UInt32,
           "runs": pl.UInt32, "failure_modes": pl.String, "gpu_hours_lost": pl.Float64, "usd_lost": pl.Float64,
           "first_incident": pl.Datetime("us"), "last_incident": pl.Datetime("us")}


def costliest_hosts(incidents: pl.DataFrame, week: str | None = None) -> pl.DataFrame:
    """One row per host named by an incident, costliest first (GPU-hours lost, then incidents).

    `incidents` is `Lab.incidents()`; `week` (`2026-W48`) keeps the incidents whose root cause falls in it.
    `failure_modes` reads `gpu_fell_off_bus x2, nvlink_error`, most frequent first.
    """
    inc = incidents.filter(pl.col("host").is_not_null())
    if week is not None:
        start, end = week_bounds(week)  # ValueError for a malformed week
        inc = inc.filter(pl.col("root_ts").is_between(start, end, closed="left"))
    if inc.is_empty():
        return pl.DataFrame(schema=_SCHEMA)
    inc = inc.with_columns(pl.col("gpu_hours_lost", "usd_lost").cast(pl.Float64),
                           pl.col("root_ts").cast(pl.Datetime("us")))
    modes = (inc.group_by("host", "failure_mode").len()
             .sort(["host", "len", "failure_mode"], descending=[False, True, False])
             .with_columns(mode=pl.when(pl.col("len") > 1)
                           .then(pl.format("{} x{}", pl.col("failure_mode").fill_null("unknown"), pl.col("len")))
                           .otherwise(pl.col("failure_mode").fill_null("unknown")))
             .group_by("host", maintain_order=True).agg(failure_modes=pl.col("mode").str.join(", ")))
    out = inc.group_by("host").agg(
        cluster=pl.col("cluster").drop_nulls().first(),
        provider=pl.col("provider").drop_nulls().first(),
        incidents=pl.len(),
        runs=pl.col("run").n_unique(),
        gpu_hours_lost=_known_sum("gpu_hours_lost"),
        usd_lost=_known_sum("usd_lost"),
        first_incident=pl.col("root_ts").min(),
        last_incident=pl.col("root_ts").max(),
    ).join(modes, on="host", how="left")
    return (out.select(HOST_COLUMNS).cast(_SCHEMA)
            .sort(["gpu_hours_lost", "incidents", "host"], descending=[True, True, False], nulls_last=True))


def _known_sum(col: str) -> pl.Expr:
    """The sum, or null when no incident of the host has a known cost (no ledger): unknown is not zero."""
    return pl.when(pl.col(col).is_not_null().any()).then(pl.col(col).sum())
