"""PyTorch Lightning's own notices of the scheduler's signals → time-limit events.

Lightning's `SLURMEnvironment` (auto_requeue, the default under Slurm) handles the signal that `sbatch
--signal=SIGUSR1@90` asks Slurm to send before the job's time limit: it saves an `hpc_ckpt_<n>.ckpt` and requeues
the job itself (`lightning/pytorch/trainer/connectors/signal_connector.py`):

    Handling auto-requeue signal: 10
    requeing job 734412...
    Requeued SLURM job: 734412

Slurm then kills the job `DUE TO JOB REQUEUE` and sacct says REQUEUED: neither says why. The notice does: the
job was stopped for its time limit, not by a fault (the submitit `this job is timed-out` line of
`collectors.slurm` is the same notice from another library). A preemption that sends the same signal is told by
the scheduler's own verdict, which outranks a time limit. No time is read: the line has none.
"""

from __future__ import annotations

import polars as pl

from clusterlab.collectors._base import Context, Parsed, search

NAME = "lightning"
EXCLUSIVE = False

PATTERN = r"Handling auto-requeue signal: \d"
SNIFF_HINT = (b"auto-requeue signal",)


def sniff(head: bytes, path: str) -> bool:
    """Lightning's auto-requeue notice in the head."""
    return search(head.decode("utf-8", "replace"), PATTERN)


def parse(lines: pl.DataFrame, ctx: Context) -> Parsed:
    """One time-limit event per notice."""
    out = Parsed()
    out.add("events", lines.select(
        pl.col("line").cast(pl.Int64), pl.lit(None, pl.Datetime("us")).alias("ts"),
        pl.lit(ctx.host, pl.String).alias("host"), pl.lit("lightning_requeue_signal").alias("kind"),
        pl.lit("time_limit").alias("failure_mode"), pl.lit("warning").alias("severity"),
        pl.col("text").str.strip_chars().alias("text"),
    ))
    return out
