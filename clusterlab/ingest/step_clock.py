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


def bound_events(con: duckdb.DuckDBPyConnection) -> int:
    """Narrow the interval of the unstamped event lines of a file by its step rows on either side of them.

    An event line without a stamp (a watchdog's text, an NCCL error quoted in a traceback) lies between the stamped
    lines around it (`ts_lo`, `ts_hi`); where step rows of the same file sit between those (dated from the step
    clock, or stamped), the line lies after the last step row above it and before the first step row below it. Its
    point (`ts`) is kept inside the narrowed interval. Idempotent: the bounds only narrow; how many lines moved."""
    if not con.execute(f"SELECT count(*) FROM (SELECT 1 FROM events WHERE {_UNSTAMPED} LIMIT 1)").fetchall()[0][0]:
        return 0
    # NOTE: the step rows of the files that hold unstamped events, in line order; an event takes the nearest step
    # row above (its end: the line was printed after it) and the nearest below (printed before it ended)
    con.execute(f"""
        CREATE OR REPLACE TEMP TABLE _ev_bounds AS
        WITH ev AS (SELECT file_id, line, ts, ts_lo, ts_hi FROM events WHERE {_UNSTAMPED}),
        st AS (SELECT file_id, line, max(ts) AS ts FROM steps
               WHERE ts IS NOT NULL AND file_id IN (SELECT DISTINCT file_id FROM ev) GROUP BY file_id, line),
        b AS (
            SELECT e.file_id, e.line, e.ts_lo, e.ts_hi, a.ts AS after_step, z.ts AS before_step
            FROM (SELECT DISTINCT file_id, line, ts_lo, ts_hi FROM ev) e
            ASOF LEFT JOIN st a ON a.file_id = e.file_id AND e.line > a.line
            ASOF LEFT JOIN (SELECT file_id, line, ts FROM st) z ON z.file_id = e.file_id AND e.line < z.line
        )
        SELECT DISTINCT file_id, line,
               CASE WHEN after_step > ts_lo AND after_step <= coalesce(ts_hi, after_step) THEN after_step
                    ELSE ts_lo END AS lo,
               CASE WHEN before_step >= ts_lo AND before_step < coalesce(ts_hi, TIMESTAMP '9999-12-31')
                    THEN before_step ELSE ts_hi END AS hi
        FROM b
        WHERE (after_step > ts_lo AND after_step <= coalesce(ts_hi, after_step))
           OR (before_step >= ts_lo AND before_step < coalesce(ts_hi, TIMESTAMP '9999-12-31'))
    """)
    n = con.execute("""
        UPDATE events SET ts_lo = b.lo, ts_hi = b.hi,
                          ts = greatest(b.lo, least(events.ts, coalesce(b.hi, events.ts)))
        FROM _ev_bounds b WHERE b.file_id = events.file_id AND b.line = events.line
          AND events.dated IN ('between', 'after')
    """).fetchall()[0][0]
    con.execute("DROP TABLE _ev_bounds")
    return n


# A process's last words: PyTorch's watchdog taking the process down on an NCCL error or timeout, the C++ abort, and the
# NCCL error text (with the NET/IB line it quotes after "Last error:") inside that exception's message
LAST_WORDS = ("watchdog_terminated", "process_abort", "process_teardown", "nccl_error")


def date_last_words(con: duckdb.DuckDBPyConnection) -> int:
    """Put an unstamped line that a dying process prints as it dies at the end of its interval (`ts_hi`).

    As a traceback's last line (`parse._fill_ts`, AT_EXIT), the watchdog's "terminated with exception" block is
    printed as the process aborts, and the next stamped line is that death (torchrun's `failed (exitcode: -6)`),
    while the stamp before it may be a step record a minute older. Idempotent; how many lines moved."""
    return con.execute(f"""
        UPDATE events SET ts = ts_hi
        WHERE dated = 'between' AND ts_hi IS NOT NULL AND ts IS DISTINCT FROM ts_hi
          AND (kind IN {LAST_WORDS} OR (kind = 'ib_completion_error'
                                        AND contains(coalesce(detail, ''), '"via":"last_error"')))
    """).fetchall()[0][0]
