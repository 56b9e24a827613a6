"""Incidents: the evidence an attempt's end is judged on, which host was slow, which save stalled or was lost.

Root cause, not symptom. Evidence is ranked in tiers: a hardware signal on one host outranks a
network error naming a peer, which outranks an application error on a rank, which outranks the
generic watchdog timeouts every rank prints once the job hangs. `clusterlab.diagnose.root_cause` keeps only
the evidence consistent with the step timeline and the scheduler's verdict, and uses the tiers to
break ties among it.
"""

from __future__ import annotations

from dataclasses import dataclass

import duckdb
import polars as pl

from clusterlab import store, taxonomy
from clusterlab.diagnose import checkpoint_files, timeline

# NOTE: order matters: the first matching rule gives an event its tier.
TIERS: list[tuple[int, str]] = [
    # srun's "Exited with exit code N" (or a signal): every rank of a job that died of anything exits non-zero
    (25, "source = 'slurm' AND kind IN ('slurm_task_exit', 'slurm_task_signal')"),
    (100, "failure_mode IN ('gpu_fell_off_bus','gpu_memory_ecc','gpu_hw_other','nvlink_error','pcie_error',"
          "'host_hw')"),
    (100, "failure_mode = 'network' AND source = 'kernel'"),  # link down / NIC health on the host itself
    # ... and its node health check's verdict on its own port (NHC's check_hw_ib drains the node, collectors._slurmlib)
    (100, "failure_mode = 'network' AND kind IN ('slurm_node_reason', 'sinfo_node', 'scontrol_node')"),
    # `Kill task failed`: the step's processes would not die (stuck in the kernel on a hung GPU or filesystem); the
    # node's drain names where, not why: what the kernel said on it (or on the shared filesystem's clients) wins
    (30, "failure_mode = 'node_failure' AND source IN ('slurmctld', 'scontrol', 'sinfo') "
         "AND json_extract_string(detail, '$.reason') ILIKE 'Kill task failed%'"),
    # NOTE: slurmstepd's own words for the same thing (`STEPD TERMINATED ... DUE TO JOB NOT ENDING WITH SIGNALS`)
    (30, "failure_mode = 'node_failure' AND kind = 'slurm_stepd_terminated'"),
    # an elastic agent that lost the rendezvous (its store's node gone): every surviving agent says it, about another
    (35, "failure_mode = 'node_failure' AND kind = 'rendezvous_lost'"),
    (90, "failure_mode IN ('node_failure', 'preemption', 'checkpoint_lost')"),
    # the kernel's (or the step's cgroup's) OOM kill of a process: a fact on one host that a rank died, where the
    # NET/IB completion errors that follow are its peers' view of the dead rank (what `remote process exited or
    # there was a network error` says): the kill outranks them
    (85, "failure_mode = 'host_oom' AND kind IN ('oom_kill', 'slurm_oom')"),
    # (the AWS OFI plugin's completion error is EFA's IB completion error)
    (80, "failure_mode = 'network' AND kind IN ('ib_completion_error', 'ofi_completion_error', 'ibv_error', "
         "'ib_async_event')"),
    (65, "failure_mode = 'filesystem_io' AND source <> 'kernel'"),  # the application died on I/O
    (60, "failure_mode IN ('cuda_oom', 'cuda_error', 'host_oom', 'loss_divergence')"),
    (55, "failure_mode = 'user_code_error'"),
    (50, "failure_mode = 'time_limit'"),
    (45, "failure_mode = 'filesystem_io'"),  # a slow filesystem stalls saves; it rarely kills a job
    (40, "failure_mode = 'manual_stop'"),
    # "remote process exited or there was a network error": what every rank says when a peer dies
    (35, "failure_mode = 'network'"),
    (30, "failure_mode = 'nccl_timeout'"),
]
# Hardware errors the hardware coped with (a corrected PCIe error, a non-fatal NVLink Xid): evidence of a host's
# trouble in its history, never the cause of an attempt's end (the simulator plants them as red herrings)
COPED = "severity = 'warning' AND failure_mode IN ('pcie_error', 'nvlink_error')"
SYMPTOM_TIER = 35  # at or below: seen on every rank of a hung job, says nothing about where
PEER_TIER = 80  # an NCCL error naming its peer: the peer named most is blamed
# A line of the attempt's own output without any time (an NCCL debug file written without timestamps): it lies
# somewhere in the attempt's span, so it explains the end only where no dated line does (at most this tier), placed
# at the attempt's last step (nothing shows it came before progress stopped), with a lower confidence
UNDATED_TIER = 36
PEER_TIERS = (PEER_TIER, UNDATED_TIER)  # a completion error names its peer, dated or not
NODE_TIER = 90  # node failure, preemption, lost checkpoint
# The tier of a verdict that is no log line (a sacct state): the first rule naming its mode alone
TIERS_BY_MODE: list[tuple[str, int]] = [("node_failure", 90), ("preemption", 90), ("time_limit", 50),
                                        ("manual_stop", 40)]

