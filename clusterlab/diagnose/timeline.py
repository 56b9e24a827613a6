"""One merged step timeline per attempt: every source of step evidence on one clock, inside the attempt's span.

Step evidence comes from the log's step lines (`steps`: one rank's view, often a line every N iterations) and from
per-rank timings (`rank_steps`: every rank and step, but often only for a window, some ranks, or until a writer was
killed). A step is identified by its number; its end comes from the per-rank timings where they cover it, else from
the log. Clocks differ between hosts by seconds, so before merging

- each host's per-rank records are put on the ranks' common clock (all ranks of a synchronous job
  end a step together: a host's median lead over the per-step median of all hosts is its offset),
- each further log file is put on the clock of the attempt's main log (most step lines), and
- the per-rank records are put on the log's clock, by the median difference at the steps both report
  (the log's save, load and exit lines are on its clock; whole-second stamps are refined first).

The attempt's span is the scheduler's: the sacct record of the job (the allocation, not a step) holding its
evidence, so that the ledger adds up to GPUs x allocated time; else its evidence's first and last line.
"""

from __future__ import annotations

import duckdb
import polars as pl

from clusterlab import store
from clusterlab.diagnose import job_steps, read_cache, shared_clock

# Evidence up to this far outside a scheduler record still belongs to it: node clocks run seconds
# apart from slurmctld's, and sacct prints whole seconds (a last line at 09:44:35.080 is in End=09:44:35).
SPAN_SLACK_S = 60.0
# Per-host clock offsets come from about this many sampled steps of an attempt: the offset is
# constant over hours, and sampling keeps this a light scan of a 100M-row table. A run of many short
# attempts shares a budget of sampled steps (each attempt still gets at least OFFSET_MIN_SAMPLES):
# 500 attempts of 200 steps would otherwise sample every step of the run.
OFFSET_SAMPLES = 256
OFFSET_RUN_SAMPLES = 4096
OFFSET_MIN_SAMPLES = 16


# CTEs `c` (every job a run's attempt may have run as) and `best` (the one it did, per attempt), from CTEs
# `a (run, attempt, start_ts, end_ts)`, `named` (store.NAMED_JOBS) and `j (job_id, job_id_raw, job_name, job_start,
# job_end, ...)`: a job that contains the attempt's evidence (within SPAN_SLACK_S); or, for a job its lines name,
# one that holds most of it (a host's clock minutes off puts that host's first line before the allocation began).
# An array task is named by its array id (`slurm-71400_3.out`) or its own (`JOB 71403`). The named job wins, then
# the one that holds it, then the shortest.
MATCHED_JOBS = f"""
        c AS (
            SELECT a.run, a.attempt, a.end_ts AS a_end, j.*, n.job_id IS NOT NULL AS named,
                   coalesce(j.job_start <= a.start_ts + INTERVAL {SPAN_SLACK_S} SECOND
                       AND j.job_end >= a.end_ts - INTERVAL {SPAN_SLACK_S} SECOND, n.job_id IS NOT NULL) AS holds,
                   coalesce(epoch(least(j.job_end, a.end_ts) - greatest(j.job_start, a.start_ts))
                       / greatest(epoch(a.end_ts - a.start_ts), 1), 1.0) AS share
            FROM a JOIN j ON (j.job_start <= a.end_ts AND j.job_end >= a.start_ts) OR a.start_ts IS NULL
            LEFT JOIN named n ON n.run = a.run AND n.attempt = a.attempt AND n.job_id IN (j.job_id, j.job_id_raw)
            -- an attempt whose lines carry no time of their own (a launch that died before anything stamped a
            -- line: a container that never started) has only the job its output names to give it a span
            WHERE n.job_id IS NOT NULL OR (j.job_name = a.run AND a.start_ts IS NOT NULL)
        ),
        best AS (SELECT DISTINCT ON (run, attempt) * FROM c WHERE holds OR (named AND share >= 0.5)
                 ORDER BY run, attempt, named DESC, holds DESC, share DESC, job_end - job_start, job_id)"""


def attempt_spans(con: duckdb.DuckDBPyConnection, run: str) -> pl.DataFrame:
    """Per attempt: `attempt, start_ts, end_ts` (the span the ledger divides), `ev_start_ts, ev_end_ts`
    (first and last line of its evidence), `job_id` (the scheduler record used, or null) and `resume_step`
    (the step its checkpoint load resumed from, or null).

    A job matches an attempt when its record contains the attempt's evidence (within SPAN_SLACK_S) and
    the attempt's own logs name the job id (srun, slurmstepd lines) or the job is named after the run;
    the named one wins, then the shortest. Several attempts inside one allocation (restarts within a job)
    share it: the first starts at the job's start, the last ends at its end, the boundaries between them
    are the evidence's."""
    return read_cache.once("spans", run, lambda: _attempt_spans(con, run))


