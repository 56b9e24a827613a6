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
    con.execute("CREATE OR REPLACE TEMP TABLE _reruns (job_id VARCHAR, start_ts TIMESTAMP, prev_end TIMESTAMP)")
    con.executemany("INSERT INTO _reruns VALUES (?, ?, ?)", reruns)
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
    cuts = con.execute(
        f"""
        WITH {store.NAMED_JOBS}
        SELECT DISTINCT n.attempt,
               CASE WHEN r.prev_end IS NOT NULL AND r.prev_end < r.start_ts
                    THEN r.prev_end + (r.start_ts - r.prev_end) / 2 ELSE r.start_ts END AS tb
        FROM named n JOIN _reruns r USING (job_id) WHERE n.run = $run AND n.attempt IS NOT NULL
        ORDER BY n.attempt DESC, tb DESC
    """,
        {"run": run},
    ).fetchall()
    cut_attempts(con, run, cuts)


def cut_attempts(con: duckdb.DuckDBPyConnection, run: str, cuts: list[tuple[int, object]]) -> None:
    """Cut each attempt k of the run at time tb, for each (k, tb) of `cuts` (latest attempt first, then latest time
    first): each file's rows from its first dated line at or past tb on become attempt k + 1, the later attempts
    moving up by one first where k + 1 is taken. Nothing is cut where the attempt's dated rows lie wholly on one
    side of tb."""
    # NOTE: a cut's rows take a mark (MARK - its index) in place of k + 1, and every attempt's number is written once
    # per table at the end: shifting every later attempt up by one, table by table, for each cut was 144 of the 286
    # queries (0.4 of 0.75 s) on a campaign corpus whose two requeued runs had 18 cuts. The cuts come latest attempt
    # first (k never grows), so an unmarked row of attempt k has not moved when k's cuts come, and every shift after
    # a cut moves its rows up (they lie above k)
    made: list[tuple[int, bool]] = []  # each cut's attempt, and whether the later attempts moved up by one first
    for k, tb in cuts:
        dated = _rows(
            "run = $run AND attempt = $k AND ts IS NOT NULL "
            "AND file_id IN (SELECT file_id FROM ingested_files WHERE attempt IS NOT NULL)"
        )
        got = con.execute(
            f"""
            SELECT file_id, min(line) FILTER (WHERE ts >= $tb) AS b, count(*) FILTER (WHERE ts < $tb) AS before
            FROM ({dated}) GROUP BY file_id
        """,
            {"run": run, "k": k, "tb": tb},
        ).fetchall()
        cut = [(f, b) for f, b, _ in got if b is not None]
        if not cut or not sum(before for _, _, before in got):
            continue  # the attempt's evidence lies wholly on one side of the later run's start: nothing to split
        # a bundle numbered by launch left the requeued run's number free (`attempt-4/` then `attempt-6/`): the
        # later attempts keep theirs; else they move up by one
        made.append((k, _taken(con, run, k + 1, made)))
        params = {"run": run, "k": k, "mark": MARK - len(made) + 1, "files": [f for f, _ in cut],
                  "lines": [b for _, b in cut]}
        for t in _TS_TABLES:
            con.execute(
                f"""UPDATE {t} SET attempt = $mark WHERE run = $run AND attempt = $k
                            AND list_contains($files, file_id)
                            AND line >= $lines[list_position($files, file_id)]""",
                params,
            )
    if not made:
        return
    # any row no cut took: up one for every shift below its attempt
    dest = _dests(made)
    shifts = "".join(f" + (attempt > {int(k)})::INTEGER" for k, s in made if s)
    for t in _TS_TABLES:
        con.execute(f"""UPDATE {t} SET attempt = CASE WHEN attempt <= $mark THEN $dest[$mark - attempt + 1]
                                                      ELSE attempt{shifts} END
                        WHERE run = $run AND (attempt <= $mark{' OR attempt > $low' if shifts else ''})""",
                    {"run": run, "mark": MARK, "dest": dest, **({"low": min(k for k, _ in made)} if shifts else {})})


MARK = -(2**30)  # the attempt a cut's rows hold until `cut_attempts` ends (MARK - the cut's index): none is so low


def _dests(made: list[tuple[int, bool]]) -> list[int]:
    """The attempt each cut's rows are in after the cuts `made`: k + 1, and up one for every shift after it (every
    later cut's k is no greater, so its rows lie above)."""
    return [k + 1 + sum(s for _, s in made[i + 1:]) for i, (k, _) in enumerate(made)]


def _taken(con: duckdb.DuckDBPyConnection, run: str, n: int, made: list[tuple[int, bool]]) -> bool:
    """Whether a row of the run is in attempt `n` after the cuts `made`: a cut's rows, or the rows of the one attempt
    that the shifts so far bring to `n`."""
    if n in _dests(made):
        return True  # (each cut took a row at least: the first of a file's lines past the later run's start)
    was = [a for a in range(n, n - len(made) - 1, -1) if a + sum(s and a > k for k, s in made) == n]
    if not was:
        return False
    taken = " UNION ALL ".join(f"SELECT 1 FROM {t} WHERE run = $run AND attempt = $a" for t in _TS_TABLES)
    return bool(con.execute(f"SELECT count(*) FROM ({taken})", {"run": run, "a": was[0]}).fetchall()[0][0])
