"""The operator's words: a node taken out of service for maintenance explains what happens to the job on it.

A drain for maintenance does not stop the jobs on a node, so the drain line alone raises no failure mode. But
when the job then ends by a cancel (root clearing the nodes for an emergency maintenance), by the node going
down or rebooting under it, or with no cause found, the provider's maintenance ended it: the `preemption` mode
(provider maintenance or reclaim), not the user's stop and not a random node failure.

The rule: an attempt that ended as `manual_stop`, `node_failure` or `unknown`, on whose hosts slurmctld recorded
a reason of maintenance (`MAINTENANCE_REASON`: "maint", "emergency maintenance", `scontrol reboot`'s "Reboot
ASAP", "firmware upgrade", ...) between the attempt's start and its end. For a node failure the maintenance
must name the failed node itself.
"""

from __future__ import annotations

import duckdb
import polars as pl

from clusterlab import store
from clusterlab.diagnose import reattribute, timeline

# An operator's reason for taking a node out of service (a regular expression, case-insensitive)
MAINTENANCE_REASON = (r"\bmaint(enance)?\b|\bemergency\b|\breboot (asap|requested|issued)\b"
                      r"|scheduled (reboot|downtime|outage)|\b(firmware|driver|bios|kernel|os) (update|upgrade|patch)"
                      r"|\bpatching\b|\bdecommission")
# NOTE: a cloud daemon takes a broken node out in maintenance words of its own (ParallelCluster's clustermgtd:
# "Static node maintenance: unhealthy node is being replaced"); a reason that also says the node is unhealthy or
# failed is the node's fault, not a planned maintenance of the provider's
FAULT_REASON = r"\bunhealthy\b|\bfail(ed|ing|ure)?\b|\bnot responding\b|\bhealth[ _-]?check"
ENDED_BY = ("manual_stop", "node_failure", "unknown")
MAINTENANCE_CONFIDENCE = 0.7  # the operator's own words, read against the job's end
GRACE_S = 120  # a reason set this long after the end still explains it (the drain is often typed after the cancel)


def with_maintenance(con: duckdb.DuckDBPyConnection, inc: pl.DataFrame, ev: pl.DataFrame,
                     ev_schema: dict[str, pl.DataType]) -> tuple[pl.DataFrame, pl.DataFrame]:
    """`inc` and `ev` (root cause's attempt-end incidents and evidence) with maintenance endings re-attributed."""
    ended = inc.filter(pl.col("failure_mode").is_in(ENDED_BY))
    if not ended.height or not con.execute(
            "SELECT count(*) FROM events WHERE source = 'slurmctld' AND detail LIKE '%reason%'").fetchall()[0][0]:
        return inc, ev
    found = store.frame(con, """
        WITH m AS (
            SELECT e.incident_id, e.failure_mode AS mode, e.host AS inc_host, a.start_ts, a.end_ts, a.hosts
            FROM ended e JOIN attempts a USING (run, attempt) WHERE a.start_ts IS NOT NULL
        )
        SELECT m.incident_id, v.ts, v.host, v.source, v.kind, v.failure_mode, v.xid, v.rank, f.path AS file, v.line,
               v.text
        FROM m JOIN events v ON v.source = 'slurmctld' AND list_contains(m.hosts, v.host)
          AND (m.mode <> 'node_failure' OR v.host = m.inc_host)
          AND v.ts BETWEEN m.start_ts AND m.end_ts + to_seconds($grace)
          AND regexp_matches(coalesce(json_extract_string(v.detail, '$.reason'), ''), $pattern, 'i')
          AND NOT regexp_matches(coalesce(json_extract_string(v.detail, '$.reason'), ''), $fault, 'i')
        JOIN ingested_files f USING (file_id)
        QUALIFY row_number() OVER (PARTITION BY m.incident_id ORDER BY v.ts, f.path, v.line) = 1
    """, {"grace": GRACE_S, "pattern": MAINTENANCE_REASON, "fault": FAULT_REASON},
        ended=ended.select("incident_id", "run", "attempt", "host", "failure_mode"))
    if not found.height:
        return inc, ev
    was = dict(inc.select("incident_id", "failure_mode").iter_rows())
    reasons = {r["incident_id"]: (f"the operator took {r['host']} out for maintenance at {r['ts']:%Y-%m-%d %H:%M:%S} "
                                  f"({r['text'][:120]}): the job's {was[r['incident_id']]} is the provider's "
                                  "maintenance")
               for r in found.iter_rows(named=True)}
    # NOTE: a cancel names no host; a node failure keeps its node (the maintenance named it)
    inc, ev = reattribute.apply(inc, ev, found, "preemption", MAINTENANCE_CONFIDENCE, reasons, ev_schema,
                                host=pl.coalesce("host", "_rule_host"))
    return _when_taken(con, inc, found, was), ev


def _when_taken(con: duckdb.DuckDBPyConnection, inc: pl.DataFrame, found: pl.DataFrame, was: dict[str, str]
                ) -> pl.DataFrame:
    """A node rebooted under the job stopped it when it went down, not when the scheduler noticed (SlurmdTimeout,
    minutes later): where the drain came first and the job stepped on after it, the incident starts at the job's
    last step record (a cancel is its own moment and keeps it)."""
    lost = found.filter(pl.col("incident_id").map_elements(lambda i: was.get(i) != "manual_stop",
                                                           return_dtype=pl.Boolean))
    if not lost.height:
        return inc
    # NOTE: a step line without a stamp of its own is on the step clock (its borrowed time is only the earliest
    # it can have ended: the reboot would be dated before steps the job still ran), one without an anchor is no use
    mine = inc.join(lost.select("incident_id"), on="incident_id", how="semi")
    logged = [timeline.logged_steps(con, r).filter("clocked").select(pl.lit(r, pl.String).alias("run"), "attempt",
                                                                      "ts")
              for r in mine["run"].unique().drop_nulls().to_list()]
    steps = (pl.concat(logged, how="vertical_relaxed").with_columns(pl.col("attempt").cast(pl.Int64)) if logged
             else pl.DataFrame(schema={"run": pl.String, "attempt": pl.Int64, "ts": pl.Datetime("us")}))
    last = store.frame(con, """
        SELECT l.incident_id, max(s.ts) AS _last FROM lost l
        JOIN inc i USING (incident_id)
        JOIN (SELECT run, attempt, ts FROM clocked_steps UNION ALL SELECT run, attempt, ts FROM rank_steps) s
          ON s.run = i.run AND s.attempt = i.attempt AND s.ts >= l.ts AND s.ts <= i.root_ts
        GROUP BY l.incident_id""", lost=lost.select("incident_id", "ts"),
                       inc=inc.select("incident_id", "run", "attempt", "root_ts"), clocked_steps=steps)
    if not last.height:
        return inc
    return inc.join(last.with_columns(pl.col("_last").cast(inc.schema["root_ts"])), on="incident_id",
                    how="left").with_columns(root_ts=pl.min_horizontal("root_ts", "_last")).drop("_last")
