"""Fleet memory: each host's history across runs and weeks (fault episodes, incidents, jobs killed, GPU-hours lost,
time in repair), from the evidence the store holds.

A host's fault episodes come from two places: the `fault_episodes` table (a fault trace or an episode CSV,
collectors/fault_episodes.py) and the node states slurmctld logged: a node set DOWN or DRAIN(ED) (or lost to
a missed ResumeTimeout) opens an episode that its return to service (RESUME /
IDLE / `now responding` / `returned to service`) closes, with the operator's reason as its detail.
"""

from __future__ import annotations

import datetime as dt

import duckdb
import polars as pl

from clusterlab import store
from clusterlab.account import offenders
from clusterlab.collectors.fault_episodes import failure_mode

EPISODE_COLUMNS = {"host": pl.String, "ts": pl.Datetime("us"), "end_ts": pl.Datetime("us"), "source": pl.String,
                   "fault_class": pl.String, "detail": pl.String, "failure_mode": pl.String}
# a host's incident history (`incident_hosts`), then its episodes
HOST_COLUMNS = ["host", "cluster", "provider", "incidents", "runs", "failure_modes", "gpu_hours_lost", "usd_lost",
                "first_incident", "last_incident"]
HOST_SCHEMA = {"host": pl.String, "cluster": pl.String, "provider": pl.String, "incidents": pl.UInt32,
               "runs": pl.UInt32, "failure_modes": pl.String, "gpu_hours_lost": pl.Float64, "usd_lost": pl.Float64,
               "first_incident": pl.Datetime("us"), "last_incident": pl.Datetime("us")}
FLEET_COLUMNS = [*HOST_COLUMNS, "episodes", "open_episodes", "repair_hours", "repair_gpu_hours", "episode_modes",
                 "jobs_killed", "first_episode", "last_episode"]

# slurmctld's event kinds that take a node out of service, and those that bring it back (`unexpectedly rebooted` is
# logged as the node registers again: back, not out)
_OUT = ("slurm_node_down", "slurm_node_drain", "slurm_node_resume_timeout")
_BACK = ("slurm_node_resume", "slurm_node_responding")
# jobs the controller killed or requeued because of a node (the event's host is that node)
_KILLED = ("slurm_job_node_fail", "slurm_job_requeue")


def episodes(con: duckdb.DuckDBPyConnection, host: str | None = None) -> pl.DataFrame:
    """Every host's fault episodes (or one `host`'s), from `fault_episodes` and from slurmctld's node states, by
    host and start."""
    given = store.frame(con, """
        SELECT host, ts, end_ts, source, fault_class, detail, failure_mode FROM fault_episodes
        WHERE host IS NOT NULL AND ts IS NOT NULL AND (CAST(? AS VARCHAR) IS NULL OR host = ?)""", [host, host])
    out = pl.concat([given.cast(EPISODE_COLUMNS), slurm_episodes(con, host)],  # type: ignore[arg-type]
                    how="vertical")
    return out.sort("host", "ts", "end_ts", nulls_last=True)


def slurm_episodes(con: duckdb.DuckDBPyConnection, host: str | None = None) -> pl.DataFrame:
    """Episodes of slurmctld's node states: out of service at the first DOWN / DRAIN after the node was last back,
    until it is back again (null: not back in the evidence)."""
    ev = store.frame(con, f"""
        SELECT host, ts, kind, failure_mode, json_extract_string(detail, '$.reason') AS reason,
               json_extract_string(detail, '$.state') AS state
        FROM events WHERE source = 'slurmctld' AND host IS NOT NULL AND ts IS NOT NULL
          AND kind IN {tuple(_OUT + _BACK)!r} AND (CAST(? AS VARCHAR) IS NULL OR host = ?)""", [host, host])
    if not ev.height:
        return pl.DataFrame(schema=EPISODE_COLUMNS)
    # NOTE: `now responding` ends only an episode of a node that stopped answering; a drained node answers pings
    # all the while and stays out until an operator resumes it
    ev = ev.sort("host", "ts").with_columns(out=pl.col("kind").is_in(_OUT))
    ev = ev.with_columns(_drained=pl.when(pl.col("out")).then(pl.col("kind") == "slurm_node_drain")
                         .when(pl.col("kind") == "slurm_node_resume").then(False).forward_fill().over("host"))
    back = ~pl.col("out") & ((pl.col("kind") == "slurm_node_resume") | ~pl.col("_drained").fill_null(False))
    ev = ev.with_columns(back=back).filter(pl.col("out") | pl.col("back"))
    # an episode: the run of `out` rows after the last `back` row; it ends at the next `back`
    ev = ev.with_columns(_ep=pl.col("back").cast(pl.Int32).cum_sum().over("host"))
    starts = ev.filter(pl.col("out")).group_by("host", "_ep").agg(
        ts=pl.col("ts").min(), detail=pl.col("reason").drop_nulls().first(),
        failure_mode=pl.col("failure_mode").drop_nulls().first(), state=pl.col("state").drop_nulls().first())
    ends = ev.filter(pl.col("back")).select("host", _ep=pl.col("_ep") - 1, end_ts="ts")
    eps = starts.join(ends, on=["host", "_ep"], how="left")
    return eps.select(
        "host", "ts", "end_ts", source=pl.lit("slurmctld"), fault_class=pl.col("state").fill_null("DOWN"),
        detail="detail",
        failure_mode=pl.coalesce("failure_mode", pl.when(pl.col("detail").is_not_null())
                                 .then(failure_mode(pl.col("detail")))),
    ).cast(EPISODE_COLUMNS)  # type: ignore[arg-type]


