"""Who stopped first: the ranks whose per-rank step records end behind every other rank's, in a job that hung.

In a synchronous job every rank finishes a step within the same collective. A rank that stops (a stuck
kernel, a dead GPU that does not error, a process that ignores its signals) leaves the others blocked in the
next collective: their records end one step after its own, and whatever they print afterwards (a watchdog
timeout, a gloo timeout, a time limit) is a symptom of it. This finds that rank from the records alone:
- only where the job stopped stepping well before the attempt ended (a hang, not a kill of a healthy job,
  whose ranks can part by one step as the signal reaches them);
- only ranks within `MAX_BEHIND` steps of the others and stamped within a few steps of them: records that end
  long before (a file that covers part of an attempt) say nothing about the end;
- only where few ranks are behind and they are all on one host; otherwise there is no single suspect.
Where the records cannot tell (a rank that hangs between steps leaves the others one collective later, but
their records of the last finished step agree), the step the others began can: `instrument.StepRecorder` writes
a stall record for a step still open long after it began (`step_stalled` events); the ranks that wrote one for the
step after their last are waiting in it, the ranks that did not never began it. Else the waiting ranks' own
timeouts can:
- the ranks missing from a flood of collective timeouts (every other rank timed out waiting; they did not,
  as they were not in the collective), where their output was read (the timeouts came from the job's own
  output, which holds every rank's, or a rank on their host did time out);
- the ranks whose timed-out collective is an earlier one (a lower `SeqNum`) than everyone else's.
The result is a candidate cause (`failure_mode` nccl_timeout on that host), ranked by `root_cause` with the rest.
"""

from __future__ import annotations

import datetime as dt

import duckdb
import polars as pl

from clusterlab import store

MAX_BEHIND = 2  # steps a stopped rank's last record may be behind the job's
NEAR_STEPS = 3.0  # its last record at most this many step times before the job's last progress
MAX_SHARE = 0.25  # more ranks than this share behind: a pattern of the job's, not one rank's stop
TIER = 58  # above what the waiting ranks print after it (timeouts, user errors), below hardware and I/O faults


# each attempt's last steps: where a rank that stopped first, and every rank waiting for it, left its last record
_TAIL = """tail AS (SELECT run, attempt, last_step - $tail AS from_step FROM attempts
                   WHERE last_step IS NOT NULL AND ($run IS NULL OR run = $run))"""


