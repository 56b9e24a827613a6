"""Other batch schedulers' verdicts on a job: PBS Pro, Torque, Moab and LSF → scheduler events.

GPU clusters that are not on Slurm (PBS Pro at several national labs, LSF on older IBM GPU machines) end a job
with a line of their own in its output or its mail:

    =>> PBS: job killed: walltime 86415 exceeded limit 86400                   (PBS Pro, in the job's output)
    =>> PBS: job killed: mem 263718276kb exceeded limit 251658240kb
    Job exceeded its walltime limit. Job was aborted                           (Torque's job mail)
    MOAB_INFO:  job exceeded wallclock limit                                   (Moab over Torque)
    TERM_RUNLIMIT: job killed after reaching LSF run time limit.               (LSF's job report)
    TERM_MEMLIMIT: job killed after reaching LSF memory usage limit.
    TERM_PREEMPT: job killed after preemption.
    TERM_OWNER: job killed by owner.
    job preempted (node failure)                                               (Torque's job mail, Moab's checkjob)

None of these lines carries a time or a host of its own.
"""

from __future__ import annotations

import polars as pl

from clusterlab.collectors._base import Context, Parsed, first_kind, json_detail, search

NAME = "batch_scheduler"
EXCLUSIVE = False

# Every branch starts with a literal no training, NCCL or kernel line holds.
PATTERN = "|".join([
    r"=>> PBS: job killed: ",
    r"Job exceeded its (?:walltime|memory|cpu) limit",
    r"MOAB_INFO: +job exceeded ",
    r"TERM_[A-Z]+: job killed ",
    r"[Jj]ob preempted\b",
])
SNIFF_HINT = (b"=>> pbs: ", b"job exceeded its ", b"moab_info:", b"term_", b"job preempted")

# (kind, regex, failure mode, severity), the first that matches decides
_KINDS: list[tuple[str, str, str | None, str]] = [
    ("batch_time_limit", r"=>> PBS: job killed: walltime |Job exceeded its walltime limit"
                         r"|MOAB_INFO: +job exceeded wallclock limit|TERM_RUNLIMIT: ", "time_limit", "error"),
    # NOTE: the job's memory as the scheduler counts it (the node's RAM, not a GPU's): the kernel's OOM killer's kin
    ("batch_memory_limit", r"=>> PBS: job killed: v?mem |Job exceeded its memory limit|TERM_MEMLIMIT: "
                           r"|MOAB_INFO: +job exceeded (?:memory|MEM)", "host_oom", "error"),
    # NOTE: Moab preempts (requeues or cancels) the jobs of a node that failed and says so in the reason it gives
    # Torque's mail and checkjob ('job preempted (node failure)'): the node's fault, not a reclaim
    ("batch_node_failure", r"[Jj]ob preempted \(node failure\)", "node_failure", "error"),
    ("batch_preempted", r"TERM_PREEMPT: |[Jj]ob preempted\b", "preemption", "warning"),
    # a person's (or an admin's) kill, a CPU-time limit, the other TERM_ reasons: the verdict, with no failure mode
    ("batch_killed", r"", None, "warning"),
]


def sniff(head: bytes, path: str) -> bool:
    """A batch scheduler's verdict on a job in the head."""
    return search(head.decode("utf-8", "replace"), PATTERN)


def parse(lines: pl.DataFrame, ctx: Context) -> Parsed:
    """One event per verdict line."""
    out = Parsed()
    text = pl.col("text")
    kind, mode, severity = first_kind(text, _KINDS)
    limit = text.str.extract_groups(r"=>> PBS: job killed: (?P<res>\w+) (?P<used>\S+) exceeded limit (?P<lim>\S+)")
    out.add("events", lines.select(
        pl.col("line").cast(pl.Int64), pl.lit(None, pl.Datetime("us")).alias("ts"),
        pl.lit(ctx.host, pl.String).alias("host"), kind.alias("kind"), mode.alias("failure_mode"),
        severity.alias("severity"), text.str.strip_chars().alias("text"),
        json_detail({"reason": text.str.extract(r"(TERM_[A-Z]+):", 1), "resource": limit.struct.field("res"),
                     "used": limit.struct.field("used"), "limit": limit.struct.field("lim")}).alias("detail"),
    ))
    return out
