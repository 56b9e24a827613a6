"""squeue job listings → one event per listed job whose pending reason says its node failed it.

What users paste when their jobs stop starting: `squeue` (default format `%.18i %.9P %.8j %.8u %.2t %.10M %.6D
%R`) or `squeue -l` (with STATE and TIME_LIMI, after a date line), Slurm 20.11–25.05:

                 JOBID PARTITION     NAME     USER ST       TIME  NODES NODELIST(REASON)
                 40912       gpu pretrain   pyadav PD       0:00      1 (launch failed requeued held)
                 40917       gpu finetune   pyadav  R    3:12:40      4 gpu[011-014]

The last column is a running job's node list, or a pending job's reason in parentheses. Only a reason that says
the job's node failed it (a launch failure slurmctld requeued and held, a prolog error: `NODE_LOST_REASON`, as for
a node's reason) is a failure; waiting for resources, priority, a dependency or a user hold is none. The listing
names no node for a pending job, and no time: the event has neither.
"""

from __future__ import annotations

import polars as pl

from clusterlab.collectors._base import TABLE_COLUMNS, Context, Parsed, json_detail, search
from clusterlab.collectors._slurmlib import node_reason_mode

NAME = "squeue"
EXCLUSIVE = False
FILL_HOST = False  # a pending job names no node; a file's path must not lend it one

_Q = r'^\s*"?\s*'  # a line may sit inside quotes (a playbook's output)
_HEAD = _Q + r"JOBID\s+PARTITION\s+NAME\s+USER\s+(?:ST|STATE)\s+TIME\b.*\bNODELIST\(REASON\)"
# a row whose last column is a reason: `<jobid> <partition> <name> <user> <state> ... (<reason>)`
_ROW = _Q + r"\d+(?:_\d+|_\[[\d,-]+\])?\s+\S+\s+\S+\s+\S+\s+[A-Z]{1,2}[A-Z_]*\s+.*\([^()]+\)\"?,?\s*$"
PATTERN = "|".join([_HEAD, _ROW])


def GROUP_CONTEXT(ctx: Context) -> tuple:  # noqa: N802 (the collector contract's name)
    """What parse() reads of the context: nothing; listings may be parsed together."""
    return ()


def sniff(head: bytes, path: str) -> bool:
    """A squeue listing: its header line (possibly quoted, after a prompt or date line)."""
    return b"NODELIST(REASON)" in head and search(head.decode("utf-8", "replace").splitlines()[:50], _HEAD)


def parse(lines: pl.DataFrame, ctx: Context) -> Parsed:
    """Events for the listed jobs whose pending reason says a node failed them."""
    out = Parsed()
    unq = pl.col("text").str.replace(r'^\s*"', "").str.replace(r'"\s*,?\s*$', "").str.strip_chars()
    rows = lines.with_columns(unq.alias("row")).filter(~pl.col("row").str.contains(r"\bNODELIST\(REASON\)"))
    words = pl.col("row").str.split(" ").list.eval(pl.element().filter(pl.element() != ""))
    jobs = rows.with_columns(
        pl.col("row").str.extract(r"\(([^()]+)\)\s*$", 1).alias("reason"),
        words.list.get(0, null_on_oob=True).alias("job_id"), words.list.get(1, null_on_oob=True).alias("partition"),
        words.list.get(3, null_on_oob=True).alias("user"), words.list.get(4, null_on_oob=True).alias("state"),
    ).with_columns(node_reason_mode(pl.col("reason")).alias("failure_mode")).filter(
        pl.col("failure_mode").is_not_null())
    schema = TABLE_COLUMNS["events"]
    out.add("events", jobs.select(
        pl.col("line").cast(pl.Int64), pl.lit(None, schema["ts"]).alias("ts"), pl.lit(None, pl.String).alias("host"),
        pl.lit("squeue_job").alias("kind"), "failure_mode", pl.lit("error").alias("severity"),
        pl.col("text").str.slice(0, 2000).alias("text"),
        json_detail({"job_id": pl.col("job_id"), "state": pl.col("state"), "reason": pl.col("reason"),
                     "user": pl.col("user"), "partition": pl.col("partition")}).alias("detail"),
    ))
    return out
