"""Attempts of a run: from the bundle layout, or recovered from restarts visible in the logs."""

from __future__ import annotations

import datetime as dt

import duckdb

from clusterlab import hostlist, store
from clusterlab.ingest import host_names, ray_groups, requeues, step_clock
from clusterlab.tables import TABLE_COLUMNS

# NOTE: a node's fault episodes (a year-long trace, a repair CSV) are the fleet's history, not a launch's evidence:
# ingested with --run, they must not stretch its attempts
_TS_TABLES = [t for t, cols in TABLE_COLUMNS.items() if "ts" in cols and t not in ("jobs", "fault_episodes")]
# An in-job restart (ft_launcher, or torchrun with --max-restarts, restarting its worker group) is printed by every
# node's launcher within
# seconds; restart lines of one launch group closer than this are one restart.
RESTART_CLUSTER_S = 120.0
# The launcher lines that restart a worker group: ft_launcher's, and torchrun's (`--max-restarts`)
# "Worker group FAILED. 2/3 attempts left; will restart worker group".
# Ray Train's (Tune's) "Trial task failed for trial TorchTrainer_...": its worker group restarts from a checkpoint.
RESTART_LINES = ("((source IN ('ft_launcher', 'ray_train') AND kind = 'restart') "
                 "OR (source = 'torch' AND kind = 'worker_group_restart'))")
# Facts a launch prints first (`torchrun`'s start, the trainer's world size): where a log appended by each launch
# (`sbatch --requeue --open-mode=append`) begins its next attempt.
# what an appended instance prints as it starts; DeepSpeed's version banner (its engine's init) can come a line
# before the world size: left in the attempt before, it stretched that attempt to the next one's start
LAUNCH_FACTS = ("launcher_start", "world_size", "deepspeed_version")
# The longest save whose end still dates its attempt (a duration beyond is a misread, not a save)
SAVE_END_MAX_S = 6 * 3600.0
Restart = tuple[str, int | None, dt.datetime, list[tuple[int, int]]]  # run, path attempt, time, (file, line)s


def _split_unsplit_logs(con: duckdb.DuckDBPyConnection) -> None:
    """Number attempts in run logs that hold several launches: a new attempt starts where the
    step counter goes back (a restart from a checkpoint) or where a checkpoint is loaded."""
    con.execute("""
        CREATE OR REPLACE TEMP TABLE _restarts AS
        WITH unsplit AS (SELECT file_id FROM ingested_files WHERE run IS NOT NULL AND attempt IS NULL),
        -- a per-rank timing file appended by each launch restarts its step counter too (each rank's own counter:
        -- one file may hold every rank's records, one rank after another)
        s AS (
            SELECT file_id, rank, line, step, lag(step) OVER w AS prev, lag(line) OVER w AS prev_line
            FROM (SELECT file_id, line, step, NULL::INTEGER AS rank, source FROM steps
                  WHERE file_id IN (SELECT file_id FROM unsplit)
                  UNION ALL SELECT file_id, line, step, rank, source FROM rank_steps
                  WHERE file_id IN (SELECT file_id FROM unsplit))
            -- each printer of steps counts on its own: Megatron's iteration line and DeepSpeed's `step=N` line
            -- after it name the same step in one log, which is no counter going back
            WINDOW w AS (PARTITION BY file_id, rank, source ORDER BY line)
        ),
        gaps AS (
            SELECT s.*, (SELECT min(c.line) FROM checkpoints c
                         WHERE c.file_id = s.file_id AND c.action = 'load'
                           AND c.line > s.prev_line AND c.line < s.line) AS load_line
            FROM s WHERE prev_line IS NOT NULL
        )
        -- the new attempt starts at its launch where the log shows one (the launcher's start, the trainer's world
        -- size: what each appended instance prints first), else at its checkpoint load, else at its first step
        SELECT file_id, rank, prev_line, coalesce((SELECT min(x.line) FROM facts x
                                  WHERE x.file_id = gaps.file_id AND list_contains($launch, x.key)
                                    AND x.line > gaps.prev_line AND x.line <= coalesce(gaps.load_line, gaps.line)),
                                 load_line, line) AS line
        FROM gaps WHERE step <= prev OR load_line IS NOT NULL
    """, {"launch": list(LAUNCH_FACTS)})
    # one launch seen by two printers of steps is one restart: each printer places it somewhere after its own
    # last line before it; where those places overlap, the earliest is where the launch began
    con.execute("""
        DELETE FROM _restarts r WHERE EXISTS (
            SELECT 1 FROM _restarts o WHERE o.file_id = r.file_id AND o.rank IS NOT DISTINCT FROM r.rank
              AND o.line < r.line AND o.line > r.prev_line)
    """)
    for t in _TS_TABLES:
        # a per-rank record counts its own rank's restarts; every other line the log's (rank-less) ones
        rank = f"{t}.rank" if t == "rank_steps" else "NULL"
        con.execute(f"""
            UPDATE {t} SET attempt = 1 + (SELECT count(DISTINCT r.line) FROM _restarts r
                                          WHERE r.file_id = {t}.file_id AND r.line <= {t}.line
                                            AND r.rank IS NOT DISTINCT FROM {rank})
            WHERE file_id IN (SELECT file_id FROM ingested_files WHERE run IS NOT NULL AND attempt IS NULL)
        """)
    _align_unsplit_launches(con)
    _after_directory_attempts(con)
    _place_by_time(con)


