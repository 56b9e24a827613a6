"""`scontrol show node` / `scontrol show job` records → node and job verdicts.

What users paste to show a node that went away or a job that ended (Slurm 20.11–25.05, `src/scontrol/info_node.c`,
`src/api/job_info.c`): a record starts at `NodeName=` / `JobId=` and goes on in indented `Key=Value` lines (or,
with `-o`, on one line):

    NodeName=gpu-011 Arch=x86_64 CoresPerSocket=56
       State=DOWN+NOT_RESPONDING ThreadsPerCore=2 TmpDisk=0 Weight=1 Owner=N/A MCS_label=N/A
       Reason=Not responding [slurm@2026-12-03T08:21:40]

    JobId=81301 JobName=pretrain
       JobState=TIMEOUT Reason=TimeLimit Dependency=(null)
       Requeue=1 Restarts=0 BatchFlag=1 Reboot=0 ExitCode=0:15

A node record gives an event where the node is down, drained or failing (its reason decides the failure, as
sinfo's does); a job record, where its state is a failure (as sacct's does). The reason's time is local.
"""

from __future__ import annotations

import polars as pl

from clusterlab.collectors._base import TABLE_COLUMNS, Context, Parsed, file_of_line, json_detail, search
from clusterlab.collectors._slurmlib import STATE_MODES, explode_hosts, iso_local, state, with_reason_modes

NAME = "scontrol"
EXCLUSIVE = False
FILL_HOST = False  # a node record names its node; a job's failure names none

_NODE = r"^\s*NodeName=\S+"
_JOB = r"^\s*JobId=\d+(?:_\d+)?\s"
# the stamp scontrol puts after a node's reason: `[user@YYYY-MM-DDTHH:MM:SS]`
_STAMP = r"\s\[[\w.-]+@\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\]\s*$"
PATTERN = "|".join([_NODE, _JOB, r"^\s+(?:State|JobState)=[A-Z_+*]+", r"(?:^|\s)Reason=", r"^\s+ExitCode=\d+:\d+",
                    _STAMP])

# NOTE: a node's reason pasted without its record ('Reason=Node unexpectedly rebooted [slurm@2026-...]', in a
# ticket or a node-down template), or its value alone ('Not responding [slurm@2026-...]', as a form's answer): the
# reason's own stamp ('[user@YYYY-MM-DDTHH:MM:SS]') is scontrol's, so the line is a node record of its own, its node
# unnamed
_LOOSE_REASON = r"(?:^|\s)(?:Reason=)?\S.*" + _STAMP
_NODE_BAD = r"(?:^|\+)(?:DOWN|DRAIN|DRAINED|DRAINING|FAIL|FAILING|NOT_RESPONDING|INVALID|INVALID_REG)(?:\+|\*|$)"


def GROUP_CONTEXT(ctx: Context) -> tuple:  # noqa: N802 (the collector contract's name)
    """What parse() reads of the context (the time zone of reasons' times; whether the file is a run's, where a
    FAILED job is the run's own failure): records agreeing on it may be parsed together."""
    return ctx.tz, ctx.run is None


def sniff(head: bytes, path: str) -> bool:
    """An `scontrol show node` or `scontrol show job` record (after a prompt line, possibly)."""
    lines = head.decode("utf-8", "replace").splitlines()[:50]
    return search(lines, r"^\s*(?:NodeName=\S+ (?:Arch|CoresPerSocket|CPUAlloc|NodeAddr)="
                         r"|JobId=\d+\S* (?:ArrayJobId=\d+ )?JobName=)|" + _LOOSE_REASON)


