"""Progress after a candidate cause: the step records the job, its host and the candidate's own file show after it.

Root cause (`diagnose.root_cause`) rejects a candidate after which the job kept stepping; these measure that
stepping: per-job and per-host step records from the training log and the per-rank timings (on the log's clock
where hosts' clocks are off), how many come after each candidate past the clock skew, and the step lines its own
file prints below it (a log is written in order, whatever times its lines borrow).
"""

from __future__ import annotations

import datetime as dt

import duckdb
import polars as pl

from clusterlab import store
from clusterlab.diagnose import timeline


def step_records(con: duckdb.DuckDBPyConnection, run: str | None, cand: pl.DataFrame, skew: dt.timedelta,
              profile: pl.DataFrame | None = None, clocks: pl.DataFrame | None = None
              ) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Step records: per (run, attempt, step) for the job (the training log and per-rank timings), and per
    (run, attempt, host, step) from the per-rank timings (ranks without a host get it from NCCL's rank map).

    `profile` (`timeline.rank_profile` of `run`) gives the per-rank timings' first end of each step (the
    job's records need no second read of the per-rank table) and the last (the steps a host record can
    end at after a candidate). The host records are read only from each attempt's earliest candidate on
    (past the clock skew): `steps_after` counts the records after a candidate, and a host record ends
    after that time exactly when one of its rows does."""
    if profile is not None and run is not None:
        ranked = profile.filter(pl.col("first_ts").is_not_null()).select("run", "attempt", "step", ts="first_ts")
        if clocks is not None and clocks.height:
            # hosts' clocks measured apart: the ranks' common clock, moved onto the log's (the first rank's end on
            # a host minutes behind would make the job look stopped minutes before it did)
            shift = clocks.group_by("attempt").agg(pl.col("shift_us").first())
            ranked = (profile.filter(pl.col("ts").is_not_null()).with_columns(pl.col("attempt").cast(pl.Int32))
                      .join(shift, on="attempt", how="left")
                      .select("run", "attempt", "step", ts=pl.col("ts") - pl.duration(
                          microseconds=pl.col("shift_us").fill_null(0))))
        # the log's step lines on the step clock (a line without its own stamp is not at the last stamp's time)
        logged = timeline.logged_steps(con, run).filter(pl.col("step").is_not_null()).select(
            pl.lit(run, pl.String).alias("run"), pl.col("attempt").cast(pl.Int32), "step", "ts")
        job = pl.concat([logged, ranked], how="vertical_relaxed").group_by("run", "attempt", "step").agg(
            pl.col("ts").min())
        job = job.sort("run", "attempt", "ts")
    else:
        job = store.frame(con, """
            SELECT run, attempt, step, min(ts) AS ts FROM (
                SELECT run, attempt, step, ts FROM steps UNION ALL SELECT run, attempt, step, ts FROM rank_steps)
            WHERE run IS NOT NULL AND ($run IS NULL OR run = $run) AND ts IS NOT NULL AND step IS NOT NULL
            GROUP BY ALL ORDER BY run, attempt, ts""", {"run": run})
    since = (cand.filter(pl.col("host").is_not_null()).group_by("run", "attempt").agg(t0=pl.col("ts").min() + skew)
             if cand.height else pl.DataFrame(schema={"run": pl.String, "attempt": pl.Int32, "t0": pl.Datetime("us")}))
    none = pl.DataFrame(schema={"run": pl.String, "attempt": pl.Int32, "host": pl.String, "step": pl.Int64,
                                "ts": pl.Datetime("us")})
    join = "JOIN since s USING (run, attempt)"
    if profile is not None and run is not None and since.height:
        # only steps some rank ended after t0 can hold such a host record (often none: the evidence of a
        # crash comes after the last step)
        since = (profile.filter(pl.col("step").is_not_null()).join(since, on=["run", "attempt"])
                 .filter(pl.col("last_ts") > pl.col("t0")).select("run", "attempt", "step", "t0"))
        join = "JOIN since s USING (run, attempt, step)"
    if not since.height:
        return job, none
    if clocks is not None and clocks.height:  # read on each host's own clock, compared on the run's
        since = since.with_columns(pl.col("t0") - dt.timedelta(microseconds=int(clocks["corr_us"].abs().max())))
    # NOTE: rows that name their host (nearly all) need no rank map: only the others are joined with it.
    host = store.frame(con, f"""
        WITH m AS (SELECT DISTINCT ON (run, attempt, rank) run, attempt, rank, host FROM nccl_ranks
                   WHERE host IS NOT NULL AND rank IS NOT NULL ORDER BY run, attempt, rank, nranks DESC),
        r AS (SELECT r.run, r.attempt, r.host, r.step, r.ts FROM rank_steps r {join}
              WHERE r.host IS NOT NULL AND ($run IS NULL OR r.run = $run) AND r.step IS NOT NULL AND r.ts > s.t0
              UNION ALL
              SELECT r.run, r.attempt, m.host, r.step, r.ts FROM rank_steps r {join}
              JOIN m USING (run, attempt, rank)
              WHERE r.host IS NULL AND ($run IS NULL OR r.run = $run) AND r.step IS NOT NULL AND r.ts > s.t0)
        SELECT run, attempt, host, step, max(ts) AS ts FROM r GROUP BY ALL ORDER BY run, attempt, host, ts""",
                       {"run": run}, since=since)
    if clocks is not None and clocks.height:
        host = timeline.on_log_clock(host, clocks).sort("run", "attempt", "host", "ts")
    return job, host


def steps_after(cand: pl.DataFrame, records: pl.DataFrame, by: list[str], skew: dt.timedelta, tag: str
                 ) -> pl.DataFrame:
    """For each candidate: how many step records come after it (past the clock skew), and the last one."""
    if not records.height or not cand.height:
        return cand.with_columns(pl.lit(0, pl.UInt32).alias(f"n_{tag}"), pl.lit(None, pl.Datetime("us"))
                                 .alias(f"last_{tag}"), pl.lit(None, pl.Int64).alias(f"step_{tag}"))
    recs = records.sort(*by, "ts").with_columns(
        _i=pl.int_range(1, pl.len() + 1).over(by).cast(pl.UInt32), _n=pl.len().over(by).cast(pl.UInt32))
    tot = recs.group_by(by).agg(_tot=pl.len().cast(pl.UInt32), _last=pl.col("ts").max(),
                                _lstep=pl.col("step").max())
    left = cand.with_columns(_t=pl.col("ts") + skew).sort("_t")
    got = left.join_asof(recs.select(*by, "_i", _t="ts").sort("_t"), on="_t", by=by, strategy="backward",
                         check_sortedness=False)  # sorted by time overall, so within each group
    got = got.join(tot, on=by, how="left").with_columns(
        pl.when(pl.col("_tot").is_null()).then(0).otherwise(pl.col("_tot") - pl.col("_i").fill_null(0))
        .cast(pl.UInt32).alias(f"n_{tag}"),
        pl.col("_last").alias(f"last_{tag}"), pl.col("_lstep").alias(f"step_{tag}"))
    return got.drop("_t", "_i", "_tot", "_last", "_lstep")


def duration_text(s: float) -> str:
    return f"{s / 60:.0f} min" if s >= 120 else f"{s:.0f} s"


def stepped_past(who: str, r: dict) -> str:
    """Why a candidate the job stepped past did not end the attempt."""
    to = f"{r['last_after']:%H:%M:%S}" if r["last_after"] is not None else f"step {r['step_file']}"
    return f"{who} kept stepping for {duration_text(r['progress_s'])} after it ({r['n_after']} step records, to {to})"


def steps_later_in_file(con: duckdb.DuckDBPyConnection, run: str | None, cand: pl.DataFrame) -> pl.DataFrame:
    """For each candidate, the step lines of its attempt that its own file prints after it (`n_file`), the time
    they stand for (`file_s`: the steps they cover at their median step time), their last step and time.

    A log is written in order: a step line below a traceback came after it, whatever time either borrows. Where
    neither carries a stamp of its own (a console whose only stamps are the launcher's, a trainer's progress bar),
    both take the last stamp above them, and only the file's order tells that the job stepped on (an ft_launcher
    cycle's start-up traceback, and the hundreds of steps its workers trained after it)."""
    cols = {"n_file": pl.UInt32, "file_s": pl.Float64, "step_file": pl.Int64, "last_file": pl.Datetime("us")}
    if not cand.height or "file" not in cand.columns:
        return cand.with_columns(*(pl.lit(None, t).alias(c) for c, t in cols.items()))
    steps = store.frame(con, """
        SELECT f.path AS file, s.run, s.attempt, s.line, s.step, s.ts, s.step_s FROM steps s
        JOIN ingested_files f USING (file_id)
        WHERE s.step IS NOT NULL AND s.line IS NOT NULL AND s.run IS NOT NULL AND ($run IS NULL OR s.run = $run)
          AND f.path IN (SELECT DISTINCT file FROM c)""", {"run": run},
                        c=cand.select("file").drop_nulls().unique())
    by = ["file", "run", "attempt"]
    if not steps.height:
        return cand.with_columns(*(pl.lit(None, t).alias(c) for c, t in cols.items()))
    steps = steps.with_columns(pl.col("attempt").cast(pl.Int32)).sort(*by, "line")
    per = steps.group_by(by).agg(_tot=pl.len().cast(pl.UInt32), _lstep=pl.col("step").last(),
                                 last_file=pl.col("ts").max(), _med=pl.col("step_s").median())
    first_after = steps.select(*by, "line", _fstep="step", _i=pl.int_range(pl.len()).over(by).cast(pl.UInt32))
    got = (cand.with_row_index("_r").sort("line")
           .join_asof(first_after.sort("line"), on="line", by=by, strategy="forward", allow_exact_matches=False,
                      check_sortedness=False)
           .join(per, on=by, how="left")
           .with_columns(n_file=(pl.col("_tot") - pl.col("_i")).cast(pl.UInt32),
                         step_file=pl.when(pl.col("_i").is_not_null()).then(pl.col("_lstep")),
                         file_s=(pl.col("_lstep") - pl.col("_fstep") + 1) * pl.col("_med"))
           .with_columns(last_file=pl.when(pl.col("_i").is_not_null()).then(pl.col("last_file")))
           .sort("_r").drop("_r", "_fstep", "_i", "_tot", "_lstep", "_med"))
    return got


__all__ = ["duration_text", "step_records", "stepped_past", "steps_after", "steps_later_in_file"]
