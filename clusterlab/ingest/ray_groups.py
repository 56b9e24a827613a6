"""When a restarted Ray Train worker group began: the driver prints its start undated, the raylets date it.

`(TorchTrainer pid=N) Started distributed worker processes:` and the table under it (each worker's address and pid)
carry no time: the line is dated by the next stamped one (`collectors.ray_train`), which may come minutes after the
workers started (a checkpoint load, the first step), while the stamp before it is the failure, before the wait for a
replacement node. Each node's raylet logs when it started a worker process (`Started worker process with pid P`, its
own time): the earliest such start of a pid the group's table lists on that node, within the line's interval, is
when the group began. Run after `host_names` (the table names nodes by address); idempotent.
"""

from __future__ import annotations

import duckdb


def date_group_starts(con: duckdb.DuckDBPyConnection) -> None:
    """Date each undated worker-group start by its workers' process starts in the raylet logs."""
    if not con.execute("SELECT 1 FROM facts WHERE key = 'ray_worker_process' LIMIT 1").fetchall():
        return
    con.execute(r"""
        UPDATE events SET ts = m.t FROM (
            WITH g AS (
                SELECT file_id, line, ts, ts_lo,
                       lead(line) OVER (PARTITION BY file_id ORDER BY line) AS next_line
                FROM events WHERE source = 'ray_train' AND kind = 'worker_group_start'),
            w AS (SELECT file_id, line, host, regexp_extract(value, 'pid=(\d+)', 1) AS pid FROM facts
                  WHERE key = 'ray_worker' AND host IS NOT NULL)
            SELECT g.file_id, g.line, min(p.ts) AS t FROM g
            JOIN w ON w.file_id = g.file_id AND w.line > g.line AND w.line < coalesce(g.next_line, w.line + 1)
            JOIN facts p ON p.key = 'ray_worker_process' AND p.host = w.host AND p.value = w.pid
             AND p.ts >= g.ts_lo AND p.ts <= g.ts
            WHERE g.ts_lo IS NOT NULL
            GROUP BY g.file_id, g.line) m
        WHERE events.file_id = m.file_id AND events.line = m.line AND events.source = 'ray_train'
          AND events.kind = 'worker_group_start'""")
