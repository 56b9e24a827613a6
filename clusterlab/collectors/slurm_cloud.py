"""Cloud node provisioning logs of a Slurm cluster → node failures (nodes that never booted, or lost their VM).

AWS ParallelCluster's Slurm plugin (`slurm_plugin.resume`, the ResumeProgram, in `slurm_resume.log`, and
`slurm_plugin.clustermgtd`, the cluster daemon, in `clustermgtd`), 3.x wording:

    2026-07-14 11:02:18,403 - [slurm_plugin.resume:_resume] - ERROR - Failed to launch following nodes, setting
        nodes to down: (x1) ['q1-dy-g5-2']
    2026-05-11 08:31:40,514 - [slurm_plugin.slurm_resources:is_backing_instance_valid] - WARNING - Node state
        check: no corresponding instance in EC2 for node q1-dy-g5-2(10.8.3.41), node state: ALLOCATED+CLOUD+...
    2026-05-11 08:31:40,517 - [slurm_plugin.clustermgtd:_maintain_nodes] - INFO - Found the following unhealthy
        dynamic nodes: (x1) ['q1-dy-g5-2(10.8.3.41)']

Some releases put the process id after the time (`... ,231 - 3946663 - [slurm_plugin...`). Times are the
head node's local time.
"""

from __future__ import annotations

import polars as pl

from clusterlab.collectors._base import TABLE_COLUMNS, Context, Parsed, fraction, json_detail, local_to_utc, search
from clusterlab.collectors._slurmlib import Rule, classify_lines

NAME = "slurm_cloud"
EXCLUSIVE = False
FILL_HOST = False  # each line names its nodes; the head node the log sits on is not to blame

_PLUGIN = r"\[slurm_plugin\.\w+:\w+\] - [A-Z]+ - "
PATTERN = _PLUGIN + (r"(?:Failed to launch following nodes|Setting following failed nodes|Node state check: no "
                     r"corresponding instance|EC2 instance availability for node|Found the following unhealthy"
                     r"|Encountered exception when launching instances)")

RULES: tuple[Rule, ...] = (
    # the ResumeProgram got no instance for the nodes (capacity, quota, a bad launch template): never booted
    Rule("cloud_launch_failed", r"Failed to launch following nodes", "node_failure", "error"),
    Rule("cloud_launch_failed", r"Encountered exception when launching instances", "node_failure", "error"),
    # NOTE: the same nodes the line before named, set DOWN: a consequence
    Rule("cloud_node_down", r"Setting following failed nodes", None, "warning"),
    Rule("cloud_instance_missing", r"Node state check: no corresponding instance", "node_failure", "error"),
    Rule("cloud_boot_timeout", r"EC2 instance availability for node \S+ has timed out", "node_failure", "error"),
    Rule("cloud_node_unhealthy", r"Found the following unhealthy", "node_failure", "error"),
)

_TIME = r"^(?P<t>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)(?:[,.](?P<ms>\d+))?"
_MAX_NODES = 10_000  # names taken from one line at most (log text is untrusted)


def GROUP_CONTEXT(ctx: Context) -> tuple:  # noqa: N802 (the collector contract's name)
    """What parse() reads of the context (each line is read on its own): plugin logs agreeing on it may be
    parsed together."""
    return (ctx.tz,)


def sniff(head: bytes, path: str) -> bool:
    """A ParallelCluster Slurm plugin log (resume or cluster daemon)."""
    return search(head.decode("utf-8", "replace").splitlines()[:200], _PLUGIN)


def parse(lines: pl.DataFrame, ctx: Context) -> Parsed:
    """One event per node a provisioning line names."""
    out = Parsed()
    frame = classify_lines(lines, RULES).filter(pl.col("kind").is_not_null())
    if not frame.height:
        return out
    stamp = pl.col("text").str.extract_groups(_TIME)
    ts = stamp.struct.field("t").str.strptime(pl.Datetime("us"), "%Y-%m-%d %H:%M:%S", strict=False)
    # NOTE: a list `['a', 'b(10.0.0.2)']`, or one node named inline (`for node a(10.0.0.2)`, `for node a has`)
    listed = pl.col("text").str.extract(r"\(x\d+\) \[([^\]]*)\]").str.extract_all(r"'[^']+'").list.head(_MAX_NODES)
    inline = pl.col("text").str.extract(r"for node ([^\s(,]+)")
    frame = frame.with_columns(
        local_to_utc(ts + fraction(stamp.struct.field("ms")), ctx.tz).alias("ts"),
        pl.when(listed.list.len() > 0).then(listed).otherwise(pl.concat_list(inline)).alias("_nodes"),
        pl.col("text").str.extract(r"An error occurred \((\w+)\)").alias("error"),
    ).explode("_nodes")
    host = pl.col("_nodes").str.strip_chars("'").str.replace(r"\(.*$", "")
    schema = TABLE_COLUMNS["events"]
    out.add("events", frame.select(
        pl.col("line").cast(pl.Int64), pl.col("ts").cast(schema["ts"]), host.alias("host"), "kind", "failure_mode",
        "severity", pl.col("text").str.slice(0, 2000), json_detail({"error": pl.col("error")}).alias("detail"),
    ))
    return out