def _align_unsplit_launches(con: duckdb.DuckDBPyConnection) -> None:
    """Number every appended log's launches on one run-wide count. Each file (each rank's stream of a per-rank
    file) counts its own launches from 1, but a file need not hold them all: a per-rank step file opened in
    append mode from the 6th launch on, or a rank that joined later, counts that launch as its 1st. The stream
    with the most launches of the run is the reference; every other stream's launch inside the reference's span
    takes the number of the reference launch its time span overlaps most (or, overlapping none, of the last one
    that began before it). A launch wholly before or after the reference's span (one `slurm-J.out` per job, the
    jobs one after another) is a launch of its own: such launches that overlap one another are one launch, and
    all launches are numbered in the order they began."""
    unsplit = "SELECT file_id FROM ingested_files WHERE run IS NOT NULL AND attempt IS NULL"
    if con.execute(f"SELECT count(*) FROM ({unsplit})").fetchall()[0][0] < 2:
        return
    rows = " UNION ALL ".join(
        f"SELECT run, file_id, {'rank' if t == 'rank_steps' else 'NULL::INTEGER'} AS rank, attempt, ts FROM {t} "
        f"WHERE file_id IN ({unsplit}) AND attempt IS NOT NULL AND ts IS NOT NULL" for t in _TS_TABLES)
    con.execute(f"""
        CREATE OR REPLACE TEMP TABLE _launch_map AS
        WITH seg AS (SELECT run, file_id, rank, attempt, min(ts) AS t0, max(ts) AS t1 FROM ({rows}) GROUP BY ALL),
        streams AS (SELECT run, file_id, rank, count(*) AS n, min(t0) AS first FROM seg GROUP BY ALL),
        ref AS (SELECT DISTINCT ON (run) run, file_id, rank FROM streams ORDER BY run, n DESC, first, file_id, rank),
        rseg AS (SELECT s.* FROM seg s JOIN ref r ON s.run = r.run AND s.file_id = r.file_id
                                           AND s.rank IS NOT DISTINCT FROM r.rank),
        span AS (SELECT run, min(t0) AS t0, max(t1) AS t1 FROM rseg GROUP BY run),
        -- a log that trains: only its launches can be launches of their own (a node's kernel log, whose lines
        -- come after the job's last step, is no later launch)
        stepping AS (SELECT DISTINCT file_id FROM steps WHERE file_id IN ({unsplit})
                     UNION SELECT DISTINCT file_id FROM rank_steps WHERE file_id IN ({unsplit})
                     -- NOTE: or one that launched training and died before its first step (a job whose checkpoint
                     -- load failed): its launcher's start or the trainer's world size says it is a launch
                     UNION SELECT DISTINCT file_id FROM facts WHERE file_id IN ({unsplit})
                       AND key IN ({", ".join(f"'{k}'" for k in LAUNCH_FACTS)})),
        -- launches wholly outside the reference's span, overlapping no reference launch
        outside AS (
            SELECT s.* FROM seg s JOIN span p ON p.run = s.run
            WHERE (s.t1 < p.t0 OR s.t0 > p.t1) AND s.file_id IN (SELECT file_id FROM stepping)
              AND NOT EXISTS (SELECT 1 FROM rseg r WHERE r.run = s.run AND r.t0 <= s.t1 AND r.t1 >= s.t0)
        ),
        -- outside launches that overlap one another are one launch (per-rank streams of one job)
        ochain AS (SELECT *, max(t1) OVER (PARTITION BY run ORDER BY t0, file_id, rank, attempt
                                           ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS reach FROM outside),
        oclus AS (SELECT *, sum(CASE WHEN reach IS NULL OR t0 > reach THEN 1 ELSE 0 END)
                              OVER (PARTITION BY run ORDER BY t0, file_id, rank, attempt) AS cluster FROM ochain),
        launches AS (
            SELECT run, 'r' AS kind, attempt AS key, min(t0) AS t0 FROM rseg GROUP BY ALL
            UNION ALL SELECT run, 'o', cluster, min(t0) FROM oclus GROUP BY ALL
        ),
        numbered AS (SELECT *, row_number() OVER (PARTITION BY run ORDER BY t0, kind, key) AS num FROM launches),
        best AS (
            SELECT DISTINCT ON (s.file_id, s.rank, s.attempt) s.file_id, s.rank, s.attempt AS old, s.run,
                   r.attempt AS ref_key, epoch(least(s.t1, r.t1) - greatest(s.t0, r.t0)) AS overlap,
                   r.t0 <= s.t0 AS began_before
            FROM seg s JOIN rseg r ON r.run = s.run
            ORDER BY s.file_id, s.rank, s.attempt, greatest(overlap, 0) DESC, began_before DESC, r.t0 DESC
        ),
        mapped AS (
            SELECT b.file_id, b.rank, b.old,
                   coalesce(o.num, CASE WHEN b.overlap > 0 OR b.began_before THEN n.num END, b.old) AS new
            FROM best b
            LEFT JOIN oclus c ON c.file_id = b.file_id AND c.rank IS NOT DISTINCT FROM b.rank AND c.attempt = b.old
            LEFT JOIN numbered o ON o.run = b.run AND o.kind = 'o' AND o.key = c.cluster
            LEFT JOIN numbered n ON n.run = b.run AND n.kind = 'r' AND n.key = b.ref_key
        )
        SELECT file_id, rank, old, new FROM mapped WHERE new <> old
    """)
    if not con.execute("SELECT 1 FROM _launch_map LIMIT 1").fetchall():
        return
    for t in _TS_TABLES:
        rank = f"{t}.rank" if t == "rank_steps" else "NULL"
        con.execute(f"""
            UPDATE {t} SET attempt = m.new FROM _launch_map m
            WHERE m.file_id = {t}.file_id AND m.rank IS NOT DISTINCT FROM {rank} AND m.old = {t}.attempt
        """)


