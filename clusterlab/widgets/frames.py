"""The frames behind the widgets' views: pure functions of the API's frames, no drawing.

Each is also usable alone, e.g. `plots.lost_hours_heatmap(frames.lost_by_host_day(a.rows))`.
"""

from __future__ import annotations

import dataclasses
import datetime as dt

import polars as pl

from clusterlab import store
from clusterlab.account.attribution import Attribution
from clusterlab.widgets import html
from clusterlab.widgets.html import short_path

STEP_HOSTS_SHOWN = 24  # boxes in the step-time plot: past that the slowest hosts are what matters
SERIES_POINTS = 600  # time buckets in the step-time-over-time plot: about one per pixel of its width

INCIDENT_VIEW = ["incident_id", "failure_mode", "host", "blame", "attempt", "kind", "root_ts", "gpu_hours_lost",
                 "usd_lost", "confidence", "evidence_count", "status", "ticket", "overridden", "note"]
REJECTED_VIEW = ["failure_mode", "host", "ts", "kind", "where", "reason"]
HOST_HISTORY_VIEW = ["ts", "end_ts", "record", "run", "attempt", "failure_mode", "what", "detail", "gpu_hours_lost",
                     "repair_hours", "source"]
# the fleet-memory totals of a host as the Explorer's facts line names them (account.fleet.fleet_memory's columns)
MEMORY_FACTS = (("incidents", "incidents"), ("runs", "runs"), ("gpu_hours_lost", "GPU-h lost"),
                ("episodes", "fault episodes"), ("open_episodes", "still out"), ("repair_hours", "hours in repair"),
                ("jobs_killed", "jobs killed"))


def time_marks(start: dt.datetime, end: dt.datetime, n: int = 48) -> list[dt.datetime]:
    """`n + 1` evenly spaced instants from start to end: the stops of a time-range slider."""
    step = (end - start) / n
    return [start + step * i for i in range(n)] + [end]


def overlapping(frame: pl.DataFrame, start_col: str, end_col: str, since: dt.datetime | None,
                until: dt.datetime | None) -> pl.DataFrame:
    """Rows whose [start_col, end_col] span overlaps the window (an open end is the start)."""
    end = pl.coalesce(end_col, start_col) if end_col in frame.columns else pl.col(start_col)
    conds = []
    if since is not None:
        conds.append(end >= since)
    if until is not None:
        conds.append(pl.col(start_col) <= until)
    return frame.filter(*conds) if conds else frame


def window_attribution(a: Attribution, attempts: pl.DataFrame, since: dt.datetime | None,
                       until: dt.datetime | None) -> Attribution:
    """The attribution restricted to the attempts that overlap the window (the ledger stays exact per attempt)."""
    keep = overlapping(attempts, "start_ts", "end_ts", since, until)["attempt"].to_list()
    if len(keep) == attempts.height:
        return a
    rows = a.rows.filter(pl.col("attempt").is_in(keep))
    wall_h = float(rows["seconds"].sum() or 0.0) / 3600
    gpu_h = float(rows["gpu_hours"].sum() or 0.0)
    productive = float(rows.filter(pl.col("category") == "productive")["gpu_hours"].sum() or 0.0)
    eff = None if a.steady_mfu is None or not gpu_h else a.steady_mfu * productive / gpu_h
    return dataclasses.replace(a, rows=rows, wall_hours=wall_h, gpu_hours=gpu_h or a.gpu_hours, effective_mfu=eff,
                               incidents=a.incidents.filter(pl.col("attempt").is_in(keep)))


def with_cost(incidents: pl.DataFrame) -> pl.DataFrame:
    """Incidents with GPU-hours and dollars lost, missing (null) where the run has no ledger to cost them."""
    return incidents.with_columns(pl.lit(None, pl.Float64).alias(c) for c in ("gpu_hours_lost", "usd_lost")
                                  if c not in incidents.columns)


def incident_view(incidents: pl.DataFrame) -> pl.DataFrame:
    """The incidents table as the Explorer shows it: costliest first (a run without a ledger: oldest first)."""
    incidents = with_cost(incidents)
    cols = [c for c in INCIDENT_VIEW if c in incidents.columns]
    return incidents.select(cols).sort("gpu_hours_lost", "root_ts", descending=[True, False], nulls_last=True)


def rejected(incidents: pl.DataFrame, incident_id: str | None) -> pl.DataFrame:
    """The candidates the attribution turned down for one incident, with each reason, as the Explorer shows them."""
    schema = {"failure_mode": pl.String, "host": pl.String, "ts": pl.String, "kind": pl.String, "where": pl.String,
              "reason": pl.String}
    if "rejected" not in incidents.columns or incident_id is None:
        return pl.DataFrame(schema=schema)
    rows = incidents.filter(pl.col("incident_id") == incident_id)["rejected"].to_list()
    out = [{**(c.get("candidate") or {}), "reason": c.get("reason")} for c in ((rows[0] or []) if rows else [])]
    for r in out:
        r["where"] = f"{short_path(r.get('file'))}:{r.get('line')}" if r.get("file") else None
        r["ts"] = r["ts"].replace("T", " ") if isinstance(r.get("ts"), str) else None
    return pl.DataFrame([{k: r.get(k) for k in schema} for r in out], schema=schema)


