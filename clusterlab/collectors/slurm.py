"""Slurm job-output collector: `slurmstepd` banners and `srun` errors → scheduler events.

What Slurm writes into a job's output (and, for slurmstepd, into slurmd logs), with the wording of
Slurm 22.05–25.05 (`src/slurmd/slurmstepd/req.c`, `src/srun/launch.c`, `src/api/step_launch.c`,
`src/salloc/salloc.c`, `src/plugins/task/cgroup/task_cgroup_memory.c`, `src/interfaces/jobacct_gather.c`):

    slurmstepd[-node3]: error: *** JOB 25 ON node1 CANCELLED AT 2026-12-03T08:45:21 DUE TO NODE FAILURE, ...
    slurmstepd: error: *** STEP 18.0 ON node3 CANCELLED AT 2026-12-03T08:43:54 ***
    slurmstepd: error: *** JOB 18 ON node3 CANCELLED AT 2026-12-03T08:43:54 DUE to SIGNAL Terminated ***  (25.05)
    slurmstepd: *** JOB 18 CANCELLED AT 2016-12-03T08:43:54 DUE TO TIME LIMIT on node3 ***  (older: node last)
    salloc: error: Node failure on node[2-3]
    srun: error: node2: task 3: Exited with exit code 1
    srun: error: node1: tasks 0-1: Terminated
    srun: error: Node failure on node2
    slurmstepd: error: Detected 1 oom_kill event in StepId=1234.0. Some of the step tasks have been OOM Killed.
    srun: job 14 queued and waiting for resources

The banner's time is the node's local time (`ctx.tz`); srun lines carry no time of their own.
"""

from __future__ import annotations

import re

import polars as pl

from clusterlab.collectors._base import (
    TABLE_COLUMNS,
    Context,
    Parsed,
    extract_all,
    file_of_line,
    fraction,
    json_detail,
    search,
)
from clusterlab.collectors._slurmlib import Rule, classify_lines, explode_hosts, iso_local

NAME = "slurm"
EXCLUSIVE = False

# A shell command failing on the filesystem it works on, in perror's words at the line's end: EIO
# (`/bin/mv: Input/output error`), ESTALE (`-bash: cd: /home/u: Stale file handle`, `ls: cannot access '/data':
# Stale file handle`), and on a path ENOTCONN (a FUSE mount whose daemon died) or ESHUTDOWN (an evicted Lustre client)
_PERROR_FS = (r": (?:Input/output error|Stale file handle)\s*$"
              r"|['\"]?/[^\s:'\"]*['\"]?: (?:Transport endpoint is not connected|Cannot send after transport endpoint "
              r"shutdown)\s*$")

# Every branch holds a literal that ordinary training, NCCL and kernel lines never contain.
PATTERN = "|".join([
    r"\*\*\* (?:JOB|STEP) \d",
    r"\*\*\* REASON: ",
    r"srun: (?:error: |Job step aborted|forcing job termination|Force Terminated )",
    r"salloc: error: Node failure on ",
    r"srun: (?:launch/slurm: _step_signal: )?Terminating (?:Step|Job)Id=",
    r"srun: job \d+ (?:queued and waiting|has been allocated)",
    r"oom[_-]kill event",
    r"exceeded (?:virtual )?memory limit \(",
    r"slurmstepd: error: execve\(\): ",
    r"(?:srun|salloc|sbatch): (?:error: )?Prolog failure on node ",
    r"\[job \d+\] prolog failed status=",
    r"Caught signal \w+ on \S+: this job is (?:preempted|timed-out)",
    r"SLURM status is: '",
    r"Process exceeded running time limit \(",
    # a job's shell commands failing on its filesystem, in perror's words (`/bin/mv: Input/output error`)
    _PERROR_FS,
])


# A job or step id as Slurm prints it: 1234, 1234.0, 1234.batch, 1234_7 (array), 1234+1 (het).
_ID = r"\d+(?:_\d+)?(?:\+\d+)?(?:\.\w+)?(?:\+\d+)?"
_ISO = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d"