def incident_hosts(incidents: pl.DataFrame) -> pl.DataFrame:
    """One row per host named by an incident (`Lab.incidents()`, cut to a window by the caller), costliest first
    (GPU-hours lost, then incidents). `failure_modes` reads `gpu_fell_off_bus x2, nvlink_error`, most frequent
    first; GPU-hours and dollars are null where no incident of the host has a known cost (no ledger)."""
    inc = incidents.filter(pl.col("host").is_not_null())
    if inc.is_empty():
        return pl.DataFrame(schema=HOST_SCHEMA)
    inc = inc.with_columns(pl.col("gpu_hours_lost", "usd_lost").cast(pl.Float64),
                           pl.col("root_ts").cast(pl.Datetime("us")))
    out = inc.group_by("host").agg(
        cluster=pl.col("cluster").drop_nulls().first(),
        provider=pl.col("provider").drop_nulls().first(),
        incidents=pl.len(),
        runs=pl.col("run").n_unique(),
        gpu_hours_lost=_known_sum("gpu_hours_lost"),
        usd_lost=_known_sum("usd_lost"),
        first_incident=pl.col("root_ts").min(),
        last_incident=pl.col("root_ts").max(),
    ).join(_modes(inc, "failure_mode", "failure_modes"), on="host", how="left")
    return (out.select(HOST_COLUMNS).cast(HOST_SCHEMA)  # type: ignore[arg-type]
            .sort(["gpu_hours_lost", "incidents", "host"], descending=[True, True, False], nulls_last=True))


def _known_sum(col: str) -> pl.Expr:
    """The sum, or null when no incident of the host has a known cost (no ledger): unknown is not zero."""
    return pl.when(pl.col(col).is_not_null().any()).then(pl.col(col).sum())


def _modes(frame: pl.DataFrame, col: str, name: str) -> pl.DataFrame:
    """Per host, its `col` values most frequent first, `mode x2` where one repeats, as the column `name`."""
    return (frame.group_by("host", col).len()
            .sort(["host", "len", col], descending=[False, True, False])
            .with_columns(m=pl.when(pl.col("len") > 1)
                          .then(pl.format("{} x{}", pl.col(col).fill_null("unknown"), pl.col("len")))
                          .otherwise(pl.col(col).fill_null("unknown")))
            .group_by("host", maintain_order=True).agg(pl.col("m").str.join(", ").alias(name)))


