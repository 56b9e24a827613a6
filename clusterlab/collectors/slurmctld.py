"""slurmctld log collector: node state changes, job allocation, requeue, preemption and completion.

The controller's log file (`SlurmctldLogFile`) prints `[2026-12-03T08:45:21.388] message` in local
time (`LogTimeFormat=iso8601_ms`, the default; `rfc5424` adds the offset, `short` drops the
year); under systemd without a log file the journal has `... host slurmctld[pid]: message`. The
messages, as slurmctld 22.05–24.11 words them (`src/slurmctld/{node_mgr,ping_nodes,job_mgr,
job_scheduler,power_save,gang}.c`, `src/interfaces/preempt.c`):

    error: Nodes node[2,4] not responding, setting DOWN
    update_node: node node3 reason set to: xid79 GPU fell off the bus
    update_node: node node3 state set to DRAINED
    Killing JobId=25 on failed node node2          requeue job JobId=26 due to failure of node node4
    _job_complete: JobId=10 WEXITSTATUS 3          Time limit exhausted for JobId=19
    node node5 not resumed by ResumeTimeout(600) - marking down and power_save      (24.05+: `, setting DOWN
                                                                                  and POWERED_DOWN`)
    sched: Allocate JobId=1 NodeList=node[1-2] #CPUs=4 Partition=main
    preempted JobId=27 has been requeued to reclaim resources for JobId=28
"""

from __future__ import annotations

import polars as pl

from clusterlab.collectors._base import (
    TABLE_COLUMNS,
    Context,
    Parsed,
    extract_all,
    file_of_line,
    fraction,
    json_detail,
    local_to_utc,
    offset_to_utc,
    search,
    syslog_time,
)
from clusterlab.collectors._slurmlib import Rule, classify_lines, explode_hosts, with_reason_modes

NAME = "slurmctld"
EXCLUSIVE = False
# Job events name no host of their own; the controller the log sits on is not to blame for them.
FILL_HOST = False

_J = r"JobId=\d"
PATTERN = "|".join([
    r"Nodes \S+ not responding",
    r"(?:update_node|drain_nodes): node \S+ (?:state|reason) set to",
    r"Node \S+ (?:now responding|unexpectedly rebooted)",
    r"node \S+ not resumed by ResumeTimeout\(",
    r"Prolog or job env setup failure on node ",
    r"Setting node \S+ state to INVAL with reason:", r"Node \S+ has low (?:real_memory|socket\*core\*thread|tmp_disk)",
    r"node \S+ returned to service", r"reboot request queued for nodes ",
    rf"Killing {_J}\S* (?:StepId=\S+ )?on failed node ",
    rf"requeue (?:job )?{_J}\S* due to failure of node ",
    rf"Requeuing {_J}", rf"_job_complete: (?:requeue )?{_J}", rf"Time limit exhausted for {_J}",
    rf"Allocate {_J}\S* NodeList=", rf"backfill: Started {_J}", rf"_slurm_rpc_allocate_resources {_J}",
    rf"preempted {_J}", rf"REQUEST_KILL_JOB {_J}",
    r"slurmctld version \S+ started",
])

# The time prefix: log file (`[iso(.ms)(+hh:mm)]`, `[Mon dd hh:mm:ss(.ms)]`) or journal / syslog.
_PREFIX = (
    r"^(?:\[(?P<iso>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(?P<frac>\d+))?(?P<off>Z|[+-]\d\d:?\d\d)?\] "
    r"|\[(?P<bsd>[A-Z][a-z]{2} +\d{1,2} \d\d:\d\d:\d\d)(?:\.(?P<bfrac>\d+))?\] "
    r"|(?:(?P<jiso>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:[.,](?P<jfrac>\d+))?(?P<joff>Z|[+-]\d\d:?\d\d)?"
    r"|(?P<jbsd>[A-Z][a-z]{2} +\d{1,2} \d\d:\d\d:\d\d)) \S+ slurmctld\[\d+\]: )?"
)

_JOB = r"JobId=(?P<job>\d+(?:_\d+|_\*|\+\d+)?)(?:\((?P<rawjob>\d+)\))?"