_NOT_CAUSES = [x.code for x in taxonomy.XIDS.values() if not x.root_cause]


@dataclass(frozen=True)
class Settings:
    window_s: float = 1800.0  # evidence this long before an attempt's end is considered
    grace_s: float = 120.0  # ... and this long after it (scheduler lines come late)
    skew_s: float = 10.0  # host clocks may be this far apart
    progress_min_steps: int = 3  # evidence followed by at least this many step records ...
    progress_min_s: float = 60.0  # ... spanning at least this long did not end the attempt
    hang_steps: float = 10.0  # a kill this many step-record intervals after the last step ...
    hang_min_s: float = 300.0  # ... and at least this long after it found the job already hung
    late_steps: float = 3.0  # a fault later than this many intervals after the last step ...
    late_min_s: float = 120.0  # ... (and this long) came after the loss of progress: ranked after those before
    shared_min_hosts: int = 3  # a filesystem server or the fabric reported by this many hosts ...
    shared_window_s: float = 120.0  # ... within this long of the cause is blamed as that service
    # NOTE: a filesystem line names its server, which no compute host is: two hosts naming the same server at once
    # already say it is the server (a link down at both ends of one cable is still one host pair: 3 for the fabric)
    shared_fs_min_hosts: int = 2
    max_rejected: int = 10  # rejected candidates listed per incident
    divergence_chain_s: float = 900.0  # NaN-loss lines no further apart than this are one divergence that persisted
    straggler_ratio: float = 1.10  # a host is slow at a step when its compute is this much above the median
    straggler_floor: float = 1.03  # ... or less, down to this, where the run's own noise is small (slow_steps)
    straggler_min_steps: int = 5  # a stretch of at least this many slow steps opens an incident
    stall_ratio: float = 3.0  # a save this many times the run's median save time is a stall
    stall_min_s: float = 60.0  # ... and at least this much longer than the median


def _tier_sql() -> str:
    return "CASE " + " ".join(f"WHEN {cond} THEN {t}" for t, cond in TIERS) + " ELSE 10 END"


