"""The fleet view: the costliest hosts across runs, with their incident history (`account.fleet.incident_hosts`)."""

from __future__ import annotations

import polars as pl

from clusterlab.account.fleet import HOST_COLUMNS, incident_hosts
from clusterlab.reports.scorecard import week_bounds

__all__ = ["HOST_COLUMNS", "costliest_hosts"]


def costliest_hosts(incidents: pl.DataFrame, week: str | None = None) -> pl.DataFrame:
    """One row per host named by an incident, costliest first (GPU-hours lost, then incidents).

    `incidents` is `Lab.incidents()`; `week` (`2026-W48`) keeps the incidents whose root cause falls in it.
    `failure_modes` reads `gpu_fell_off_bus x2, nvlink_error`, most frequent first.
    """
    if week is not None:
        start, end = week_bounds(week)  # ValueError for a malformed week
        incidents = incidents.filter(pl.col("root_ts").is_between(start, end, closed="left"))
    return incident_hosts(incidents)