RULES: tuple[Rule, ...] = (
    Rule("slurm_node_down", r"Nodes \S+ not responding, setting DOWN", "node_failure", "error"),
    # NOTE: a missed ping; `_not_back` makes it a node failure where the node is not heard from again.
    Rule("slurm_node_not_responding", r"Nodes \S+ not responding", None, "warning"),
    # power_save.c: a cloud / powered-down node that never came up (18.08-23.11, then 24.05+ wording)
    Rule("slurm_node_resume_timeout", r"node \S+ not resumed by ResumeTimeout\(\d+\)", "node_failure", "error"),
    # node_mgr.c: the node's prolog failed; slurmctld drains it (reason `Prolog error`) and requeues the job
    Rule("slurm_prolog_fail", r"Prolog or job env setup failure on node \S+", "node_failure", "error"),
    # node_mgr.c: a node registered with less than it is configured with (a lost DIMM, GPU or disk): drained
    Rule("slurm_node_invalid", r"Setting node \S+ state to INVAL with reason:|Node \S+ has low (?:real_memory|"
         r"socket\*core\*thread|tmp_disk)", "node_failure", "error"),
    Rule("slurm_node_reason", r"update_node: node \S+ reason set to: ", None, "info"),
    Rule("slurm_node_drain", r"(?:update_node|drain_nodes): node \S+ state set to DRAIN", None, "warning"),
    # NOTE: DOWN set by hand says nothing about the hardware; the reason line beside it may.
    Rule("slurm_node_down", r"update_node: node \S+ state set to DOWN", None, "error"),
    Rule("slurm_node_resume", r"update_node: node \S+ state set to (?:IDLE|RESUME|UNDRAIN|ALLOC|MIX)", None, "info"),
    Rule("slurm_node_state", r"update_node: node \S+ state set to ", None, "info"),
    Rule("slurm_node_responding", r"Node \S+ now responding", None, "info"),
    Rule("slurm_node_resume", r"node \S+ returned to service", None, "info"),
    # proc_req.c: `scontrol reboot [ASAP] ... <nodes>` accepted: the operator takes the nodes out for a reboot
    Rule("slurm_node_reboot_request", r"reboot request queued for nodes \S+", None, "warning"),
    Rule("slurm_node_reboot", r"Node \S+ unexpectedly rebooted", "node_failure", "error"),
    Rule("slurm_job_node_fail", r"Killing JobId=\S+ (?:StepId=\S+ )?on failed node ", "node_failure", "error"),
    Rule("slurm_job_requeue", r"requeue (?:job )?JobId=\S+ due to (?:failure of node|node failure)", "node_failure",
         "warning"),
    Rule("slurm_job_requeue", r"requeue JobId=\S+ per user/system request", None, "warning"),
    Rule("slurm_job_requeued", r"Requeuing JobId=", None, "info"),
    Rule("slurm_oom", r"_job_complete: JobId=\S+ OOM failure", "host_oom", "error"),
    Rule("slurm_job_node_fail", r"_job_complete: JobId=\S+ cancelled by node failure", "node_failure", "error"),
    Rule("slurm_cancelled", r"_job_complete: JobId=\S+ cancelled by interactive user", "manual_stop", "warning"),
    Rule("slurm_job_exit", r"_job_complete: JobId=\S+ WEXITSTATUS 0$", None, "info"),
    Rule("slurm_job_exit", r"_job_complete: JobId=\S+ (?:WEXITSTATUS|WTERMSIG) \d+", None, "warning"),
    Rule("slurm_job_end", r"_job_complete: JobId=\S+ done", None, "info"),
    Rule("slurm_time_limit", r"Time limit exhausted for JobId=", "time_limit", "error"),
    Rule("slurm_job_pending", r"_slurm_rpc_allocate_resources JobId=\S+ NodeList=\(null\)", None, "info"),
    Rule("slurm_job_alloc", r"Allocate JobId=\S+ NodeList=|backfill: Started JobId=|_slurm_rpc_allocate_resources ",
         None, "info"),
    Rule("slurm_preempted", r"preempted JobId=\S+ (?:has been|had to be) (?:killed|requeued)", "preemption",
         "warning"),
    # gang.c / preempt.c: preempted all the same, the requeue or the kill itself failed
    Rule("slurm_preempted", r"preempted JobId=\S+ (?:could not be requeued|kill failure)", "preemption", "warning"),
    Rule("slurm_cancel_request", r"REQUEST_KILL_JOB JobId=\S+ uid \d+", "manual_stop", "warning"),
    Rule("slurm_version", r"slurmctld version \S+ started", None, "info"),
)