def candidates(con: duckdb.DuckDBPyConnection, run: str | None, s: Settings,
               profile: pl.DataFrame | None = None) -> pl.DataFrame:
    """Events that could explain each attempt's end, with their tier: from `window_s` before the attempt's
    last step (its end where it has none) to `grace_s` after its end.

    `profile` (`timeline.rank_profile` of `run`, where the caller has it) gives the last end of each step of
    the per-rank timings, so that only their rare rows without a step number are read again."""
    if profile is not None and run is not None:
        # NOTE: `step IS NULL` is answered from the table's statistics when no row lacks a step
        ranked = """SELECT run, attempt, ts FROM rank_steps WHERE run = $run AND step IS NULL
                     UNION ALL SELECT run, attempt, last_ts FROM rank_last"""
        frames = {"rank_last": profile.filter(pl.col("step").is_not_null()).group_by("run", "attempt").agg(
            last_ts=pl.col("last_ts").max())}
    else:
        ranked, frames = "SELECT run, attempt, ts FROM rank_steps WHERE ($run IS NULL OR run = $run)", {}
    # a node's kernel lines go to the attempt that ran when they happened: on its clock corrected (`shared_clock`),
    # or a clock minutes ahead hands a fault to the next attempt (their `ts` stays as stamped: `on_log_clock` moves it)
    frames["clock_off"] = (timeline.shared_clocks(con, run) if run is not None else
                           pl.DataFrame(schema={"attempt": pl.Int32, "host": pl.String, "corr_us": pl.Int64}))
    return store.frame(con, f"""
        WITH p AS (
            SELECT run, attempt, max(ts) AS last_ts
            FROM (SELECT run, attempt, ts FROM steps WHERE ($run IS NULL OR run = $run) UNION ALL {ranked})
            WHERE run IS NOT NULL GROUP BY ALL
        ),
        a AS (
            SELECT attempts.*, p.last_ts, lead(start_ts) OVER (PARTITION BY attempts.run ORDER BY attempts.attempt)
                   AS next_start
            FROM attempts LEFT JOIN p USING (run, attempt) WHERE ($run IS NULL OR attempts.run = $run)
        ),
        {store.NAMED_JOBS},
        -- srun's lines without a stamp report what it learned from the controller: placed at the latest moment
        -- their interval allows (tables.DATING), not at the last step record before them ("Node failure on" is
        -- printed when the node is declared down); other lines are printed as it happens (a traceback's last
        -- line was dated by its process's death at ingest)
        -- a worker's exit whose mode was inferred from its exit code alone (ingest.exit_modes: a file given alone
        -- says no more) is, among the rest of a run's evidence, what it was: an exit of unknown cause;
        -- a person's scancel carries no failure mode (no failure of the job's) but is the user's stop of the attempt;
        -- sacct / jobcomp states are the scheduler's record, read by root_cause._sacct_verdicts, never twice;
        -- a metrics scrape's Xid gauge is telemetry, weighed against the logs by diagnose.counter_evidence
        ev AS (
            SELECT e.*, f.path AS file, {_tier_sql()} AS tier
            FROM (SELECT * REPLACE (CASE WHEN source = 'slurm' THEN coalesce(ts_hi, ts) ELSE ts END AS ts,
                                    CASE WHEN kind IN ('child_failed', 'worker_failed', 'launcher_exit')
                                              AND json_extract_string(detail, '$.mode_from_exit') = 'true'
                                         THEN 'unknown'
                                         ELSE coalesce(failure_mode, CASE WHEN source = 'slurm'
                                              AND kind = 'slurm_cancelled' THEN 'manual_stop' END) END
                                    AS failure_mode)
                  FROM events WHERE source NOT IN ('sacct', 'slurm_jobcomp', 'prometheus_text')) e
            JOIN ingested_files f USING (file_id)
            WHERE e.failure_mode IS NOT NULL AND (e.ts IS NOT NULL OR (e.run IS NOT NULL AND e.attempt IS NOT NULL))
              AND NOT (e.source = 'kernel' AND e.kind = 'xid' AND list_contains($not_causes, e.xid))
              AND NOT ({COPED})
        )
        , hits AS (
            SELECT a.*, ev.* EXCLUDE (run, attempt) REPLACE (
                       coalesce(ev.ts, least(coalesce(a.last_ts, a.end_ts), a.end_ts)) AS ts,
                       CASE WHEN ev.ts IS NULL THEN least(ev.tier, {UNDATED_TIER}) ELSE ev.tier END AS tier,
                       CASE WHEN ev.ts IS NULL THEN a.start_ts ELSE ev.ts_lo END AS ts_lo,
                       CASE WHEN ev.ts IS NULL THEN a.end_ts ELSE ev.ts_hi END AS ts_hi),
                   true AS own, coalesce(ev.ts, least(coalesce(a.last_ts, a.end_ts), a.end_ts)) AS adj_ts
            FROM a JOIN ev ON ev.run = a.run AND ev.attempt = a.attempt
            UNION ALL
            -- node-side evidence (kernel, slurmctld) names no run: it counts on the attempt's hosts
            SELECT a.* EXCLUDE (a_host, corr_us), ev.* EXCLUDE (run, attempt), false AS own,
                   ev.ts - to_microseconds(CASE WHEN ev.source = 'kernel' THEN coalesce(a.corr_us, 0) ELSE 0 END)
            FROM (SELECT x.*, o.corr_us FROM (SELECT *, unnest(hosts) AS a_host FROM a) x
                  LEFT JOIN clock_off o ON o.attempt = x.attempt AND o.host = x.a_host) a
            JOIN ev ON ev.run IS NULL AND ev.host = a.a_host
              AND ev.ts - to_microseconds(CASE WHEN ev.source = 'kernel' THEN coalesce(a.corr_us, 0) ELSE 0 END)
                  BETWEEN a.start_ts AND a.end_ts + to_seconds($grace)
            UNION ALL
            -- the controller's word on a job names no node (`preempted JobId=N has been requeued to reclaim
            -- resources`): it counts for the attempts whose logs name that job, while they run
            SELECT a.*, ev.* EXCLUDE (run, attempt), false AS own, ev.ts AS adj_ts
            FROM a JOIN (SELECT DISTINCT run, attempt, job_id FROM named) j ON j.run = a.run AND j.attempt = a.attempt
            JOIN ev ON ev.run IS NULL AND ev.host IS NULL AND ev.source = 'slurmctld'
              AND json_extract_string(ev.detail, '$.job_id') = j.job_id
              AND ev.ts BETWEEN a.start_ts AND a.end_ts + to_seconds($grace)
        )
        SELECT run, attempt, ts, host, source, kind, failure_mode, xid, rank, peer, file, line, text, tier, detail,
               dated IS NULL AS own_stamp, coalesce(ts_lo, ts) AS ts_lo, coalesce(ts_hi, ts) AS ts_hi
        FROM hits
        WHERE adj_ts >= greatest(start_ts, least(coalesce(last_ts, end_ts), end_ts) - to_seconds($window))
          AND adj_ts <= end_ts + to_seconds($grace)
          -- node-side lines go to the attempt running then; the run's own lines are its attempt's already (a host's
          -- clock minutes off can start the next attempt's evidence before this one's last line)
          AND (own OR next_start IS NULL OR adj_ts < next_start)
    """, {"run": run, "window": s.window_s, "grace": s.grace_s, "not_causes": _NOT_CAUSES}, **frames)


