"""Onsets of an attempt's loss that the line that won dates late: a loss that went NaN and stayed NaN, read off the
lines that say so; a filesystem failure that began as a save that never finished, or as a wait a later line dates
itself (a Lustre request's send time, a hung task's `blocked for more than N seconds`).

`root_cause._divergence_onsets` dates a divergence by the spike in the step records' losses; a log whose step
records carry no loss (DeepSpeed's `step=N, skipped=0, lr=[...]` lines) says NaN only in other lines: a progress
bar's `train_loss=nan`, a guard's message. A job that keeps stepping on a NaN loss prints one such line every few
steps until someone stops it, often long after the candidates' window (`incidents.Settings.window_s`) before its
last step: the root of the attempt's end is the first line of that last unbroken run of them (no two more than
`Settings.divergence_chain_s` apart), not the last one the window still held. A line without a stamp of its own
counts at the latest its interval allows (`ts_hi`): an onset is never put before what its neighbours prove.
"""

from __future__ import annotations

import duckdb
import polars as pl

from clusterlab import store


def _last_steps(of: str) -> str:
    """The CTE `st`: each attempt of the CTE `of` (its `run`, `attempt`) with its last step record's time
    (`last_step`) and number (`max_step`)."""
    return (f"st AS (SELECT s.run, s.attempt::INTEGER AS attempt, max(s.ts) AS last_step, max(s.step) AS max_step "
            f"FROM steps s JOIN {of} ON s.run = {of}.run AND s.attempt = {of}.attempt WHERE s.ts IS NOT NULL "
            "GROUP BY ALL)")


def line_onsets(con: duckdb.DuckDBPyConnection, inc: pl.DataFrame, chain_s: float) -> pl.DataFrame:
    """`inc` with the root of each attempt a divergence ended moved back to the first line of its last unbroken run
    of dated loss-divergence lines, where that is earlier."""
    div = inc.filter(pl.col("failure_mode") == "loss_divergence", pl.col("kind") == "attempt_end")
    if not div.height:
        return inc
    lines = store.frame(con, """
        SELECT e.run, e.attempt::INTEGER AS attempt, coalesce(e.ts_lo, e.ts) AS lo, coalesce(e.ts_hi, e.ts) AS hi
        FROM events e
        JOIN (SELECT DISTINCT run, attempt::INTEGER AS attempt FROM div) d ON e.run = d.run AND e.attempt = d.attempt
        WHERE e.failure_mode = 'loss_divergence' AND e.ts IS NOT NULL ORDER BY e.run, e.attempt, lo""",
                        div=div.select("run", "attempt"))
    if not lines.height:
        return inc
    keys = ["run", "attempt"]
    # a gap is one the lines prove: from the latest the earlier ones can have been to the earliest of the next (a
    # last line dated only up to the next launch's first stamp does not break the run)
    gap = (pl.col("lo") - pl.col("hi").cum_max().shift(1).over(keys)).dt.total_seconds()
    onset = (lines.with_columns(seg=(gap > chain_s).fill_null(False).cum_sum().over(keys))
             .filter(pl.col("seg") == pl.col("seg").max().over(keys))
             .group_by(keys).agg(onset=pl.col("hi").first(), last=pl.col("hi").max()))
    # only a run of lines that reaches the root that won: a spike long before it, which the loss came back from, is
    # another run
    return _move_roots(inc, onset, "loss_divergence", "onset",
                       (pl.col("onset") < pl.col("root_ts")) & (pl.col("last") >= pl.col("root_ts")))