EXTRACTORS: tuple[str, ...] = (
    r"Nodes (?P<n1>\S+) not responding|(?:update_node|drain_nodes): node (?P<n2>\S+) (?:state|reason) set"
    r"|Node (?P<n3>\S+) (?:now responding|unexpectedly)|node (?P<n4>\S+) returned to service"
    r"|on failed node (?P<n5>\S+)$|failure of node (?P<n6>\S+)$|node (?P<n7>\S+) not resumed by"
    r"|setup failure on node (?P<n8>[^\s,]+)|Setting node (?P<n9>\S+) state to INVAL|Node (?P<n10>\S+) has low"
    r"|reboot request queued for nodes (?P<n11>\S+)",
    r"state set to (?P<state>\S+)",
    r"reason set to: (?P<reason>.*)$",
    # node_mgr.c: "boot_time=%u last response=%u" (Slurm <= 18.08: "boot_time %d" + "last response %d"): the
    # last time the node answered the controller, the latest it is known alive (diagnose.onsets)
    r"boot_time[= ](?P<boot>\d+)",
    r"last response[= ](?P<last_resp>\d+)",
    _JOB,
    r"StepId=(?P<stepid>[^\s)]+)",
    r"(?:WEXITSTATUS (?P<exit>\d+)|WTERMSIG (?P<sig>\d+))",
    r"(?:NodeList=|backfill: Started \S+ in (?P<bfpart>\S+) on )(?P<alloc>\S+)",
    r"#CPUs=(?P<cpus>\d+) Partition=(?P<part>\S+)",
    r"has been (?P<pact>killed|requeued)(?: to reclaim resources for JobId=(?P<pby>\S+))?|had to be (?P<pact2>killed)",
    r"REQUEST_KILL_JOB JobId=(?P<kjob>\S+) uid (?P<uid>\d+)",
    r"ResumeTimeout\((?P<resume_s>\d+)\)",
    r"slurmctld version (?P<version>\S+) started(?: on cluster (?P<cluster>\S+))?",
)


FILE_YEAR_COLUMNS = True  # parsed with other files, the lines carry their file's year context (`_base.yearless`)


def GROUP_CONTEXT(ctx: Context) -> tuple:  # noqa: N802 (the collector contract's name)
    """What parse() reads of the context: controller logs agreeing on it may be parsed together (a fleet's
    clusters each have one, rotated: many small files)."""
    return (ctx.tz,)  # (a file's year comes with its lines: FILE_YEAR_COLUMNS)


def sniff(head: bytes, path: str) -> bool:
    """A slurmctld log: its start-up line, or bracket-timed lines with messages we read."""
    text = head.decode("utf-8", "replace")
    if "slurmctld version " in text or "slurmctld[" in text:
        return True
    return search([ln for ln in text.splitlines()[:2000] if ln.startswith("[")], PATTERN)


def parse(lines: pl.DataFrame, ctx: Context) -> Parsed:
    """Events (and version / cluster facts) from the slurmctld lines of one batch."""
    out = Parsed()
    frame = classify_lines(lines, RULES)
    # A line of ours that no rule reads (cut short) is kept as unrecognised, never dropped.
    odd = pl.col("kind").is_null()
    frame = frame.with_columns(kind=pl.when(odd).then(pl.lit("unrecognised")).otherwise("kind"),
                               failure_mode=pl.when(odd).then(pl.lit("unknown")).otherwise("failure_mode"),
                               severity=pl.when(odd).then(pl.lit("warning")).otherwise("severity"))
    frame = extract_all(frame, (_PREFIX, *EXTRACTORS))
    frame = frame.with_columns(ts=_timestamp(ctx))
    facts = frame.filter(pl.col("kind") == "slurm_version")
    out.add("facts", _facts(facts))
    node = pl.coalesce("n1", "n2", "n3", "n4", "n5", "n6", "n7", "n8", "n9", "n10", "n11").alias("host")
    # NOTE: the reboot request prints no reason of its own (scontrol's reason= goes to the node record only); it
    # is the operator's maintenance all the same, in the words diagnose.maintenance reads
    frame = frame.with_columns(reason=pl.when(pl.col("kind") == "slurm_node_reboot_request")
                               .then(pl.lit("reboot requested (scontrol reboot)")).otherwise("reason"))
    events = explode_hosts(frame.filter(pl.col("kind") != "slurm_version").with_columns(node), "host", out)
    out.add("events", _finish(_not_back(_with_reasons(events))))
    return out


def _timestamp(ctx: Context) -> pl.Expr:
    """Naive UTC: an offset where the line has one, else the cluster's local time; `short` takes ctx.year."""
    iso = pl.coalesce("iso", "jiso").str.strptime(pl.Datetime("us"), "%Y-%m-%dT%H:%M:%S", strict=False)
    with_off = offset_to_utc(iso + fraction(pl.coalesce("frac", "jfrac")), pl.coalesce("off", "joff"), ctx.tz)
    short = local_to_utc(syslog_time(pl.coalesce("bsd", "jbsd"), ctx) + fraction(pl.col("bfrac")), ctx.tz)
    return pl.coalesce(with_off, short).alias("ts")