def suspects(con: duckdb.DuckDBPyConnection, run: str | None, hang_min_s: float, hang_steps: float,
             profile: pl.DataFrame | None = None) -> pl.DataFrame:
    """One candidate row per attempt whose hang has a single suspect host (the `candidates` columns).
    `profile`: `timeline.rank_profile(con, run)` where the caller has it; it tells which attempts can have one."""
    schema = {"run": pl.String, "attempt": pl.Int32, "ts": pl.Datetime("us"), "host": pl.String,
              "source": pl.String, "kind": pl.String, "failure_mode": pl.String, "xid": pl.Int32,
              "rank": pl.Int32, "peer": pl.String, "file": pl.String, "line": pl.Int64, "text": pl.String,
              "tier": pl.Int32, "detail": pl.String}
    worth = None if profile is None or run is None else _worth_a_look(con, run, profile)
    if worth is not None and not worth:
        return pl.DataFrame(_from_unkillable(con, run), schema=schema)
    # NOTE: one pass, over each attempt's last steps only (a stopped rank is within MAX_BEHIND of the end): the
    # per-rank table is the largest there is, and a pass over all of it would cost as much as attribution
    tail = store.frame(con, f"""
        WITH {_TAIL if worth is None else _TAIL.replace("WHERE", "WHERE list_contains($worth, attempt) AND")}
        SELECT rs.run, rs.attempt, rs.rank, any_value(rs.host) AS host, max(rs.step) AS last_step,
               max(rs.ts) AS last_ts, max_by(rs.file_id, rs.step) AS file_id, max_by(rs.line, rs.step) AS line,
               avg(rs.step_s) AS step_s
        FROM rank_steps rs JOIN tail USING (run, attempt)
        -- (the tails' step numbers first, as a filter on the scan: a join alone would hash every row)
        WHERE rs.step IN (SELECT unnest(range(from_step, from_step + $tail + 1)) FROM tail)
          AND rs.step >= tail.from_step AND rs.rank IS NOT NULL
        GROUP BY rs.run, rs.attempt, rs.rank
    """, {"run": run, "tail": MAX_BEHIND + 1, **({} if worth is None else {"worth": sorted(worth)})})
    found = store.frame(con, """
        WITH j AS (
            SELECT run, attempt, max(last_step) AS job_step, max(last_ts) AS job_ts, count(*) AS ranks,
                   avg(step_s) AS step_s FROM r GROUP BY run, attempt
        ),
        behind AS (
            SELECT r.*, j.job_step, j.job_ts, j.ranks, j.step_s AS job_step_s FROM r JOIN j USING (run, attempt)
            WHERE r.last_step < j.job_step AND r.last_step >= j.job_step - $max_behind
              AND r.last_ts >= j.job_ts - to_microseconds(CAST($near * coalesce(j.step_s, 0) * 1e6 AS BIGINT))
        )
        SELECT b.*, a.end_ts, f.path AS file FROM behind b JOIN attempts a USING (run, attempt)
        JOIN ingested_files f USING (file_id)
    """, {"max_behind": MAX_BEHIND, "near": NEAR_STEPS}, r=tail)
    rows = []
    for (run_, attempt), g in found.group_by(["run", "attempt"], maintain_order=True):
        first = g.row(0, named=True)
        hang = max(hang_min_s, hang_steps * (first["job_step_s"] or 0.0))
        hung = first["end_ts"] is not None and (first["end_ts"] - first["job_ts"]).total_seconds() >= hang
        hosts = g["host"].drop_nulls().unique()
        if not hung or g.height > MAX_SHARE * first["ranks"] or hosts.len() != 1 or g["host"].null_count():
            continue
        lead = g.sort("last_step", "rank").row(0, named=True)
        ranks = ", ".join(str(r) for r in sorted(g["rank"].to_list()))
        # when it should have finished its next step: the moment the others began to wait for it
        stopped = lead["last_ts"] + dt.timedelta(seconds=lead["step_s"] or 0.0)
        rows.append({
            "run": run_, "attempt": attempt, "ts": stopped, "host": hosts[0], "source": "rank_steps",
            "kind": "stopped_first", "failure_mode": "nccl_timeout", "xid": None, "rank": lead["rank"],
            "peer": None, "file": lead["file"], "line": lead["line"],
            "text": (f"rank {ranks} on {hosts[0]} recorded step {lead['last_step']} last; the other "
                     f"{first['ranks'] - g.height} ranks recorded step {first['job_step']}, then the job "
                     f"stepped no more for {(first['end_ts'] - first['job_ts']).total_seconds() / 60:.0f} min"),
            "tier": TIER, "detail": None,
        })
    # where the records name nobody, the step the others began may, else the timeouts the waiting ranks printed
    for more in (_from_stalls(con, run, tail, hang_min_s), _from_desync(con, run), _from_timeouts(con, run, tail),
                 _from_unkillable(con, run)):
        seen = {(r["run"], r["attempt"]) for r in rows}
        rows += [r for r in more if (r["run"], r["attempt"]) not in seen]
    return pl.DataFrame(rows, schema=schema)