# Optional prefixes: the slurmd log time (`[2026-..] [5.0] `) and slurmstepd's program name, which
# names the node on builds with multiple slurmd per host (`slurmstepd-node3: `).
_PREFIX = rf"^(?:\[(?P<pts>{_ISO})(?:\.(?P<pfrac>\d+))?\] )?(?:\[[\w.+]+\] )?(?:slurmstepd-(?P<phost>[^\s:]+): )?"


# Linux strsignal() texts, which srun prints for a task killed by a signal.
SIGNALS: dict[str, int] = {
    "Hangup": 1, "Interrupt": 2, "Quit": 3, "Illegal instruction": 4, "Trace/breakpoint trap": 5,
    "Aborted": 6, "Bus error": 7, "Floating point exception": 8, "Killed": 9, "User defined signal 1": 10,
    "Segmentation fault": 11, "User defined signal 2": 12, "Broken pipe": 13, "Alarm clock": 14,
    "Terminated": 15, "CPU time limit exceeded": 24, "File size limit exceeded": 25,
}
_SIGNAL_NAMES = "|".join(re.escape(n) for n in SIGNALS) + r"|Real-time signal \d+|Unknown signal \d+"


# Ordered: the first rule that matches a line decides its kind, failure mode and severity.
RULES: tuple[Rule, ...] = (
    Rule("slurm_node_fail", r"\*\*\* (?:JOB|STEP) \S+ (?:ON \S+ )?CANCELLED AT \S+ DUE TO NODE FAILURE", "node_failure",
         "critical"),
    Rule("slurm_time_limit", r"\*\*\* (?:JOB|STEP) \S+ (?:ON \S+ )?CANCELLED AT \S+ DUE TO TIME LIMIT", "time_limit",
         "error"),
    Rule("slurm_preempted", r"\*\*\* (?:JOB|STEP) \S+ (?:ON \S+ )?CANCELLED AT \S+ DUE TO PREEMPTION", "preemption",
         "warning"),
    Rule("slurm_requeued", r"\*\*\* (?:JOB|STEP) \S+ (?:ON \S+ )?CANCELLED AT \S+ DUE TO JOB REQUEUE", None, "warning"),
    # submitit (the Python launcher of many training jobs on Slurm) names the signal Slurm sent it before the kill
    # (`--signal=USR2@N`): `Caught signal SIGUSR2 on node3: this job is preempted.` or `... is timed-out.` (it asks
    # Slurm whether the job reached its time limit); its requeue's banner (`DUE TO JOB REQUEUE`) says neither
    Rule("submitit_preempted", r"Caught signal \w+ on \S+: this job is preempted", "preemption", "warning"),
    Rule("submitit_timed_out", r"Caught signal \w+ on \S+: this job is timed-out", "time_limit", "error"),
    # a workflow manager's verdict on a job it ran: Snakemake's SLURM executor quotes the state sacct gave
    # (`SLURM-job '2254' failed, SLURM status is: 'TIMEOUT'.`), Nextflow its own `time` directive's kill
    Rule("workflow_time_limit", r"SLURM status is: 'TIMEOUT'|Process exceeded running time limit \(", "time_limit",
         "error"),
    Rule("workflow_node_fail", r"SLURM status is: 'NODE_FAIL'", "node_failure", "critical"),
    Rule("workflow_preempted", r"SLURM status is: 'PREEMPTED'", "preemption", "warning"),
    Rule("workflow_oom", r"SLURM status is: 'OUT_OF_MEMORY'", "host_oom", "error"),
    # NOTE: FAILED or CANCELLED says no more than the job's exit: the job's own log says why
    Rule("workflow_job_state", r"SLURM status is: '", None, "warning"),
    # NOTE: a whole job cancelled with no reason is scancel (SIGTERM/SIGKILL from a person or their
    # script); a step alone is also cancelled by srun --kill-on-bad-exit after a task failed.
    # NOTE: 25.05+ names the signal (`DUE to SIGNAL Terminated`, lower-case `to`) where older releases print
    # none; `DUE TO TASK FAILURE` (25.05+) is srun --kill-on-bad-exit after a task of the step failed: the
    # application's own failure, whose task line may not be in the file.
    Rule("slurm_task_failure_cancel", r"\*\*\* (?:JOB|STEP) \S+ (?:ON \S+ )?CANCELLED AT \S+ DUE TO TASK FAILURE",
         "user_code_error", "error"),
    # NOTE: a person's own scancel is no failure: the event keeps its kind (root cause reads it as the user's
    # stop of an attempt, incidents.py) but carries no failure mode, so a file of it alone raises none.
    Rule("slurm_cancelled", r"\*\*\* JOB \S+ (?:ON \S+ )?CANCELLED AT \S+ (?:\*\*\*|DUE to SIGNAL )", None,
         "warning"),
    Rule("slurm_step_cancelled", r"\*\*\* STEP \S+ (?:ON \S+ )?CANCELLED AT ", None, "warning"),
    Rule("slurm_step_failed", r"\*\*\* (?:JOB|STEP) \S+ ON \S+ FAILED \(", None, "error"),
    Rule("slurm_memory_error", r"\*\*\* (?:JOB|STEP) \S+ ON \S+ UNCORRECTABLE MEMORY ERROR", "host_hw", "critical"),
    # NOTE: the step's processes would not die (stuck in the kernel: a hung GPU or filesystem); slurmctld drains
    # the node with reason `Kill task failed`
    Rule("slurm_stepd_terminated", r"\*\*\* (?:JOB|STEP) \S+ STEPD TERMINATED ON ", "node_failure", "error"),
    Rule("slurm_cancel_reason", r"\*\*\* REASON: ", None, "info"),
    Rule("slurm_oom", r"srun: error: \S+: tasks? [\d,-]+: Out Of Memory", "host_oom", "error"),
    # NOTE: a task that exited non-zero is the application's failure as srun saw it; the weakest evidence
    # there is (a rank killed by a hung collective exits 1 too), ranked below every other cause (incidents.py).
    Rule("slurm_task_exit", r"srun: error: \S+: tasks? [\d,-]+: Exited with exit code 0*[1-9]\d*", "user_code_error",
         "error"),
    Rule("slurm_task_exit", r"srun: error: \S+: tasks? [\d,-]+: Exited with exit code \d+", None, "info"),
    # NOTE: srun SIGTERMs the surviving tasks of a failed or cancelled step: a consequence, not a cause.
    Rule("slurm_task_signal", r"srun: error: \S+: tasks? [\d,-]+: Terminated(?: \(core dumped\))?$", None,
         "warning"),
    # a task that crashed on its own (a bad access, an abort, an arithmetic trap): the application's failure
    Rule("slurm_task_signal", r"srun: error: \S+: tasks? [\d,-]+: (?:Segmentation fault|Aborted|Floating "
         r"point exception|Illegal instruction)(?: \(core dumped\))?$", "user_code_error", "error"),
    # NOTE: who sent a SIGKILL (the kernel's OOM killer, a person, Slurm) is not said
    Rule("slurm_task_signal", rf"srun: error: \S+: tasks? [\d,-]+: (?:{_SIGNAL_NAMES})(?: \(core dumped\))?$", None,
         "error"),
    # A task line whose ending is no status srun prints (a truncated line) is kept, as unrecognised.
    Rule("unrecognised", r"srun: error: \S+: tasks? [\d,-]+: ", "unknown", "warning"),
    Rule("slurm_node_fail", r"(?:srun|salloc): error: Node failure on \S+", "node_failure", "critical"),
    # a cloud / powered-down node the allocation waited for never booted (srun gives up on it)
    Rule("slurm_node_fail", r"(?:srun|salloc): error: (?:Nodes \S+ are still not ready"
         r"|Something is wrong with the boot of the nodes)", "node_failure", "critical"),
    # the node's prolog failed: slurmctld drains the node and revokes (or requeues) the allocation
    Rule("slurm_prolog_fail", r"(?:srun|salloc|sbatch): (?:error: )?Prolog failure on node \S+", "node_failure",
         "error"),
    # slurmd's log on the node: the job's prolog failed (the node is drained with reason `Prolog error`)
    Rule("slurm_prolog_fail", r"\[job \d+\] prolog failed status=", "node_failure", "error"),
    # slurmstepd could not start the task's program: a missing or non-executable command in the job script
    Rule("slurm_exec_failed", r"slurmstepd: error: execve\(\): .+: (?:No such file or directory|Permission denied"
         r"|Exec format error|Not a directory)", "user_code_error", "error"),
    Rule("slurm_alloc_failed", r"srun: error: Unable to allocate resources", None, "error"),
    # a step that asks for what its allocation cannot give (more GPUs or tasks per node than the nodes have): the
    # job script's request, not the cluster's fault (a busy node's `Requested nodes are busy` only waits)
    Rule("slurm_step_unsatisfiable", r"srun: error: Unable to create step for job \d+: Requested node configuration "
         r"is not available", "user_code_error", "error"),
    # the job script's own tools (mv, cp, bash reading a script) getting EIO, ESTALE... from the filesystem they work
    # on: the storage failed them (`line 124: /bin/mv: Input/output error`, `-bash: cd: /home/u: Stale file handle`)
    Rule("job_io_error", _PERROR_FS, "filesystem_io", "error"),
    Rule("slurm_srun_error", r"srun: error: \S", None, "warning"),
    Rule("slurm_step_aborted", r"srun: Job step aborted", None, "warning"),
    Rule("slurm_job_termination", r"srun: forcing job termination", None, "warning"),
    Rule("slurm_force_terminated", r"srun: Force Terminated (?:Step|Job)Id=", None, "warning"),
    Rule("slurm_step_terminating", r"Terminating (?:Step|Job)Id=", None, "warning"),
    Rule("slurm_oom", r"Detected \d+ oom[_-]kill event", "host_oom", "error"),
    Rule("slurm_oom", r"exceeded (?:virtual )?memory limit \(\d+ > \d+\)", "host_oom", "error"),
    Rule("slurm_job_queued", r"srun: job \d+ (?:queued and waiting|has been allocated)", None, "info"),
)