def _after_directory_attempts(con: duckdb.DuckDBPyConnection) -> None:
    """A log holding several launches beside attempt directories of the same run (a requeued job's appended
    `slurm-J.out` next to `attempt-<k>/`) numbers its launches after the directory attempts that began before
    it, not from 1 again: its first launch is not the run's first attempt."""
    con.execute("""
        CREATE OR REPLACE TEMP TABLE _unsplit_offset AS
        WITH unsplit AS (SELECT file_id, run FROM ingested_files WHERE run IS NOT NULL AND attempt IS NULL),
        first AS (SELECT file_id, min(ts) AS t0 FROM steps WHERE file_id IN (SELECT file_id FROM unsplit)
                  GROUP BY file_id),
        dirs AS (SELECT i.run, i.attempt, min(s.ts) AS t FROM ingested_files i JOIN steps s ON s.file_id = i.file_id
                 WHERE i.run IS NOT NULL AND i.attempt IS NOT NULL GROUP BY ALL)
        SELECT u.file_id, (SELECT coalesce(max(d.attempt), 0) FROM dirs d WHERE d.run = u.run AND d.t < f.t0) AS off
        FROM unsplit u JOIN first f ON f.file_id = u.file_id
    """)
    if not con.execute("SELECT 1 FROM _unsplit_offset WHERE off > 0 LIMIT 1").fetchall():
        return
    for t in _TS_TABLES:
        con.execute(f"""
            UPDATE {t} SET attempt = {t}.attempt + o.off FROM _unsplit_offset o
            WHERE o.file_id = {t}.file_id AND o.off > 0 AND {t}.attempt IS NOT NULL
        """)


def _place_by_time(con: duckdb.DuckDBPyConnection) -> None:
    """Put each line of a run-level log that launches nothing (no step, no launcher start: a wrapper's or a
    managed-job controller's log, a node's syslog saved beside the run) in the attempt running at its time: the
    latest one begun at or before it (the first, before any began; an unstamped line goes with the line before
    it). Counted by its own restarts, the whole log was attempt 1, stretching that attempt over the campaign."""
    launching = " UNION ".join([f"SELECT file_id FROM {t}" for t in ("steps", "rank_steps")]
                               + [f"SELECT file_id FROM facts WHERE key IN ({', '.join(map(repr, LAUNCH_FACTS))})"])
    con.execute(f"""
        CREATE OR REPLACE TEMP TABLE _placed_files AS
        SELECT file_id, run FROM ingested_files WHERE run IS NOT NULL AND attempt IS NULL
          AND file_id NOT IN ({launching})
    """)
    if not con.execute("SELECT 1 FROM _placed_files LIMIT 1").fetchall():
        return
    rows = " UNION ALL ".join(f"SELECT run, attempt, ts FROM {t} WHERE attempt IS NOT NULL AND ts IS NOT NULL "
                              "AND file_id NOT IN (SELECT file_id FROM _placed_files)" for t in _TS_TABLES)
    lines = " UNION ALL ".join(f"SELECT file_id, line, ts FROM {t} WHERE file_id IN (SELECT file_id FROM "
                               "_placed_files)" for t in _TS_TABLES)
    con.execute(f"""
        CREATE OR REPLACE TEMP TABLE _placed AS
        WITH starts AS (SELECT run, attempt, min(ts) AS t0 FROM ({rows}) GROUP BY ALL),
        runs AS (SELECT run, arg_min(attempt, t0) AS first FROM starts GROUP BY run HAVING count(*) > 1),
        l AS (SELECT DISTINCT l.file_id, l.line, l.ts, p.run FROM ({lines}) l JOIN _placed_files p USING (file_id)
              WHERE p.run IN (SELECT run FROM runs)),
        timed AS (SELECT l.file_id, l.line, l.ts, s.attempt FROM l ASOF LEFT JOIN starts s
               ON s.run = l.run AND l.ts >= s.t0),
        -- an unstamped line (or one before every attempt) goes with the placed line before it, else the first
        filled AS (SELECT file_id, line, coalesce(attempt, last_value(attempt IGNORE NULLS) OVER (
                       PARTITION BY file_id ORDER BY line ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)) AS attempt
                   FROM (SELECT file_id, line, CASE WHEN ts IS NOT NULL THEN attempt END AS attempt FROM timed))
        SELECT f.file_id, f.line, coalesce(f.attempt, r.first) AS attempt
        FROM filled f JOIN _placed_files p USING (file_id) JOIN runs r USING (run)
    """)
    for t in _TS_TABLES:
        con.execute(f"""
            UPDATE {t} SET attempt = p.attempt FROM _placed p
            WHERE p.file_id = {t}.file_id AND p.line = {t}.line AND {t}.attempt IS DISTINCT FROM p.attempt
        """)