def open_save_onsets(con: duckdb.DuckDBPyConnection, inc: pl.DataFrame) -> pl.DataFrame:
    """`inc` with the root of each attempt a filesystem failure ended moved back to the start of the save it was
    writing: its last save began before the root, never said it was done (no duration, no later save of its step),
    and no step record came after it began but the saved step's own (Megatron-DeepSpeed prints `saving checkpoint
    at iteration N`, then DeepSpeed's `step=N` of a rank whose clock runs a few ms on: no progress past the save).
    The job stalled in that write from its start; the client's first timeout (an OST's `ost_write ... failed:
    rc = -107` half a minute in) only says so (campaign2's convention: the start of the save that never
    completed)."""
    fs = inc.filter(pl.col("failure_mode") == "filesystem_io", pl.col("kind") == "attempt_end")
    if not fs.height:
        return inc
    opened = store.frame(con, f"""
        WITH a AS (SELECT DISTINCT run, attempt::INTEGER AS attempt FROM fs),
        sv AS (SELECT c.run, c.attempt::INTEGER AS attempt, coalesce(c.step, -1) AS step, min(c.ts) AS ts,
                      bool_or(c.duration_s IS NOT NULL OR coalesce(c.ok, false)) AS done
               FROM checkpoints c JOIN a ON c.run = a.run AND c.attempt = a.attempt
               WHERE c.action = 'save' AND c.ts IS NOT NULL GROUP BY ALL),
        last AS (SELECT * FROM sv QUALIFY row_number() OVER (PARTITION BY run, attempt ORDER BY ts DESC) = 1),
        {_last_steps("a")}
        SELECT last.run, last.attempt, last.ts AS save_ts FROM last JOIN st USING (run, attempt)
        WHERE NOT last.done AND (st.last_step <= last.ts OR (last.step >= 0 AND st.max_step <= last.step))""",
                        fs=fs.select("run", "attempt"))
    if not opened.height:
        return inc
    return _move_roots(inc, opened, "filesystem_io", "save_ts", pl.col("save_ts") < pl.col("root_ts"))


def request_sent_onsets(con: duckdb.DuckDBPyConnection, inc: pl.DataFrame, within_s: float) -> pl.DataFrame:
    """`inc` with the root of each attempt a filesystem failure ended moved back to when the storage first left one
    of the attempt's hosts waiting, by the time a line reports of its own:

    - Lustre's client prints a request's timeout when its deadline passes, tens of seconds to minutes after it sent
      it (its adaptive timeout, stretched by early replies), and the line carries the send time (`[sent 1796137721/`,
      epoch seconds in no zone: the kernel collector's `sent`);
    - the kernel's hung-task watchdog reports a task `blocked for more than N seconds`: it has waited since N
      seconds before the report at the latest.

    Only the attempt's hosts' lines printed within `within_s` of the root, whose onset lies after the attempt's last
    step record (before it, the job still stepped: that wait did not hold it) and no later than the line itself."""
    fs = inc.filter(pl.col("failure_mode") == "filesystem_io", pl.col("kind") == "attempt_end",
                    pl.col("root_ts").is_not_null())
    if not fs.height:
        return inc
    sent = store.frame(con, f"""
        WITH f AS (SELECT DISTINCT f.run, f.attempt::INTEGER AS attempt, f.root_ts, a.hosts FROM fs f
                   JOIN attempts a ON a.run = f.run AND a.attempt = f.attempt),
        {_last_steps("f")},
        e AS (SELECT f.run, f.attempt, e.ts, CASE WHEN e.kind = 'lustre_timeout'
                     THEN make_timestamp(TRY_CAST(json_extract_string(e.detail, '$.sent') AS BIGINT) * 1000000)
                     ELSE e.ts - to_seconds(TRY_CAST(json_extract_string(e.detail, '$.blocked_s') AS BIGINT)) END
                     AS sent_ts
              FROM events e JOIN f ON list_contains(f.hosts, e.host)
              WHERE e.kind IN ('lustre_timeout', 'hung_task') AND e.ts IS NOT NULL AND e.dated IS NULL
                AND e.ts BETWEEN f.root_ts - to_seconds($within) AND f.root_ts + to_seconds($within))
        SELECT e.run, e.attempt, min(e.sent_ts) AS sent_ts FROM e JOIN st USING (run, attempt)
        WHERE e.sent_ts > st.last_step AND e.sent_ts <= e.ts GROUP BY ALL""",
                        {"within": within_s}, fs=fs.select("run", "attempt", "root_ts"))
    if not sent.height:
        return inc
    return _move_roots(inc, sent, "filesystem_io", "sent_ts", pl.col("sent_ts") < pl.col("root_ts"))


