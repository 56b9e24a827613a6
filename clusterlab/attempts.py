"""Attempts of a run: from the bundle layout, or recovered from restarts visible in the logs."""

from __future__ import annotations

import duckdb

from clusterlab.collectors._base import TABLE_COLUMNS

_TS_TABLES = [t for t, cols in TABLE_COLUMNS.items() if "ts" in cols and t != "jobs"]


def _split_unsplit_logs(con: duckdb.DuckDBPyConnection) -> None:
    """Number attempts in run logs that hold several launches: a new attempt starts where the
    step counter goes back (a restart from a checkpoint) or where a checkpoint is loaded."""
    con.execute("""
        CREATE OR REPLACE TEMP TABLE _restarts AS
        WITH unsplit AS (SELECT file_id FROM ingested_files WHERE run IS NOT NULL AND attempt IS NULL),
        s AS (
            SELECT file_id, line, step, lag(step) OVER w AS prev, lag(line) OVER w AS prev_line
            FROM steps WHERE file_id IN (SELECT file_id FROM unsplit)
            WINDOW w AS (PARTITION BY file_id ORDER BY line)
        ),
        gaps AS (
            SELECT s.*, (SELECT min(c.line) FROM checkpoints c
                         WHERE c.file_id = s.file_id AND c.action = 'load'
                           AND c.line > s.prev_line AND c.line < s.line) AS load_line
            FROM s WHERE prev_line IS NOT NULL
        )
        -- the new attempt starts at its checkpoint load where one is logged, else at its first step
        SELECT file_id, coalesce(load_line, line) AS line FROM gaps
        WHERE step <= prev OR load_line IS NOT NULL
    """)
    for t in _TS_TABLES:
        con.execute(f"""
            UPDATE {t} SET attempt = 1 + (SELECT count(*) FROM _restarts r
                                          WHERE r.file_id = {t}.file_id AND r.line <= {t}.line)
            WHERE file_id IN (SELECT file_id FROM ingested_files WHERE run IS NOT NULL AND attempt IS NULL)
        """)


def refresh(con: duckdb.DuckDBPyConnection) -> None:
    """Recompute the attempts table from the evidence tables (idempotent)."""
    con.execute("BEGIN")
    try:
        _split_unsplit_logs(con)
        union = " UNION ALL ".join(
            f"SELECT run, attempt, ts, host, {'step' if 'step' in TABLE_COLUMNS[t] else 'NULL::BIGINT'} AS step, "
            f"'{t}' AS tbl FROM {t} WHERE run IS NOT NULL"
            for t in _TS_TABLES
        )
        con.execute("DELETE FROM attempts")
        con.execute(f"""
            INSERT INTO attempts
            SELECT run, coalesce(attempt, 1) AS attempt, min(ts), max(ts),
                   min(ts) FILTER (WHERE tbl IN ('steps', 'rank_steps')),
                   min(step) FILTER (WHERE tbl IN ('steps', 'rank_steps')),
                   max(step) FILTER (WHERE tbl IN ('steps', 'rank_steps')),
                   list_sort(list_distinct(list(host) FILTER (WHERE host IS NOT NULL))),
                   count(DISTINCT host)
            FROM ({union}) GROUP BY ALL
        """)
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        raise