def _in_job_restarts(con: duckdb.DuckDBPyConnection) -> list[Restart]:
    """The in-job restarts of each launch group (run, attempt of the path): `(run, path_attempt, t, marks)`,
    `t` the first restart line's time, `marks` the first restart line of each file that printed one."""
    rows = con.execute(f"""
        SELECT e.run, f.attempt, e.ts, e.file_id, e.line FROM events e JOIN ingested_files f USING (file_id)
        WHERE {RESTART_LINES} AND e.run IS NOT NULL AND e.ts IS NOT NULL
        ORDER BY e.run, f.attempt NULLS FIRST, e.ts, e.file_id, e.line
    """).fetchall()
    out: list[Restart] = []
    last: tuple | None = None
    for run, path_attempt, t, file_id, line in rows:  # NOTE: one row per restart line: a handful per run
        if last is None or (run, path_attempt) != last[:2] or (t - last[2]).total_seconds() > RESTART_CLUSTER_S:
            out.append((run, path_attempt, t, []))
        marks = out[-1][3]
        if all(f != file_id for f, _ in marks):
            marks.append((file_id, line))
        last = (run, path_attempt, t)
    return out


def _split_in_job_restarts(con: duckdb.DuckDBPyConnection) -> None:
    """Split an attempt where a launcher (ft_launcher, torchrun) restarted its workers inside one allocation.

    The rows from the restart on (in the file that printed it, from its line; in the launch group's other
    files, from its time) become the next attempt, so that the failed part ends at the failure and the
    time to the restarted training's first step is that attempt's restart and startup. Where the restarted
    training's steps already are the next attempt (an unsplit log split at its checkpoint load), the rows
    between the restart and that load join it. A restart before the attempt's first step splits nothing."""
    # rows of attempt directories start from their directory's number (split anew); only in runs with restart
    # lines, the only ones split here: elsewhere this would rescan every table on every ingest
    restarted = f"SELECT DISTINCT run FROM events WHERE {RESTART_LINES} AND run IS NOT NULL"
    if not con.execute(restarted + " LIMIT 1").fetchall():
        return
    for t in _TS_TABLES:
        con.execute(f"UPDATE {t} SET attempt = f.attempt FROM ingested_files f WHERE {t}.file_id = f.file_id "
                    f"AND f.attempt IS NOT NULL AND {t}.run IN ({restarted}) "
                    f"AND {t}.attempt IS DISTINCT FROM f.attempt")
    for run, path_attempt, t0, marks in _in_job_restarts(con):
        first_file, first_line = marks[0]
        got = con.execute(f"SELECT attempt FROM events WHERE file_id = ? AND line = ? AND {RESTART_LINES}",
                          [first_file, first_line]).fetchall()
        if not got or got[0][0] is None:
            continue
        k = got[0][0]
        marks = _at_worker_group_start(con, marks, t0)
        params = {"run": run, "k": k, "pa": path_attempt, "t0": t0,
                  "files": [f for f, _ in marks], "lines": [ln for _, ln in marks]}
        group = "file_id IN (SELECT file_id FROM ingested_files WHERE attempt IS NOT DISTINCT FROM $pa)"
        after = ("(CASE WHEN list_contains($files, file_id) THEN line >= $lines[list_position($files, file_id)] "
                 "ELSE ts >= $t0 END)")
        mine = f"run = $run AND attempt = $k AND {group}"
        steps = " UNION ALL ".join(f"SELECT coalesce({after}, false) AS a FROM {t} WHERE {mine} AND step IS NOT NULL"
                                   for t in ("steps", "rank_steps"))
        before_n, after_n = con.execute(f"SELECT count(*) FILTER (WHERE NOT a), count(*) FILTER (WHERE a) "
                                        f"FROM ({steps})", params).fetchall()[0]
        if not before_n:
            continue  # the restart came before this attempt's training began: nothing to split
        nxt, nxt_here = con.execute(
            f"SELECT count(*), count(*) FILTER (WHERE list_contains($files, file_id)) FROM steps "
            f"WHERE run = $run AND attempt = $k + 1 AND {group}",
            {k: params[k] for k in ("run", "k", "pa", "files")}).fetchall()[0]
        if not after_n and nxt and not nxt_here:
            # the restart never trained (the launcher gave up: a failed health check, no rendezvous): the next
            # attempt is another launch (the next job's log), and what followed the restart is this one's end
            continue
        if after_n or not nxt:  # a new attempt: the later ones move up by one
            for t in _TS_TABLES:
                con.execute(f"UPDATE {t} SET attempt = attempt + 1 WHERE run = $run AND attempt > $k",
                            {"run": run, "k": k})
        for t in _TS_TABLES:
            con.execute(f"UPDATE {t} SET attempt = $k + 1 WHERE {mine} AND coalesce({after}, false)", params)