# Named groups (unique across all) that become the detail fields of the lines they match.
EXTRACTORS: tuple[str, ...] = (
    rf"\*\*\* (?P<bent>JOB|STEP) (?P<bid>{_ID}) (?:(?:STEPD TERMINATED )?ON (?P<bnode>\S+) )?"
    rf"(?:CANCELLED AT |FAILED|UNCORRECTABLE MEMORY ERROR AT |AT )?(?P<bts>{_ISO})?"
    r"(?: DUE (?i:TO) (?P<bwhy>[A-Za-z][\w ]*?)(?:, SEE | on \S+ \*\*\*| \*\*\*|$))?",
    # older releases (the 2015-2018 threads) name the node last:
    # `*** JOB 7 CANCELLED AT <time> DUE TO TIME LIMIT on node3 ***`, `*** JOB 7 CANCELLED AT <time> *** on node3`
    r"CANCELLED AT \S+ (?:DUE TO [A-Z ]+ on (?P<bnode_old>\S+) \*\*\*|\*\*\* on (?P<bnode_old2>\S+))",
    r"\*\*\* REASON: (?P<reason>.*?)(?: \*\*\*)?$",
    r"srun: error: (?P<thost>[^\s:]+): tasks? (?P<tasks>[\d,-]+): (?:Exited with exit code (?P<texit>\d+)"
    r"|(?P<tsig>[^(]*[^\s(])(?P<core> \(core dumped\))?)",
    r"(?:srun|salloc): error: Node failure on (?P<nfnodes>\S+)|error: Nodes (?P<nrnodes>\S+) are still not ready"
    r"|Prolog failure on node (?P<pfnode>\S+)",
    r"execve\(\): (?P<exe>.+): (?P<exerr>[^:]+)$",
    r"srun: error: (?P<emsg>.+)$",
    r"Job step aborted(?:: Waiting up to (?P<wait>\d+) seconds)?",
    rf"(?:Terminat(?:ed|ing)) (?:Step|Job)Id=(?P<tid>{_ID})",
    rf"Detected (?P<oomn>\d+) oom[_-]kill event(?:s|\(s\))? in (?:(?:Step|Job)Id=|step )(?P<oomid>{_ID})",
    rf"(?:Step|Job)Id=(?P<memid>{_ID}) exceeded (?P<virt>virtual )?memory limit \((?P<used>\d+) > (?P<limit>\d+)\)",
    r"srun: job (?P<qjob>\d+) (?P<qstate>queued|has been allocated)",
    r"Caught signal \w+ on (?P<shost>[^\s:]+): this job is",
    r"SLURM-job '(?P<wjob>\d+)' failed",
)