def fleet_memory(con: duckdb.DuckDBPyConnection, hosts: pl.DataFrame, since: dt.datetime | None = None,
                 until: dt.datetime | None = None, host: str | None = None) -> pl.DataFrame:
    """One row per host with an incident or a fault episode: its incident history (`hosts`, the frame of
    `incident_hosts`), its episodes, time in repair (closed episodes) and the jobs the scheduler
    killed for it; costliest first, then the most episodes.

    `since` / `until`: only episodes and kills that started in [since, until). `repair_gpu_hours` is the time in
    repair times the host's GPUs where the inventory knows them (null where it does not). `host`: that host's row
    only (none where it has no record), the same figures, read for it alone.
    """
    inc = hosts if host is None else hosts.filter(pl.col("host") == host)
    eps = episodes(con, host)
    killed = _jobs_killed(con)
    if host is not None:
        killed = killed.filter(pl.col("host") == host)
    if since is not None:
        eps, killed = eps.filter(pl.col("ts") >= since), killed.filter(pl.col("ts") >= since)
    if until is not None:
        eps, killed = eps.filter(pl.col("ts") < until), killed.filter(pl.col("ts") < until)
    per_host = _episode_summary(eps).join(
        killed.group_by("host").agg(jobs_killed=pl.col("job_id").n_unique()), on="host", how="full", coalesce=True)
    inv = store.frame(con, "SELECT host, cluster, provider, gpus_per_node FROM inventory")
    out = inc.join(per_host, on="host", how="full", coalesce=True).join(
        inv.rename({"cluster": "_cluster", "provider": "_provider"}), on="host", how="left")
    out = out.with_columns(
        cluster=pl.coalesce("cluster", "_cluster"), provider=pl.coalesce("provider", "_provider"),
        incidents=pl.col("incidents").fill_null(0), runs=pl.col("runs").fill_null(0),
        episodes=pl.col("episodes").fill_null(0), open_episodes=pl.col("open_episodes").fill_null(0),
        repair_hours=pl.col("repair_hours").fill_null(0.0), jobs_killed=pl.col("jobs_killed").fill_null(0),
    ).with_columns(repair_gpu_hours=pl.col("repair_hours") * pl.col("gpus_per_node"))
    return (out.select(FLEET_COLUMNS)
            .sort(["gpu_hours_lost", "incidents", "episodes", "host"], descending=[True, True, True, False],
                  nulls_last=True))


HISTORY_SCHEMA = {"ts": pl.Datetime("us"), "end_ts": pl.Datetime("us"), "record": pl.String, "run": pl.String,
                  "attempt": pl.Int32, "failure_mode": pl.String, "what": pl.String, "detail": pl.String,
                  "gpu_hours_lost": pl.Float64, "repair_hours": pl.Float64, "source": pl.String,
                  "incident_id": pl.String}


def host_history(con: duckdb.DuckDBPyConnection, host: str, incidents: pl.DataFrame) -> pl.DataFrame:
    """One host's record across runs, in time order: its incidents (`record` "incident": the rows of `incidents`,
    any frame of `Lab.incidents`' columns, that name the host) and its fault episodes ("episode", `episodes`).

    An incident's `what` is its kind and `detail` its blame; an episode's are its class and its detail (the
    operator's reason, the trace's description). `repair_hours` is a closed episode's own length: the host's
    total in `fleet_memory` counts overlapping episodes once, so it can be less than their sum."""
    inc = incidents.filter(pl.col("host") == host)
    mine = inc.select(
        ts=pl.col("root_ts").cast(pl.Datetime("us")), end_ts=pl.col("exit_ts").cast(pl.Datetime("us")),
        record=pl.lit("incident"), run="run", attempt="attempt", failure_mode="failure_mode", what="kind",
        detail=pl.col("blame").cast(pl.String), gpu_hours_lost="gpu_hours_lost",
        repair_hours=pl.lit(None, pl.Float64), source=pl.lit("incident"), incident_id="incident_id",
    ) if inc.height else pl.DataFrame(schema=HISTORY_SCHEMA)
    eps = episodes(con, host).select(
        "ts", "end_ts", record=pl.lit("episode"), run=pl.lit(None, pl.String), attempt=pl.lit(None, pl.Int32),
        failure_mode="failure_mode", what="fault_class", detail="detail", gpu_hours_lost=pl.lit(None, pl.Float64),
        repair_hours=(pl.col("end_ts") - pl.col("ts")).dt.total_microseconds() / 3.6e9, source="source",
        incident_id=pl.lit(None, pl.String))
    out = pl.concat([mine.cast(HISTORY_SCHEMA), eps.cast(HISTORY_SCHEMA)],  # type: ignore[arg-type]
                    how="vertical")
    return out.sort("ts", "record", "incident_id", nulls_last=True)