def _peer_hosts(con: duckdb.DuckDBPyConnection) -> pl.DataFrame:
    """IP address → host, from the addresses NCCL says each host bootstraps on; a cloud instance's id → its host (the
    id EFA's completion errors name a peer by)."""
    return store.frame(con, """
        SELECT DISTINCT split_part(value, ':', -1) AS peer, host AS peer_host FROM facts
        WHERE key = 'nccl_bootstrap_if' AND host IS NOT NULL
        UNION SELECT DISTINCT value, host FROM facts WHERE key = 'cloud_instance_id' AND host IS NOT NULL
    """)


def with_hosts(con: duckdb.DuckDBPyConnection, cand: pl.DataFrame) -> pl.DataFrame:
    """Candidates with the host of a rank that names none (NCCL's rank map) and `peer_host` of a named peer."""
    ranks = store.frame(con, """SELECT DISTINCT run, attempt, rank, host AS rank_host FROM nccl_ranks
                                WHERE run IS NOT NULL AND host IS NOT NULL AND rank IS NOT NULL
                                  AND nranks = (SELECT max(nranks) FROM nccl_ranks n2 WHERE n2.run = nccl_ranks.run)""")
    if cand.height and ranks.height:
        cand = (cand.join(ranks.unique(["run", "attempt", "rank"]), on=["run", "attempt", "rank"], how="left")
                .with_columns(host=pl.coalesce("host", "rank_host")).drop("rank_host"))
    cand = _continued(cand)
    peers = _peer_hosts(con)
    if cand.height and peers.height:
        return cand.join(peers, on="peer", how="left")
    return cand.with_columns(peer_host=pl.lit(None, pl.String))


ECHO_LINES = 5  # PyTorch's NCCL error, its ncclResult line, "Last error:", then the WARN it quotes


def _continued(cand: pl.DataFrame) -> pl.DataFrame:
    """An NCCL WARN quoted after PyTorch's "Last error:" carries no prefix of its own (only the exception's first
    line has the rank's): it is the WARN of the rank whose exception it ends, the nearest line above in the same
    file that names a host, a few lines up."""
    orphan = (pl.col("host").is_null() & pl.col("rank").is_null()
              & pl.col("detail").str.contains('"via":"last_error"', literal=True).fill_null(False))
    if not cand.height or not cand.select(orphan.any()).item():
        return cand
    cand = cand.with_row_index("_i")
    known = (cand.filter(pl.col("host").is_not_null(), pl.col("line").is_not_null())
             .select("file", pl.col("line").cast(pl.Int64).alias("_l"), pl.col("host").alias("_h"),
                     pl.col("rank").alias("_r"))
             .unique(["file", "_l"]).sort("_l"))
    lost = (cand.filter(orphan, pl.col("line").is_not_null()).select("_i", "file", _l=pl.col("line").cast(pl.Int64))
            .sort("file", "_l").join_asof(known.sort("file", "_l"), on="_l", by="file", strategy="backward",
                                          tolerance=ECHO_LINES, check_sortedness=False))
    return (cand.join(lost.select("_i", "_h", "_r"), on="_i", how="left")
            .with_columns(host=pl.coalesce("host", "_h"), rank=pl.coalesce("rank", "_r"))
            .sort("_i").drop("_i", "_h", "_r"))


