"""Cutting a requeued job's directory attempts (`ingest.requeues.cut_attempts`) numbers every row as the plain way
does: for each cut in turn, move every later attempt up by one (where k + 1 is taken), then move the cut's rows to
k + 1, table by table. The plain way, written here as the reference, cost a query per table for each cut; the
module marks the cut rows and writes each table once. Hypothesis draws the rows (several tables, files that hold
rows of two attempts, rows without a time, files outside any attempt directory, a bundle numbered by launch with a
gap) and the cuts (several in one attempt, some that cut nothing)."""

from __future__ import annotations

import datetime as dt
import shutil
from pathlib import Path

import duckdb
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from clusterlab import Lab
from clusterlab.ingest import requeues

T0 = dt.datetime(2026, 11, 24, 8, 0)
TABLES = ("rank_steps", "events", "steps")


def _reference(con: duckdb.DuckDBPyConnection, run: str, cuts: list[tuple[int, dt.datetime]]) -> None:
    """The cuts made one by one with an UPDATE per table for each shift and each move."""
    tables = requeues._TS_TABLES
    for k, tb in cuts:
        dated = requeues._rows("run = $run AND attempt = $k AND ts IS NOT NULL "
                               "AND file_id IN (SELECT file_id FROM ingested_files WHERE attempt IS NOT NULL)")
        got = con.execute(f"""SELECT file_id, min(line) FILTER (WHERE ts >= $tb), count(*) FILTER (WHERE ts < $tb)
                              FROM ({dated}) GROUP BY file_id""", {"run": run, "k": k, "tb": tb}).fetchall()
        cut = [(f, b) for f, b, _ in got if b is not None]
        if not cut or not sum(n for _, _, n in got):
            continue
        taken = " UNION ALL ".join(f"SELECT 1 FROM {t} WHERE run = $run AND attempt = $k + 1" for t in tables)
        if con.execute(f"SELECT count(*) FROM ({taken})", {"run": run, "k": k}).fetchall()[0][0]:
            for t in tables:
                con.execute(f"UPDATE {t} SET attempt = attempt + 1 WHERE run = ? AND attempt > ?", [run, k])
        for t in tables:
            con.execute(f"""UPDATE {t} SET attempt = $k + 1 WHERE run = $run AND attempt = $k
                            AND list_contains($files, file_id) AND line >= $lines[list_position($files, file_id)]""",
                        {"run": run, "k": k, "files": [f for f, _ in cut], "lines": [b for _, b in cut]})


def _snapshot(con: duckdb.DuckDBPyConnection) -> dict[str, list[tuple]]:
    return {t: con.execute(f"SELECT file_id, line, ts, attempt FROM {t} ORDER BY ALL").fetchall() for t in TABLES}


rows = st.lists(st.tuples(st.sampled_from(TABLES), st.integers(0, 5), st.integers(1, 40),
                          st.one_of(st.none(), st.integers(0, 600))), min_size=20, max_size=60)
# each file's directory attempt (None: outside any); attempt 3 left free (a bundle numbered by launch)
file_attempts = st.lists(st.sampled_from([1, 2, 4, 5, None]), min_size=6, max_size=6)
cut_list = st.lists(st.tuples(st.sampled_from([1, 2, 4, 5]), st.integers(0, 600)), min_size=1, max_size=5)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=rows, homes=file_attempts, cuts=cut_list, moved=st.lists(st.booleans(), min_size=60, max_size=60))
def test_cuts_number_every_row_as_the_plain_way(tmp_path_factory, rows, homes, cuts, moved) -> None:
    root = tmp_path_factory.mktemp("cuts")
    db = root / "a.duckdb"
    with Lab(db):
        pass
    con = duckdb.connect(str(db))
    for f, home in enumerate(homes):
        con.execute("INSERT INTO ingested_files (file_id, path, run, attempt) VALUES (?, ?, 'r', ?)",
                    [f, f"f{f}", home])
    for i, (table, f, line, secs) in enumerate(rows):
        # a row of a file in an attempt directory is in that attempt, or (an earlier split's) the next one
        home = homes[f]
        attempt = None if home is None else home + (1 if moved[i] and home in (1, 4) else 0)
        ts = None if secs is None else T0 + dt.timedelta(seconds=secs)
        extra = ", step" if table != "events" else ""
        con.execute(f"INSERT INTO {table} (run, attempt, file_id, line, ts{extra}) VALUES ('r', ?, ?, ?, ?"
                    f"{', 1' if extra else ''})", [attempt, f, line, ts])
    con.close()
    order = sorted({(k, T0 + dt.timedelta(seconds=s)) for k, s in cuts}, key=lambda c: (-c[0], -c[1].timestamp()))
    shutil.copy(db, root / "b.duckdb")
    with duckdb.connect(str(db)) as a, duckdb.connect(str(root / "b.duckdb")) as b:
        requeues.cut_attempts(a, "r", order)
        _reference(b, "r", order)
        assert _snapshot(a) == _snapshot(b)