def GROUP_CONTEXT(ctx: Context) -> tuple:  # noqa: N802  (a collector's contract names are capitals)
    """What parse() reads of the context: the zone of the times, and whether the file belongs to a run (`_in_run`
    reads no more of it)."""
    return (ctx.tz, ctx.run is None)


def sniff(head: bytes, path: str) -> bool:
    """Job output or a slurmd log holding slurmstepd banners or srun errors."""
    text = head.decode("utf-8", "replace")
    return search(text.splitlines()[:2000], PATTERN)


def parse(lines: pl.DataFrame, ctx: Context) -> Parsed:
    """Events (and the job id as a fact) from the srun / slurmstepd lines of one batch."""
    out = Parsed()
    frame = classify_lines(lines, RULES)
    # A line of ours that no rule reads (a banner cut short) is kept as unrecognised, never dropped.
    odd = pl.col("kind").is_null()
    frame = frame.with_columns(kind=pl.when(odd).then(pl.lit("unrecognised")).otherwise("kind"),
                               failure_mode=pl.when(odd).then(pl.lit("unknown")).otherwise("failure_mode"),
                               severity=pl.when(odd).then(pl.lit("warning")).otherwise("severity"))
    frame = _in_run(_after_kill(extract_all(frame, (_PREFIX, *EXTRACTORS))), ctx)
    frame = frame.with_columns(ts=_timestamp(ctx), host=_host_expr())
    facts = frame.filter(pl.col("kind") == "slurm_job_queued")
    out.add("facts", facts.select(
        pl.col("line").cast(pl.Int64), "ts", pl.lit(None, pl.String).alias("host"),
        pl.lit("slurm_job_id").alias("key"), pl.col("qjob").alias("value")))
    events = explode_hosts(frame.filter(pl.col("kind") != "slurm_job_queued"), "host", out)
    out.add("events", _finish(events))
    return out