def lost_by_host_day(rows: pl.DataFrame) -> pl.DataFrame:
    """Lost GPU-hours as a host × day matrix (`host` and one column per ISO day), worst host first."""
    # NOTE: a ledger row that spans midnight counts on the day it started; at day granularity
    # that is the honest reading of rows that are already aggregated per attempt and incident.
    lost = rows.filter(pl.col("category") != "productive", pl.col("gpu_hours") > 0)
    if not lost.height:
        return pl.DataFrame(schema={"host": pl.String})
    tidy = (lost.with_columns(day=pl.col("start_ts").dt.date().cast(pl.String))
            .group_by("host", "day").agg(pl.col("gpu_hours").sum()).sort("day"))
    wide = tidy.pivot(on="day", index="host", values="gpu_hours").fill_null(0.0)
    days = sorted(c for c in wide.columns if c != "host")
    return (wide.select("host", *days).with_columns(_total=pl.sum_horizontal(days))
            .sort("_total", descending=True).drop("_total"))


def host_step_stats(con, run: str, since: dt.datetime | None = None, until: dt.datetime | None = None,
                    stragglers: list[str] | None = None, top: int = STEP_HOSTS_SHOWN) -> pl.DataFrame:
    """Per host: quantiles of its slowest rank's compute time per step, slowest hosts first."""
    out = store.frame(con, """
        WITH hs AS (
            SELECT host, attempt, step, max(coalesce(compute_s, step_s - coalesce(comm_s, 0))) AS c
            FROM rank_steps
            WHERE run = $run AND step IS NOT NULL AND host IS NOT NULL
              AND ($since::TIMESTAMP IS NULL OR ts >= $since::TIMESTAMP)
              AND ($until::TIMESTAMP IS NULL OR ts <= $until::TIMESTAMP)
            GROUP BY ALL
        ), st AS (
            SELECT host, count(*) AS n, quantile_cont(c, 0.01) AS p01, quantile_cont(c, 0.25) AS q1,
                   median(c) AS median, quantile_cont(c, 0.75) AS q3, quantile_cont(c, 0.99) AS p99, max(c) AS max
            FROM hs WHERE c IS NOT NULL GROUP BY host
        )
        SELECT *, (SELECT median(c) FROM hs) AS fleet_median_s, count(*) OVER () AS hosts_total
        FROM st ORDER BY p99 DESC, host LIMIT $top""", {"run": run, "since": since, "until": until, "top": top})
    return out.with_columns(straggler=pl.col("host").is_in(stragglers or []))


def host_step_series(con, run: str, hosts: list[str], since: dt.datetime | None = None,
                     until: dt.datetime | None = None, points: int = SERIES_POINTS) -> pl.DataFrame:
    """Step compute time over time: the spread of all hosts (median, p10, p90) and the named hosts' own.

    Long form `ts, series, value` where series is median | p10 | p90 | host:<name>. Each host's value at a
    step is its slowest rank's; steps are pooled into at most `points` time buckets, taking the median
    of the spread and the maximum of each named host, so a short slow stretch survives the pooling.
    """
    return store.frame(con, """
        WITH hs AS (
            SELECT host, attempt, step, min(ts) AS ts, max(coalesce(compute_s, step_s - coalesce(comm_s, 0))) AS c
            FROM rank_steps
            WHERE run = $run AND step IS NOT NULL AND host IS NOT NULL AND ts IS NOT NULL
              AND ($since::TIMESTAMP IS NULL OR ts >= $since::TIMESTAMP)
              AND ($until::TIMESTAMP IS NULL OR ts <= $until::TIMESTAMP)
            GROUP BY ALL
        ), span AS (SELECT min(ts) AS t0, greatest(epoch(max(ts)) - epoch(min(ts)), 1) AS secs FROM hs),
        b AS (
            SELECT hs.* EXCLUDE (ts), bucket,
                   -- every series of a bucket shares its start time, so they line up point for point
                   t0 + to_microseconds((bucket * secs / ($points - 1) * 1e6)::BIGINT) AS ts
            FROM hs, span, LATERAL (SELECT floor((epoch(ts) - epoch(t0)) / secs * ($points - 1))::BIGINT AS bucket)
            WHERE c IS NOT NULL
        ), per_step AS (
            SELECT bucket, attempt, step, min(ts) AS ts, median(c) AS median, quantile_cont(c, 0.1) AS p10,
                   quantile_cont(c, 0.9) AS p90
            FROM b GROUP BY ALL
        ), spread AS (
            SELECT min(ts) AS ts, unnest([{'series': 'median', 'value': median(median)},
                                          {'series': 'p10', 'value': median(p10)},
                                          {'series': 'p90', 'value': median(p90)}], recursive := true)
            FROM per_step GROUP BY bucket
        ), mine AS (
            SELECT min(ts) AS ts, 'host:' || host AS series, max(c) AS value
            FROM b WHERE list_contains($hosts, host) GROUP BY bucket, host
        )
        SELECT * FROM spread UNION ALL SELECT * FROM mine ORDER BY series, ts""",
                       {"run": run, "hosts": hosts, "since": since, "until": until, "points": points})