def _attempt_spans(con: duckdb.DuckDBPyConnection, run: str) -> pl.DataFrame:
    spans = store.frame(con, f"""
        WITH a AS (SELECT run, attempt, start_ts, end_ts FROM attempts WHERE run = $run),
{store.NAMED_JOBS},
        -- the allocation's own record: `1234`, `1234_7`, `1234+0`; never a step (`1234.0`, `1234.batch`)
        j AS (
            SELECT DISTINCT job_id, job_id_raw, job_name, start_ts AS job_start, end_ts AS job_end FROM jobs
            WHERE job_id IS NOT NULL AND NOT contains(job_id, '.') AND start_ts IS NOT NULL
              AND end_ts IS NOT NULL AND end_ts >= start_ts
        ),
{MATCHED_JOBS},
        loads AS (SELECT attempt, min(step) AS resume_step FROM checkpoints
                  WHERE run = $run AND action = 'load' GROUP BY attempt)
        SELECT a.attempt, a.start_ts AS ev_start_ts, a.end_ts AS ev_end_ts, b.job_id, b.job_start, b.job_end,
               l.resume_step
        FROM a LEFT JOIN best b USING (attempt) LEFT JOIN loads l USING (attempt) ORDER BY a.attempt
    """, {"run": run})
    job = pl.struct("job_id", "job_start", "job_end")
    first_in_job = pl.col("attempt") == pl.col("attempt").min().over(job)
    last_in_job = pl.col("attempt") == pl.col("attempt").max().over(job)
    has_job = pl.col("job_id").is_not_null()
    spans = spans.with_columns(
        start_ts=pl.when(has_job & first_in_job).then("job_start").otherwise("ev_start_ts"),
        end_ts=pl.when(has_job & last_in_job).then("job_end").otherwise("ev_end_ts"),
        start_by=pl.when(has_job & first_in_job).then(pl.format("sacct {}", "job_id")).otherwise(pl.lit("its logs")),
        end_by=pl.when(has_job & last_in_job).then(pl.format("sacct {}", "job_id")).otherwise(pl.lit("its logs")),
    )
    return job_steps.with_step_spans(con, spans.select("attempt", "start_ts", "end_ts", "ev_start_ts", "ev_end_ts",
                                                       "job_id", "resume_step", "start_by", "end_by"))


def disjoint_spans(spans: pl.DataFrame) -> tuple[pl.DataFrame, list[str]]:
    """`attempt_spans` made disjoint, and a sentence for each overlap it removed (naming the sources).

    Attempts of one run follow each other. Where one's span runs past the next one's start (a host's clock minutes
    off stretched an attempt's first or last line; a log that could not be split by its launches), the
    scheduler's record is believed over the logs, and the earlier attempt's end otherwise gives way: the ledger
    is then still exact over the run, and says which evidence disagreed and by how much."""
    s = spans.sort("attempt")
    if s.height < 2:
        return spans, []
    notes: list[str] = []
    rows = s.to_dicts()
    for prev, nxt in zip(rows, rows[1:], strict=False):  # NOTE: one row per attempt: a handful per run
        if prev["end_ts"] is None or nxt["start_ts"] is None or prev["end_ts"] <= nxt["start_ts"]:
            continue
        over = (prev["end_ts"] - nxt["start_ts"]).total_seconds()
        if nxt["start_by"] != "its logs" and prev["end_by"] == "its logs" or nxt["start_by"] == prev["end_by"]:
            prev["end_ts"] = max(nxt["start_ts"], prev["start_ts"])
            moved = f"attempt {prev['attempt']} now ends at attempt {nxt['attempt']}'s start"
        else:
            nxt["start_ts"] = prev["end_ts"]
            nxt["end_ts"] = max(nxt["end_ts"], nxt["start_ts"])
            moved = f"attempt {nxt['attempt']} now starts at attempt {prev['attempt']}'s end"
        notes.append(f"ledger flagged: attempt {prev['attempt']} (end from {prev['end_by']}) overlaps attempt "
                     f"{nxt['attempt']} (start from {nxt['start_by']}) by {over:,.0f} s; {moved}")
    return pl.DataFrame(rows, schema=s.schema), notes


# Sources whose stamps are the scheduler's clock, not the clock of the host a line names.
SCHEDULER_SOURCES = ("sacct", "slurmctld", "slurm_jobcomp")


def host_clocks(con: duckdb.DuckDBPyConnection, run: str, profile: pl.DataFrame | None = None,
                offsets: pl.DataFrame | None = None) -> pl.DataFrame:
    """Per (attempt, host): `corr_us`, how far that host's clock runs ahead of the attempt's log clock (the clock
    the ledger's timeline is on), and `shift_us`, how far the ranks' common clock (`rank_profile`'s `ts`) does,
    where they can be measured: from the moments every host shares, the ends of the
    synchronous steps in the per-rank timings (`host_offsets`), carried onto the log's clock as `merge` does;
    for hosts without them, from the bursts of the job's combined output and the outages every client reports
    (`shared_clock`: the peers' clock stands for the log's). A host neither measures is not listed. `profile` and
    `offsets` are `rank_profile_and_offsets(con, run)` where the caller has them."""
    if offsets is None or profile is None:  # `rank_profile_and_offsets` gives both where the caller has them
        profile, offsets = rank_profile_and_offsets(con, run)
    shared = shared_clocks(con, run)
    if not offsets.height:
        return shared
    return pl.concat([_rank_clocks(con, run, profile, offsets), shared]).unique(["attempt", "host"], keep="first",
                                                                                maintain_order=True)


def shared_clocks(con: duckdb.DuckDBPyConnection, run: str) -> pl.DataFrame:
    """`host_clocks` rows for every attempt of `run` from the moments the hosts' own stamps share (no per-rank
    timings needed): a clock that lost NTP stays off by about as much for the hours of a run; and for a host no
    such moment measures, from a fault it stamped after the scheduler ended the attempt (`shared_clock`)."""
    return read_cache.once("clocks", run, lambda: _shared_clocks(con, run))


