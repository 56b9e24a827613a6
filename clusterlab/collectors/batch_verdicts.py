"""Batch schedulers' verdicts on a job in its output, its mail or a report: PBS Pro, Torque, Moab, LSF, HTCondor, a
grid wrapper, and Slurm's mail and seff → scheduler events.

GPU clusters that are not on Slurm (PBS Pro at several national labs, LSF on older IBM GPU machines) end a job
with a line of their own in its output or its mail:

    =>> PBS: job killed: walltime 86415 exceeded limit 86400                   (PBS Pro, in the job's output)
    =>> PBS: job killed: mem 263718276kb exceeded limit 251658240kb
    Job exceeded its walltime limit. Job was aborted                           (Torque's job mail)
    Job exceeded a memory resource limit (vmem, pvmem, etc.). Job was aborted  (... for a memory kind it enforces)
    MOAB_INFO:  job exceeded wallclock limit                                   (Moab over Torque)
    TERM_RUNLIMIT: job killed after reaching LSF run time limit.               (LSF's job report)
    TERM_MEMLIMIT: job killed after reaching LSF memory usage limit.
    TERM_PREEMPT: job killed after preemption.
    TERM_OWNER: job killed by owner.
    job preempted (node failure)                                               (Torque's job mail, Moab's checkjob)
    012 (41207.000.000) ... Job was held.                                      (HTCondor's user log, the reason below)
        Job has gone over memory limit of 8192 megabytes. Peak usage: 9311 megabytes.
    024 (41207.000.000) ... Job reconnection failed                            (... the execute machine lost it)
    [Jun05 09:02] exception type="timeout" severity=0 userid=5421 note="resource allocation expired"   (Flux)
    ERROR: Trial (Experiment 312) was terminated: allocation failed due to agent failure   (Determined)
    ERROR:RetryJob Not retrying job due to wall clock limit (job automatically killed ...)   (CMS CRAB's post-job)
    Subject: Slurm Job_id=771204 Name=ft Failed, Run time 03:11:45, NODE_FAIL, ExitCode 0   (Slurm's mail subject)
    State: TIMEOUT (exit code 0)                                               (seff's report)

An MPI launcher is the job's scheduler within its allocation: Open MPI's mpirun (and Horovod's, over it) ends the
job when it loses the daemon it started on another node (`ORTE has lost communication with a remote daemon.`, 5.x's
`PRTE has lost ...`; the node is named two lines below): that node went away under the job (`node_failure`), as
a Slurm NODE_FAIL says.

Slurm's mail subject and seff's `State:` line carry the job's final state, read as sacct's (`_slurmlib.STATE_MODES`).

None of these lines carries a time or a host of its own.
"""

from __future__ import annotations

import polars as pl

from clusterlab.collectors._base import Context, Parsed, first_kind, json_detail, search
from clusterlab.collectors._slurmlib import STATE_MODES

NAME = "batch_scheduler"
EXCLUSIVE = False

# Flux's job eventlog (`flux job eventlog`): the job's time ran out
_FLUX_TIMEOUT = r"\bexception type=\"timeout\" severity=0 .*note=\"resource allocation expired\""
# the machine running the job went away under it: HTCondor's user log (event 024, its shadow could not find the job
# again on the execute machine) and Determined's trial log (the agent holding its containers failed)
_LOST_EXECUTOR = (r"\bJob reconnection failed\b|allocation failed due to agent failure"
                  r"|agent failed while the container was running"
                  # a launcher's ssh to a node of the job that no route leads to or that never answers (pdsh,
                  # DeepSpeed's runner, mpirun's rsh agent): the node is down or cut off (a refusal is its sshd's)
                  r"|\bssh: connect to host \S+ port \d+: (?:No route to host|Connection timed out)")
# Every branch starts with a literal no training, NCCL or kernel line holds.
PATTERN = "|".join([
    r"=>> PBS: job killed: ",
    r"Job exceeded (?:its|a) (?:walltime|memory|cpu)(?: resource)? limit",
    r"MOAB_INFO: +job exceeded ",
    r"TERM_[A-Z]+: job killed ",
    r"[Jj]ob preempted\b",
    r"Job has gone over memory limit of \d+ ",
    r"Not retrying job due to wall clock limit",
    r"\bSlurm (?:Array Summary )?Job_id=\S+(?: \(\d+\))? Name=.*, Run time [\d:-]+",
    r"(?m:^)State: [A-Z_]+(?: by \d+)? \(exit code \d+\)",
    r"\b(?:ORTE|PRTE) has lost communication with a remote daemon",
    _FLUX_TIMEOUT, _LOST_EXECUTOR,
])
SNIFF_HINT = (b"=>> pbs: ", b"job exceeded its ", b"job exceeded a ", b"moab_info:", b"term_", b"job preempted",
              b"job has gone over", b"wall clock limit", b"job_id=", b"(exit code ",
              b"lost communication with a remote daemon", b"exception type=\"timeout\"", b"job reconnection failed",
              b"due to agent failure", b"agent failed while", b"ssh: connect to host")