def _facts(frame: pl.DataFrame) -> pl.DataFrame:
    """`slurm_version` and `slurm_cluster` from the controller's start-up line."""
    base = frame.select(pl.col("line").cast(pl.Int64), "ts", pl.lit(None, pl.String).alias("host"), "version",
                        "cluster")
    return pl.concat([
        base.select("line", "ts", "host", pl.lit("slurm_version").alias("key"), pl.col("version").alias("value")),
        base.select("line", "ts", "host", pl.lit("slurm_cluster").alias("key"), pl.col("cluster").alias("value")),
    ]).filter(pl.col("value").is_not_null())


def _with_reasons(frame: pl.DataFrame) -> pl.DataFrame:
    """Drain / down lines take the reason set for the same node just before (same update_node call)."""
    frame = frame.with_columns(pl.col("line").cast(pl.Int64)).sort("line")
    has = pl.col("reason").is_not_null()
    # (each file's own: files parsed together number their lines apart, `file_of_line`)
    last = pl.col("reason").forward_fill().over("host", file_of_line())
    last_line = pl.when(has).then(pl.col("line")).forward_fill().over("host", file_of_line())
    near = (pl.col("line") - last_line) <= 5
    node_state = pl.col("kind").is_in(["slurm_node_drain", "slurm_node_down"]) & pl.col("state").is_not_null()
    frame = frame.with_columns(pl.when(has).then(pl.col("reason")).when(node_state & near).then(last).alias("reason"))
    return _reason_xid(frame)


def _not_back(frame: pl.DataFrame) -> pl.DataFrame:
    """A node that stopped answering pings and is not heard from again (`Node X now responding`) later in the
    batch was lost: node failure. One that answered again had a hiccup: no mode, `recovered` in the detail."""
    # NOTE: a recovery in a later batch (200,000 lines on) is not seen; the node then counts as lost.
    back = (pl.when(pl.col("kind") == "slurm_node_responding").then(pl.col("line")).backward_fill()
            .over("host", file_of_line()))
    missed = pl.col("kind") == "slurm_node_not_responding"
    recovered = missed & back.is_not_null()
    return frame.sort("line").with_columns(
        failure_mode=pl.when(missed & ~recovered).then(pl.lit("node_failure")).otherwise("failure_mode"),
        recovered=pl.when(recovered).then(pl.lit(True)),
    )


def _reason_xid(frame: pl.DataFrame) -> pl.DataFrame:
    """An Xid named in a node's reason (`xid79`, `Xid 48`) sets `xid` and the failure mode it means."""
    # NOTE: slurmctld's own reason for a node it lost, or a health check's; a person's drain reason is free text.
    # `Kill task failed`: slurmstepd could not kill the step's processes (stuck in the kernel: a hung GPU or
    # filesystem) and drained the node itself; 25.05+ appends `(JobId=.. StepId=..)`.
    return with_reason_modes(frame)


def _finish(frame: pl.DataFrame) -> pl.DataFrame:
    """The events table from classified, extracted lines."""
    # NOTE: a kill request names what scancel was given, array ranges included (`81240_[4-9]`).
    job = pl.coalesce("kjob", "job")
    step = pl.col("stepid").str.extract(r"^\d+\.(.+)$")
    # NOTE: `job_step`, not `step`: an event's `step` is the training step it happened at.
    detail = json_detail({
        "job_id": job, "raw_job_id": pl.col("rawjob"), "job_step": pl.coalesce(step, "stepid"),
        "state": pl.col("state"), "reason": pl.col("reason"),
        "nodelist": pl.coalesce(pl.when(pl.col("alloc") != "(null)").then(pl.col("alloc")), "nodelist"),
        "cpus": pl.col("cpus").cast(pl.Int32, strict=False), "partition": pl.coalesce("part", "bfpart"),
        "exit_code": pl.col("exit").cast(pl.Int32, strict=False), "signal": pl.col("sig").cast(pl.Int32, strict=False),
        "preempt_action": pl.coalesce("pact", "pact2"), "preempted_by": pl.col("pby"),
        "uid": pl.col("uid").cast(pl.Int64, strict=False), "boot_time": pl.col("boot").cast(pl.Int64, strict=False),
        "last_response": pl.col("last_resp").cast(pl.Int64, strict=False),
        "resume_timeout_s": pl.col("resume_s").cast(pl.Int32, strict=False), "recovered": pl.col("recovered"),
    })
    schema = TABLE_COLUMNS["events"]
    return frame.select(
        pl.col("line").cast(pl.Int64), pl.col("ts").cast(schema["ts"]), "host", "kind", "failure_mode",
        "severity", pl.col("xid").cast(pl.Int32, strict=False), "text", detail.alias("detail"),
    )
