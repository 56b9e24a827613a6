"""A requeued job's runs inside one attempt directory: each run of the job is an attempt of its own.

Slurm appends the output of a requeued batch job (preempted with PreemptMode=REQUEUE, `scontrol requeue`, a node
failure with `--requeue`) to the same `slurm-J.out`, and a launcher's per-host logs (`NCCL_DEBUG_FILE`) are appended
the same way; a bundle that keeps one directory per job then holds two or more launches in one `attempt-<k>/`.
`sacct --duplicates` lists the job once per run of it (the same JobID, one Start/End each), and slurmctld logs
each run's `sched: Allocate JobId=J` (plain sacct shows only the last run): where the attempt's
evidence lies on both sides of a later run's start, the rows from that run's start on become the next attempt
(later attempts move up by one where that number is taken), so that the first run ends at its own end, the time
between the runs is restart, and the second run's failure (a checkpoint that no longer loads) is its own incident.
"""

from __future__ import annotations

from collections.abc import Callable

import duckdb

from clusterlab import store
from clusterlab.tables import TABLE_COLUMNS

# Starts of one job's allocation closer than this are the same run (sacct's Start and slurmctld's `sched: Allocate`)
SAME_RUN_S = 60
_TS_TABLES = [t for t, cols in TABLE_COLUMNS.items() if "ts" in cols and t not in ("jobs", "fault_episodes")]


def _rows(where: str) -> str:
    return " UNION ALL ".join(f"SELECT run, attempt, file_id, line, ts FROM {t} WHERE {where}" for t in _TS_TABLES)


def split_requeued(con: duckdb.DuckDBPyConnection) -> None:
    """Split directory attempts at the later runs of a requeued job. Runs after `attempts._split_in_job_restarts`:
    the rows of a run with in-job restart lines were put back to their directory's attempt and split there in this
    refresh already (those splits stand); every other run's directory rows are put back here."""
    # each run of a job the scheduler ran more than once: its start, and the end of the run before it
    reruns = con.execute(f"""
        WITH starts AS (
            SELECT job_id, start_ts AS t FROM jobs
            WHERE job_id IS NOT NULL AND NOT contains(job_id, '.') AND start_ts IS NOT NULL
            UNION ALL SELECT json_extract_string(detail, '$.job_id'), ts FROM events
            WHERE source = 'slurmctld' AND kind = 'slurm_job_alloc' AND ts IS NOT NULL
        ),
        ends AS (
            SELECT job_id, end_ts AS t FROM jobs
            WHERE job_id IS NOT NULL AND NOT contains(job_id, '.') AND end_ts IS NOT NULL
            UNION ALL SELECT json_extract_string(detail, '$.job_id'), ts FROM events
            WHERE source = 'slurmctld' AND kind IN ('slurm_job_exit', 'slurm_job_end', 'slurm_job_requeued')
              AND ts IS NOT NULL
        ),
        -- one run seen by sacct and by slurmctld (stamps a moment apart) is one run
        g AS (SELECT job_id, t, coalesce(t - lag(t) OVER (PARTITION BY job_id ORDER BY t)
                                         > INTERVAL {SAME_RUN_S} SECOND, true) AS new FROM starts
              WHERE job_id IS NOT NULL),
        runs AS (SELECT job_id, t AS start_ts, sum(new::INTEGER) OVER (PARTITION BY job_id ORDER BY t) AS n
                 FROM g WHERE new)
        SELECT r.job_id, r.start_ts, (SELECT max(e.t) FROM ends e WHERE e.job_id = r.job_id AND e.t < r.start_ts)
        FROM runs r WHERE r.n > 1
    """).fetchall()
    if not reruns:
        return
    _temp_table(con, "_reruns", {"job_id": "VARCHAR", "start_ts": "TIMESTAMP", "prev_end": "TIMESTAMP"}, reruns)
    # the directory attempts that name such a job (its `slurm-J.out`, srun/slurmstepd lines, SLURM_JOB_ID)
    runs = [
        r[0]
        for r in con.execute(f"""
        WITH {store.NAMED_JOBS}
        SELECT DISTINCT n.run FROM named n JOIN _reruns r USING (job_id) WHERE n.attempt IS NOT NULL
    """).fetchall()
    ]
    if not runs:
        return
    restarted = {
        r[0]
        for r in con.execute(
            "SELECT DISTINCT run FROM events WHERE run IS NOT NULL AND ((source IN ('ft_launcher', 'ray_train') AND "
            "kind = 'restart') OR (source = 'torch' AND kind = 'worker_group_restart'))"
        ).fetchall()
    }
    for run in runs:
        if run not in restarted:
            # idempotent: every refresh splits the directory's rows anew from the attempt their path gave them
            for t in _TS_TABLES:
                con.execute(
                    f"UPDATE {t} SET attempt = f.attempt FROM ingested_files f WHERE {t}.file_id = f.file_id "
                    f"AND f.attempt IS NOT NULL AND {t}.run = ? AND {t}.attempt IS DISTINCT FROM f.attempt",
                    [run],
                )
        _split_run(con, run)