def failure_mix(incidents: pl.DataFrame) -> pl.DataFrame:
    """Per provider and failure mode: incidents and GPU-hours lost, costliest provider first."""
    if not incidents.height:
        return pl.DataFrame(schema={"provider": pl.String, "failure_mode": pl.String, "incidents": pl.UInt32,
                                    "gpu_hours_lost": pl.Float64})
    mix = (with_cost(incidents).with_columns(provider=pl.col("provider").fill_null("none"))
           .group_by("provider", "failure_mode")
           .agg(incidents=pl.len(), gpu_hours_lost=pl.col("gpu_hours_lost").cast(pl.Float64).fill_null(0).sum()))
    order = mix.group_by("provider").agg(total=pl.col("gpu_hours_lost").sum())
    return (mix.join(order, on="provider").sort(["total", "provider", "gpu_hours_lost"], descending=[True, False, True])
            .drop("total"))


def with_run_provider(incidents: pl.DataFrame, runs: pl.DataFrame) -> pl.DataFrame:
    """Incidents with a missing provider given their run's (`runs`: run, provider; `(none)` where unknown)."""
    if not incidents.height or "run" not in incidents.columns:
        return incidents
    known = runs.select("run", run_provider="provider").filter(pl.col("run_provider") != "(none)")
    return (incidents.join(known, on="run", how="left")
            .with_columns(provider=pl.coalesce("provider", "run_provider")).drop("run_provider"))


def host_history(incidents: pl.DataFrame, host: str) -> pl.DataFrame:
    """Every incident pinned on `host`, in any run, oldest first."""
    cols = [c for c in ("run", "attempt", "incident_id", "root_ts", "failure_mode", "kind", "gpu_hours_lost",
                        "status", "ticket") if c in incidents.columns]
    return incidents.filter(pl.col("host") == host).select(cols).sort("root_ts", nulls_last=True)


def memory_facts(memory: pl.DataFrame) -> list[tuple[str, str]]:
    """A host's fleet-memory row (`account.fleet.fleet_memory`) as (label, text) facts; nothing on record: zeros."""
    row = memory.row(0, named=True) if memory.height else {}
    def text(key: str, v) -> str:
        if v is None:
            return "unknown" if key == "gpu_hours_lost" and row else "0"
        return f"{v:,.2f}" if isinstance(v, float) else str(v)
    return [(label, text(key, row.get(key))) for key, label in MEMORY_FACTS]


def rule_note(rule: pl.DataFrame, repeat_after: int, days: float, run: str | None) -> str:
    """One line: the relaunch plan's repeat-offender rule for the host (`account.fleet.repeat_offenders`' row)."""
    row = rule.row(0, named=True) if rule.height else {"rule_faults": 0, "rule_incidents": 0, "rule_episodes": 0,
                                                        "repeat_offender": False}
    said = (f"relaunch rule ({repeat_after} faults in {days:g} days before {run}'s end): {row['rule_faults']} "
            f"({row['rule_incidents']} incidents calling for an action on it, {row['rule_episodes']} fault episodes "
            "not an incident's own repair) — " + ("a relaunch excludes it" if row["repeat_offender"] else
                                                   "not excluded for its history"))
    return html.note(said, warn=bool(row["repeat_offender"]))


def host_events(events: pl.DataFrame) -> pl.DataFrame:
    """A host's evidence lines that name a failure mode, summarised per mode: count, runs, first and last."""
    ev = events.filter(pl.col("failure_mode").is_not_null())
    return (ev.group_by("failure_mode")
            .agg(lines=pl.len(), runs=pl.col("run").drop_nulls().unique().sort().str.join(", "),
                 first_ts=pl.col("ts").min(), last_ts=pl.col("ts").max())
            .sort("lines", descending=True))


def repeat_offender(history: pl.DataFrame) -> bool:
    """A host is a repeat offender when incidents were pinned on it in more than one attempt or run."""
    return history.select(pl.struct("run", "attempt").n_unique()).item() > 1 if history.height else False


def run_hosts(attempts: pl.DataFrame, incidents: pl.DataFrame) -> list[str]:
    """The hosts a run used or blamed, incident hosts first (those are the ones worth a look)."""
    blamed = incidents["host"].drop_nulls().unique(maintain_order=True).to_list() if incidents.height else []
    used = attempts["hosts"].explode().drop_nulls().unique().sort().to_list() if "hosts" in attempts.columns else []
    return blamed + [h for h in used if h not in blamed]