# The banners of the scheduler's kill of a whole job (collectors.slurm)
_KILL_BANNERS = ("slurm_requeued", "slurm_time_limit", "slurm_cancelled", "slurm_preempted")


def kill_onsets(con: duckdb.DuckDBPyConnection, inc: pl.DataFrame, within_s: float) -> pl.DataFrame:
    """`inc` with the root of each attempt a time limit ended moved to the scheduler's kill of the job, where a line
    that warned of the limit won (Lightning's `Handling auto-requeue signal: 10`, submitit's `this job is timed-out`):
    the job saves and steps on after the warning, healthy until the kill (campaign1's convention: the root event of
    a time limit is the cancellation itself). The kill is slurmstepd's banner at or after the root, within
    `within_s`."""
    tl = inc.filter(pl.col("failure_mode") == "time_limit", pl.col("kind") == "attempt_end")
    if not tl.height:
        return inc
    kinds = ", ".join(f"'{k}'" for k in _KILL_BANNERS)
    kills = store.frame(con, f"""
        SELECT e.run, e.attempt::INTEGER AS attempt, min(e.ts) AS kill_ts FROM events e
        JOIN tl ON e.run = tl.run AND e.attempt = tl.attempt::INTEGER
        WHERE e.source = 'slurm' AND e.kind IN ({kinds}) AND e.ts IS NOT NULL AND e.dated IS NULL
          AND e.ts >= tl.root_ts AND e.ts <= tl.root_ts + to_seconds($within)
        GROUP BY ALL""", {"within": within_s}, tl=tl.select("run", "attempt", "root_ts"))
    if not kills.height:
        return inc
    return _move_roots(inc, kills, "time_limit", "kill_ts", pl.col("kill_ts").is_not_null())


# What a node's peers print when it vanishes under them: their store client's reset connection, their NCCL
# transport's failed completions, their watchdog tearing the communicator down (collectors.torch_dist, .nccl)
_PEER_SYMPTOMS = ("store_lost", "ib_completion_error", "watchdog_terminated", "comm_aborted", "nccl_error")


def node_loss_onsets(con: duckdb.DuckDBPyConnection, inc: pl.DataFrame) -> pl.DataFrame:
    """`inc` with the root of each attempt a lost node ended moved back to the first line its peers stamped about
    losing contact, after the attempt's last step record: a node that dies says nothing, and the verdicts that name
    it come late (srun's `Node failure on H` when the controller gives up on it, slurmctld's `not responding` after
    its SlurmdTimeout, a line without a stamp of its own dated by what follows it). The peers' first complaint
    (their c10d store connection reset, an IB completion error towards it) is the nearest the evidence comes to the
    moment it died: the steps it cut short ran until then (`ledger.with_unlogged_steps`). Only lines of the other
    hosts with a stamp of their own, after the job's last step record (before it, the job still stepped at pace)."""
    nf = inc.filter(pl.col("failure_mode") == "node_failure", pl.col("kind") == "attempt_end",
                    pl.col("root_ts").is_not_null())
    if not nf.height:
        return inc
    kinds = ", ".join(f"'{k}'" for k in _PEER_SYMPTOMS)
    first = store.frame(con, f"""
        WITH nf AS (SELECT DISTINCT run, attempt::INTEGER AS attempt, host, root_ts FROM nf),
        {_last_steps("nf")}
        SELECT nf.run, nf.attempt, min(e.ts) AS peer_ts FROM events e
        JOIN nf ON e.run = nf.run AND e.attempt = nf.attempt JOIN st ON st.run = nf.run AND st.attempt = nf.attempt
        WHERE e.kind IN ({kinds}) AND e.ts IS NOT NULL AND e.dated IS NULL AND e.host IS NOT NULL
          AND e.host IS DISTINCT FROM nf.host AND e.ts > st.last_step AND e.ts < nf.root_ts
        GROUP BY ALL""", nf=nf.select("run", "attempt", "host", "root_ts"))
    if first.height:
        inc = _move_roots(inc, first, "node_failure", "peer_ts", pl.col("peer_ts") < pl.col("root_ts"))
    return _last_signs_of_life(con, inc, first)