def _split_run(con: duckdb.DuckDBPyConnection, run: str) -> None:
    # (attempt, boundary time) pairs: the later run's start, or midway between the runs where host clocks may put
    # the earlier run's last lines a little past the later one's start; latest first, so that numbers only move up
    found = con.execute(
        f"""
        WITH {store.NAMED_JOBS},
        c AS (SELECT DISTINCT n.attempt, n.job_id,
                     CASE WHEN r.prev_end IS NOT NULL AND r.prev_end < r.start_ts
                          THEN r.prev_end + (r.start_ts - r.prev_end) / 2 ELSE r.start_ts END AS tb
              FROM named n JOIN _reruns r USING (job_id) WHERE n.run = $run AND n.attempt IS NOT NULL)
        -- the next directory attempt is the later run's own (the bundle kept one directory per run, the appended
        -- output in the first): it names no other job and holds nothing dated before the later run began
        SELECT c.attempt, c.tb,
               EXISTS (SELECT 1 FROM ingested_files f WHERE f.run = $run AND f.attempt = c.attempt + 1)
               AND NOT EXISTS (SELECT 1 FROM named n WHERE n.run = $run AND n.attempt = c.attempt + 1
                                                       AND n.job_id <> c.job_id)
               AND NOT EXISTS (SELECT 1 FROM ({_rows("run = $run AND ts IS NOT NULL")}) x
                               WHERE x.attempt = c.attempt + 1 AND x.ts < c.tb) AS own
        FROM c ORDER BY c.attempt DESC, c.tb DESC
    """,
        {"run": run},
    ).fetchall()
    cut_attempts(con, run, [(k, tb) for k, tb, _ in found], same_run={k for k, _, own in found if own})