def _worth_a_look(con: duckdb.DuckDBPyConnection, run: str, profile: pl.DataFrame) -> set[int]:
    """The attempts of `run` where any of the ways can name a rank, told without reading the per-rank rows:
    fewer ranks recorded the last step than one of the steps before it (a rank behind), a stall record, a desync
    report's lagging rank, or collective
    timeouts from fewer ranks than recorded steps, or of different collectives (`_from_timeouts`' `worth`)."""
    counts = profile.filter(pl.col("attempt").is_not_null()).sort("step").group_by("attempt").agg(
        last=pl.col("n_c").last(), most=pl.col("n_c").tail(MAX_BEHIND + 1).max())
    behind = set(counts.filter(pl.col("last") < pl.col("most"))["attempt"].to_list())
    ranks = dict(counts.select("attempt", "most").iter_rows())
    said = store.frame(con, """
        SELECT attempt, bool_or(kind = 'step_stalled') AS stalled, bool_or(kind = 'desync_lagging') AS desync,
               count(DISTINCT rank) FILTER (WHERE kind = 'watchdog_timeout') AS timed_out,
               min(TRY_CAST(json_extract_string(detail, '$.seq_num') AS BIGINT))
                   FILTER (WHERE kind = 'watchdog_timeout') AS lo,
               max(TRY_CAST(json_extract_string(detail, '$.seq_num') AS BIGINT))
                   FILTER (WHERE kind = 'watchdog_timeout') AS hi
        FROM events WHERE run = $run AND attempt IS NOT NULL AND rank IS NOT NULL
          AND kind IN ('step_stalled', 'watchdog_timeout', 'desync_lagging')
        GROUP BY attempt""", {"run": run})
    # NOTE: without per-rank records the world communicator's size (NCCL's init lines) counts the ranks
    world = dict(con.execute("SELECT attempt, max(nranks) FROM nccl_ranks WHERE run = ? AND attempt IS NOT NULL "
                             "GROUP BY attempt", [run]).fetchall())
    for r in said.iter_rows(named=True):  # NOTE: one row per attempt
        short = r["timed_out"] and r["timed_out"] < (ranks.get(r["attempt"]) or world.get(r["attempt"]) or 0)
        if r["stalled"] or r["desync"] or short or (r["lo"] is not None and r["lo"] < r["hi"]):
            behind.add(r["attempt"])
    return behind


def _from_stalls(con: duckdb.DuckDBPyConnection, run: str | None, tail: pl.DataFrame, hang_min_s: float
                 ) -> list[dict]:
    """Suspects from the stall records (the module's third paragraph): the ranks of an attempt whose records end at
    the same step as the others' but which never began the step the others are stalled in. Only in an attempt that
    is over (a later one began) or has been stalled `hang_min_s`: in the attempt a watch follows, a stall younger
    than that is the hang rule's to call."""
    if not con.execute("""SELECT count(*) FROM events WHERE kind = 'step_stalled' AND run IS NOT NULL
                          AND ($run IS NULL OR run = $run)""", {"run": run}).fetchall()[0][0]:
        return []
    t = store.frame(con, """
        WITH st AS (
            SELECT e.run, e.attempt, e.rank, max(TRY_CAST(json_extract_string(e.detail, '$.step') AS BIGINT)) AS step,
                   min(e.ts - to_microseconds(CAST(1e6 * coalesce(TRY_CAST(json_extract_string(e.detail, '$.stalled_s')
                       AS DOUBLE), 0) AS BIGINT))) AS since,
                   arg_min(f.path, e.ts) AS file, arg_min(e.line, e.ts) AS line
            FROM events e JOIN ingested_files f USING (file_id)
            WHERE e.kind = 'step_stalled' AND e.rank IS NOT NULL AND e.run IS NOT NULL
              AND ($run IS NULL OR e.run = $run)
            GROUP BY ALL
        ),
        r AS (
            SELECT t.run, t.attempt, t.rank, t.host, t.last_step, st.since, st.file, st.line,
                   coalesce(st.step > t.last_step, false) AS waiting,
                   max(t.last_step) OVER (PARTITION BY t.run, t.attempt) AS job_step
            FROM tail t LEFT JOIN st USING (run, attempt, rank)
            WHERE (t.run, t.attempt) IN (SELECT (run, attempt) FROM st)
        )
        SELECT r.* FROM r JOIN attempts a USING (run, attempt)
        WHERE r.last_step = r.job_step
          AND (a.attempt < (SELECT max(attempt) FROM attempts a2 WHERE a2.run = a.run)
               OR a.end_ts >= (SELECT min(since) FROM r r2 WHERE r2.run = r.run AND r2.attempt = r.attempt)
                              + to_microseconds(CAST($hang * 1e6 AS BIGINT)))
        ORDER BY run, attempt, rank
    """, {"run": run, "hang": hang_min_s}, tail=tail)
    rows = []
    for (run_, attempt), g in t.group_by(["run", "attempt"], maintain_order=True):
        waiting, silent = g.filter("waiting"), g.filter(~pl.col("waiting"))
        hosts = silent["host"].drop_nulls().unique()
        if not waiting.height or not silent.height or silent.height > waiting.height or hosts.len() != 1 \
                or silent["host"].null_count():
            continue
        first = waiting.sort("since").row(0, named=True)
        ranks = ", ".join(str(r) for r in silent["rank"].to_list())
        rows.append({
            "run": run_, "attempt": attempt, "ts": first["since"], "host": hosts[0], "source": "rank_steps",
            "kind": "stopped_first", "failure_mode": "nccl_timeout", "xid": None, "rank": int(silent["rank"].min()),
            "peer": None, "file": first["file"], "line": first["line"],
            "text": (f"rank {ranks} on {hosts[0]} never began step {first['last_step'] + 1}; the other "
                     f"{waiting.height} ranks began it and stalled in it"),
            "tier": TIER, "detail": None,
        })
    return rows


