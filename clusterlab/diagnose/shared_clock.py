"""Host clocks measured without per-rank timings: the moments that several hosts' own stamps share.

A host whose clock lost NTP stamps its kernel log and its ranks' lines minutes away from its peers'. Per-rank
step timings measure that (`timeline.host_offsets`); where a run has none, two other kinds of shared moment do:

- the job's combined output (srun and torchrun forward every host's lines into one stream as they come): a line
  stamped by one host's clock sits between lines stamped by other hosts at about the same moment (the burst of
  watchdog timeouts, exceptions and exits that every rank prints when a job dies), so its stamp minus theirs is
  that host's lead;
- a shared service's outage, which every client's kernel reports at about the same moment (a Lustre target's
  lost connection, an NFS server's "not responding"): each host's first such line of the episode minus the
  median over the hosts is its lead.

Each host's lead is the median of its samples against hosts that mostly keep time; a lead below MIN_SKEW_S is
noise of the printing order (and within the analysis' skew tolerance), not a clock to correct.
"""

from __future__ import annotations

import duckdb
import polars as pl

from clusterlab import store

# A lead smaller than this is left alone: the order lines reach a shared log in, and clients' reports of one
# outage, spread over seconds.
MIN_SKEW_S = 30.0
# Lines of other hosts this close in the combined output were printed at about the same moment (a burst); wide
# enough to hold several hosts' blocks of lines, so that their median outvotes one neighbour whose clock is off.
NEIGHBOUR_LINES = 150
MIN_NEIGHBOUR_HOSTS = 3
# Neighbours whose stamps are further apart than this were not printed in one burst (a quiet stretch between).
NEIGHBOUR_MAX_S = 900.0
# Reports of one outage from many hosts: a gap longer than this between reports starts another episode.
EPISODE_GAP_S = 900.0
# The notices every client of a shared service prints when it stops answering: the clients busy with it (a
# checkpoint every rank writes) time out together. Not the recoveries: each client reconnects on its own pinger's
# schedule, tens of seconds apart.
SHARED_KINDS = ("lustre_connection_lost", "nfs_not_responding")
# A fault stamped this long after the scheduler ended its attempt belongs to no clock error worth reading as one.
MAX_LEAD_S = 900.0
# What a node's kernel reports about its own hardware (the faults `after_exit_offsets` reads).
HARDWARE_MODES = ("gpu_fell_off_bus", "gpu_memory_ecc", "gpu_hw_other", "nvlink_error", "pcie_error", "host_hw")
# A host's lead needs this many samples from the combined output (one outage episode counts as this many).
MIN_LOG_SAMPLES = 3
# A host's lines in one file measured at most (about): the median of its leads is as good from these as from all.
MAX_SAMPLES = 64


def shared_offsets(con: duckdb.DuckDBPyConnection, run: str, measured: bool = False) -> pl.DataFrame:
    """Per host of `run`: `off_us`, how far its clock runs ahead of its peers' (only hosts at least MIN_SKEW_S off;
    `measured`: every host with enough samples, those within MIN_SKEW_S too)."""
    empty = pl.DataFrame(schema={"host": pl.String, "off_us": pl.Int64})
    samples = [_log_samples(con, run)]
    hosts = store.frame(con, "SELECT DISTINCT host FROM events WHERE run = $run AND host IS NOT NULL", {"run": run})
    kern = store.frame(con, f"""
        SELECT host, kind, coalesce(json_extract_string(detail, '$.target'),
                                    json_extract_string(detail, '$.server'), '') AS target, ts
        FROM events WHERE source = 'kernel' AND ts IS NOT NULL AND host IN (SELECT host FROM hosts)
          AND kind IN ({", ".join(f"'{k}'" for k in SHARED_KINDS)})""", hosts=hosts)
    if kern.height:
        samples.append(_episode_samples(kern))
    if not samples:
        return empty
    s = pl.concat(samples, how="vertical_relaxed")
    # a weighted median: an outage episode stands for MIN_LOG_SAMPLES lines of the combined output
    s = s.with_columns(pl.col("lead_us").repeat_by("weight")).explode("lead_us")
    per = s.group_by("host").agg(lead_us=pl.col("lead_us").median(), n=pl.len())
    per = per.filter(pl.col("n") >= MIN_LOG_SAMPLES)
    if not measured:
        per = per.filter(pl.col("lead_us").abs() >= MIN_SKEW_S * 1e6)
    return per.select("host", off_us=pl.col("lead_us").round().cast(pl.Int64)).sort("host")