def _shared_clocks(con: duckdb.DuckDBPyConnection, run: str) -> pl.DataFrame:
    empty = pl.DataFrame(schema={"attempt": pl.Int32, "host": pl.String, "corr_us": pl.Int64, "shift_us": pl.Int64})
    off = shared_clock.shared_offsets(con, run, measured=True)
    late = shared_clock.after_exit_offsets(con, run, attempt_spans(con, run), off["host"].to_list())
    off = off.filter(pl.col("off_us").abs() >= shared_clock.MIN_SKEW_S * 1e6)
    att = store.frame(con, "SELECT DISTINCT attempt::INTEGER AS attempt FROM attempts WHERE run = $run AND "
                           "attempt IS NOT NULL", {"run": run})
    rows = pl.concat([att.join(off, how="cross").select("attempt", "host", corr_us="off_us"), late])
    return rows.select("attempt", "host", "corr_us", shift_us=pl.lit(0, pl.Int64)) if rows.height else empty


def _rank_clocks(con: duckdb.DuckDBPyConnection, run: str, profile: pl.DataFrame,
                 offsets: pl.DataFrame) -> pl.DataFrame:
    """`host_clocks` from the per-rank timings' offsets."""
    log = _one_log(_clocked(logged_steps(con, run))).with_columns(pl.col("attempt").cast(pl.Int32))
    timed = profile.filter(pl.col("ts").is_not_null()).select(pl.col("attempt").cast(pl.Int32), "step", rank_ts="ts")
    shift = (log.join(timed, on=["attempt", "step"]).group_by("attempt")
             .agg(shift_us=(_us(pl.col("rank_ts")) - _us(pl.col("ts"))).median()))
    return (offsets.with_columns(pl.col("attempt").cast(pl.Int32)).join(shift, on="attempt", how="left")
            .select("attempt", "host", corr_us=(pl.col("off_us") + pl.col("shift_us").fill_null(0)).round()
                    .cast(pl.Int64), shift_us=pl.col("shift_us").fill_null(0).round().cast(pl.Int64)))


def on_log_clock(frame: pl.DataFrame, clocks: pl.DataFrame) -> pl.DataFrame:
    """`frame` (events with `attempt, host, source, ts`, and `own_stamp` where known) with each line stamped by a
    host's own clock moved onto the log's clock (`host_clocks`); scheduler lines and borrowed times stay."""
    if not clocks.height or not frame.height:
        return frame
    own = pl.col("own_stamp").fill_null(True) if "own_stamp" in frame.columns else pl.lit(True)
    if "source" in frame.columns:
        own = own & ~pl.col("source").is_in(SCHEDULER_SOURCES).fill_null(False)
    moved = frame.with_columns(pl.col("attempt").cast(pl.Int32)).join(clocks, on=["attempt", "host"], how="left")
    shift = pl.when(own).then(pl.col("corr_us")).otherwise(0).fill_null(0)
    # an own-stamped line's interval is its own time: it moves with it
    lo = {c: pl.col(c) - pl.duration(microseconds=shift) for c in ("ts_lo", "ts_hi") if c in frame.columns}
    return moved.with_columns(ts=pl.col("ts") - pl.duration(microseconds=shift), **lo).drop("corr_us", "shift_us")


def _us(expr: pl.Expr) -> pl.Expr:
    return expr.dt.epoch("us")


def _step_ranges(con: duckdb.DuckDBPyConnection, run: str) -> pl.DataFrame:
    """Per attempt of the per-rank timings (null too): `lo`, `hi`, its first and last step, and `s_lo`, `s_hi`,
    those of its rows with a time and a host (what the clock offsets are sampled from)."""
    # NOTE: where no row lacks a time or a host (the table's statistics say so without a scan) both spans
    # come from one grouped read
    lacking = con.execute("""SELECT count(*) FROM rank_steps WHERE run = $run AND step IS NOT NULL
                             AND (ts IS NULL OR host IS NULL)""", {"run": run}).fetchall()[0][0]
    spans = store.frame(con, """SELECT attempt, min(step) AS lo, max(step) AS hi FROM rank_steps
                                WHERE run = $run AND step IS NOT NULL GROUP BY attempt""", {"run": run})
    if not lacking:
        return spans.with_columns(s_lo="lo", s_hi="hi")
    sampled = store.frame(con, """SELECT attempt, min(step) AS s_lo, max(step) AS s_hi FROM rank_steps
                                  WHERE run = $run AND step IS NOT NULL AND ts IS NOT NULL AND host IS NOT NULL
                                  GROUP BY attempt""", {"run": run})
    return spans.join(sampled, on="attempt", how="left", nulls_equal=True)


