"""A run's evaluation passes as spans: each `eval_end` event with the `eval_start` before it in its file
(`clusterlab.collectors.evaluation`). The ledger books a pass that ran inside a step interval as the work it was,
not as a slowdown of the steps around it (`ledger.split_intervals`)."""

from __future__ import annotations

import duckdb
import polars as pl

from clusterlab import store

# A pass longer than this is no pass: an end line whose start was never printed, paired with an older one
MAX_EVAL_S = 4 * 3600.0


def spans(con: duckdb.DuckDBPyConnection, run: str) -> pl.DataFrame:
    """`s_attempt`, `ts` (the pass's start), `duration_s` of each evaluation pass of `run` whose start and end are
    both on record; a start without an end (the pass raised) is none."""
    return store.frame(
        con,
        f"""
        WITH e AS (SELECT file_id, attempt, line, ts, kind,
                          TRY_CAST(json_extract_string(detail, '$.runtime_s') AS DOUBLE) AS runtime_s FROM events
                   WHERE source = 'evaluation' AND run = $run AND ts IS NOT NULL AND line IS NOT NULL),
        s AS (SELECT * FROM e WHERE kind = 'eval_start'),
        p AS (SELECT s.attempt, s.file_id, s.line, s.ts, epoch(en.ts - s.ts) AS duration_s, en.line AS end_line
              FROM (SELECT * FROM e WHERE kind = 'eval_end' AND runtime_s IS NULL) en
              ASOF JOIN s ON en.file_id = s.file_id AND en.line >= s.line),
        -- a start's first end: a second report of the same pass (loss, then accuracy) is no second pass
        paired AS (SELECT DISTINCT ON (file_id, line) attempt, ts, duration_s FROM p ORDER BY file_id, line, end_line),
        timed AS (SELECT attempt, ts - to_microseconds(CAST(runtime_s * 1e6 AS BIGINT)) AS ts, runtime_s AS duration_s
                  FROM e WHERE kind = 'eval_end' AND runtime_s IS NOT NULL)
        SELECT attempt AS s_attempt, ts, duration_s FROM (SELECT * FROM paired UNION ALL SELECT * FROM timed)
        WHERE duration_s > 0 AND duration_s < {MAX_EVAL_S} AND attempt IS NOT NULL ORDER BY s_attempt, ts""",
        {"run": run},
    )
