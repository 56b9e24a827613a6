"""Attempts that are the job steps of one allocation: each its own step's span.

A batch script that launches again inside its allocation when a launch fails (HyperPod's `srun --auto-resume`, a
retry loop around `srun`) runs one job step per attempt: `sacct` lists them (`1187.0`, `1187.1`, ...) with their own
Start and End. Where every attempt sharing a job begins within a step of its own (its last lines may be the batch
script's, after its step: a cancel of the allocation), that step's End is when the attempt stopped holding the GPUs'
work, and the next step's Start when the next began: the time between them (the script replacing a node, a job
queued to expand the allocation) is the restart's, and the time after the last step until the job's end (a person
cancelling the allocation later) is no attempt's hang. The first attempt still starts at the allocation's start (its
start-up includes the script's). One attempt in a job keeps the job's span.
"""

from __future__ import annotations

import duckdb
import polars as pl

from clusterlab import store

SLACK_S = 60.0  # an attempt's first line this long before its step's start at most (hosts' clocks)


def with_step_spans(con: duckdb.DuckDBPyConnection, spans: pl.DataFrame) -> pl.DataFrame:
    """`spans` (`timeline.attempt_spans`' columns) with the attempts of a job that each hold a step of their own
    bounded by that step (`start_by` / `end_by`: `sacct J.N`)."""
    shared = spans.filter(pl.col("job_id").is_not_null(), pl.col("job_id").count().over("job_id") > 1)
    if not shared.height:
        return spans
    steps = store.frame(con, """
        SELECT DISTINCT split_part(job_id, '.', 1) AS job_id, job_id AS step_id, start_ts AS step_start,
               end_ts AS step_end FROM jobs
        WHERE regexp_matches(job_id, '^\\d+(?:_\\d+)?\\.\\d+$') AND start_ts IS NOT NULL AND end_ts >= start_ts""")
    if not steps.height:
        return spans
    slack = pl.duration(seconds=SLACK_S)
    held = (shared.select("attempt", "job_id", "ev_start_ts").join(steps, on="job_id")
            .filter(pl.col("step_start") - slack <= pl.col("ev_start_ts"), pl.col("ev_start_ts") <= pl.col("step_end"))
            .sort("attempt", pl.col("step_end") - pl.col("step_start"))
            .unique("attempt", keep="first", maintain_order=True))
    # every attempt of the job in a step, no two in the same step
    whole = held.group_by("job_id").agg(n=pl.len(), steps=pl.col("step_id").n_unique()).join(
        shared.group_by("job_id").agg(attempts=pl.len()), on="job_id").filter(
        pl.col("n") == pl.col("attempts"), pl.col("steps") == pl.col("n"))["job_id"]
    held = held.filter(pl.col("job_id").is_in(whole.implode())).select("attempt", "step_id", "step_start", "step_end")
    if not held.height:
        return spans
    first = pl.col("attempt") == pl.col("attempt").min().over("job_id")
    out = spans.join(held, on="attempt", how="left")
    stepped = pl.col("step_id").is_not_null()
    return out.with_columns(
        start_ts=pl.when(stepped & ~first).then("step_start").otherwise("start_ts"),
        start_by=pl.when(stepped & ~first).then(pl.format("sacct {}", "step_id")).otherwise("start_by"),
        end_ts=pl.when(stepped).then("step_end").otherwise("end_ts"),
        end_by=pl.when(stepped).then(pl.format("sacct {}", "step_id")).otherwise("end_by"),
    ).drop("step_id", "step_start", "step_end")