def parse(lines: pl.DataFrame, ctx: Context) -> Parsed:
    """Events from the node and job records of one batch."""
    out = Parsed()
    text = pl.col("text")
    node = text.str.extract(r"^\s*NodeName=(\S+)")
    job = text.str.extract(r"^\s*JobId=(\d+(?:_\d+)?)\s")
    opened = pl.when(node.is_not_null()).then(pl.lit("node")).when(job.is_not_null()).then(pl.lit("job"))
    inside = opened.is_not_null().cum_sum().over(file_of_line()) > 0
    loose = text.str.contains(_LOOSE_REASON) & ~inside
    opened = pl.when(loose).then(pl.lit("node")).otherwise(opened)
    # NOTE: the fields of a record are the lines from its first to the next record's (forward fill)
    # (each file's own: files parsed together number their lines apart, and a file's first lines before any
    # record of its own belong to none, not to the file before's last record)
    frame = lines.with_columns(
        opened.forward_fill().over(file_of_line()).alias("_what"),
        pl.coalesce(node, job).forward_fill().over(file_of_line()).alias("_id"),
        pl.when(opened.is_not_null()).then(pl.col("line")).forward_fill().over(file_of_line()).alias("_rec"),
        text.str.extract(r"(?:^|\s)State=(\S+)").alias("_state"),
        text.str.extract(r"(?:^|\s)JobState=(\S+)").alias("_jstate"),
        pl.coalesce(text.str.extract(r"(?:^|\s)Reason=(.*?)(?:\s+\[(\S+)@(\S+)\])?\s*$"),
                    pl.when(loose).then(text.str.extract(r"^\s*(.*?)\s+\[\S+@\S+\]\s*$"))).alias("_reason"),
        text.str.extract(r"(?:^|\s)(?:Reason=)?.*?\s+\[\S+@(\S+)\]\s*$").alias("_rts"),
        text.str.extract(r"(?:^|\s)ExitCode=(\d+:\d+)").alias("_exit"),
    ).filter(pl.col("_rec").is_not_null())
    rec = frame.group_by("_rec", maintain_order=True).agg(
        pl.col("_what").first(), pl.col("_id").first(), pl.col("_state").drop_nulls().first(),
        pl.col("_jstate").drop_nulls().first(), pl.col("_reason").drop_nulls().first(),
        pl.col("_rts").drop_nulls().first(), pl.col("_exit").drop_nulls().first(), pl.col("text").first())
    out.add("events", _nodes(rec.filter(pl.col("_what") == "node"), ctx, out))
    out.add("events", _jobs(rec.filter(pl.col("_what") == "job"), ctx))
    return out


def _nodes(rec: pl.DataFrame, ctx: Context, out: Parsed) -> pl.DataFrame:
    """One event per node record whose node is set aside or carries a reason."""
    reason = pl.when(~pl.col("_reason").is_in(["", "(null)", "none"])).then(pl.col("_reason"))
    frame = rec.with_columns(reason.alias("reason"), pl.lit(None, pl.String).alias("failure_mode"),
                             pl.col("_id").alias("host"))
    frame = with_reason_modes(frame)
    lost = pl.col("_state").str.contains(r"NOT_RESPONDING|^DOWN\*|^FAIL")
    frame = frame.with_columns(pl.coalesce("failure_mode", pl.when(lost).then(pl.lit("node_failure")))
                               .alias("failure_mode")).filter(
        pl.col("reason").is_not_null() | pl.col("_state").str.contains(_NODE_BAD))
    frame = explode_hosts(frame.rename({"_rec": "line"}), "host", out)
    schema = TABLE_COLUMNS["events"]
    return frame.select(
        pl.col("line").cast(pl.Int64), iso_local(pl.col("_rts"), ctx.tz).cast(schema["ts"]).alias("ts"), "host",
        pl.lit("scontrol_node").alias("kind"), "failure_mode",
        pl.when(pl.col("failure_mode").is_not_null()).then(pl.lit("error")).otherwise(pl.lit("warning"))
        .alias("severity"), pl.col("xid").cast(pl.Int32), pl.col("text").str.slice(0, 2000),
        json_detail({"state": pl.col("_state"), "reason": pl.col("reason")}).alias("detail"),
    )


def _jobs(rec: pl.DataFrame, ctx: Context) -> pl.DataFrame:
    """One event per job record whose state is a failure (`STATE_MODES`; FAILED only in a file given alone, as
    sacct's: `_slurmlib.job_events`)."""
    table = pl.DataFrame({"_st": list(STATE_MODES), "failure_mode": [m for m, _ in STATE_MODES.values()],
                          "severity": [s for _, s in STATE_MODES.values()]})
    if ctx.run is not None:
        table = table.filter(pl.col("_st") != "FAILED")
    frame = rec.with_columns(state(pl.col("_jstate")).alias("_st")).join(table, on="_st", how="inner")
    schema = TABLE_COLUMNS["events"]
    return frame.select(
        pl.col("_rec").cast(pl.Int64).alias("line"), pl.lit(None, schema["ts"]).alias("ts"),
        pl.lit(None, pl.String).alias("host"), pl.lit("slurm_job_state").alias("kind"), "failure_mode", "severity",
        pl.col("text").str.slice(0, 2000),
        json_detail({"job_id": pl.col("_id"), "state": pl.col("_st"),
                     "reason": pl.col("_reason").str.extract(r"^(\S+)"), "exit": pl.col("_exit")}).alias("detail"),
    )
