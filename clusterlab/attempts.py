"""Attempts of a run: from the bundle layout, or recovered from restarts visible in the logs."""

from __future__ import annotations

import re

import duckdb

from clusterlab import hostlist
from clusterlab.collectors._base import TABLE_COLUMNS

MAX_JOB_NODES = 100_000
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


def _hosts_of_ranks(con: duckdb.DuckDBPyConnection) -> None:
    """Give a rank's event the host that rank ran on, where the line names only the rank (a PyTorch
    `[rank5]:` traceback): from NCCL's init lines (the largest communicator: global ranks) and the
    per-rank step records. Idempotent, and the same whichever file arrived first."""
    con.execute("""
        UPDATE events SET host = m.host
        FROM (
            SELECT DISTINCT ON (run, attempt, rank) run, attempt, rank, host FROM (
                SELECT run, attempt, rank, host, nranks FROM nccl_ranks
                WHERE run IS NOT NULL AND rank IS NOT NULL AND host IS NOT NULL
                UNION ALL
                SELECT DISTINCT run, attempt, rank, host, NULL FROM rank_steps
                WHERE run IS NOT NULL AND rank IS NOT NULL AND host IS NOT NULL)
            ORDER BY run, attempt, rank, nranks DESC NULLS LAST, host
        ) m
        WHERE events.host IS NULL AND events.rank IS NOT NULL AND events.run = m.run
          AND events.attempt IS NOT DISTINCT FROM m.attempt AND events.rank = m.rank
    """)


def refresh(con: duckdb.DuckDBPyConnection) -> None:
    """Recompute the attempts table from the evidence tables (idempotent)."""
    con.execute("BEGIN")
    try:
        _split_unsplit_logs(con)
        _hosts_of_ranks(con)
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
        _hosts_of_jobs(con)
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        raise


def _hosts_of_jobs(con: duckdb.DuckDBPyConnection) -> None:
    """Add to an attempt's hosts the nodes of the scheduler's record of its job (sacct NodeList), where its
    own lines name the job (srun, slurmstepd) or the job is named after the run: a node that printed
    nothing into the run's logs was still part of the job, and its kernel log is evidence about the attempt."""
    named = con.execute("""
        WITH ids AS (
            SELECT DISTINCT run, attempt, json_extract_string(detail, '$.job_id') AS job_id FROM events
            WHERE run IS NOT NULL AND detail IS NOT NULL AND json_extract_string(detail, '$.job_id') IS NOT NULL
            UNION SELECT DISTINCT run, attempt, value FROM facts WHERE run IS NOT NULL AND key = 'slurm_job_id'
        )
        SELECT DISTINCT ids.run, coalesce(ids.attempt, 1), j.nodelist FROM ids
        JOIN jobs j ON j.job_id = ids.job_id
        WHERE j.nodelist IS NOT NULL AND j.nodelist NOT IN ('None assigned', '(null)', '')
        UNION
        -- a job named after the run whose allocation holds the attempt (as clusterlab.timeline matches spans)
        SELECT DISTINCT a.run, a.attempt, j.nodelist FROM attempts a JOIN jobs j
          ON j.job_name = a.run AND NOT contains(j.job_id, '.')
         AND j.start_ts <= a.start_ts + INTERVAL 60 SECOND AND j.end_ts >= a.end_ts - INTERVAL 60 SECOND
        WHERE j.nodelist IS NOT NULL AND j.nodelist NOT IN ('None assigned', '(null)', '')
    """).fetchall()
    extra: dict[tuple[str, int], set[str]] = {}
    for run, attempt, nodelist in named:  # NOTE: one row per (attempt, job), not per evidence row
        spans = [int(hi) - int(lo) for lo, hi in re.findall(r"(\d{1,9})-(\d{1,9})", nodelist)]
        if sum(spans) > MAX_JOB_NODES or len(nodelist) > 100_000:
            continue  # no real job has that many nodes: a damaged record must not expand to millions
        try:
            extra.setdefault((run, attempt), set()).update(hostlist.expand(nodelist))
        except ValueError:
            continue  # a NodeList we cannot read adds nothing
    for (run, attempt), hosts in extra.items():
        con.execute("""UPDATE attempts SET hosts = list_sort(list_distinct(list_concat(hosts, ?::VARCHAR[]))),
                       n_hosts = len(list_distinct(list_concat(hosts, ?::VARCHAR[])))
                       WHERE run = ? AND attempt = ?""", [sorted(hosts), sorted(hosts), run, attempt])