def _from_desync(con: duckdb.DuckDBPyConnection, run: str | None) -> list[dict]:
    """Suspects from PyTorch's own desync report (TORCH_NCCL_DESYNC_DEBUG=1): the ranks it names as lagging (they
    finished the collective before and never joined the one the others wait in, or never joined any), where they
    are few and on one host. Dated when the others began to wait (the earliest timeout less how long it ran)."""
    t = store.frame(con, """
        WITH lag AS (
            SELECT e.run, e.attempt, e.host, e.ts, f.path AS file, e.line,
                   string_split(replace(json_extract_string(e.detail, '$.lagging_ranks'), ' ', ''), ',') AS ranks
            FROM events e JOIN ingested_files f USING (file_id)
            WHERE e.kind = 'desync_lagging' AND e.run IS NOT NULL AND ($run IS NULL OR e.run = $run)
        ),
        world AS (SELECT run, attempt, max(nranks) AS nranks FROM nccl_ranks
                  WHERE run IS NOT NULL AND ($run IS NULL OR run = $run) GROUP BY ALL),
        wait AS (
            SELECT run, attempt, min(ts - to_milliseconds(coalesce(TRY_CAST(json_extract_string(detail, '$.ran_for_ms')
                       AS BIGINT), 0))) AS since
            FROM events WHERE kind = 'watchdog_timeout' AND run IS NOT NULL AND ($run IS NULL OR run = $run)
            GROUP BY ALL
        )
        SELECT lag.run, lag.attempt, count(DISTINCT lag.host) AS hosts, count(*) - count(lag.host) AS unplaced,
               any_value(lag.host) AS host, max(len(lag.ranks)) AS n, list_sort(flatten(list(DISTINCT lag.ranks)))
               AS ranks, any_value(world.nranks) AS nranks, coalesce(any_value(wait.since), min(lag.ts)) AS ts,
               arg_min(lag.file, lag.ts) AS file, arg_min(lag.line, lag.ts) AS line
        FROM lag LEFT JOIN world USING (run, attempt) LEFT JOIN wait USING (run, attempt)
        GROUP BY lag.run, lag.attempt
    """, {"run": run})
    rows = []
    for r in t.iter_rows(named=True):
        ranks = sorted({int(x) for x in r["ranks"] if x.isdigit()})
        few = r["nranks"] is None or len(ranks) <= MAX_SHARE * r["nranks"]
        # NOTE: the report's line names the lagging ranks, each on the host the launch put it: one host, or nobody
        if r["hosts"] != 1 or r["unplaced"] or not few or len(ranks) != r["n"]:
            continue
        rows.append({
            "run": r["run"], "attempt": r["attempt"], "ts": r["ts"], "host": r["host"], "source": "torch",
            "kind": "stopped_first", "failure_mode": "nccl_timeout", "xid": None, "rank": ranks[0], "peer": None,
            "file": r["file"], "line": r["line"],
            "text": f"rank {', '.join(map(str, ranks))} on {r['host']}: PyTorch's desync report names it the lagging "
                    f"rank the others waited for",
            "tier": TIER, "detail": None,
        })
    return rows