def test_a_cut_moves_the_later_attempts_up_where_its_number_is_taken(tmp_path: Path) -> None:
    """Attempt 4 holds two runs of a job and 5 is free (a bundle numbered by launch): its second run takes 5 and
    nothing moves. Attempt 1 holds two runs and 2 is taken: every later attempt moves up by one (2 -> 3, 4 -> 5,
    5 -> 6, 6 -> 7) and its second run becomes 2."""
    with Lab(tmp_path / "a.duckdb"):
        pass
    con = duckdb.connect(str(tmp_path / "a.duckdb"))
    for f, attempt in enumerate([1, 2, 4, 6]):
        con.execute("INSERT INTO ingested_files (file_id, path, run, attempt) VALUES (?, ?, 'r', ?)",
                    [f, f"f{f}", attempt])
        for line in range(1, 5):
            con.execute("INSERT INTO steps (run, attempt, file_id, line, ts, step) VALUES ('r', ?, ?, ?, ?, ?)",
                        [attempt, f, line, T0 + dt.timedelta(hours=f, minutes=10 * line), line])
    requeues.cut_attempts(con, "r", [(4, T0 + dt.timedelta(hours=2, minutes=25)),
                                     (1, T0 + dt.timedelta(minutes=25))])
    got = con.execute("SELECT file_id, list(attempt ORDER BY line) FROM steps GROUP BY 1 ORDER BY 1").fetchall()
    assert got == [(0, [1, 1, 2, 2]), (1, [3, 3, 3, 3]), (2, [5, 5, 6, 6]), (3, [7, 7, 7, 7])]


def test_the_next_directory_that_holds_the_later_runs_own_evidence_takes_its_rows_and_nothing_moves(
        tmp_path: Path) -> None:
    """A bundle kept one directory per run of a requeued job: the appended `slurm-700.out` in `attempt-1/` holds both
    runs, `attempt-2/` the second run's own logs (undated NCCL lines, no other job), `attempt-3/` the next job's. The
    second run's rows of `slurm-700.out` join attempt 2; no attempt moves up (an attempt with no time was left)."""
    with Lab(tmp_path / "a.duckdb"):
        pass
    con = duckdb.connect(str(tmp_path / "a.duckdb"))
    files = [(0, "runs/r/attempt-1/slurm-700.out", 1), (1, "runs/r/attempt-2/nccl/h1.log", 2),
             (2, "runs/r/attempt-3/slurm-701.out", 3)]
    for f, path, attempt in files:
        con.execute("INSERT INTO ingested_files (file_id, path, run, attempt) VALUES (?, ?, 'r', ?)",
                    [f, path, attempt])
    for line in range(1, 7):  # the appended output: three lines of each run
        con.execute("INSERT INTO steps (run, attempt, file_id, line, ts, step) VALUES ('r', 1, 0, ?, ?, ?)",
                    [line, T0 + dt.timedelta(hours=0 if line <= 3 else 2, minutes=line), line])
    con.execute("INSERT INTO events (run, attempt, file_id, line, ts, kind) VALUES ('r', 2, 1, 1, NULL, 'nccl_init')")
    con.execute("INSERT INTO steps (run, attempt, file_id, line, ts, step) VALUES ('r', 3, 2, 1, ?, 9)",
                [T0 + dt.timedelta(hours=5)])
    for job, start, end in [("700", T0, T0 + dt.timedelta(hours=1)), ("700", T0 + dt.timedelta(hours=2),
                                                                       T0 + dt.timedelta(hours=3)),
                            ("701", T0 + dt.timedelta(hours=5), T0 + dt.timedelta(hours=6))]:
        con.execute("INSERT INTO jobs (job_id, start_ts, end_ts) VALUES (?, ?, ?)", [job, start, end])
    requeues.split_requeued(con)
    got = dict(con.execute("""SELECT file_id, list(attempt ORDER BY line) FROM (SELECT file_id, line, attempt FROM steps
                              UNION ALL SELECT file_id, line, attempt FROM events) GROUP BY 1""").fetchall())
    assert got == {0: [1, 1, 1, 2, 2, 2], 1: [2], 2: [3]}
