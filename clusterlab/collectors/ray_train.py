"""Ray Train's driver output (`ray job submit` / `ray job logs`, a RayJob's submitter pod): the worker group's
failures and restarts, and the times Tune prints.

A `TorchTrainer` run with `FailureConfig(max_failures=N)` restarts its whole worker group from the latest reported
checkpoint when a worker fails, inside one Ray job: Tune's controller logs the failure with its own time, then
(after waiting for resources: a replacement node) starts the trial again, and the job's log goes on:

    2024-06-10 14:40:30,679\tERROR tune_controller.py:1331 -- Trial task failed for trial TorchTrainer_1fa3e_00000
    Traceback (most recent call last): ...                     (the worker's own exception, read by `torch_dist`)
    Training errored after 812 iterations at 2024-06-10 14:40:30. Total running time: 1hr 40min 3s
    (TorchTrainer pid=131, ip=10.0.0.5) Restored on 10.0.0.5 from checkpoint: Checkpoint(filesystem=local, path=...)
    (TorchTrainer pid=7236) Started distributed worker processes:
    (TorchTrainer pid=7236) - (node_id=5d1c..., ip=10.0.59.242, pid=7410) world_rank=0, local_rank=0, node_rank=0
    Training finished iteration 2 at 2023-06-27 09:28:54. Total running time: 2min 4s
    Training completed after 100 iterations at 2023-06-27 10:28:54. Total running time: 1hr 2min 4s

Read from them: the trial's failure as a `restart` event (the worker group restarts, or the run gives up when its
failures are spent: the attempts pass tells them apart by whether training followed), Tune's dated progress lines as
facts (`ray_train_iteration`, `ray_train_errored`, `ray_train_completed`: iterations; they are the only times the
driver's own output prints, and date the lines around them: the worker's traceback printed as it died), and each
worker's node from the group's table (Ray v1 `Started distributed worker processes`, v2 `Started training worker
group of size N`): a `ray_worker` fact `rank=R` and a `ray_node_ip` fact (the node id) whose host is the worker's
address, named after the host that address is (`ingest.host_names`). A node's raylet log says when it started each
worker process (`[2025-05-02 11:47:39,203 I 2447254 2447254] (raylet) worker_pool.cc:522: Started worker process with
pid 2447432, the token is 29`, its node's time): a `ray_worker_process` fact (the pid), which dates the group's start
that the driver prints undated (`ingest.ray_groups`). Ray's asctime is the driver's local time (`ctx.proc_tz`, else
`ctx.tz`); Tune's `at <time>` too.
"""

from __future__ import annotations

import polars as pl

from clusterlab.collectors._base import AT_EXIT, Context, Parsed, file_of_line, local_to_utc, search

NAME = "ray_train"
EXCLUSIVE = False
SNIFF_HINT = (b"trial task failed for trial", b"training finished iteration", b"training errored after",
              b"training completed after", b"started distributed worker processes", b"worker group of size",
              b"started worker process with pid")

_TS = r"(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)"
# Tune's controller (2.5+ `tune_controller.py`, earlier `trial_runner.py`) on a failed trial, in Ray's log format
_FAILED = _TS + r",(\d{3})\s+ERROR \w+\.py:\d+ -- Trial task failed for trial (\S+)"
# the progress lines of Ray AIR's output (2.5+): Train's `Training ...`, Tune's `Trial NAME ...`
_PROGRESS = (r"^(?:Training|Trial \S+) (finished iteration|errored after|completed after) (\d+)(?: iterations)? at "
             + _TS + r"\. Total running time")
# one worker of the group: `- (node_id=ID, ip=IP, pid=P) world_rank=R, ...` (v2) or `- (ip=IP, pid=P) rank=R, ...`
_WORKER = (r"- \((?:node_id=([0-9a-f]+), )?ip=([\d.]+|[0-9a-f:]+), pid=(\d+)\) (?:world_)?rank=(\d+), local_rank=\d+")
# a node's raylet (`/tmp/ray/session_latest/logs/raylet.out`, its own time) starting a worker process
_RAYLET = (r"^\[" + _TS + r",(\d{3}) I \d+ \d+\] (?:\(raylet\) )?worker_pool\.cc:\d+: Started worker process with pid "
           r"(\d+)")
# the group's start: v1's trainer actor `Started distributed worker processes:`, v2's `Started training worker group`
_GROUP = r"\) Started (?:distributed worker processes:|training worker group of size \d+)"
PATTERN = "|".join([_FAILED, _PROGRESS, _WORKER, _GROUP, _RAYLET])
_FACT = {"finished iteration": "ray_train_iteration", "errored after": "ray_train_errored",
         "completed after": "ray_train_completed"}


