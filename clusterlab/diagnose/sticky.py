"""Sticky faults: a GPU memory fault outlives the job it killed.

An uncorrectable ECC error leaves the faulty HBM rows in use until the GPU is reset (a row remap stays
"pending"), so the next job on that host often dies at start-up of what looks like its own fault: a CUDA
out-of-memory on an empty GPU, an illegal address, an exception in the first collective. Its own evidence
then says `cuda_oom` or `user_code_error`, and the user is blamed for the provider's GPU.

The rule: an attempt that ended before it finished a step, whose cause is such an application-side mode on
a host that logged a GPU memory fault (`gpu_memory_ecc`) within `STICKY_WINDOW` before the attempt began died of
that fault. (No reset or reboot is read from the evidence yet: the window bounds how long a fault is believed.)
The incident keeps its own evidence; the earlier fault becomes its first evidence line, and the mode it had is
kept among the rejected candidates with the reason.
"""

from __future__ import annotations

import datetime as dt

import duckdb
import polars as pl

from clusterlab import store

STICKY_WINDOW = dt.timedelta(hours=24)  # a memory fault this long before the attempt still counts (no reset seen)
# what a GPU whose memory is still faulty makes a job that starts on it report
MASKED_MODES = ("cuda_oom", "cuda_error", "user_code_error", "unknown", "nccl_timeout")
STICKY_CONFIDENCE = 0.6  # the link is inferred from time and place, not printed by either job


def with_sticky_faults(con: duckdb.DuckDBPyConnection, inc: pl.DataFrame, ev: pl.DataFrame,
                       ev_schema: dict[str, pl.DataType]) -> tuple[pl.DataFrame, pl.DataFrame]:
    """`inc` and `ev` (root cause's attempt-end incidents and evidence) with the sticky faults re-attributed."""
    masked = inc.filter(pl.col("failure_mode").is_in(MASKED_MODES), pl.col("host").is_not_null())
    if not masked.height:
        return inc, ev
    found = store.frame(con, """
        WITH m AS (
            SELECT m.incident_id, m.host, a.start_ts FROM masked m JOIN attempts a USING (run, attempt)
            -- died before it finished a step: no step, or only the one it began with
            WHERE a.start_ts IS NOT NULL AND coalesce(a.last_step - a.first_step, 0) < 1
        )
        SELECT m.incident_id, e.ts, e.host, e.source, e.kind, e.failure_mode, e.xid, e.rank, f.path AS file,
               e.line, e.text
        FROM m JOIN events e ON e.host = m.host AND e.failure_mode = 'gpu_memory_ecc'
          AND e.ts BETWEEN m.start_ts - to_microseconds($window) AND m.start_ts
        JOIN ingested_files f USING (file_id)
        QUALIFY row_number() OVER (PARTITION BY m.incident_id ORDER BY e.ts DESC, f.path, e.line) = 1
    """, {"window": int(STICKY_WINDOW.total_seconds() * 1e6)}, masked=masked.select("incident_id", "run", "attempt",
                                                                                    "host"))
    if not found.height:
        return inc, ev
    was = inc.join(found.select("incident_id", fault_ts="ts"), on="incident_id")
    notes = {r["incident_id"]: {"candidate": {"failure_mode": r["failure_mode"], "host": r["host"],
                                              "ts": None, "kind": "attempt_end", "file": None, "line": None},
                                "reason": (f"the GPU memory fault on {r['host']} at {r['fault_ts']:%Y-%m-%d %H:%M:%S}, "
                                           f"before this attempt began, explains a start-up {r['failure_mode']}")}
             for r in was.iter_rows(named=True)}
    inc = inc.with_columns(
        failure_mode=pl.when(pl.col("incident_id").is_in(list(notes))).then(pl.lit("gpu_memory_ecc"))
        .otherwise("failure_mode"),
        confidence=pl.when(pl.col("incident_id").is_in(list(notes))).then(pl.lit(STICKY_CONFIDENCE))
        .otherwise("confidence"),
        rejected=pl.struct("incident_id", "rejected").map_elements(
            lambda r: [notes[r["incident_id"]], *(r["rejected"] or [])] if r["incident_id"] in notes
            else r["rejected"], return_dtype=inc.schema["rejected"]))
    # the earlier fault leads the evidence; the attempt's own lines follow it
    lead = found.with_columns(rank_in_incident=pl.lit(0, pl.Int64), tier=pl.lit(None, pl.Int32),
                              run=pl.lit(None, pl.String), attempt=pl.lit(None, pl.Int32))
    lead = lead.drop("run", "attempt").join(inc.select("incident_id", "run", "attempt"), on="incident_id")
    cols = list(ev.columns) if ev.height else ["run", "attempt", *ev_schema]
    ev = pl.concat([lead.select(cols).cast({c: t for c, t in ev_schema.items() if c in cols}),
                    ev], how="vertical_relaxed")
    ev = ev.sort("run", "attempt", "rank_in_incident").with_columns(
        rank_in_incident=pl.int_range(1, pl.len() + 1).over("incident_id").cast(pl.Int64))
    return inc, ev
