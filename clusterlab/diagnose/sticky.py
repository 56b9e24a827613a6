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
from clusterlab.diagnose import reattribute

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
    masked_by = dict(inc.select("incident_id", "failure_mode").iter_rows())
    reasons = {r["incident_id"]: (f"the GPU memory fault on {r['host']} at {r['ts']:%Y-%m-%d %H:%M:%S}, before this "
                                  f"attempt began, explains a start-up {masked_by[r['incident_id']]}")
               for r in found.iter_rows(named=True)}
    return reattribute.apply(inc, ev, found, "gpu_memory_ecc", STICKY_CONFIDENCE, reasons, ev_schema)