def after_exit_offsets(con: duckdb.DuckDBPyConnection, run: str, spans: pl.DataFrame,
                       measured: list[str]) -> pl.DataFrame:
    """Per (attempt, host): `corr_us` for a host that no shared moment measures and whose kernel stamps a hardware
    fault after the scheduler ended the attempt (MIN_SKEW_S to MAX_LEAD_S after, before the next attempt began).

    Its host was a node of the job whose own processes failed in that attempt, and nothing it reports can have
    happened after the job's end by more than the slack of the clocks: its clock runs ahead by at least that much,
    by how much more no evidence says (a fault of a later job on the node comes with no failure of this one). Its
    fault is put at the moment the job stopped stepping (its last step record), where the loss of progress it caused
    began; its rank then competes with the others' evidence by what it is, not by a stamp on a clock that ran ahead.
    `spans`: `timeline.attempt_spans` (the scheduler's ends, `end_by` not `its logs`)."""
    empty = pl.DataFrame(schema={"attempt": pl.Int32, "host": pl.String, "corr_us": pl.Int64})
    s = spans.sort("attempt").with_columns(next_ts=pl.col("start_ts").shift(-1)).filter(
        pl.col("end_by") != "its logs", pl.col("end_ts").is_not_null())
    if not s.height:
        return empty
    modes = ", ".join(f"'{m}'" for m in HARDWARE_MODES)
    found = store.frame(con, f"""
        WITH last AS (SELECT attempt::INTEGER AS attempt, max(ts) AS last_ts FROM steps
                      WHERE run = $run AND ts IS NOT NULL GROUP BY ALL)
        SELECT s.attempt::INTEGER AS attempt, e.host, min(e.ts) AS ts, any_value(l.last_ts) AS last_ts
        FROM s JOIN last l ON l.attempt = s.attempt JOIN attempts a ON a.run = $run AND a.attempt = s.attempt
        JOIN events e ON e.source = 'kernel' AND e.dated IS NULL AND e.failure_mode IN ({modes})
             AND list_contains(a.hosts, e.host) AND NOT list_contains($measured, e.host)
             AND e.ts > s.end_ts + to_microseconds({int(MIN_SKEW_S * 1e6)})
             AND e.ts <= s.end_ts + to_microseconds({int(MAX_LEAD_S * 1e6)})
             AND (s.next_ts IS NULL OR e.ts < s.next_ts)
        -- the host's own processes failed in that attempt (a rank's CUDA error, its launcher's report): the fault is
        -- theirs, not a later job's on the same node
        WHERE EXISTS (SELECT 1 FROM events r WHERE r.run = $run AND r.attempt = s.attempt AND r.host = e.host
                      AND r.failure_mode IS NOT NULL AND r.source NOT IN ('kernel', 'sacct', 'slurmctld'))
        GROUP BY ALL""", {"run": run, "measured": measured}, s=s.select("attempt", "end_ts", "next_ts"))
    if not found.height:
        return empty
    return found.select("attempt", "host", corr_us=(pl.col("ts") - pl.col("last_ts")).dt.total_microseconds())


def _log_samples(con: duckdb.DuckDBPyConnection, run: str) -> pl.DataFrame:
    """Each own-stamped line's lead over the median stamp of the other hosts' lines around it in the same file
    (the median: a neighbour whose own clock is off is outvoted by the others)."""
    return store.frame(con, f"""
        WITH e AS (
            SELECT file_id, line, host, epoch_us(ts) AS us FROM events
            WHERE run = $run AND host IS NOT NULL AND ts IS NOT NULL AND dated IS NULL AND line IS NOT NULL
              AND source NOT IN ('sacct', 'slurmctld', 'slurm_jobcomp', 'kernel')),
        -- NOTE: at most about MAX_SAMPLES lines a host in a file are measured, spread over it (a watchdog flood of
        -- 256 ranks x 100 attempts joined with its neighbours was 7M rows, 1.4 s a run; the median needs far fewer)
        a AS (SELECT *, unnest([line // {NEIGHBOUR_LINES} - 1, line // {NEIGHBOUR_LINES},
                                line // {NEIGHBOUR_LINES} + 1]) AS bucket
              FROM (SELECT *, row_number() OVER (PARTITION BY file_id, host ORDER BY line) - 1 AS k,
                           count(*) OVER (PARTITION BY file_id, host) AS n FROM e)
              WHERE k % greatest(1, n // {MAX_SAMPLES}) = 0),
        -- (the neighbours are found by an equality join on blocks of NEIGHBOUR_LINES lines, the block and the two
        -- beside it, then the exact distance: a range join within one file compared every pair of its lines)
        b AS (SELECT *, line // {NEIGHBOUR_LINES} AS bucket FROM e)
        SELECT a.host, (a.us - median(b.us))::BIGINT AS lead_us, 1::BIGINT AS weight
        FROM a JOIN b ON a.file_id = b.file_id AND a.bucket = b.bucket AND b.host <> a.host
             AND b.line BETWEEN a.line - {NEIGHBOUR_LINES} AND a.line + {NEIGHBOUR_LINES}
        GROUP BY a.host, a.file_id, a.line, a.us
        HAVING count(DISTINCT b.host) >= {MIN_NEIGHBOUR_HOSTS}
           AND abs(a.us - median(b.us)) <= {NEIGHBOUR_MAX_S * 1e6}""", {"run": run})


def _episode_samples(kern: pl.DataFrame) -> pl.DataFrame:
    """Each host's first notice of an outage episode less the median of all hosts' first notices of it."""
    k = kern.sort("kind", "target", "ts")
    k = k.with_columns(
        episode=(pl.col("ts").diff().dt.total_seconds() > EPISODE_GAP_S).fill_null(True).cum_sum()
        .over("kind", "target"))
    first = k.group_by("kind", "target", "episode", "host").agg(us=pl.col("ts").min().dt.epoch("us"))
    first = first.with_columns(n_hosts=pl.len().over("kind", "target", "episode"),
                               mid=pl.col("us").median().over("kind", "target", "episode"))
    return first.filter(pl.col("n_hosts") >= 3).select(
        "host", lead_us=pl.col("us") - pl.col("mid"), weight=pl.lit(MIN_LOG_SAMPLES, pl.Int64))
