"""Which host a job's own error belongs to: whether its ranks on several hosts raised it (then no host's), and the one
host srun says a task failed on (where a hostless device fault was raised). Split from `root_cause`, which uses them."""

from __future__ import annotations

import duckdb


def raised_on_many_hosts(con: duckdb.DuckDBPyConnection, a: dict, winner: dict) -> bool:
    """Whether the attempt's ranks on more than one host raised the winner's error: the job's own bug (a config that
    no longer fits its checkpoint, an illegal address in its kernel), which every rank meets, is no host's; the first
    to print it is chance. NOTE: one query per attempt that ended on a user's error, its ranks' lines of that kind"""
    return con.execute("""SELECT count(DISTINCT host) > 1 FROM events WHERE run = ? AND attempt = ?
                          AND failure_mode = ? AND kind = ? AND host IS NOT NULL""",
                       [a["run"], a["attempt"], winner["failure_mode"], winner["kind"]]).fetchall()[0][0]


def failed_tasks(con: duckdb.DuckDBPyConnection, runs: str | list[str]) -> dict[tuple, str]:
    """Per (run, attempt): the one host srun says a task of exited with an error code of its own (`srun: error: H:
    task 10: Exited with exit code 1`; the others were killed): where a hostless device fault was raised."""
    # NOTE: the events table, not the candidates: within a run an exit status carries no mode (collectors.slurm)
    rows = con.execute("""SELECT run, attempt, min(host) FROM events WHERE list_contains(?, run) AND source = 'slurm'
                          AND kind = 'slurm_task_exit' AND regexp_matches(text, 'exit code 0*[1-9]')
                          GROUP BY run, attempt HAVING count(DISTINCT host) = 1""",
                       [[runs] if isinstance(runs, str) else runs]).fetchall()
    return {(r, a): h for r, a, h in rows}


def nobodys(con: duckdb.DuckDBPyConnection, a: dict, winner: dict | None, mode: str | None,
            raised_by_all: tuple[str, ...]) -> bool:
    """Whether the winner's error is no host's: the user's error every rank meets, or an I/O error the job's
    processes raised on several hosts (a save every rank failed: the storage's, not the first host to print it)."""
    if winner is None:
        return False
    if mode in raised_by_all:
        return raised_on_many_hosts(con, a, winner)
    if mode != "filesystem_io" or winner["source"] == "kernel":
        return False
    # the same kind of line on another of the attempt's hosts while it ran (the job's output, or the host's own
    # filesystem client's log beside it: a FUSE mount's errors on every host)
    return con.execute("""
        SELECT count(DISTINCT e.host) > 1 FROM events e JOIN attempts t ON t.run = $run AND t.attempt = $attempt
        WHERE e.failure_mode = 'filesystem_io' AND e.source = $source AND e.kind = $kind AND e.host IS NOT NULL
          AND ((e.run = t.run AND e.attempt = t.attempt)
               OR (e.run IS NULL AND list_contains(t.hosts, e.host) AND e.ts BETWEEN t.start_ts AND t.end_ts))""",
                       {"run": a["run"], "attempt": a["attempt"], "source": winner["source"],
                        "kind": winner["kind"]}).fetchall()[0][0]