def step_profile(con: duckdb.DuckDBPyConnection, run: str | None = None) -> pl.DataFrame:
    """Per step of the per-rank timings, in one pass: end, step time, data wait, and the ranks'
    mean, fastest and slowest compute with the slowest rank's host."""
    # NOTE: one GROUP BY (attempt, step) over all ranks; grouping by host too costs ~7x more on
    # 100M rows, and the slowest rank's host is what a straggler incident needs.
    return store.frame(con, """
        SELECT run, attempt, step, max(ts) AS ts, max(step_s) AS step_s, max(data_s) AS data_s,
               avg(c) AS avg_c, min(c) AS min_c, max(c) AS max_c, count(c) AS n_c, arg_max(host, c) AS slow_host
        FROM (SELECT *, coalesce(compute_s, step_s - coalesce(comm_s, 0)) AS c FROM rank_steps
              WHERE run IS NOT NULL AND ($run IS NULL OR run = $run) AND step IS NOT NULL)
        GROUP BY run, attempt, step""", {"run": run})


STRAGGLER_SIGMAS = 6.0


def slow_steps(profile: pl.DataFrame, s: Settings) -> pl.DataFrame:
    """Steps at which one host computed markedly slower than its peers at the same step, beyond the run's noise."""
    if not profile.height:
        return pl.DataFrame(schema={"run": pl.String, "attempt": pl.Int32, "step": pl.Int64, "host": pl.String,
                                    "ts": pl.Datetime("us"), "excess_s": pl.Float64, "stride": pl.Int64})
    typical = pl.col("avg_c").median().over("run", "attempt")
    # NOTE: how many steps apart the attempt's records are (1, or a probe's sampling interval): a stretch of slow
    # steps is consecutive in the records, not in the step count
    stride = pl.col("step").sort().diff().median().over("run", "attempt").fill_null(1).cast(pl.Int64)
    # The slowest rank against its peers at the same step (their mean without it): step-to-step noise that moves
    # every rank (a loaded CPU, a slow batch) cancels out, which the attempt's usual step would not. How far that
    # lead is above its usual, and how much it varies, is the run's own noise: a host is slow where it is
    # STRAGGLER_SIGMAS of that variation above the usual lead (a GPU 6 % slow stands out of a run whose slowest
    # rank wanders by 1 %), never less than straggler_floor, never more than straggler_ratio (what was required
    # before the noise was measured).
    # A host slow for the whole attempt is the slowest at every step: its lead IS the usual one. The fastest rank's
    # trail behind the same peers is the other tail of the same noise, which no slow host moves: the bar is the
    # lower of the two tails' (a healthy run's slowest rank leads by about what its fastest trails by).
    n = pl.col("n_c")
    peers = (pl.col("avg_c") * n - pl.col("max_c")) / (n - 1)
    lead = pl.when(n > 1).then(pl.col("max_c") / peers.clip(lower_bound=1e-9))
    trail = pl.when(n > 2).then(peers / pl.col("min_c").clip(lower_bound=1e-9))
    ratio = pl.min_horizontal(pl.lit(s.straggler_ratio), pl.max_horizontal(
        pl.lit(s.straggler_floor), pl.min_horizontal(_noise_bar(lead), _noise_bar(trail))))
    slow = lead > pl.col("_ratio")
    return (profile.with_columns(typical=typical, _ratio=ratio, stride=stride)
            .filter(slow, pl.col("slow_host").is_not_null())
            .select("run", "attempt", "step", host="slow_host", ts="ts",
                    excess_s=pl.col("max_c") - pl.col("typical"), stride="stride").sort("run", "attempt", "step"))


def _noise_bar(x: pl.Expr) -> pl.Expr:
    """`STRAGGLER_SIGMAS` robust deviations of `x` above its usual, per attempt."""
    usual = x.median().over("run", "attempt")
    return usual + STRAGGLER_SIGMAS * 1.4826 * (x - usual).abs().median().over("run", "attempt")


def straggler_incidents(slow: pl.DataFrame, s: Settings) -> pl.DataFrame:
    """A host slow for a stretch of consecutive steps is an incident; isolated slow steps are not."""
    if not slow.height:
        return _empty_incidents()
    by = ("run", "attempt", "host")
    stride = pl.col("stride") if "stride" in slow.columns else pl.lit(1)
    runs = (slow.sort("run", "attempt", "host", "step")
            .with_columns(stretch=(pl.col("step").diff().over(*by) > stride).fill_null(True).cast(pl.Int64)
                          .cum_sum().over(*by))
            .group_by("run", "attempt", "host", "stretch")
            .agg(first_step=pl.col("step").min(), last_step=pl.col("step").max(), n=pl.len(),
                 root_ts=pl.col("ts").min(), exit_ts=pl.col("ts").max())
            .filter(pl.col("n") >= s.straggler_min_steps))
    return runs.sort("run", "attempt", "first_step").select(
        incident_id=pl.format("{}:{}:straggler:{}:{}", "run", "attempt", "host", "first_step"),
        run="run", attempt="attempt", kind=pl.lit("straggler"), root_ts="root_ts", exit_ts="exit_ts",
        failure_mode=pl.lit("straggler"), host="host", tier=pl.lit(None, pl.Int32),
        first_step="first_step", last_step="last_step")