def cut_attempts(con: duckdb.DuckDBPyConnection, run: str, cuts: list[tuple[int, object]],
                 same_run: set[int] | frozenset[int] = frozenset()) -> None:
    """Cut each attempt k of the run at time tb, for each (k, tb) of `cuts` (latest attempt first, then latest time
    first): each file's rows from its first dated line at or past tb on become attempt k + 1, the later attempts
    moving up by one first where k + 1 is taken (not where k is in `same_run`: attempt k + 1 holds the later run's
    own evidence, which the cut's rows join). Nothing is cut where the attempt's dated rows lie wholly on one side
    of tb."""
    # NOTE: the cuts are worked out from two reads and written in two UPDATEs a table: a cut's rows take a mark
    # (MARK - its index) in place of k + 1, then every attempt's number is written once. Each cut read its attempt's
    # rows and wrote every table in turn before: 178 queries, 0.55 s of a campaign corpus' ingest (two requeued runs,
    # 18 cuts). What a cut sees of the cuts before it follows from the reads: an earlier cut of the same attempt took
    # each file's rows from its boundary on (`bound`), and a row past a boundary is no longer the attempt's.
    if not cuts:
        return
    _temp_table(con, "_cuts", {"i": "INTEGER", "k": "INTEGER", "tb": "TIMESTAMP"},
                [(i, k, tb) for i, (k, tb) in enumerate(cuts)])
    dated = _rows("run = $run AND ts IS NOT NULL AND attempt IN (SELECT k FROM _cuts) "
                  "AND file_id IN (SELECT file_id FROM ingested_files WHERE attempt IS NOT NULL)")
    # per cut and file: the first line at or past tb (a cut begins there) and the first before it (a row stays)
    firsts: dict[int, list[tuple[int, int | None, int | None]]] = {}
    for i, f, at, before in con.execute(f"""
            SELECT c.i, r.file_id, min(r.line) FILTER (WHERE r.ts >= c.tb), min(r.line) FILTER (WHERE r.ts < c.tb)
            FROM ({dated}) r JOIN _cuts c ON r.attempt = c.k GROUP BY ALL""", {"run": run}).fetchall():
        firsts.setdefault(i, []).append((f, at, before))
    # per attempt and file, where any row of it is: its first line, and whether a row has none (read by `_taken`
    # once a cut needs it)
    held: dict[tuple[int, int], tuple[int | None, bool]] = {}

    def rows_held() -> dict[tuple[int, int], tuple[int | None, bool]]:
        if not held:
            held.update({(a, f): (lo, unlined) for a, f, lo, unlined in con.execute(f"""
                SELECT attempt, file_id, min(line), bool_or(line IS NULL) FROM ({_rows("run = $run")})
                WHERE attempt IS NOT NULL GROUP BY ALL""", {"run": run}).fetchall()})
        return held

    bound: dict[tuple[int, int], int] = {}  # (attempt, file): the line an earlier cut took its rows from
    made: list[tuple[int, bool]] = []  # each cut's attempt, and whether the later attempts moved up by one first
    moves: list[tuple[int, int, int, int | None, int]] = []  # (attempt, file, from line, to line or None, mark)
    for i, (k, _) in enumerate(cuts):
        rows = [(f, at, before, bound.get((k, f))) for f, at, before in firsts.get(i, ())]
        cut = [(f, at, b) for f, at, _, b in rows if at is not None and (b is None or at < b)]
        if not cut or not any(before is not None and (b is None or before < b) for _, _, before, b in rows):
            continue  # the attempt's evidence lies wholly on one side of the later run's start: nothing to split
        # a bundle numbered by launch left the requeued run's number free (`attempt-4/` then `attempt-6/`): the
        # later attempts keep theirs; else they move up by one
        made.append((k, k not in same_run and _taken(rows_held, bound, k + 1, made)))
        for f, at, b in cut:
            moves.append((k, f, at, b, MARK - len(made) + 1))
            bound[(k, f)] = at
    if not made:
        return
    _temp_table(con, "_moves", {"k": "INTEGER", "file_id": "BIGINT", "lo": "BIGINT", "hi": "BIGINT", "mark": "INTEGER"},
                moves)
    # any row no cut took: up one for every shift below its attempt
    dest = _dests(made)
    shifts = "".join(f" + (attempt > {int(k)})::INTEGER" for k, s in made if s)
    for t in _TS_TABLES:
        con.execute(f"""UPDATE {t} SET attempt = m.mark FROM _moves m
                        WHERE {t}.run = $run AND {t}.attempt = m.k AND {t}.file_id = m.file_id
                          AND {t}.line >= m.lo AND (m.hi IS NULL OR {t}.line < m.hi)""", {"run": run})
        con.execute(f"""UPDATE {t} SET attempt = CASE WHEN attempt <= $mark THEN $dest[$mark - attempt + 1]
                                                      ELSE attempt{shifts} END
                        WHERE run = $run AND (attempt <= $mark{' OR attempt > $low' if shifts else ''})""",
                    {"run": run, "mark": MARK, "dest": dest, **({"low": min(k for k, _ in made)} if shifts else {})})


def _temp_table(con: duckdb.DuckDBPyConnection, name: str, columns: dict[str, str], rows: list[tuple]) -> None:
    """A temporary table of `rows`, inserted in one statement (executemany cost half a millisecond a row)."""
    con.execute(f"CREATE OR REPLACE TEMP TABLE {name} ({', '.join(f'{c} {t}' for c, t in columns.items())})")
    if rows:
        values = zip(*rows, strict=True)
        con.execute(f"INSERT INTO {name} SELECT {', '.join(f'unnest(${c}::{t}[])' for c, t in columns.items())}",
                    dict(zip(columns, map(list, values), strict=True)))


MARK = -(2**30)  # the attempt a cut's rows hold until `cut_attempts` ends (MARK - the cut's index): none is so low


def _dests(made: list[tuple[int, bool]]) -> list[int]:
    """The attempt each cut's rows are in after the cuts `made`: k + 1, and up one for every shift after it (every
    later cut's k is no greater, so its rows lie above)."""
    return [k + 1 + sum(s for _, s in made[i + 1:]) for i, (k, _) in enumerate(made)]


def _taken(held: Callable[[], dict[tuple[int, int], tuple[int | None, bool]]], bound: dict[tuple[int, int], int],
           n: int, made: list[tuple[int, bool]]) -> bool:
    """Whether a row of the run is in attempt `n` after the cuts `made`: a cut's rows, or the rows of the one attempt
    that the shifts so far bring to `n` that no cut took (`held()`: each attempt's files' first line and whether a row
    has no line, which no cut takes; `bound`: the line each cut file's rows were taken from)."""
    if n in _dests(made):
        return True  # (each cut took a row at least: the first of a file's lines past the later run's start)
    was = [a for a in range(n, n - len(made) - 1, -1) if a + sum(s and a > k for k, s in made) == n]
    if not was:
        return False
    return any(unlined or (lo is not None and ((a, f) not in bound or lo < bound[(a, f)]))
               for (a, f), (lo, unlined) in held().items() if a == was[0])