def _pod_hosts(con: duckdb.DuckDBPyConnection) -> None:
    """A Kubernetes pod's hostname is its pod name: what its processes print as their host (NCCL's `host:pid:tid`
    prefix, torchrun's failure summary, a step recorder's hostname) is the node the cluster bound the pod to at the
    time (`k8s_events` 'Scheduled ... to NODE'; a pod recreated under the same name may land on another node)."""
    if not con.execute("SELECT 1 FROM events WHERE kind = 'k8s_pod_scheduled' LIMIT 1").fetchall():
        return
    # NOTE: a pod of an Indexed Job (a JobSet's, a PyTorchJob's) is named `<job>-<index>-<5 random>` but its hostname,
    # what its processes print, is `<job>-<index>`: the name less that suffix is the pod too (each recreated pod
    # takes it again, on whatever node it was bound to: the binding at the row's time tells them apart)
    con.execute(r"""
        CREATE OR REPLACE TEMP TABLE _pod_binding AS
        SELECT pod, node, ts FROM (
            SELECT regexp_extract(text, '^Scheduled (\S+):', 1) AS name, host AS node, ts FROM events
            WHERE kind = 'k8s_pod_scheduled' AND host IS NOT NULL AND ts IS NOT NULL),
        LATERAL (SELECT unnest(list_distinct([name, regexp_replace(name, '-[a-z0-9]{5}$', '')])) AS pod)""")
    for t in ("events", "nccl_ranks", "rank_steps"):
        # the binding in force at the row's time; a row without one: the pod's only node, if it had one only
        con.execute(f"""
            UPDATE {t} SET host = coalesce(
                (SELECT arg_max(b.node, b.ts) FROM _pod_binding b WHERE b.pod = {t}.host AND b.ts <= {t}.ts),
                (SELECT any_value(b.node) FROM _pod_binding b WHERE b.pod = {t}.host
                 HAVING count(DISTINCT b.node) = 1), host)
            WHERE host IN (SELECT pod FROM _pod_binding)""")
    # a line that names no host in a pod's own log (`kubectl logs POD > POD.log`, `POD.CONTAINER.log`): the pod's node
    con.execute(r"""
        UPDATE events SET host = coalesce(
            (SELECT arg_max(b.node, b.ts) FROM _pod_binding b WHERE b.pod = f.pod AND b.ts <= events.ts),
            (SELECT any_value(b.node) FROM _pod_binding b WHERE b.pod = f.pod HAVING count(DISTINCT b.node) = 1))
        FROM (SELECT file_id, regexp_extract(path, '([^/.]+)[^/]*$', 1) AS pod FROM ingested_files) f
        WHERE events.host IS NULL AND events.file_id = f.file_id AND f.pod IN (SELECT pod FROM _pod_binding)""")


def _worker_group_starts(con: duckdb.DuckDBPyConnection) -> None:
    """A restarted attempt begins when torchelastic starts its new worker group (`[role] Starting worker group`, in a
    log that printed the attempt before too: an in-place restart), not with the first line of a replacement node's
    launcher that joined its rendezvous earlier: until the group starts, the job waits (restart), as it does for
    a requeued job's next allocation."""
    if not con.execute("SELECT 1 FROM events WHERE kind = 'worker_group_start' LIMIT 1").fetchall():
        return
    con.execute("""
        UPDATE attempts SET start_ts = w.ts FROM (
            SELECT e.run, e.attempt, min(e.ts) AS ts FROM events e
            WHERE e.kind = 'worker_group_start' AND e.source IN ('torch', 'ray_train') AND e.run IS NOT NULL
              AND e.ts IS NOT NULL
              AND EXISTS (SELECT 1 FROM events p WHERE p.file_id = e.file_id AND p.run = e.run
                          AND p.attempt = e.attempt - 1)
            GROUP BY e.run, e.attempt
        ) w WHERE attempts.run = w.run AND attempts.attempt = w.attempt AND w.ts > attempts.start_ts
          AND (attempts.first_step_ts IS NULL OR w.ts <= attempts.first_step_ts)
    """)