def GROUP_CONTEXT(ctx: Context) -> tuple:  # noqa: N802  (a collector's contract names are capitals)
    """What parse() reads of the context: the zone the driver prints its times in."""
    return (ctx.tz, ctx.proc_tz)


def sniff(head: bytes, path: str) -> bool:
    """A Ray Train driver's output: a trial's failure, Tune's progress, or a worker group's table."""
    return search(head, "(?m)" + PATTERN)


def _time(raw: pl.Expr, ctx: Context) -> pl.Expr:
    return local_to_utc(raw.str.to_datetime("%Y-%m-%d %H:%M:%S", time_unit="us", strict=False), ctx.proc_tz or ctx.tz)


def parse(lines: pl.DataFrame, ctx: Context) -> Parsed:
    """Restart events, dated progress facts, and the worker group's nodes."""
    out = Parsed()
    text = pl.col("text")
    failed = lines.filter(text.str.contains(_FAILED))
    g = text.str.extract_groups(_FAILED)
    group = lines.filter(text.str.contains(_GROUP))
    out.add("events", pl.concat([
        failed.select(
            pl.col("line").cast(pl.Int64),
            (_time(g.struct.field("1"), ctx) + pl.duration(milliseconds=g.struct.field("2").cast(pl.Int64)))
            .alias("ts"),
            pl.lit("restart").alias("kind"), pl.lit("warning").alias("severity"),
            text.str.strip_chars().alias("text"), pl.lit(False).alias(AT_EXIT)),
        # NOTE: printed undated once the group's workers run: dated by the next stamped line (the workers' own first
        # records), not by the failure before it, which the wait for resources (a replacement node) lies after
        group.select(
            pl.col("line").cast(pl.Int64), pl.lit(None, pl.Datetime("us")).alias("ts"),
            pl.lit("worker_group_start").alias("kind"), pl.lit("info").alias("severity"),
            text.str.strip_chars().alias("text"), pl.lit(True).alias(AT_EXIT)),
    ]).with_columns(host=pl.lit(None, pl.String), failure_mode=pl.lit(None, pl.String)))
    p = text.str.extract_groups(_PROGRESS)
    # NOTE: Tune's `at <time>` is cut to the second: a failure's report follows the controller's own line, stamped to
    # the millisecond within that second, and takes that line's time (else it would date the lines between the two
    # before the failure)
    failed_at = (pl.when(text.str.contains(_FAILED)).then(
        _time(g.struct.field("1"), ctx) + pl.duration(milliseconds=g.struct.field("2").cast(pl.Int64, strict=False)))
        .forward_fill().over(file_of_line()))
    own = _time(p.struct.field("3"), ctx)
    within = (pl.col("_failed") >= own) & (pl.col("_failed") < own + pl.duration(seconds=1))
    prog = lines.with_columns(failed_at.alias("_failed")).filter(text.str.contains(_PROGRESS)).with_columns(
        p.struct.field("1").replace_strict(_FACT).alias("key"), p.struct.field("2").alias("value"),
        pl.when(within.fill_null(False)).then(pl.col("_failed")).otherwise(own).alias("ts"))
    w = text.str.extract_groups(_WORKER)
    workers = lines.filter(text.str.contains(_WORKER)).with_columns(
        node_id=w.struct.field("1"), ip=w.struct.field("2"), pid=w.struct.field("3"), rank=w.struct.field("4"))
    r = text.str.extract_groups(_RAYLET)
    raylet = lines.filter(text.str.contains(_RAYLET)).select(
        pl.col("line").cast(pl.Int64),
        (local_to_utc(r.struct.field("1").str.to_datetime("%Y-%m-%d %H:%M:%S", time_unit="us", strict=False), ctx.tz)
         + pl.duration(milliseconds=r.struct.field("2").cast(pl.Int64, strict=False))).alias("ts"),
        pl.lit(ctx.host, pl.String).alias("host"), pl.lit("ray_worker_process").alias("key"),
        r.struct.field("3").alias("value"))
    out.add("facts", pl.concat([
        prog.select(pl.col("line").cast(pl.Int64), "ts", pl.lit(None, pl.String).alias("host"), "key", "value"),
        workers.select(pl.col("line").cast(pl.Int64), pl.lit(None, pl.Datetime("us")).alias("ts"),
                       pl.col("ip").alias("host"), pl.lit("ray_worker").alias("key"),
                       pl.format("rank={} pid={}", "rank", "pid").alias("value")),
        workers.filter(pl.col("node_id").is_not_null()).unique("node_id", keep="first", maintain_order=True).select(
            pl.col("line").cast(pl.Int64), pl.lit(None, pl.Datetime("us")).alias("ts"), pl.col("ip").alias("host"),
            pl.lit("ray_node_ip").alias("key"), pl.col("node_id").alias("value")),
        raylet,
    ]))
    return out