def _from_timeouts(con: duckdb.DuckDBPyConnection, run: str | None, tail: pl.DataFrame) -> list[dict]:
    """Suspects from the collective timeouts the waiting ranks printed (see the module's second list); `tail`: the
    ranks' last records, as `suspects` read them."""
    if not con.execute("""SELECT count(*) FROM events WHERE kind = 'watchdog_timeout' AND rank IS NOT NULL
                          AND run IS NOT NULL AND ($run IS NULL OR run = $run)""", {"run": run}).fetchall()[0][0]:
        return []
    t = store.frame(con, """
        WITH ranks AS (
            SELECT run, attempt, rank, host, max(last_ts) OVER (PARTITION BY run, attempt) AS job_ts
            FROM tail WHERE host IS NOT NULL
            UNION ALL
            -- NOTE: an attempt without per-rank records: its ranks are the world communicator's, as NCCL's init lines
            -- list them (the rank -> host map), so a rank that printed no timeout is still seen to be missing
            SELECT DISTINCT n.run, n.attempt, n.rank, n.host, NULL::TIMESTAMP FROM nccl_ranks n
            WHERE n.run IS NOT NULL AND n.attempt IS NOT NULL AND n.rank IS NOT NULL AND n.host IS NOT NULL
              AND ($run IS NULL OR n.run = $run)
              AND n.nranks = (SELECT max(m.nranks) FROM nccl_ranks m WHERE m.run = n.run AND m.attempt = n.attempt)
              AND NOT EXISTS (SELECT 1 FROM tail t WHERE t.run = n.run AND t.attempt = n.attempt)
        ),
        tm AS (
            -- when the wait began: the timeout's time less how long the collective ran (where it says); a timeout
            -- line without a stamp of its own lies anywhere up to its interval's end (`ts_hi`): the latest the wait
            -- can have begun, so that the borrowed earlier end never puts the stop before steps the job still made
            SELECT e.run, e.attempt, e.rank,
                   min(CASE WHEN e.dated IN ('between', 'after') THEN coalesce(e.ts_hi, e.ts) ELSE e.ts END
                       - to_milliseconds(coalesce(TRY_CAST(json_extract_string(e.detail, '$.ran_for_ms')
                       AS BIGINT), 0))) AS ts,
                   min(TRY_CAST(json_extract_string(e.detail, '$.seq_num') AS BIGINT)) AS seq,
                   arg_min(f.path, e.ts) AS file, arg_min(e.line, e.ts) AS line,
                   bool_or(f.host IS NULL) AS jobwide  -- printed into the job's own output (srun, torchrun)
            FROM events e JOIN ingested_files f USING (file_id)
            WHERE e.kind = 'watchdog_timeout' AND e.rank IS NOT NULL AND e.run IS NOT NULL
              AND ($run IS NULL OR e.run = $run)
            GROUP BY ALL
        )
        ,
        j AS (
            -- (never before the job's last recorded step: a timeout's own arithmetic is not to be trusted further)
            SELECT r.run, r.attempt, r.rank, r.host, greatest(tm.ts, r.job_ts) AS ts, tm.seq, tm.file, tm.line,
                   tm.rank IS NOT NULL AS timed_out,
                   coalesce(bool_or(tm.jobwide) OVER (PARTITION BY r.run, r.attempt), false) AS jobwide
            FROM ranks r LEFT JOIN tm USING (run, attempt, rank)
            WHERE (r.run, r.attempt) IN (SELECT (run, attempt) FROM tm)
        ),
        -- the attempts worth a closer look: a few silent ranks on one host, or collectives of different numbers
        worth AS (
            SELECT run, attempt FROM j GROUP BY run, attempt
            HAVING (count(*) FILTER (WHERE NOT timed_out) BETWEEN 1 AND count(*) // 2
                    AND count(DISTINCT host) FILTER (WHERE NOT timed_out) = 1)
                OR min(seq) < max(seq)
        )
        SELECT j.* FROM j SEMI JOIN worth USING (run, attempt)
    """, {"run": run}, tail=tail)
    rows = []
    own = _own_faults(con, run)
    for (run_, attempt), g in t.group_by(["run", "attempt"], maintain_order=True):
        waited = g.filter("timed_out")
        silent = g.filter(~pl.col("timed_out"))
        seqs = waited["seq"].drop_nulls()
        behind = waited.filter(pl.col("seq") < seqs.max()) if seqs.len() else silent.clear()
        for cut, why in ((silent, "printed no collective timeout where the other {n} ranks timed out waiting"),
                         (behind, "timed out in an earlier collective than the other {n} ranks")):
            hosts = cut["host"].unique()
            # its output was read: the timeouts came from the job's own output, or from its host's
            covered = g["jobwide"][0] or waited.filter(pl.col("host").is_in(hosts.to_list())).height > 0
            if not cut.height or hosts.len() != 1 or cut.height > g.height - cut.height or not covered:
                continue
            ranks = ", ".join(str(r) for r in sorted(cut["rank"].to_list()))
            first = waited.sort("ts").row(0, named=True)
            if _explained(own, run_, attempt, hosts[0], first["ts"]):
                break  # its host's kernel says why it stopped (a hung read, a GPU fault): that is the candidate
            # NOTE: every waiting rank began to wait at the same moment: the median of their clocks, not the
            # earliest, so that one host whose clock runs slow does not move the stop before the job's last step
            began = waited.select(pl.col("ts").median()).item()
            rows.append({
                "run": run_, "attempt": attempt, "ts": began, "host": hosts[0], "source": "torch",
                "kind": "stopped_first", "failure_mode": "nccl_timeout", "xid": None,
                "rank": int(cut["rank"].min()), "peer": None, "file": first["file"], "line": first["line"],
                "text": f"rank {ranks} on {hosts[0]} " + why.format(n=g.height - cut.height),
                "tier": TIER, "detail": None,
            })
            break
    return rows