# A whole job killed by someone or something else than its own tasks: what its tasks did after is its consequence.
_KILLS = ("slurm_cancelled", "slurm_time_limit", "slurm_preempted", "slurm_requeued", "slurm_node_fail",
          "submitit_preempted", "submitit_timed_out", "workflow_time_limit", "workflow_node_fail", "workflow_preempted")


def _after_kill(frame: pl.DataFrame) -> pl.DataFrame:
    """A task that exited non-zero after its job was cancelled, timed out, preempted or lost a node exited of that
    kill (a launcher exits 1 on SIGTERM): no failure of the application's."""
    # NOTE: within the batch; a kill in an earlier batch of a long file is not seen.
    killed = (pl.when(pl.col("kind").is_in(_KILLS) & (pl.col("bent").fill_null("JOB") == "JOB"))
              .then(pl.col("line")).min().over(file_of_line()))
    late = pl.col("kind").is_in(["slurm_task_exit", "slurm_task_signal"]) & (pl.col("line") > killed)
    return frame.with_columns(failure_mode=pl.when(late).then(None).otherwise("failure_mode"),
                              severity=pl.when(late).then(pl.lit("warning")).otherwise("severity"))


def _in_run(frame: pl.DataFrame, ctx: Context) -> pl.DataFrame:
    """The modes of a job's end where the file belongs to a run: a person's cancel is the attempt's manual stop,
    and an exit status (a task's non-zero exit or crash, a step cancelled DUE TO TASK FAILURE) blames nothing."""
    # NOTE: a file given alone is all the evidence there is: its exit status is the application's failure, and a
    # person's cancel no failure at all. Within a run, root cause weighs the run's own logs against the step
    # timeline: the cancel is the verdict that ended the attempt, an exit status only echoes what ended it.
    if ctx.run is None:
        return frame
    exit_status = pl.col("kind").is_in(["slurm_task_exit", "slurm_task_signal", "slurm_task_failure_cancel"])
    return frame.with_columns(
        failure_mode=pl.when(pl.col("kind") == "slurm_cancelled").then(pl.lit("manual_stop"))
        .when(exit_status).then(None).otherwise("failure_mode"))