def _empty_incidents() -> pl.DataFrame:
    return pl.DataFrame(schema={
        "incident_id": pl.String, "run": pl.String, "attempt": pl.Int32, "kind": pl.String,
        "root_ts": pl.Datetime("us"), "exit_ts": pl.Datetime("us"), "failure_mode": pl.String,
        "host": pl.String, "tier": pl.Int32, "first_step": pl.Int64, "last_step": pl.Int64})


def checkpoint_incidents(con: duckdb.DuckDBPyConnection, run: str | None, s: Settings
                         ) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Stalled saves (with the filesystem evidence beside them) and saves that were lost."""
    saves = store.frame(con, """
        WITH c AS (
            -- NOTE: Megatron-DeepSpeed logs one save twice (both frameworks print it): keep the first
            SELECT DISTINCT ON (c.run, c.attempt, c.action, c.step) c.*, f.path AS file FROM checkpoints c
            JOIN ingested_files f USING (file_id)
            WHERE c.run IS NOT NULL AND ($run IS NULL OR c.run = $run)
            ORDER BY c.run, c.attempt, c.action, c.step, c.ts
        )
        SELECT c.*, median(duration_s) FILTER (WHERE action = 'save') OVER (PARTITION BY run) AS median_save_s,
               -- the attempt trained on after the saved step: the save call had returned
               (SELECT max(a.last_step) FROM attempts a WHERE a.run = c.run AND a.attempt = c.attempt) > c.step
               AS stepped_past
        FROM c""", {"run": run})
    stalls = saves.filter(pl.col("action") == "save", pl.col("duration_s") > pl.col("median_save_s") * s.stall_ratio,
                          pl.col("duration_s") > pl.col("median_save_s") + s.stall_min_s)
    ev = pl.DataFrame()
    if stalls.height:
        ev = store.frame(con, """
            SELECT s.run, s.attempt, s.step AS save_step, e.ts, e.host, e.source, e.kind, e.failure_mode, e.xid,
                   e.rank, f.path AS file, e.line, e.text
            FROM stalls s JOIN attempts a USING (run, attempt)
            JOIN events e ON e.failure_mode = 'filesystem_io' AND list_contains(a.hosts, e.host)
              AND e.ts BETWEEN s.ts - INTERVAL 60 SECOND AND s.ts + to_seconds(s.duration_s + 60)
            JOIN ingested_files f ON f.file_id = e.file_id ORDER BY e.ts""", stalls=stalls)
    # a filesystem several hosts of the job report during one stalled save is the shared service's fault, not the
    # first reporter's: the save is one collective write, blocked as long as it took, and each client times out on
    # its own clock and its own request (a minute or more apart), not within the moments of one outage's notice
    shared = pl.col("host").n_unique() >= s.shared_min_hosts
    first_ev = (ev.group_by("run", "attempt", "save_step").agg(
        host=pl.when(shared).then(pl.lit(None, pl.String)).otherwise(pl.col("host").first()),
        root_ts=pl.col("ts").min())
                if ev.height else pl.DataFrame(schema={"run": pl.String, "attempt": pl.Int32, "save_step": pl.Int64,
                                                       "host": pl.String, "root_ts": pl.Datetime("us")}))
    stall_inc = stalls.join(first_ev, left_on=["run", "attempt", "step"], right_on=["run", "attempt", "save_step"],
                            how="left", suffix="_ev")
    stall_inc = stall_inc.select(
        incident_id=pl.format("{}:{}:checkpoint-stall:{}", "run", "attempt", "step"), run="run", attempt="attempt",
        kind=pl.lit("checkpoint_stall"), root_ts=pl.coalesce("root_ts", "ts"),
        exit_ts=pl.col("ts") + pl.duration(seconds=pl.col("duration_s")),
        failure_mode=pl.when(pl.col("root_ts").is_not_null()).then(pl.lit("filesystem_io")).otherwise(
            pl.lit("unknown")),
        host="host_ev", tier=pl.lit(None, pl.Int32), first_step="step", last_step="step")
    dirs = dict(con.execute("SELECT run, checkpoint_dir FROM runs WHERE $run IS NULL OR run = $run",
                            {"run": run}).fetchall())
    lost, lost_ev = _lost_checkpoints(saves, dirs, rollbacks(con, run))
    inc = pl.concat([stall_inc, lost], how="diagonal_relaxed") if lost.height else stall_inc
    evidence = (ev.join(stall_inc.select("run", "attempt", "incident_id", step="first_step"),
                        left_on=["run", "attempt", "save_step"], right_on=["run", "attempt", "step"])
                if ev.height else pl.DataFrame())
    if lost_ev.height:
        evidence = pl.concat([evidence, lost_ev], how="diagonal_relaxed") if evidence.height else lost_ev
    return inc, evidence


ROLLBACK_LR_CHANGE = 0.01  # a resume whose learning rate differs this much from the first run of its steps
# what torch.load says of a checkpoint file cut short (a zip without its central directory, a truncated pickle)
UNREADABLE_CHECKPOINT = (r"failed finding central directory|PytorchStreamReader failed|file is not a zip file"
                         r"|Ran out of input|invalid load key|unexpected EOF, expected")


def rollbacks(con: duckdb.DuckDBPyConnection, run: str | None) -> pl.DataFrame:
    """Attempts whose resume from an older checkpoint was deliberate (`run`, `attempt`): the attempt before it
    ended in a diverging loss (the team rolled back past it), or it trains its first steps at another learning
    rate than the earlier attempts did at the same steps (a rollback with a changed schedule); unless torch could
    not read a checkpoint before its first step (`UNREADABLE_CHECKPOINT`): then the newer save was lost."""
    return store.frame(con, """
        WITH diverged AS (
            SELECT DISTINCT run, attempt + 1 AS attempt FROM events
            WHERE failure_mode = 'loss_divergence' AND run IS NOT NULL AND attempt IS NOT NULL
              AND ($run IS NULL OR run = $run)
        ),
        lr AS (SELECT run, attempt, step, median(lr) AS lr FROM steps
               WHERE lr IS NOT NULL AND lr > 0 AND run IS NOT NULL AND ($run IS NULL OR run = $run)
               GROUP BY ALL),
        firsts AS (SELECT * FROM lr QUALIFY row_number() OVER (PARTITION BY run, attempt ORDER BY step) <= 10),
        changed AS (
            SELECT f.run, f.attempt FROM firsts f JOIN lr e ON e.run = f.run AND e.step = f.step
              AND e.attempt < f.attempt
            GROUP BY f.run, f.attempt
            HAVING median(abs(f.lr - e.lr) / e.lr) > $change
        ),
        -- the launch itself found the newer save unreadable before its first step: that save was lost, whatever
        -- the team meant to do (`latest` pointing at a save with a truncated shard)
        firsts_ts AS (SELECT run, attempt, min(ts) AS ts FROM steps WHERE run IS NOT NULL
                        AND ($run IS NULL OR run = $run) GROUP BY ALL),
        unreadable AS (
            SELECT DISTINCT e.run, e.attempt FROM events e JOIN firsts_ts f USING (run, attempt)
            WHERE e.ts <= f.ts AND regexp_matches(coalesce(e.text, ''), $unreadable)
        )
        (SELECT run, attempt::INTEGER AS attempt FROM diverged UNION SELECT run, attempt::INTEGER FROM changed)
        EXCEPT SELECT run, attempt::INTEGER FROM unreadable
    """, {"run": run, "change": ROLLBACK_LR_CHANGE, "unreadable": UNREADABLE_CHECKPOINT})


def _lost_checkpoints(saves: pl.DataFrame, dirs: dict[str, str | None], rollbacks: pl.DataFrame
                      ) -> tuple[pl.DataFrame, pl.DataFrame]:
    """A resume from an older step than the newest save logged before it: that save was lost. Its evidence:
    the log line that recorded the save, the load line that resumed from an older step instead, and what
    the run's checkpoint directory holds of that step now.

    Not lost: a save an earlier resume already went back past (a rollback abandons the saves after its step, once),
    any save a deliberate rollback (`rollbacks`) goes back past, and a save with no completion of its own (`ok`
    unknown) that its attempt never trained past (`stepped_past`): the job may have died in it."""
    loads = saves.filter(pl.col("action") == "load").select(
        "run", "attempt", load_step="step", load_ts="ts", load_file="file", load_line="line", load_src="source",
        load_path="path")
    # a save whose log says only that it began (or wrote some of its files) is recorded as saved where its attempt
    # trained on past it; one the attempt died in (a filesystem error mid-save) was never complete, not lost
    done = saves.filter(pl.col("action") == "save", pl.col("ok").fill_null(
        pl.col("stepped_past").fill_null(True) if "stepped_past" in saves.columns else True)).select(
        "run", "path", "duration_s", "source", save_attempt="attempt", save_step="step", save_ts="ts",
        save_file="file", save_line="line")
    if not loads.height or not done.height:
        return pl.DataFrame(), pl.DataFrame()
    # a launch that found no checkpoint (a load of step 0) lost the saves only of the directory it looked in: one
    # pointed at a new, empty directory starts afresh on purpose
    same_dir = (pl.col("load_step") > 0) | pl.col("load_path").is_null() | pl.col("path").is_null() | (
        pl.col("load_path").str.strip_chars_end("/") == pl.col("path").str.strip_chars_end("/"))
    pairs = loads.join(done, on="run").filter(pl.col("save_attempt") < pl.col("attempt"),
                                              pl.col("save_step") > pl.col("load_step"), same_dir)
    # a save some resume between it and this one already went back past was abandoned there, not lost here
    between = pairs.join(loads.select("run", between="attempt", between_step="load_step"), on="run").filter(
        pl.col("between") > pl.col("save_attempt"), pl.col("between") < pl.col("attempt"),
        pl.col("between_step") < pl.col("save_step")).select("run", "attempt", "save_attempt", "save_step").unique()
    pairs = pairs.join(between, on=["run", "attempt", "save_attempt", "save_step"], how="anti")
    pairs = pairs.join(rollbacks, on=["run", "attempt"], how="anti")
    newer = pairs.sort("save_step", descending=True).group_by("run", "attempt").first()
    newer = newer.with_columns(incident_id=pl.format("{}:{}:checkpoint-lost:{}", "run", "attempt", "save_step"))
    inc = newer.select(
        "incident_id", run="run",
        attempt="attempt", kind=pl.lit("checkpoint_lost"), root_ts="load_ts", exit_ts="load_ts",
        failure_mode=pl.lit("checkpoint_lost"), host=pl.lit(None, pl.String), tier=pl.lit(None, pl.Int32),
        first_step=pl.col("load_step") + 1, last_step="save_step")
    where = pl.when(pl.col("path").is_not_null()).then(pl.format(" to {}", "path")).otherwise(pl.lit(""))
    took = pl.when(pl.col("duration_s").is_not_null()).then(pl.format(" in {} s", pl.col("duration_s").round(1)))
    common = {"host": pl.lit(None, pl.String), "failure_mode": pl.lit("checkpoint_lost"),
              "xid": pl.lit(None, pl.Int32), "rank": pl.lit(None, pl.Int32), "tier": pl.lit(None, pl.Int32)}
    claimed = newer.select(
        "incident_id", rank_in_incident=pl.lit(1, pl.Int64), ts="save_ts", source="source",
        kind=pl.lit("checkpoint_saved"), file="save_file", line="save_line", **common,
        text=pl.format("recorded as saved: step {}{}{} (attempt {}); the next attempt did not resume from it",
                       "save_step", where, took.otherwise(pl.lit("")), "save_attempt"))
    resumed = newer.select(
        "incident_id", rank_in_incident=pl.lit(2, pl.Int64), ts="load_ts", source="load_src",
        kind=pl.lit("checkpoint_loaded"), file="load_file", line="load_line", **common,
        text=pl.format("loaded step {} instead: the save of step {} was missing or unreadable when attempt {} "
                       "started", "load_step", "save_step", "attempt"))
    # one directory listing per lost checkpoint: few, and I/O, so not a frame expression
    disk = newer.select(
        "incident_id", rank_in_incident=pl.lit(3, pl.Int64), ts="load_ts", source=pl.lit("disk"),
        kind=pl.lit("checkpoint_on_disk"), file=pl.lit(None, pl.String), line=pl.lit(None, pl.Int64), **common,
        text=pl.Series([checkpoint_files.on_disk(dirs.get(r), int(s)) for r, s in
                        zip(newer["run"], newer["save_step"], strict=True)], dtype=pl.String))
    return inc, pl.concat([claimed, resumed, disk], how="diagonal_relaxed")