UNKILLABLE_TIER = 38  # above the timeouts every waiting rank prints (symptoms), below any cause a line states


# NOTE: the kernel's word that a CPU of the host stayed stuck (a soft lockup, an RCU stall): why its rank stopped
STUCK_KINDS = ("soft_lockup", "rcu_stall")


def _from_unkillable(con: duckdb.DuckDBPyConnection, run: str | None) -> list[dict]:
    """A worker its launcher could not stop: torchrun had to SIGKILL it because its SIGTERM did not (`Unable to
    shutdown process P via Signals.SIGTERM`), or Slurm gave up on the step (`*** STEP J.0 STEPD TERMINATED ON host AT
    ... DUE TO JOB NOT ENDING WITH SIGNALS ***`, slurmctld's `Kill task failed`). Wedged in a kernel, a collective or
    an uninterruptible read, it is where a hung job stopped. Where every such line of an attempt is on one host, that
    host is the suspect, dated when the others began to wait for it (their collective timeouts less how long the
    collective ran), else at the attempt's last step record (the last progress before it wedged); where its kernel
    said a CPU stayed stuck from then on (a soft lockup, an RCU stall), the host itself (`host_hw`)."""
    t = store.frame(con, f"""
        WITH u AS (
            SELECT e.run, e.attempt, any_value(e.host) AS host, count(DISTINCT e.host) AS hosts,
                   arg_min(f.path, e.ts) AS file, arg_min(e.line, e.ts) AS line, arg_min(e.text, e.ts) AS text,
                   min(e.ts) AS ts,
                   (SELECT max(s.ts) FROM steps s WHERE s.run = e.run AND s.attempt = e.attempt) AS last_step_ts,
                   (SELECT median(w.ts - to_milliseconds(TRY_CAST(json_extract_string(w.detail, '$.ran_for_ms')
                                                                  AS BIGINT)))
                    FROM events w WHERE w.run = e.run AND w.attempt = e.attempt AND w.kind = 'watchdog_timeout'
                      AND w.dated IS NULL) AS waited_ts
            FROM events e JOIN ingested_files f USING (file_id)
            WHERE ((e.kind = 'worker_unkillable' AND e.source = 'torch')
                   OR (e.kind = 'slurm_stepd_terminated' AND contains(e.text, 'NOT ENDING WITH SIGNALS')))
              AND e.run IS NOT NULL AND e.attempt IS NOT NULL AND ($run IS NULL OR e.run = $run)
            GROUP BY e.run, e.attempt HAVING count(DISTINCT e.host) = 1 AND count(*) = count(e.host)
        )
        SELECT u.*, (SELECT arg_min(k.text, k.ts) FROM events k
                     WHERE k.host = u.host AND k.source = 'kernel' AND list_contains($stuck, k.kind)
                       AND k.ts BETWEEN coalesce(u.waited_ts, u.last_step_ts, u.ts) - INTERVAL {int(OWN_FAULT_BEFORE_S)}
                           SECOND AND u.ts) AS stuck
        FROM u
    """, {"run": run, "stuck": list(STUCK_KINDS)})
    rows = []
    for r in t.iter_rows(named=True):  # NOTE: one row per attempt
        began = max((x for x in (r["last_step_ts"], r["waited_ts"]) if x is not None), default=r["ts"])
        why = f"{r['host']}'s launcher could not stop its worker: {r['text'][-120:]}"
        if r["stuck"]:
            why += f"; its kernel: {r['stuck'][-100:]}"
        rows.append({"run": r["run"], "attempt": r["attempt"], "ts": began, "host": r["host"], "source": "torch",
                     "kind": "worker_unkillable", "failure_mode": "host_hw" if r["stuck"] else "nccl_timeout",
                     "xid": None, "rank": None, "peer": None, "file": r["file"], "line": r["line"], "text": why,
                     "tier": UNKILLABLE_TIER, "detail": None})
    return rows