# How long before an attempt's first line Kubernetes may have bound its pods to their nodes (image pulls of a
# training image run to minutes), and the share of the attempt's nodes that must have been bound then (a gang)
SCHEDULED_LEAD_S = 1200.0
SCHEDULED_SHARE = 0.5


def _scheduled_starts(con: duckdb.DuckDBPyConnection) -> None:
    """An attempt whose pods Kubernetes bound to its nodes before its first line (`k8s_events`: a pod `Scheduled`
    to most of the attempt's nodes at once) began then: the GPUs were the job's from the binding on (image pull,
    container start, rendezvous), as a Slurm job's from its allocation. Not before the run's previous attempt ended."""
    if not con.execute("SELECT 1 FROM events WHERE kind = 'k8s_pod_scheduled' LIMIT 1").fetchall():
        return
    con.execute("""
        UPDATE attempts SET start_ts = b.bound FROM (
            SELECT a.run, a.attempt, min(e.ts) AS bound
            FROM attempts a JOIN events e ON e.kind = 'k8s_pod_scheduled' AND list_contains(a.hosts, e.host)
              AND e.ts < a.start_ts AND e.ts >= a.start_ts - to_seconds($lead)
              AND e.ts > coalesce((SELECT max(p.end_ts) FROM attempts p
                                   WHERE p.run = a.run AND p.attempt < a.attempt), e.ts - INTERVAL 1 SECOND)
            GROUP BY a.run, a.attempt, a.n_hosts
            HAVING count(DISTINCT e.host) >= greatest(1, ceil($share * a.n_hosts))
        ) b WHERE attempts.run = b.run AND attempts.attempt = b.attempt
    """, {"lead": SCHEDULED_LEAD_S, "share": SCHEDULED_SHARE})


def _workload_preemptions(con: duckdb.DuckDBPyConnection) -> None:
    """Give Kueue's preemption of a Workload the attempt of the job that workload is (`<kind>-<owner>-<5 hex>`, as
    Kueue names it after the JobSet or Job it admits): the one running then on the nodes the owner's pods (named
    `<owner>-...`) were bound to. The cluster's event log holds other tenants' workloads too: only such a tie counts."""
    if not con.execute("SELECT 1 FROM events WHERE kind = 'k8s_workload_preempted' AND run IS NULL LIMIT 1").fetchall():
        return
    con.execute(r"""
        UPDATE events SET run = m.run, attempt = m.attempt FROM (
            WITH w AS (SELECT file_id, line, text, ts,
                              regexp_extract(text, '^Preempted [a-z]+-(\S+)-[0-9a-f]{5}:', 1) AS owner
                       FROM events WHERE kind = 'k8s_workload_preempted' AND run IS NULL AND ts IS NOT NULL),
            p AS (SELECT regexp_extract(text, '^Scheduled (\S+):', 1) AS pod, host AS node FROM events
                  WHERE kind = 'k8s_pod_scheduled' AND host IS NOT NULL)
            -- (a document's events share the line its piece began on: the text tells them apart)
            SELECT w.file_id, w.line, w.text, any_value(a.run) AS run, any_value(a.attempt) AS attempt FROM w
            JOIN p ON w.owner <> '' AND starts_with(p.pod, w.owner || '-')
            JOIN attempts a ON list_contains(a.hosts, p.node) AND w.ts BETWEEN a.start_ts AND a.end_ts
            GROUP BY w.file_id, w.line, w.text HAVING count(DISTINCT (a.run, a.attempt)) = 1
        ) m WHERE events.file_id = m.file_id AND events.line = m.line AND events.text = m.text""")


# The longest a restarted worker group waits for its rendezvous (torchrun's default join timeout, 900 s): a worker group
# started later than this after the restart line is no start of that restart
WORKER_GROUP_WAIT_S = 900.0


def _at_worker_group_start(con: duckdb.DuckDBPyConnection, marks: list[tuple[int, int]], t0: dt.datetime
                           ) -> list[tuple[int, int]]:
    """Where torchelastic logs it (LOGLEVEL=INFO: `[role] Starting worker group`), a file's restarted attempt begins
    when its new workers start, not at the restart decision: stopping the old workers (a SIGKILL for one that ignored
    SIGTERM) ends the failed attempt, and the rendezvous wait (for a replacement node) lies between the two. (A
    file that printed no restart, a replacement node's agent, still splits at the restart's time.)"""
    got = con.execute("""
        SELECT m.f, min(e.line), min(e.ts) FROM (SELECT unnest($files) AS f, unnest($lines) AS l) m
        JOIN events e ON e.file_id = m.f AND e.line > m.l AND e.source IN ('torch', 'ray_train')
         AND e.kind = 'worker_group_start'
          AND e.ts BETWEEN $t0 AND $t0 + to_seconds($wait)
        GROUP BY m.f""", {"files": [f for f, _ in marks], "lines": [ln for _, ln in marks], "t0": t0,
                           "wait": WORKER_GROUP_WAIT_S}).fetchall()
    start = {f: line for f, line, _ in got}
    return [(f, start.get(f, ln)) for f, ln in marks]