# The final state Slurm's mail subject (`..., Run time 1-00:00:12, TIMEOUT, ExitCode 0`, or its TIME_LIMIT mail's
# `Reached time limit`) or seff (`State: OUT_OF_MEMORY (exit code 0)`) gives the job
_SLURM_STATE = (r"Job_id=\S+(?: \(\d+\))? Name=.*, Run time [\d:-]+, ([A-Z_]+)(?: by \d+)?, ExitCode"
                r"|^State: ([A-Z_]+)(?: by \d+)? \(exit code \d+\)")
_SLURM_TIME_LIMIT = r"Job_id=\S+(?: \(\d+\))? Name=.* Reached time limit, Run time "

# (kind, regex, failure mode, severity), the first that matches decides
_KINDS: list[tuple[str, str, str | None, str]] = [
    ("batch_time_limit", r"=>> PBS: job killed: walltime |Job exceeded its walltime limit"
                         r"|MOAB_INFO: +job exceeded wallclock limit|TERM_RUNLIMIT: "
                         r"|Not retrying job due to wall clock limit|" + _SLURM_TIME_LIMIT + "|" + _FLUX_TIMEOUT,
     "time_limit", "error"),
    # NOTE: the job's memory as the scheduler counts it (the node's RAM, not a GPU's): the kernel's OOM killer's kin
    ("batch_memory_limit", r"=>> PBS: job killed: v?mem |Job exceeded (?:its|a) memory(?: resource)? limit"
                           r"|TERM_MEMLIMIT: "
                           r"|MOAB_INFO: +job exceeded (?:memory|MEM)|Job has gone over memory limit of \d+ ",
     "host_oom", "error"),
    # Slurm's own word for the job's end: its mode as sacct's State gives it (`_slurmlib.STATE_MODES`), none for
    # COMPLETED or CANCELLED (a person's scancel)
    ("slurm_job_end", _SLURM_STATE, None, "info"),
    # NOTE: Moab preempts (requeues or cancels) the jobs of a node that failed and says so in the reason it gives
    # Torque's mail and checkjob ('job preempted (node failure)'): the node's fault, not a reclaim
    ("batch_node_failure", r"[Jj]ob preempted \(node failure\)", "node_failure", "error"),
    ("mpi_daemon_lost", r"(?:ORTE|PRTE) has lost communication with a remote daemon", "node_failure", "error"),
    ("executor_lost", _LOST_EXECUTOR, "node_failure", "error"),
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
    # NOTE: FAILED is an exit status: where the report belongs to a run, its own logs name what failed (as sacct's)
    modes = {k: v for k, v in STATE_MODES.items() if ctx.run is None or k != "FAILED"}
    word = pl.coalesce(text.str.extract(_SLURM_STATE, 1), text.str.extract(_SLURM_STATE, 2))
    said = word.replace_strict({k: m for k, (m, _) in modes.items()}, default=None, return_dtype=pl.String)
    said_sev = word.replace_strict({k: v for k, (_, v) in modes.items()}, default="info", return_dtype=pl.String)
    slurm = kind == "slurm_job_end"
    mode = pl.when(slurm).then(said).otherwise(mode)
    severity = pl.when(slurm).then(said_sev).otherwise(severity)
    limit = text.str.extract_groups(r"=>> PBS: job killed: (?P<res>\w+) (?P<used>\S+) exceeded limit (?P<lim>\S+)")
    out.add("events", lines.select(
        pl.col("line").cast(pl.Int64), pl.lit(None, pl.Datetime("us")).alias("ts"),
        pl.lit(ctx.host, pl.String).alias("host"), kind.alias("kind"), mode.alias("failure_mode"),
        severity.alias("severity"), text.str.strip_chars().alias("text"),
        json_detail({"reason": pl.coalesce(text.str.extract(r"(TERM_[A-Z]+):", 1), word),
                     "resource": limit.struct.field("res"),
                     "used": limit.struct.field("used"), "limit": limit.struct.field("lim")}).alias("detail"),
    ))
    return out