def _last_signs_of_life(con: duckdb.DuckDBPyConnection, inc: pl.DataFrame, moved: pl.DataFrame) -> pl.DataFrame:
    """`inc` with the root of each attempt a lost node ended, where no peer stamped its loss (`moved`: those that
    did), moved back to the last time the node answered the controller (slurmctld's `unexpectedly rebooted ...
    last response=EPOCH` once it comes back), when that is after the job's last step record: it was alive then and
    dead before the late verdicts, and a log that prints every N steps stepped on, unlogged, until about then. Its
    last answer is the latest the node is known alive, so the steps counted before it ran (never a whole
    `not responding` timeout booked as hang, nor the steps since the last record); a save that finished after that
    answer (every rank, the node's too, waits at its barrier) is later proof of life."""
    nf = inc.filter(pl.col("failure_mode") == "node_failure", pl.col("kind") == "attempt_end",
                    pl.col("root_ts").is_not_null(), pl.col("host").is_not_null())
    if moved.height:
        nf = nf.join(moved.select("run", pl.col("attempt").cast(nf.schema["attempt"])), on=["run", "attempt"],
                     how="anti")
    if not nf.height:
        return inc
    alive = store.frame(con, f"""
        WITH nf AS (SELECT DISTINCT run, attempt::INTEGER AS attempt, host, root_ts FROM nf),
        {_last_steps("nf")},
        lr AS (SELECT e.host, to_timestamp(TRY_CAST(json_extract_string(e.detail, '$.last_response') AS BIGINT))
                      ::TIMESTAMPTZ AT TIME ZONE 'UTC' AS alive_ts
               FROM events e WHERE e.kind = 'slurm_node_reboot'
                 AND json_extract_string(e.detail, '$.last_response') IS NOT NULL),
        -- a save every rank finished after it (the barrier around it waits for the node's ranks too) says the node
        -- was alive later still: its last answer may be a ping interval before the death
        sv AS (SELECT c.run, c.attempt::INTEGER AS attempt,
                      max(c.ts + to_microseconds(CAST(c.duration_s * 1e6 AS BIGINT))) AS saved
               FROM checkpoints c JOIN nf ON c.run = nf.run AND c.attempt = nf.attempt
               WHERE c.action = 'save' AND coalesce(c.ok, true) AND c.duration_s IS NOT NULL GROUP BY ALL)
        SELECT nf.run, nf.attempt, greatest(max(lr.alive_ts), max(sv.saved)) AS alive_ts FROM nf
        JOIN st ON st.run = nf.run AND st.attempt = nf.attempt JOIN lr ON lr.host = nf.host
        LEFT JOIN sv ON sv.run = nf.run AND sv.attempt = nf.attempt AND sv.saved < nf.root_ts
        WHERE lr.alive_ts > st.last_step AND lr.alive_ts < nf.root_ts
        GROUP BY ALL""", nf=nf.select("run", "attempt", "host", "root_ts"))
    if not alive.height:
        return inc
    return _move_roots(inc, alive, "node_failure", "alive_ts", pl.col("alive_ts") < pl.col("root_ts"))


def _move_roots(inc: pl.DataFrame, found: pl.DataFrame, mode: str, to: str, when: pl.Expr) -> pl.DataFrame:
    """`inc` with the root of each attempt end of `mode` moved to `found`'s column `to` (by run and attempt) where
    `when` (over `found`'s columns and `root_ts`) holds; `found`'s columns left out."""
    keys = ["run", "attempt"]
    times = [c for c in found.columns if c not in keys]
    w = (inc.with_columns(pl.col("attempt").cast(pl.Int32)).join(found, on=keys, how="left")
         .with_columns(pl.col(c).cast(inc.schema["root_ts"]) for c in times))
    moved = (pl.col("failure_mode") == mode) & (pl.col("kind") == "attempt_end") & when
    return (w.with_columns(root_ts=pl.when(moved).then(pl.col(to)).otherwise(pl.col("root_ts")))
            .drop(times).cast({"attempt": inc.schema["attempt"]}).select(inc.columns))