def _hosts_of_ranks(con: duckdb.DuckDBPyConnection) -> None:
    """Give a rank's event the host that rank ran on, where the line names only the rank (a PyTorch
    `[rank5]:` traceback): from NCCL's init lines (the largest communicator: global ranks), the per-rank
    step records, and torchrun's failure summaries (the agent's host ran every rank it lists). Idempotent,
    and the same whichever file arrived first and however a file was cut into batches."""
    # NOTE: most events name their host: the map (a pass over every per-rank row) is built only when one does not
    if not con.execute("SELECT count(*) FROM (SELECT 1 FROM events WHERE host IS NULL AND rank IS NOT NULL "
                       "AND run IS NOT NULL LIMIT 1)").fetchall()[0][0]:
        return
    con.execute("""
        UPDATE events SET host = m.host
        FROM (
            SELECT DISTINCT ON (run, attempt, rank) run, attempt, rank, host FROM (
                SELECT run, attempt, rank, host, nranks, 0 AS pref FROM nccl_ranks
                WHERE run IS NOT NULL AND rank IS NOT NULL AND host IS NOT NULL
                UNION ALL
                SELECT DISTINCT run, attempt, rank, host, NULL, 1 FROM rank_steps
                WHERE run IS NOT NULL AND rank IS NOT NULL AND host IS NOT NULL
                UNION ALL
                -- a rank two summaries put on two hosts (two launches in one attempt) is left alone
                SELECT run, attempt, rank, any_value(host), NULL, 2 FROM events
                WHERE source = 'torch' AND kind = 'child_failed' AND run IS NOT NULL AND rank IS NOT NULL
                  AND host IS NOT NULL
                GROUP BY run, attempt, rank HAVING count(DISTINCT host) = 1)
            ORDER BY run, attempt, rank, pref, nranks DESC NULLS LAST, host
        ) m
        WHERE events.host IS NULL AND events.rank IS NOT NULL AND events.run = m.run
          AND events.attempt IS NOT DISTINCT FROM m.attempt AND events.rank = m.rank
    """)


# What the attempts are built from: every stored file and how much of it was read (cheap: one row a file)
_EVIDENCE = """SELECT count(*) || ':' || coalesce(max(file_id), 0) || ':' || coalesce(sum(rows), 0) || ':'
                      || coalesce(sum(lines), 0) || ':' || coalesce(sum(raw_bytes), 0) FROM ingested_files"""


def stale(con: duckdb.DuckDBPyConnection) -> bool:
    """Whether the attempts were built from other evidence than the store holds (an ingest killed before it
    rebuilt them): then `runs` lists runs without attempts, and incidents are missing. A database not migrated
    yet (opened read-only: a creating ingest killed between its migrations) has no record: not judged."""
    try:
        built = con.execute("SELECT evidence FROM derived WHERE name = 'attempts'").fetchall()
    except duckdb.CatalogException:
        return False
    now = con.execute(_EVIDENCE).fetchall()[0][0]
    return (built[0][0] if built else "0:0:0:0:0") != now


def refresh(con: duckdb.DuckDBPyConnection) -> None:
    """Recompute the attempts table from the evidence tables (idempotent)."""
    con.execute("BEGIN")
    try:
        # NOTE: unstamped step lines get their times from the step clock first: the attempts are cut by those times
        step_clock.date_steps(con)
        step_clock.bound_events(con)
        step_clock.date_last_words(con)
        _pod_hosts(con)
        host_names.resolve(con)
        ray_groups.date_group_starts(con)
        _split_unsplit_logs(con)
        _split_in_job_restarts(con)
        requeues.split_requeued(con)
        _hosts_of_ranks(con)
        union = " UNION ALL ".join(
            f"SELECT run, attempt, ts, host, {'step' if 'step' in TABLE_COLUMNS[t] else 'NULL::BIGINT'} AS step, "
            f"'{t}' AS tbl FROM {t} WHERE run IS NOT NULL"
            for t in _TS_TABLES
        )
        # NOTE: a save's row is dated by its start; where the log timed it, its end is the attempt's evidence too (the
        # final save_model and upload a completed job does last), bounded so that a garbled duration stretches nothing
        union += (" UNION ALL SELECT run, attempt, ts + to_microseconds(CAST(duration_s * 1e6 AS BIGINT)), host, "
                  "NULL::BIGINT, 'checkpoint_end' FROM checkpoints WHERE run IS NOT NULL AND ts IS NOT NULL "
                  f"AND duration_s > 0 AND duration_s < {SAVE_END_MAX_S}")
        con.execute("DELETE FROM attempts")
        con.execute(f"""
            INSERT INTO attempts
            SELECT run, coalesce(attempt, 1) AS attempt, min(ts), max(ts),
                   min(ts) FILTER (WHERE tbl IN ('steps', 'rank_steps')),
                   min(step) FILTER (WHERE tbl IN ('steps', 'rank_steps')),
                   max(step) FILTER (WHERE tbl IN ('steps', 'rank_steps')),
                   list_sort(list(DISTINCT host) FILTER (WHERE host IS NOT NULL)),  -- (not every row's host listed)
                   count(DISTINCT host)
            FROM ({union}) GROUP BY ALL
        """)
        _attempts_of_named_jobs(con)
        _hosts_of_jobs(con)
        _worker_group_starts(con)
        _scheduled_starts(con)
        _workload_preemptions(con)
        con.execute(f"""INSERT OR REPLACE INTO derived VALUES ('attempts', ({_EVIDENCE}), now())""")
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        raise