def _timestamp(ctx: Context) -> pl.Expr:
    """The slurmd log prefix's time (it has milliseconds), else the banner's: both the node's local time."""
    prefix = iso_local(pl.col("pts"), ctx.tz) + fraction(pl.col("pfrac"))
    return pl.coalesce(prefix, iso_local(pl.col("bts"), ctx.tz)).alias("ts")


def _host_expr() -> pl.Expr:
    """The node a line names: the banner's `ON node`, srun's task or node-failure host, the stepd name."""
    return pl.coalesce("bnode", "bnode_old", "bnode_old2", "thost", "nfnodes", "nrnodes", "pfnode",
                       "phost", "shost").alias("host")


def job_and_step(expr: pl.Expr) -> tuple[pl.Expr, pl.Expr]:
    """`1234` and `0` from `1234.0`; the step is null for a bare job id."""
    parts = expr.str.extract_groups(r"^(?P<j>[^.]+)(?:\.(?P<s>.+))?$")
    return parts.struct.field("j"), parts.struct.field("s")


def _finish(frame: pl.DataFrame) -> pl.DataFrame:
    """The events table from classified, extracted lines."""
    job, step = job_and_step(pl.coalesce("bid", "tid", "oomid", "memid", "wjob"))
    step = pl.when(pl.col("bent") == "JOB").then(pl.lit("batch")).otherwise(step)
    sig = pl.col("tsig").str.strip_chars()
    rank = pl.col("tasks").cast(pl.Int32, strict=False)
    detail = json_detail({
        # NOTE: `job_step`, not `step`: an event's `step` is the training step it happened at.
        "job_id": job, "job_step": step, "reason": pl.coalesce(pl.col("bwhy").str.to_lowercase(), "reason"),
        "tasks": pl.col("tasks"),
        "exit_code": pl.col("texit").cast(pl.Int32, strict=False),
        "signal": sig.replace_strict(SIGNALS, default=None, return_dtype=pl.Int32),
        "signal_name": pl.when(pl.col("kind") == "slurm_task_signal").then(sig),
        "core_dumped": pl.when(pl.col("core").is_not_null()).then(pl.lit(True)),
        "nodelist": pl.col("nodelist"),
        "wait_s": pl.col("wait").cast(pl.Int32, strict=False),
        "oom_events": pl.col("oomn").cast(pl.Int32, strict=False),
        "memory_used": pl.col("used").cast(pl.Int64, strict=False),
        "memory_limit": pl.col("limit").cast(pl.Int64, strict=False),
        "virtual_memory": pl.when(pl.col("virt").is_not_null()).then(pl.lit(True)),
        "message": pl.when(pl.col("kind").is_in(["slurm_srun_error", "slurm_alloc_failed"])).then(pl.col("emsg")),
        "command": pl.col("exe"), "error": pl.col("exerr"),
    })
    schema = TABLE_COLUMNS["events"]
    return frame.select(
        pl.col("line").cast(pl.Int64), pl.col("ts").cast(schema["ts"]), "host", "kind", "failure_mode",
        "severity", pl.when(pl.col("kind").is_in(["slurm_task_exit", "slurm_task_signal", "slurm_oom"]))
        .then(rank).alias("rank"), "text", detail.alias("detail"),
    )