def _strides(con: duckdb.DuckDBPyConnection, run: str, ranges: pl.DataFrame | None = None) -> pl.DataFrame:
    """Per attempt of the per-rank timings: every how many steps one is sampled for the clock offsets.
    `ranges` is `_step_ranges(con, run)` where the caller has it."""
    ranges = _step_ranges(con, run) if ranges is None else ranges
    b = ranges.filter(pl.col("attempt").is_not_null(), pl.col("s_lo").is_not_null())
    per = max(OFFSET_MIN_SAMPLES, min(OFFSET_SAMPLES, OFFSET_RUN_SAMPLES // max(b.height, 1)))
    return b.select(pl.col("attempt").cast(pl.Int32),
                    stride=pl.max_horizontal(pl.lit(1, pl.Int64), (pl.col("s_hi") - pl.col("s_lo")) // per))


def _multiples(stride: str, lo: int | None, hi: int | None) -> str:
    """An SQL filter on `r.step`: the multiples of `stride` (a column of `b` with `_mask, _inv, _lim`, or literals).

    NOTE: an integer remainder per row costs as much as a scan of the table. For steps in [0, 2^31) (the
    table's statistics say, without a scan) divisibility by 2^k·d (d odd) is a test of the low k bits and a
    multiplication by the inverse of d modulo 2^32 (Granlund and Montgomery); the remainder then confirms
    the rows left."""
    if lo is None or hi is None or lo < 0 or hi >= 2**31:
        return f"r.step / {stride} = floor(r.step / {stride}) AND r.step % {stride} = 0"
    if stride.isdigit():
        k = int(stride)
        odd = k >> ((k & -k).bit_length() - 1)
        mask, inv, lim = (k & -k) - 1, pow(odd, -1, 2**32), (2**32 - 1) // odd
    else:
        mask, inv, lim = "b._mask", "b._inv", "b._lim"
    return f"(r.step & {mask}) = 0 AND ((r.step * {inv}) & 4294967295) <= {lim} AND r.step % {stride} = 0"


def _table_steps(con: duckdb.DuckDBPyConnection) -> tuple[int | None, int | None]:
    """The first and last step of the whole per-rank table, from its statistics (no scan)."""
    lo, hi = con.execute("SELECT min(step), max(step) FROM rank_steps").fetchall()[0]
    return lo, hi


def host_offsets(con: duckdb.DuckDBPyConnection, run: str, ranges: pl.DataFrame | None = None) -> pl.DataFrame:
    """Per (attempt, host) of the per-rank timings: `off_us`, how far the host's clock runs ahead of the
    ranks' common clock (the per-step median over hosts), from about OFFSET_SAMPLES sampled steps.
    `ranges` is `_step_ranges(con, run)` where the caller has it."""
    ranges = _step_ranges(con, run) if ranges is None else ranges
    strides = _strides(con, run, ranges)
    empty = pl.DataFrame(schema={"attempt": pl.Int32, "host": pl.String, "off_us": pl.Int64})
    if not strides.height:
        return empty
    one = strides["stride"].n_unique() == 1
    # attempts that share no step number are told apart by the step: one grouping key fewer
    by_step = one and _disjoint(ranges)
    lo, hi = _table_steps(con)
    # NOTE: one stride for every attempt (the usual case) is a constant filter inside the scan; a join
    # with the strides costs the scan of the whole table over again.
    if one:
        multiple = _multiples(str(int(strides["stride"][0])), lo, hi)
    else:
        odd = pl.col("stride") // (pl.col("stride") & -pl.col("stride"))
        strides = strides.with_columns(_mask=(pl.col("stride") & -pl.col("stride")) - 1, _lim=(2**32 - 1) // odd,
                                       _inv=odd.map_elements(lambda d: pow(d, -1, 2**32), return_dtype=pl.Int64))
        multiple = _multiples("b.stride", lo, hi)
    sampled = store.frame(con, f"""
        SELECT {'' if by_step else 'r.attempt, '}r.host, r.step, min(r.ts) AS ts
        FROM rank_steps r {'' if one else 'JOIN strides b USING (attempt)'}
        WHERE r.run = $run AND r.step IS NOT NULL AND r.ts IS NOT NULL AND r.host IS NOT NULL
          AND r.attempt IS NOT NULL AND {multiple}
        GROUP BY ALL""", {"run": run}, **({} if one else {"strides": strides}))
    if not sampled.height:
        return empty
    if by_step:
        sampled = _with_attempt(sampled, ranges)
    lead = _us(pl.col("ts")) - _us(pl.col("ts")).median().over("attempt", "step")
    return (sampled.with_columns(lead=lead).group_by("attempt", "host")
            .agg(off_us=pl.col("lead").median().round().cast(pl.Int64)))


# A per-step profile of attempts that share no step number is grouped by the step alone, which DuckDB does in
# a table indexed by the step (a "perfect hash") where the steps span at most 2^PERFECT_MAX_BITS values: about
# 1.0 of 5.6 CPU seconds less than hashing (attempt, step) at 100M rows. Its size is 2^bits groups per thread.
PERFECT_MAX_BITS = 20
_PROFILE_AGGREGATES = """{shifted_max} AS ts, max(step_s) AS step_s, max(data_s) AS data_s, avg(c) AS avg_c,
               min(c) AS min_c, max(c) AS max_c, count(c) AS n_c, arg_max(host, c) AS slow_host,
               min(ts) AS first_ts, max(ts) AS last_ts"""


def _with_attempt(frame: pl.DataFrame, ranges: pl.DataFrame) -> pl.DataFrame:
    """`frame` (with `step`) with the attempt whose [lo, hi] holds each step, where no two attempts' overlap:
    the one whose range begins last before it."""
    owner = ranges.select(pl.col("attempt").cast(pl.Int32), "lo").sort("lo")
    return frame.sort("step").join_asof(owner, left_on="step", right_on="lo", strategy="backward").drop("lo")


def _disjoint(ranges: pl.DataFrame) -> bool:
    """Whether no two attempts (null counts as one) share a step number: their [lo, hi] do not overlap."""
    r = ranges.sort("lo")
    return bool(r.height) and bool((r["lo"].shift(-1) > r["hi"]).fill_null(True).all())


def rank_profile(con: duckdb.DuckDBPyConnection, run: str) -> pl.DataFrame:
    """Per step of the per-rank timings, on the ranks' common clock: the columns of
    `incidents.step_profile` (end, step time, data wait, the ranks' mean, fastest and slowest compute
    with the slowest rank's host), and `first_ts`, `last_ts`: the first and the last rank's end, each on
    its own host's clock (for the progress of `root_cause`)."""
    return rank_profile_and_offsets(con, run)[0]


def rank_profile_and_offsets(con: duckdb.DuckDBPyConnection, run: str) -> tuple[pl.DataFrame, pl.DataFrame]:
    """`rank_profile`, and the `host_offsets` it was put on the common clock with (for `host_clocks`)."""
    ranges = _step_ranges(con, run)
    all_offsets = host_offsets(con, run, ranges)
    # only hosts whose clock is off need the join: a host at offset 0 is on the common clock already
    offsets = all_offsets.filter(pl.col("off_us") != 0)
    # NOTE: shifted in integer microseconds and made a time once per step (the same microseconds): subtracting
    # an interval from every row's time took 3.4 of the 9.1 CPU seconds of this pass at 102M rows
    shifted = "make_timestamp(max(epoch_us(ts) - coalesce(off_us, 0)))" if offsets.height else "max(ts)"
    join = "LEFT JOIN offsets USING (attempt, host)" if offsets.height else ""
    frames = {"offsets": offsets} if offsets.height else {}
    rows = f"""(SELECT attempt, step, ts, step_s, data_s, host, coalesce(compute_s, step_s - coalesce(comm_s, 0)) AS c
              FROM rank_steps WHERE run = $run AND step IS NOT NULL) r
        {join}"""
    lo, hi = _table_steps(con)
    bits = (hi - lo + 2).bit_length() if lo is not None and hi is not None else PERFECT_MAX_BITS + 1
    if bits <= PERFECT_MAX_BITS and _disjoint(ranges):
        # each step lies in one attempt's [lo, hi]: the attempt is the one whose range begins last before it
        before = con.execute("SELECT current_setting('perfect_ht_threshold')").fetchall()[0][0]
        con.execute(f"SET perfect_ht_threshold = {max(bits, int(before))}")
        try:
            per_step = store.frame(con, f"SELECT step, {_PROFILE_AGGREGATES.format(shifted_max=shifted)} FROM {rows} "
                                        "GROUP BY step", {"run": run}, **frames)
        finally:
            con.execute(f"SET perfect_ht_threshold = {int(before)}")
        profile = _with_attempt(per_step, ranges)
        profile = profile.select(pl.lit(run, pl.String).alias("run"), "attempt", "step", *per_step.columns[1:])
        return profile, all_offsets
    # NOTE: one GROUP BY (attempt, step) over all ranks, as incidents.step_profile; the offsets are a
    # hash join against a table of attempts x hosts rows. Not grouped by the run's name: it is one run.
    profile = store.frame(con, f"""
        SELECT $run AS run, attempt, step, {_PROFILE_AGGREGATES.format(shifted_max=shifted)}
        FROM {rows}
        GROUP BY attempt, step""", {"run": run}, **frames)
    return profile, all_offsets


def logged_steps(con: duckdb.DuckDBPyConnection, run: str) -> pl.DataFrame:
    """The training log's step lines of a run: `attempt, step, ts, step_s, file_id, line`, each on the step clock
    (`step_clock`) where the line has no stamp of its own."""
    logged = store.frame(con, """SELECT attempt, step, ts, step_s, file_id, line, dated IS NOT NULL AS borrowed
                                 FROM steps WHERE run = ? AND ts IS NOT NULL""", [run])
    if not logged["borrowed"].any():
        return logged.drop("borrowed").with_columns(clocked=pl.lit(True))
    saves = store.frame(con, """SELECT DISTINCT attempt, step FROM checkpoints
                                WHERE run = ? AND action = 'save' AND step IS NOT NULL""", [run])
    # `clocked`: the line has a stamp of its own, or its file a stamped step line in the attempt to date it from
    anchored = logged.filter(~pl.col("borrowed")).select("attempt", "file_id").unique().with_columns(
        clocked=pl.lit(True))
    return step_clock(_refined_anchors(logged), saves).join(
        anchored, on=["attempt", "file_id"], how="left", nulls_equal=True).with_columns(
        pl.col("clocked").fill_null(False))


def _clocked(logged: pl.DataFrame) -> pl.DataFrame:
    """The step lines whose times measure a clock: HF Trainer's loss dicts carry no stamp and, in a file with no
    stamped step line, keep the time of whatever stamped line came before them (the start of training, a save):
    minutes off, they must not move the ranks' or a host's clock."""
    return logged.filter("clocked") if "clocked" in logged.columns else logged


def _refined_anchors(logged: pl.DataFrame) -> pl.DataFrame:
    """`logged` with its stamped step lines' whole-second stamps refined (`refine_coarse_stamps`) on the step
    times of every record between them, so that the step clock runs from a stamp known to the ms, not to a
    second (Megatron-DeepSpeed stamps `[2022-07-14 10:00:01]`)."""
    g = ["attempt", "file_id"]
    x = logged.sort(*g, "step", "line").with_columns(
        _n=(pl.col("step") - pl.col("step").shift(1).over(g)).fill_null(1).clip(lower_bound=1))
    x = x.with_columns(_d=pl.col("step_s") * pl.col("_n"), _seg=(~pl.col("borrowed")).cast(pl.Int32).cum_sum().over(g))
    # an anchor's time per step since the anchor before it, from every record in between (its own covers its own)
    seg = x.filter("borrowed").group_by(*g, "_seg").agg(_sd=pl.col("_d").sum(), _sn=pl.col("_n").sum(),
                                                        _known=pl.col("_d").is_not_null().all())
    anchors = (x.filter(~pl.col("borrowed")).join(seg.with_columns(pl.col("_seg") + 1), on=[*g, "_seg"], how="left")
               .with_columns(step_s=pl.when(pl.col("_known").fill_null(True) & pl.col("_d").is_not_null())
                             .then((pl.col("_d") + pl.col("_sd").fill_null(0)) / (pl.col("_n") + pl.col("_sn")
                                                                                 .fill_null(0)))))
    if not anchors.height:
        return logged
    fine = refine_coarse_stamps(anchors.select(logged.columns).with_columns(
        step=pl.col("step")))  # NOTE: the anchors' gaps in steps make refine's `n` the steps between them
    return logged.join(fine.select("file_id", "line", _fine="ts"), on=["file_id", "line"], how="left").with_columns(
        ts=pl.coalesce("_fine", "ts")).drop("_fine")


def step_clock(logged: pl.DataFrame, saves: pl.DataFrame) -> pl.DataFrame:
    """Step lines without a stamp of their own (`borrowed`: the engine gave them the last stamped line's time),
    dated by the step times the log prints, anchored on the lines that have a stamp.

    Megatron-DeepSpeed prints its iteration line without a time, and a stamped line only every `steps_per_print`:
    dated by their neighbour, nine records in ten would end at one instant and their steps' time pile up on the
    tenth. Between two anchors each record ends at the first anchor plus the step times since; what the anchors
    put between them beyond those times (a save, a stall) goes after the save where one ran in between, else is
    spread over the records in proportion to their steps. After the last anchor the step times run on; before the
    first they run back from it. A file that prints no step time spaces its records between two anchors by their
    steps. A file with no stamped step line at all keeps the borrowed times."""
    cols = logged.columns
    g = ["attempt", "file_id"]
    x = logged.sort(*g, "step", "line").with_columns(
        # (a second line of the same step, a loss dict after its bar, adds no time)
        _n=(pl.col("step") - pl.col("step").shift(1).over(g)).fill_null(1).clip(lower_bound=0))
    # a file that prints no step time at all spaces its records between the anchors by their steps alone
    unit = pl.col("step_s").is_null().all().over(g)
    per = pl.when(unit).then(1e-6).otherwise(pl.col("step_s").fill_null(pl.col("step_s").median().over(g)))
    x = x.with_columns(_d=per * pl.col("_n") * 1e6, _anchor=~pl.col("borrowed"), _unit=unit,
                       _us=pl.col("ts").dt.epoch("us"))
    x = x.with_columns(_seg=pl.col("_anchor").cast(pl.Int32).cum_sum().over(g))
    # forward from the segment's anchor (the segment's first row; rows before a file's first anchor: segment 0)
    x = x.with_columns(_cum=pl.when(pl.col("_anchor")).then(0.0).otherwise(pl.col("_d")).cum_sum().over(*g, "_seg"),
                       _a_us=pl.col("_us").filter(pl.col("_anchor")).first().over(*g, "_seg"))
    # the next anchor: its time, and the step times from this segment's anchor to it
    nxt = (x.filter("_anchor").select(*g, "_seg", _b_us="_us", _b_d="_d")
           .with_columns(pl.col("_seg") - 1))
    seg = x.group_by(*g, "_seg").agg(_tot=pl.col("_d").filter(~pl.col("_anchor")).sum())
    x = x.join(nxt, on=[*g, "_seg"], how="left").join(seg, on=[*g, "_seg"], how="left")
    resid = pl.col("_b_us") - pl.col("_a_us") - pl.col("_tot") - pl.col("_b_d")
    # the first save between the segment's anchor and the next: what the anchors hold beyond the step times ran
    # there (the records after it end that much later), else it is spread over the records
    bounds = (x.filter("_anchor").select(*g, "_seg", _a_step="step")
              .join(nxt.join(x.filter("_anchor").select(*g, "_seg", _b_step="step").with_columns(pl.col("_seg") - 1),
                             on=[*g, "_seg"]).select(*g, "_seg", "_b_step"), on=[*g, "_seg"]))
    sv = saves.select(pl.col("attempt").cast(x.schema["attempt"]), _save="step")
    seg_save = (bounds.join(sv, on="attempt").filter(pl.col("_save") >= pl.col("_a_step"),
                                                       pl.col("_save") < pl.col("_b_step"))
                .group_by(*g, "_seg").agg(pl.col("_save").min()))
    x = x.join(seg_save, on=[*g, "_seg"], how="left")
    whole = pl.col("_tot") + pl.col("_b_d")
    spread = pl.when(whole > 0).then(pl.col("_cum") / whole).otherwise(0.0)
    share = pl.when(pl.col("_save").is_not_null() & ~pl.col("_unit")).then(
        (pl.col("step") > pl.col("_save")).cast(pl.Float64)).otherwise(spread)
    fwd = (pl.when(pl.col("_unit")).then(
        pl.when(pl.col("_b_us").is_not_null()).then(pl.col("_a_us") + (pl.col("_b_us") - pl.col("_a_us")) * spread))
        .otherwise(pl.col("_a_us") + pl.col("_cum")
                   + pl.when(pl.col("_b_us").is_not_null()).then(resid * share).otherwise(0.0)))
    # before the file's first anchor: back from it
    first = x.filter("_anchor").group_by(g).agg(_f_us=pl.col("_us").first(), _f_step=pl.col("step").first())
    x = x.join(first, on=g, how="left")
    # (the anchor's own step time: none where it restates a step an unstamped line printed first, as DeepSpeed's
    # `step=10` after Megatron-DeepSpeed's iteration 10 does)
    back_d = (pl.col("_d").reverse().cum_sum().reverse().over(*g, "_seg") - pl.col("_d")
              + pl.col("_d").filter(pl.col("_anchor") & (pl.col("step") == pl.col("_f_step"))).first().over(g)
              .fill_null(0.0))
    back = pl.col("_f_us") - back_d
    us = (pl.when(pl.col("_anchor")).then(pl.col("_us"))
          .when(pl.col("_a_us").is_not_null()).then(fwd)
          .when(pl.col("_f_us").is_not_null() & ~pl.col("_unit")).then(back)
          .otherwise(None)).fill_null(pl.col("_us").cast(pl.Float64))
    return x.with_columns(ts=pl.from_epoch(us.round().cast(pl.Int64), time_unit="us")).select(
        [c for c in cols if c != "borrowed"])


# A log's stamps are coarse when every one of a file's stamps is a whole second (strftime's `%H:%M:%S`), or a
# whole number of seconds from one moment (a progress bar's elapsed time).
COARSE_US = 1_000_000
# Consecutive records whose stamps differ from their reported step times by more than this are not one
# chain (a save, a stall or a pause ran between them; Megatron's iteration timer stops while it saves).
CHAIN_BREAK_US = 1_500_000
# A chain that no one offset fits is refined in windows of this many records. A log's step times are averages
# printed to 0.1 ms (Megatron: `elapsed time per iteration (ms): 4100.5` over 10 iterations), so their sum drifts
# from the true ends by a few ms over a hundred records, while the stamps of a long chain pin its offset to a ms: a
# whole chain would find no offset that fits every stamp, and keep its ±1 s stamps. 16 records pin the offset
# to a few tens of ms and drift by about one.
CHAIN_WINDOW = 16


def refine_coarse_stamps(logged: pl.DataFrame) -> pl.DataFrame:
    """Step ends of a log stamped to the whole second, refined with the step times the log prints.

    A stamp is truncated (`strftime`): the step really ended in [ts, ts + 1 s). Along a chain of
    records whose stamp differences agree with their reported step times, the ends are the chain's
    offset plus the cumulated step times, and each stamp bounds that offset; the middle of the bounds
    is taken. A chain whose bounds do not meet (the reported times drift from the stamps) keeps its
    stamps. Without this, a 8.0 s step logged at whole seconds looks 7 s or 9 s long, and the ledger
    would count each 9 s as a second of slowdown."""
    if not logged.height:
        return logged
    g = ["attempt", "file_id"]
    us = _us(pl.col("ts"))
    x = logged.sort("attempt", "file_id", "step", "line").with_columns(
        # whole seconds, or whole seconds from one start (tqdm's elapsed time after the bar's first stamp)
        _us=us, _coarse=((us % COARSE_US).n_unique() == 1).over(g) & (pl.len().over(g) > 1))
    n = (pl.col("step") - pl.col("step").shift(1).over(g)).fill_null(1).clip(lower_bound=1)
    x = x.with_columns(_d=(pl.col("step_s") * n * 1e6), _gap=pl.col("_us") - pl.col("_us").shift(1).over(g))
    brk = (pl.col("_gap").is_null() | pl.col("_d").is_null() | ~pl.col("_coarse")
           | ((pl.col("_gap") - pl.col("_d")).abs() > CHAIN_BREAK_US))
    x = x.with_columns(_chain=brk.cum_sum().over(g))
    # the whole chain where one offset fits all its stamps; else windows of CHAIN_WINDOW records
    x = x.with_columns(_win=pl.col("_chain") * 1_000_000 + pl.int_range(pl.len()).over(*g, "_chain") // CHAIN_WINDOW)
    x = _chain_fit(x, [*g, "_chain"], brk, "_c").with_columns(
        _wbrk=brk | (pl.col("_win") != pl.col("_win").shift(1).over(g)).fill_null(True))
    x = _chain_fit(x, [*g, "_win"], pl.col("_wbrk"), "_w")
    usable = pl.col("_coarse") & pl.col("step_s").is_not_null()
    fine = (pl.when(usable & pl.col("_c_ok")).then("_c_fine").when(usable & pl.col("_w_ok")).then("_w_fine"))
    return x.with_columns(ts=pl.coalesce(pl.from_epoch(fine, time_unit="us"), pl.col("ts")),
                          stamp_err_s=pl.when(pl.col("_coarse") & fine.is_null()).then(COARSE_US / 1e6).otherwise(0.0)
                          ).drop("_us", "_coarse", "_d", "_gap", "_chain", "_win", "_wbrk", "_c_ok", "_c_fine",
                                 "_w_ok", "_w_fine")


def _chain_fit(x: pl.DataFrame, c: list[str], brk: pl.Expr, tag: str) -> pl.DataFrame:
    """For each chain `c`: `{tag}_ok`, whether one offset fits every stamp of it, and `{tag}_fine`, each row's end
    (epoch us) at the middle of the offsets that fit (see `refine_coarse_stamps`)."""
    x = x.with_columns(_cum=pl.when(brk).then(0.0).otherwise(pl.col("_d")).cum_sum().over(c))
    x = x.with_columns(_lo=(pl.col("_us") - pl.col("_cum")).max().over(c),
                       _hi=(pl.col("_us") + COARSE_US - pl.col("_cum")).min().over(c))
    return x.with_columns(**{f"{tag}_ok": (pl.col("_lo") <= pl.col("_hi")).fill_null(False),
                             f"{tag}_fine": ((pl.col("_lo") + pl.col("_hi")) / 2 + pl.col("_cum")).round()
                             .cast(pl.Int64)}).drop("_cum", "_lo", "_hi")


def _one_log(logged: pl.DataFrame) -> pl.DataFrame:
    """One record per (attempt, step) from the log files, on the clock of the attempt's main log (the file
    with the most step lines); a step the main log lacks comes from another file, shifted by that file's
    median difference to the main log at the steps both print."""
    if not logged.height:
        return logged.select("attempt", "step", "ts", "step_s", stamp_err_s=pl.lit(0.0))
    # NOTE: a log without step numbers counts its own lines, in time order.
    logged = refine_coarse_stamps(logged.sort("attempt", "file_id", "ts", "line").with_columns(
        step=pl.coalesce("step", pl.int_range(1, pl.len() + 1).over("attempt", "file_id").cast(pl.Int64))))
    main = (logged.group_by("attempt", "file_id").len()
            .sort(["attempt", "len", "file_id"], descending=[False, True, False])
            .group_by("attempt", maintain_order=True).first().select("attempt", main_file="file_id"))
    logged = logged.join(main, on="attempt").with_columns(is_main=pl.col("file_id") == pl.col("main_file"))
    ref = logged.filter("is_main").group_by("attempt", "step").agg(ref_us=_us(pl.col("ts")).max())
    off = (logged.filter(~pl.col("is_main")).join(ref, on=["attempt", "step"])
           .group_by("attempt", "file_id").agg(off_us=(_us(pl.col("ts")) - pl.col("ref_us")).median()))
    shifted = logged.join(off, on=["attempt", "file_id"], how="left").with_columns(
        ts=pl.col("ts") - pl.duration(microseconds=pl.col("off_us").fill_null(0).round().cast(pl.Int64)))
    # a step printed twice in one file keeps its last record, one stamped finer than the whole second first (not a
    # tqdm bar's elapsed time from its start beside the engine's own line: that made every other interval 3 s long)
    order = ["attempt", "step", "is_main", "file_id", "_coarse_ts", "line"]
    return (shifted.with_columns(_coarse_ts=_us(pl.col("ts")) % COARSE_US == 0)
            .sort(order, descending=[False, False, True, False, False, True])
            .unique(["attempt", "step"], keep="first", maintain_order=True)
            .select("attempt", "step", "ts", "step_s", "stamp_err_s"))


def merge(logged: pl.DataFrame, profile: pl.DataFrame) -> pl.DataFrame:
    """The merged step records: `attempt, step, ts, step_s, data_s, source` (`rank` | `log`), `stamp_err_s` (how
    far its end may be off: a second for a whole-second stamp the step times could not refine, else none).

    `logged` are the log's step lines (`logged_steps`), `profile` the per-rank timings per step
    (`rank_profile`). A step with per-rank timings takes them; every other logged step keeps its line.
    The attempt's clock is the log's where there is one: its save, load and exit lines, and so the
    tail of the ledger, are on that clock. The per-rank records are moved onto it by the attempt's median
    difference at the steps both report (the ranks' common clock is the median of the hosts' clocks,
    which is off when most hosts are; coarse log stamps were refined first, see `refine_coarse_stamps`)."""
    log = _one_log(logged).with_columns(pl.col("attempt").cast(pl.Int32), data_s=pl.lit(None, pl.Float64),
                                        source=pl.lit("log"))
    timed = profile.filter(pl.col("ts").is_not_null()).select(
        pl.col("attempt").cast(pl.Int32), "step", "ts", "step_s", "data_s", source=pl.lit("rank"),
        stamp_err_s=pl.lit(0.0))
    clock = log if "clocked" not in logged.columns or logged["clocked"].all() else \
        _one_log(_clocked(logged)).with_columns(pl.col("attempt").cast(pl.Int32))
    shift = (clock.join(timed.select("attempt", "step", rank_ts="ts"), on=["attempt", "step"])
             .group_by("attempt").agg(shift_us=(_us(pl.col("rank_ts")) - _us(pl.col("ts"))).median()))
    timed = timed.join(shift, on="attempt", how="left").with_columns(
        ts=pl.col("ts") - pl.duration(microseconds=pl.col("shift_us").fill_null(0).round().cast(pl.Int64)))
    rest = log.join(timed.select("attempt", "step"), on=["attempt", "step"], how="anti")
    return pl.concat([timed.select(rest.columns), rest], how="vertical_relaxed").sort("attempt", "step")