def _episode_summary(eps: pl.DataFrame) -> pl.DataFrame:
    """Per host: episodes, those still open, hours in repair (closed ones), modes most frequent first."""
    modes = _modes(eps, "failure_mode", "episode_modes")
    return eps.group_by("host").agg(
        episodes=pl.len().cast(pl.UInt32), open_episodes=pl.col("end_ts").is_null().sum().cast(pl.UInt32),
        first_episode=pl.col("ts").min(), last_episode=pl.col("ts").max(),
    ).join(modes, on="host", how="left").join(_repair_hours(eps), on="host", how="left")


def _repair_hours(eps: pl.DataFrame) -> pl.DataFrame:
    """Per host: the hours its closed episodes cover, overlaps once (a cable and its NIC down together)."""
    closed = eps.filter(pl.col("end_ts").is_not_null(), pl.col("end_ts") >= pl.col("ts")).sort("host", "ts")
    reach = pl.col("end_ts").cum_max().shift(1).over("host")  # the latest end of the host's episodes before
    closed = closed.with_columns(_block=(reach.is_null() | (pl.col("ts") > reach)).cum_sum().over("host"))
    spans = closed.group_by("host", "_block").agg(
        h=(pl.col("end_ts").max() - pl.col("ts").min()).dt.total_microseconds() / 3.6e9)
    return spans.group_by("host").agg(repair_hours=pl.col("h").sum())


def _jobs_killed(con: duckdb.DuckDBPyConnection) -> pl.DataFrame:
    """Scheduler jobs slurmctld killed or requeued because a node failed: host, job id, when."""
    return store.frame(con, f"""
        SELECT DISTINCT host, json_extract_string(detail, '$.job_id') AS job_id, min(ts) OVER w AS ts
        FROM events
        WHERE source = 'slurmctld' AND host IS NOT NULL AND kind IN {_KILLED!r} AND failure_mode = 'node_failure'
          AND json_extract_string(detail, '$.job_id') IS NOT NULL
        WINDOW w AS (PARTITION BY host, json_extract_string(detail, '$.job_id'))""")


def episode_faults(con: duckdb.DuckDBPyConnection, since: dt.datetime | None, incidents: pl.DataFrame,
                   same_fault_h: float = 24.0) -> pl.DataFrame:
    """The `fault_episodes` (a provider's or operator's repair records) since `since` that are faults of their own:
    an episode starting from an hour before to `same_fault_h` hours after an incident of its host is that incident.

    Columns: host, ts, failure_mode, source, file, line, text (its class and detail). slurmctld's node states are
    left out: clusterlab's own drains are among them, and they are the incidents' echo.
    """
    eps = store.frame(con, """
        SELECT e.host, e.ts, e.failure_mode, e.source, f.path AS file, e.line,
               concat_ws(': ', e.fault_class, e.detail) AS text
        FROM fault_episodes e JOIN ingested_files f USING (file_id)
        WHERE e.host IS NOT NULL AND e.ts IS NOT NULL AND (CAST(? AS TIMESTAMP) IS NULL OR e.ts >= ?)""",
                       [since, since])
    if not eps.height or not incidents.height:
        return eps
    roots = incidents.filter(pl.col("host").is_not_null(), pl.col("root_ts").is_not_null()).select(
        "host", root=pl.col("root_ts").cast(pl.Datetime("us")))
    root = pl.col("root")
    echo = eps.join(roots, on="host").filter(
        pl.col("ts").is_between(root - pl.duration(hours=1), root + pl.duration(hours=same_fault_h)))
    return eps.join(echo.select("host", "ts", "line", "file").unique(), on=["host", "ts", "line", "file"], how="anti")


def repeat_offenders(con: duckdb.DuckDBPyConnection, incidents: pl.DataFrame, since: dt.datetime,
                     until: dt.datetime | None = None, repeat_after: int = offenders.REPEAT_AFTER) -> pl.DataFrame:
    """The relaunch plan's repeat-offender rule over [since, until) (None: no end, as the plan reads it):
    `offenders.rule_faults` of the incidents rooted in it (`incidents`: every run's, which also tells an
    episode that is an incident's own repair) and of the fault episodes starting in it."""
    ts = pl.col("root_ts")
    inc = incidents.filter(ts >= since, ts < until) if until is not None else incidents.filter(ts >= since)
    eps = episode_faults(con, since, incidents)
    if until is not None:
        eps = eps.filter(pl.col("ts") < until)
    return offenders.rule_faults(inc, eps, repeat_after)