# NOTE: how long before the others began to wait a fault on the silent rank's host may have stopped it
OWN_FAULT_BEFORE_S = 300.0


def _own_faults(con: duckdb.DuckDBPyConnection, run: str | None) -> pl.DataFrame:
    """The kernel's errors on each host of the run's attempts, while the attempt lasted (a fault there is why a
    rank of that host stopped: it is a candidate of its own, and a stronger one than the timeouts' arithmetic)."""
    return store.frame(con, """
        SELECT a.run, a.attempt, e.host, e.ts, a.end_ts FROM events e
        JOIN attempts a ON list_contains(a.hosts, e.host) AND e.ts BETWEEN a.start_ts AND a.end_ts
        WHERE e.source = 'kernel' AND e.severity IN ('error', 'critical') AND e.failure_mode IS NOT NULL
          AND e.failure_mode <> 'unknown' AND ($run IS NULL OR a.run = $run)
    """, {"run": run})


def _explained(own: pl.DataFrame, run: str, attempt: int, host: str, waited_from: dt.datetime) -> bool:
    """Whether `host` logged a fault of its own from shortly before the others began to wait to the attempt's end."""
    if not own.height:
        return False
    lo = waited_from - dt.timedelta(seconds=OWN_FAULT_BEFORE_S)
    return own.filter((pl.col("run") == run) & (pl.col("attempt") == attempt) & (pl.col("host") == host)
                      & (pl.col("ts") >= lo)).height > 0