def _attempts_of_named_jobs(con: duckdb.DuckDBPyConnection) -> None:
    """A run whose bundle holds none of its own lines (its evidence exported from a log store, its trainer's output
    lost) still ran as the scheduler's jobs named after it: each such allocation is an attempt, in the order they
    started, so that its nodes' own evidence and the scheduler's verdicts have an attempt to explain."""
    con.execute("""
        INSERT INTO attempts (run, attempt, start_ts, end_ts, hosts, n_hosts)
        SELECT r.run, row_number() OVER (PARTITION BY r.run ORDER BY j.start_ts, j.job_id), j.start_ts, j.end_ts,
               []::VARCHAR[], 0
        FROM runs r JOIN jobs j ON j.job_name = r.run AND NOT contains(j.job_id, '.')
             AND j.start_ts IS NOT NULL AND j.end_ts >= j.start_ts
        WHERE NOT EXISTS (SELECT 1 FROM attempts a WHERE a.run = r.run)
        QUALIFY row_number() OVER (PARTITION BY r.run, j.job_id, j.start_ts ORDER BY j.end_ts DESC) = 1""")


def _hosts_of_jobs(con: duckdb.DuckDBPyConnection) -> None:
    """Add to an attempt's hosts the nodes of the scheduler's record of its job (sacct NodeList), where its
    own lines name the job (srun, slurmstepd) or the job is named after the run: a node that printed
    nothing into the run's logs was still part of the job, and its kernel log is evidence about the attempt."""
    named = con.execute(f"""
        WITH {store.NAMED_JOBS}, ids AS (SELECT * FROM named)
        SELECT DISTINCT ids.run, coalesce(ids.attempt, 1), j.nodelist FROM ids
        JOIN jobs j ON ids.job_id IN (j.job_id, j.job_id_raw)
        WHERE j.nodelist IS NOT NULL AND j.nodelist NOT IN ('None assigned', '(null)', '')
        UNION
        -- a job named after the run whose allocation holds the attempt (as clusterlab.diagnose.timeline matches spans)
        SELECT DISTINCT a.run, a.attempt, j.nodelist FROM attempts a JOIN jobs j
          ON j.job_name = a.run AND NOT contains(j.job_id, '.')
         AND j.start_ts <= a.start_ts + INTERVAL 60 SECOND AND j.end_ts >= a.end_ts - INTERVAL 60 SECOND
        WHERE j.nodelist IS NOT NULL AND j.nodelist NOT IN ('None assigned', '(null)', '')
    """).fetchall()
    extra: dict[tuple[str, int], set[str]] = {}
    for run, attempt, nodelist in named:  # NOTE: one row per (attempt, job), not per evidence row
        try:  # NOTE: bounded: a damaged or hostile NodeList must not expand to millions of hosts
            extra.setdefault((run, attempt), set()).update(hostlist.expand(nodelist))
        except ValueError:
            continue  # a NodeList we cannot read, or one naming more hosts than any job has, adds nothing
    if not extra:
        return
    # NOTE: one statement for every attempt (one UPDATE an attempt was 40 ms of a campaign corpus' refresh)
    keys = sorted(extra)
    con.execute("""UPDATE attempts SET hosts = list_sort(list_distinct(list_concat(attempts.hosts, x.more))),
                                       n_hosts = len(list_distinct(list_concat(attempts.hosts, x.more)))
                   FROM (SELECT unnest($runs::VARCHAR[]) AS run, unnest($attempts::INTEGER[]) AS attempt,
                                unnest($more::VARCHAR[][]) AS more) x
                   WHERE attempts.run = x.run AND attempts.attempt = x.attempt""",
                {"runs": [r for r, _ in keys], "attempts": [a for _, a in keys],
                 "more": [sorted(extra[k]) for k in keys]})