CLIMB_WINDOW = 20  # logged steps before a point whose losses give the band it is measured against
CLIMB_FENCE = 3.0  # interquartile ranges above the band's upper quartile: the run's own noise, not a fixed ratio


def climb_starts(con: duckdb.DuckDBPyConnection, spikes: pl.DataFrame) -> pl.DataFrame:
    """`spikes` (`run, attempt, step` of the spike a divergence was read from) with each step moved back to the start
    of the climb that reached it. A loss that creeps up after a burst of gradient norms crosses the spike ratio tens
    of logged steps after it left its own band (the `CLIMB_WINDOW` logged steps before it); the steps in between
    already trained on a diverging model, and so did the step whose gradient norm burst out of its own band just
    before the loss left its band (the loss a step logs was computed before that step's update). A sudden spike
    has no such climb before it: it stays."""
    if not spikes.height:
        return spikes
    rows = store.frame(con, """
        SELECT s.run, s.attempt, st.step, arg_max(st.loss, st.line) AS loss, arg_max(st.grad_norm, st.line) AS gn
        FROM steps st JOIN spikes s ON st.run = s.run AND st.attempt = s.attempt AND st.step <= s.step
        WHERE st.loss IS NOT NULL AND isfinite(st.loss) GROUP BY ALL ORDER BY ALL""",
                       spikes=spikes.select("run", "attempt", "step"))
    if not rows.height:
        return spikes

    def fence(col: str) -> pl.Expr:
        q = {p: pl.col(col).rolling_quantile(p, window_size=CLIMB_WINDOW, min_samples=8).shift(1)
             for p in (0.25, 0.75)}
        return (q[0.75] + CLIMB_FENCE * (q[0.75] - q[0.25])).over("run", "attempt")

    # the climb's first row: above its band, with every later row up to the spike above that same band (later
    # rows' own bands hold the climb already); a loss still falling reaches its minimum later, so no row qualifies
    floor = pl.col("loss").reverse().cum_min().reverse().over("run", "attempt")
    rows = rows.with_columns(climbing=(floor > fence("loss")).fill_null(False),
                             burst=(pl.col("gn") > fence("gn")).fill_null(False))
    first = rows.filter("climbing").group_by("run", "attempt").agg(start=pl.col("step").min())
    before = (rows.join(first, on=["run", "attempt"]).filter(pl.col("step") < pl.col("start"))
              .group_by("run", "attempt").agg(pl.all().sort_by("step").last())
              .filter("burst").select("run", "attempt", burst_step="step"))
    climb = first.join(before, on=["run", "attempt"], how="left").select(
        "run", "attempt", start=pl.coalesce("burst_step", "start"))
    return (spikes.join(climb, on=["run", "attempt"], how="left")
            .with_columns(step=pl.min_horizontal("step", pl.col("start").cast(spikes.schema["step"])))
            .drop("start"))


def _back(seconds: pl.Expr) -> pl.Expr:
    return pl.duration(microseconds=(seconds * 1e6).round().cast(pl.Int64))


def spike_onsets(logged: pl.DataFrame, spikes: pl.DataFrame) -> pl.DataFrame:
    """`run, attempt, onset` of each spike (`run, attempt, step`) on one run's step clock (`logged`: `attempt, step,
    ts, step_s`, sorted by attempt, step, ts): the start of the spike's step, its record's end less the step's
    printed time, else less its share of the time since the record before. A record logged every N steps (HF
    Trainer's `logging_steps`, a loop's `log_interval`) covers N steps: its step began a step's time before it was
    logged, not at the record before (hf_cloud_spot at seed 34: 133 s early, where a save fell in that interval)."""
    n = (pl.col("step") - pl.col("step").shift(1).over("attempt")).fill_null(1).clip(lower_bound=1)
    prev = pl.col("ts").shift(1).over("attempt")
    start = pl.coalesce(pl.col("ts") - _back(pl.col("step_s")), pl.col("ts") - (pl.col("ts") - prev) / n)
    logged = logged.unique(["attempt", "step"], keep="last", maintain_order=True).with_columns(onset=start)
    return spikes.join(logged, on=["attempt", "step"]).select("run", "attempt", "onset")
