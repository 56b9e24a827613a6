"""The evidence of a straggler: the slow host's own step records, and the telemetry that explains them.

No log line says that a host is slow; its per-rank step records do. A straggler incident cites, for the rank of
the slow host that computed longest, the records of the first, the slowest and the last step of its stretch (file
and line each), with the step's figures against the attempt's usual. Where telemetry was scraped, the episodes
of that host that overlap the stretch come first: a throttling GPU (which makes the incident `gpu_throttle`,
`telemetry_incidents.throttled_stragglers`) and rising error counters (PCIe replays, NVLink CRC, ECC).
"""

from __future__ import annotations

import datetime as dt

import duckdb
import polars as pl

from clusterlab import store
from clusterlab.diagnose import telemetry_incidents

_WHICH = {"first": "the first", "worst": "the slowest", "last": "the last"}
_EVIDENCE = {"incident_id": pl.String, "rank_in_incident": pl.Int64, "ts": pl.Datetime("us"), "host": pl.String,
             "source": pl.String, "kind": pl.String, "failure_mode": pl.String, "xid": pl.Int32, "rank": pl.Int32,
             "file": pl.String, "line": pl.Int64, "text": pl.String, "tier": pl.Int32}


def stragglers(con: duckdb.DuckDBPyConnection, strag: pl.DataFrame, slow: pl.DataFrame
               ) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Straggler incidents (`incidents.straggler_incidents` of `slow`, `incidents.slow_steps`) with their
    failure mode from the telemetry, and their evidence: telemetry episodes first, then the step records."""
    strag, throttle = telemetry_incidents.throttled_stragglers(con, strag)
    if not strag.height:
        return strag, pl.DataFrame(schema=_EVIDENCE)
    parts = [p for p in (throttle, _error_episodes(con, strag), step_records(con, strag, slow)) if p.height]
    if not parts:
        return strag, pl.DataFrame(schema=_EVIDENCE)
    ev = pl.concat([p.select(list(_EVIDENCE)).cast(_EVIDENCE) for p in parts], how="vertical")
    # NOTE: the order of `parts` is the ranking: what explains the stretch, then what shows it
    ev = ev.with_columns(rank_in_incident=(pl.int_range(pl.len()).over("incident_id") + 1).cast(pl.Int64))
    return strag, ev.sort("incident_id", "rank_in_incident")


def step_records(con: duckdb.DuckDBPyConnection, strag: pl.DataFrame, slow: pl.DataFrame) -> pl.DataFrame:
    """Per straggler incident, the slow host's slowest rank's records of the first, slowest and last slow step."""
    if not strag.height or not slow.height:
        return pl.DataFrame(schema=_EVIDENCE)
    stretch = slow.join(strag.select("incident_id", "run", "attempt", "host", "first_step", "last_step"),
                        on=["run", "attempt", "host"]).filter(
        pl.col("step").is_between(pl.col("first_step"), pl.col("last_step")))
    ends = pl.concat([
        stretch.sort("step").group_by("incident_id", maintain_order=True).first().with_columns(which=pl.lit("first")),
        stretch.sort("excess_s", "step", descending=[True, False]).group_by("incident_id", maintain_order=True)
        .first().with_columns(which=pl.lit("worst")),
        stretch.sort("step", descending=True).group_by("incident_id", maintain_order=True).first()
        .with_columns(which=pl.lit("last"))])
    # one record cited once: a stretch's slowest step may be its first or its last
    ends = ends.unique(["incident_id", "step"], keep="first", maintain_order=True).join(
        stretch.group_by("incident_id").agg(slow_steps=pl.len()), on="incident_id")
    keys = ends.select("run", pl.col("attempt").cast(pl.Int32), "host", "step").unique()
    rows = store.frame(con, """
        SELECT r.run, r.attempt, r.host, r.step, r.rank, r.ts, r.source, f.path AS file, r.line,
               coalesce(r.compute_s, r.step_s - coalesce(r.comm_s, 0)) AS c, r.step_s
        FROM rank_steps r JOIN keys k ON r.run = k.run AND r.attempt = k.attempt AND r.host = k.host
                                      AND r.step = k.step
        JOIN ingested_files f ON f.file_id = r.file_id
        WHERE r.run IN (SELECT run FROM keys) AND r.step IN (SELECT step FROM keys)""", keys=keys)
    if not rows.height:
        return pl.DataFrame(schema=_EVIDENCE)
    slowest = (rows.filter(pl.col("c").is_not_null()).sort("c", "rank", descending=[True, False])
               .group_by("run", "attempt", "host", "step", maintain_order=True).first())
    cited = ends.with_columns(pl.col("attempt").cast(pl.Int32)).join(
        slowest.rename({"ts": "r_ts"}), on=["run", "attempt", "host", "step"])
    usual = pl.col("c") - pl.col("excess_s")
    text = pl.format("step {}: rank {} on {} computed {} s where the attempt's usual is {} s (+{}%); {} of {} "
                     "slow steps", "step", "rank", "host", pl.col("c").round(3), usual.round(3),
                     (100 * pl.col("excess_s") / usual).round(0).cast(pl.Int64),
                     pl.col("which").replace_strict(_WHICH, return_dtype=pl.String), "slow_steps")
    order = pl.col("which").replace_strict({"worst": 0, "first": 1, "last": 2}, return_dtype=pl.Int8)
    return cited.sort("incident_id", order).select(
        "incident_id", rank_in_incident=pl.lit(None, pl.Int64), ts="r_ts", host="host", source="source",
        kind=pl.lit("slow_step"), failure_mode=pl.lit("straggler"), xid=pl.lit(None, pl.Int32),
        rank=pl.col("rank").cast(pl.Int32), file="file", line="line", text=text, tier=pl.lit(None, pl.Int32))


def _error_episodes(con: duckdb.DuckDBPyConnection, strag: pl.DataFrame) -> pl.DataFrame:
    """Rising error counters of a straggler's host during its stretch (or just before it)."""
    hosts = strag["host"].drop_nulls().unique().to_list()
    ep = telemetry_incidents.error_episodes(con, hosts) if hosts else pl.DataFrame()
    if not ep.height:
        return pl.DataFrame(schema=_EVIDENCE)
    lead = dt.timedelta(seconds=telemetry_incidents.LEAD_S)
    return (strag.select("incident_id", "host", "root_ts", "exit_ts")
            .join_where(ep.rename({"host": "e_host"}), pl.col("host") == pl.col("e_host"),
                        pl.col("ts") <= pl.col("exit_ts"), pl.col("end_ts") >= pl.col("root_ts") - lead)
            .sort("incident_id", "ts")
            .select("incident_id", rank_in_incident=pl.lit(None, pl.Int64), ts="ts", host="e_host",
                    source="source", kind="kind", failure_mode="failure_mode", xid="xid", rank="rank", file="file",
                    line="line", text="text", tier=pl.lit(None, pl.Int32)))
