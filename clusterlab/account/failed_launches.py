"""Launches that never ran: a scheduler instance of the run's job lying wholly between two attempts.

Slurm requeues a job whose node prolog failed (a health check such as `dcgmi diag` found a bad GPU: `Prolog failure
on node X, draining the node`); `sacct -D` keeps that instance (`REQUEUED`) beside the one that ran. Its batch script
never started, so it is no attempt and prints no step, but its minutes, and the wait for the next allocation, are
lost to a node's fault, not to the end of the attempt before it. Such an instance is an incident of its own where a
node of it reported a hardware fault while it lasted (the health check's verdict): the restart time from the
instance's start to the next attempt's start is charged to it. An instance without such evidence changes nothing.
"""

from __future__ import annotations

from collections.abc import Callable

import duckdb
import polars as pl

from clusterlab import hostlist, store

# the fault a health check finds on a node, most specific first
_MODES = ["gpu_fell_off_bus", "gpu_memory_ecc", "nvlink_error", "pcie_error", "gpu_hw_other", "host_hw", "network"]
_MARGIN_S = 60  # a check's verdict may be stamped a little before the instance starts or after it ends


def with_failed_launches(con: duckdb.DuckDBPyConnection, run: str, att: pl.DataFrame, inc: pl.DataFrame,
                         evidence: pl.DataFrame, rows: pl.DataFrame,
                         finish: Callable[[duckdb.DuckDBPyConnection, pl.DataFrame, pl.DataFrame], pl.DataFrame]
                         ) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """`inc`, `evidence` and the ledger `rows` with each failed launch's incident, evidence and restart share."""
    launches, ev = failed_launches(con, run, att, evidence.columns)
    if not launches.height:
        return inc, evidence, rows
    launches = finish(con, launches, ev)
    inc = pl.concat([inc, launches], how="diagonal_relaxed").sort("root_ts", "incident_id")
    evidence = pl.concat([evidence, ev], how="diagonal_relaxed")
    for lid, k, t0 in launches.select("incident_id", "attempt", "root_ts").sort("root_ts", descending=True).rows():
        # the restart of attempt k from the launch's start on is the launch's (a later launch already took its own)
        hit = ((pl.col("category") == "restart") & (pl.col("attempt") == k) & (pl.col("end_ts") > t0)
               & (pl.col("incident_id").ne_missing(lid)))
        moved = rows.filter(hit).with_columns(
            seconds=(pl.col("end_ts") - pl.max_horizontal("start_ts", pl.lit(t0))).dt.total_microseconds() / 1e6,
            start_ts=pl.max_horizontal("start_ts", pl.lit(t0)), incident_id=pl.lit(lid), own_host=pl.lit(None))
        kept = rows.filter(hit).with_columns(seconds=pl.col("seconds") - moved["seconds"],
                                             end_ts=pl.min_horizontal("end_ts", pl.lit(t0)))
        rows = pl.concat([rows.filter(~hit), kept.filter(pl.col("seconds") > 0), moved], how="vertical_relaxed")
    return inc, evidence, rows.sort("attempt", "start_ts", "category")


def failed_launches(con: duckdb.DuckDBPyConnection, run: str, att: pl.DataFrame,
                    ev_columns: list[str]) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Incidents (one per failed launch with hardware evidence) and their evidence rows."""
    gaps = att.sort("attempt").select("attempt", gap_from="end_ts", gap_to=pl.col("start_ts").shift(-1))
    jobs = att["job_id"].drop_nulls().unique().to_list() if "job_id" in att.columns else []
    if not jobs or gaps.height < 2:
        return pl.DataFrame(), pl.DataFrame()
    inst = store.frame(con, """SELECT DISTINCT job_id, start_ts, end_ts, nodelist FROM jobs
                               WHERE list_contains($jobs, job_id) AND start_ts IS NOT NULL AND end_ts IS NOT NULL
                               ORDER BY start_ts""", {"jobs": jobs})
    inst = inst.join_asof(gaps.drop_nulls().sort("gap_from"), left_on="start_ts", right_on="gap_from",
                          strategy="backward").filter(pl.col("gap_to").is_not_null(),
                                                      pl.col("end_ts") <= pl.col("gap_to"))
    out, evs = [], []
    for job, t0, t1, nodes, k in inst.select("job_id", "start_ts", "end_ts", "nodelist", "attempt").rows():
        try:
            hosts = hostlist.expand(nodes) if nodes else []
        except (ValueError, hostlist.HostlistTooLarge):
            hosts = []
        ev = store.frame(con, f"""
            SELECT e.ts, e.host, e.source, e.kind, e.failure_mode, e.xid, e.rank, f.path AS file, e.line, e.text
            FROM events e LEFT JOIN ingested_files f USING (file_id)
            WHERE e.host IS NOT NULL AND list_contains($hosts, e.host) AND e.severity IN ('error', 'critical')
              AND list_contains($modes, e.failure_mode)
              AND e.ts BETWEEN $t0 - INTERVAL {_MARGIN_S} SECOND AND $t1 + INTERVAL {_MARGIN_S} SECOND
            ORDER BY list_position($modes, e.failure_mode), e.ts""", {"hosts": hosts, "modes": _MODES, "t0": t0,
                                                                      "t1": t1})
        if not ev.height:
            continue
        lid = f"{run}:{k}:launch:{job}@{t0:%Y%m%dT%H%M%S}"
        top = ev.row(0, named=True)
        out.append({"incident_id": lid, "run": run, "attempt": k, "kind": "launch_failed", "root_ts": t0,
                    "exit_ts": t1, "failure_mode": top["failure_mode"], "host": top["host"], "tier": 100,
                    "confidence": 0.7})
        evs.append(ev.with_columns(incident_id=pl.lit(lid), rank_in_incident=pl.int_range(pl.len()) + 1,
                                   tier=pl.lit(100, pl.Int32)))
    if not out:
        return pl.DataFrame(), pl.DataFrame()
    launches = pl.DataFrame(out).with_columns(pl.col("attempt").cast(pl.Int32), pl.col("tier").cast(pl.Int32),
                                              first_step=pl.lit(None, pl.Int64), last_step=pl.lit(None, pl.Int64))
    ev = pl.concat(evs, how="diagonal_relaxed")
    return launches, ev.select([c for c in ev_columns if c in ev.columns])
