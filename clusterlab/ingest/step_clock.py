"""Date step lines that print no time of their own from the step clock.

A training log may stamp none of its step lines (Megatron before its 2024 `[YYYY-mm-dd HH:MM:SS]` prefix, a trainer
logging through `print`): every such row lies between the stamped lines around it (`ts_lo`, `ts_hi`), and the
engine's point inside was the earlier stamp, so hours of steps all sat at the `[before the start of training step]`
line. The steps say how long they took: from the earlier stamp on, each row ends `step_s` x (steps since the row
before it) later, and each save between them (its timer's `duration_s`) adds its own time. A row is never put past
its later stamp. Idempotent: the times are computed from `ts_lo`, the rows' own stamps are never touched.
"""

from __future__ import annotations

import duckdb

# NOTE: rows dated by an interval only (tables.DATING): `between` or `after` an earlier stamp
_UNSTAMPED = "dated IN ('between', 'after') AND ts_lo IS NOT NULL"


def date_steps(con: duckdb.DuckDBPyConnection) -> int:
    """Re-date the unstamped step rows (and the saves among them) of every file from the step clock; how many."""
    if not con.execute(f"SELECT count(*) FROM (SELECT 1 FROM steps WHERE {_UNSTAMPED} AND step_s IS NOT NULL "
                       f"LIMIT 1)").fetchall()[0][0]:
        return 0
    con.execute(f"""
        CREATE OR REPLACE TEMP TABLE _step_clock AS
        WITH files AS (SELECT DISTINCT file_id FROM steps WHERE {_UNSTAMPED} AND step_s IS NOT NULL),
        s AS (
            SELECT file_id, source, line, step, step_s, ts_lo, ts_hi, dated,
                   step - lag(step) OVER w AS back, lead(step) OVER w - step AS ahead
            FROM steps WHERE file_id IN (SELECT file_id FROM files) AND step IS NOT NULL
            WINDOW w AS (PARTITION BY file_id ORDER BY line, source)
        ),
        -- what each unstamped row adds to the clock: a step row its steps since the row before (two printers of
        -- one step add nothing; a file's first row, or one after a restart, its interval to the next row), a save
        -- its blocking time
        parts AS (
            SELECT 'steps' AS tbl, file_id, source, line, ts_lo, ts_hi,
                   step_s * CASE WHEN back >= 0 THEN back WHEN ahead > 0 THEN ahead ELSE 1 END AS secs
            FROM s WHERE {_UNSTAMPED} AND step_s IS NOT NULL
            UNION ALL
            SELECT 'checkpoints', file_id, source, line, ts_lo, ts_hi, coalesce(duration_s, 0)
            FROM checkpoints WHERE file_id IN (SELECT file_id FROM files) AND action = 'save' AND {_UNSTAMPED}
        ),
        clock AS (
            SELECT *, sum(secs) OVER (PARTITION BY file_id, ts_lo ORDER BY line, tbl DESC, source
                                      ROWS UNBOUNDED PRECEDING) AS cum
            FROM parts
        )
        -- a step row ends at the clock after it; a save begins where the clock stood before it
        SELECT tbl, file_id, source, line,
               least(ts_lo + to_microseconds(CAST(round((CASE WHEN tbl = 'steps' THEN cum ELSE cum - secs END) * 1e6)
                                                  AS BIGINT)),
                     coalesce(ts_hi, TIMESTAMP '9999-12-31')) AS ts
        FROM clock
    """)
    n = 0
    for table in ("steps", "checkpoints"):
        n += con.execute(f"""
            UPDATE {table} SET ts = c.ts FROM _step_clock c
            WHERE c.tbl = '{table}' AND c.file_id = {table}.file_id AND c.line = {table}.line
              AND c.source = {table}.source AND {table}.ts IS DISTINCT FROM c.ts
        """).fetchall()[0][0]
    con.execute("DROP TABLE _step_clock")
    return n
