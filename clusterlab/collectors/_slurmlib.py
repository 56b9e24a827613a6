"""Helpers the Slurm collectors (slurm, slurmctld, sacct, slurm_jobcomp) share.

Rule tables for classifying lines, Slurm's local ISO times, hostlists exploded into one row per
host, and the jobs table that sacct dumps and jobcomp records both fill.
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from clusterlab import hostlist, taxonomy
from clusterlab.collectors._base import TABLE_COLUMNS, Context, Parsed, classify, json_detail, local_to_utc


@dataclass(frozen=True)
class Rule:
    kind: str  # "" : a line of ours that cannot be read (counted in Parsed.unparsed)
    regex: str
    failure_mode: str | None
    severity: str


def classify_lines(lines: pl.DataFrame, rules: tuple[Rule, ...]) -> pl.DataFrame:
    """The lines with the first matching rule's kind, failure mode and severity (null: none matched)."""
    return classify(lines, rules).sort("line").drop("_rule")


def iso_local(expr: pl.Expr, tz: str) -> pl.Expr:
    """Naive UTC from Slurm's `2026-11-25T10:15:03` local time; null for `Unknown`, `None`, ..."""
    return local_to_utc(expr.str.strptime(pl.Datetime("us"), "%Y-%m-%dT%H:%M:%S", strict=False), tz)


def explode_hosts(frame: pl.DataFrame, col: str, out: Parsed) -> pl.DataFrame:
    """One row per host where `col` holds a hostlist (`node[2,4]`); `nodelist` keeps the expression. A hostlist
    that cannot be expanded (malformed, or naming more hosts than any cluster has) stays one row, its text as
    host, with a warning: log text is untrusted, and `gpu-[1-999999999]` must not become a billion rows."""
    frame = frame.with_columns(pl.col(col).alias("nodelist"))
    multi = frame.filter(pl.col(col).str.contains(r"[\[,]"))[col].unique().to_list()
    pairs = []
    for expr in multi:
        try:
            pairs.extend((expr, h) for h in hostlist.expand(expr))
        except hostlist.HostlistTooLarge as e:
            lines = frame.filter(pl.col(col) == expr)["line"]
            out.warnings.append(f"line {lines.min()}: {e}: kept as printed"
                                + (f" ({lines.len() - 1} more lines name it)" if lines.len() > 1 else ""))
        except ValueError:
            pass  # a malformed list stays as printed, one row
    if not pairs:
        return frame.with_columns(pl.lit(None, pl.String).alias("nodelist"))
    table = pl.DataFrame({"_expr": [p[0] for p in pairs], "_one": [p[1] for p in pairs]}, schema={
        "_expr": pl.String, "_one": pl.String})
    joined = frame.join(table, left_on=col, right_on="_expr", how="left")
    return joined.with_columns(
        pl.coalesce("_one", col).alias(col),
        pl.when(pl.col("_one").is_not_null()).then(pl.col("nodelist")).alias("nodelist"),
    ).drop("_one").sort("line", col)


def known(expr: pl.Expr) -> pl.Expr:
    """Null for the words Slurm prints where a value is missing."""
    return pl.when(expr.str.strip_chars().is_in(["", "Unknown", "unknown", "None", "None assigned", "(null)", "N/A"])
                   ).then(None).otherwise(expr.str.strip_chars())


def exit_parts(expr: pl.Expr) -> tuple[pl.Expr, pl.Expr]:
    """Exit status and signal from Slurm's `exit:signal`."""
    parts = expr.str.extract_groups(r"^(?P<e>\d+):(?P<s>\d+)$")
    return parts.struct.field("e").cast(pl.Int32, strict=False), parts.struct.field("s").cast(pl.Int32, strict=False)


# Job states as sacct, jobcomp and slurmctld spell them (`job_state_string()`), to read truncated ones back.
STATES: tuple[str, ...] = (
    "BOOT_FAIL", "CANCELLED", "COMPLETED", "COMPLETING", "CONFIGURING", "DEADLINE", "FAILED", "NODE_FAIL",
    "OUT_OF_MEMORY", "PENDING", "POWER_UP_NODE", "PREEMPTED", "REQUEUED", "REQUEUE_FED", "REQUEUE_HOLD",
    "RESIZING", "RESV_DEL_HOLD", "REVOKED", "RUNNING", "SIGNALING", "SPECIAL_EXIT", "STAGE_OUT", "STOPPED",
    "SUSPENDED", "TIMEOUT",
)


def state(raw: pl.Expr) -> pl.Expr:
    """The state word of a sacct / jobcomp State: `CANCELLED by 1000` -> CANCELLED, and the fixed-width
    columns' truncation read back where one state has that prefix (`OUT_OF_ME+` -> OUT_OF_MEMORY)."""
    word = raw.str.extract(r"^([A-Z_]+)")
    cut = raw.str.ends_with("+") & ~word.is_in(list(STATES))
    hits = [pl.lit(s).str.starts_with(word) for s in STATES]
    full = pl.coalesce([pl.when(h).then(pl.lit(s)) for s, h in zip(STATES, hits, strict=True)])
    # NOTE: a prefix two states share (`C+`) stays as printed: a guess would be a verdict nobody gave.
    return pl.when(cut & (pl.sum_horizontal(hits) == 1)).then(full).otherwise(word)


def gpus(tres: pl.Expr) -> pl.Expr:
    """GPU count from a TRES string (`billing=16,cpu=16,gres/gpu=32,node=4`); null where it names none."""
    return tres.str.extract(r"(?:^|,)gres/gpu=(\d+)").cast(pl.Int32, strict=False)


def jobs_frame(frame: pl.DataFrame, col: dict[str, pl.Expr], ctx: Context) -> pl.DataFrame:
    """The jobs table from per-field expressions over `frame` (job_id, job_name, state, exit, start, ...)."""
    code, sig = exit_parts(known(col["exit"]))
    start = iso_local(known(col["start"]), ctx.tz)
    end = iso_local(known(col["end"]), ctx.tz)
    submit = iso_local(known(col["submit"]), ctx.tz)
    schema = TABLE_COLUMNS["jobs"]
    return frame.select(
        pl.col("line").cast(pl.Int64),
        pl.coalesce(end, start, submit).cast(schema["ts"]).alias("ts"),
        known(col["job_id"]).alias("job_id"),
        pl.when(col["job_name"] != "").then(col["job_name"]).alias("job_name"),
        # `CANCELLED by 1000`: the state is the first word (the uid says who, not what).
        state(known(col["state"])).alias("state"),
        code.alias("exit_code"), sig.alias("signal"),
        start.cast(schema["start_ts"]).alias("start_ts"), end.cast(schema["end_ts"]).alias("end_ts"),
        known(col["nodelist"]).alias("nodelist"),
        known(col["nnodes"]).cast(pl.Int32, strict=False).alias("nnodes"),
        gpus(known(col["tres"])).alias("ngpus"),
        known(col.get("job_id_raw", pl.lit(None, pl.String))).alias("job_id_raw"),
    )


# A job's final State → the failure it states, severity. CANCELLED is no failure: a person's (or their
# script's) own scancel. COMPLETED, RUNNING, PENDING, REQUEUED, ... state none either.
STATE_MODES: dict[str, tuple[str, str]] = {
    "TIMEOUT": ("time_limit", "error"), "DEADLINE": ("time_limit", "error"),
    "PREEMPTED": ("preemption", "warning"), "NODE_FAIL": ("node_failure", "critical"),
    "BOOT_FAIL": ("node_failure", "critical"), "OUT_OF_MEMORY": ("host_oom", "error"),
    "FAILED": ("user_code_error", "error"),
}


def job_events(jobs: pl.DataFrame, lines: pl.DataFrame | None, ctx: Context) -> pl.DataFrame:
    """One event per job allocation (not its steps) whose final state is a failure (`STATE_MODES`), so that a
    pasted sacct table or jobcomp log alone names what ended its jobs; `lines` gives each row's text (None: a
    JSON document, whose job spans many lines: the text says the job and its state)."""
    # NOTE: the allocation's row says why the job ended; its steps repeat it (CANCELLED by the time limit's
    # signal, FAILED with the batch script): one event per job. A fixed-width id cut short (`4711_3+`) may be
    # a step's: it is counted as printed. root_cause reads the same states from the jobs table (incidents.py
    # leaves these events out of the candidates).
    table = pl.DataFrame({"state": list(STATE_MODES), "failure_mode": [m for m, _ in STATE_MODES.values()],
                          "severity": [s for _, s in STATE_MODES.values()]})
    # NOTE: FAILED is an exit status: where the table belongs to a run, the run's own logs name what failed
    # (an exit code alone blames nothing); a table given alone has nothing else to say it.
    if ctx.run is not None:
        table = table.filter(pl.col("state") != "FAILED")
    alloc = jobs.filter(~pl.col("job_id").str.contains(".", literal=True)).join(table, on="state", how="inner")
    schema = TABLE_COLUMNS["events"]
    said = pl.format("JobID {} State {} ExitCode {}:{}", "job_id", "state", pl.col("exit_code").fill_null(0),
                     pl.col("signal").fill_null(0))
    if lines is None:
        alloc = alloc.with_columns(said.alias("text"))
    else:
        alloc = alloc.join(lines.select(pl.col("line").cast(pl.Int64), "text"), on="line", how="left")
    out = alloc.select(
        pl.col("line").cast(pl.Int64), pl.col("ts").cast(schema["ts"]), pl.lit(None, pl.String).alias("host"),
        pl.lit("slurm_job_state").alias("kind"), "failure_mode", "severity",
        pl.col("text").str.slice(0, 2000).alias("text"),
        json_detail({"job_id": pl.col("job_id"), "state": pl.col("state"), "exit_code": pl.col("exit_code"),
                     "signal": pl.col("signal"), "nodelist": pl.col("nodelist")}).alias("detail"),
    )
    return out.sort("line")


# A node's reason (`scontrol show node`, `sinfo -R`, slurmctld's `reason set to:`) that says the node itself
# failed: what slurmctld and slurmd set (Not responding, Kill task failed, Prolog error, ...), a node health
# check's verdict (NHC, a cloud daemon's "Scheduler health check failed"), a cloud integration's failed boot
# (`cyclecloud_node_fail`, ResumeTimeout). A person's free text ("maintenance", "upgrade") says no failure.
NODE_LOST_REASON = (
    # NOTE: prefixes, and no anchor: `sinfo -R` cuts a reason at 20 characters (`ResumeTimeout reache`,
    # `Scheduler health che`), and slurmctld may put a person's text before its own (`... : ResumeTimeout reached`)
    r"(?i)\b(?:Not responding|Node unexpectedly re|Kill task failed|ResumeTimeout|reboot timed out"
    r"|Prolog error|Epilog error|batch job complete|Low RealMem|Low socket|gres/gpu count|Duplicate jobid"
    r"|NO NETWORK ADDRESS)"
    r"|\bhealth[ _-]?ch|\bNHC\b|node[_ -]?fail|(?:boot|launch|resume|power[_ -]?up)[_ -]?(?:fail|timeout)"
    r"|failed to (?:boot|launch|resume|power up)"
)


# LBNL Node Health Check names the check that failed first in its note (`NHC: check_hw_ib:  No IB port mlx5_2:1 is
# ACTIVE (LinkUp 400 Gb/sec).`, helpers/node-mark-offline): the check says what failed, as an Xid does. Checks of
# processes, files or commands (check_ps_*, check_file_*, check_cmd_*) say no more than that the node failed.
NHC_CHECK_MODES: tuple[tuple[str, str], ...] = (
    (r"\bcheck_(?:hw_(?:ib|eth|gm|mx)|net_\w+)\b", "network"),
    (r"\bcheck_fs_\w+", "filesystem_io"),
    (r"\bcheck_nv(?:smi)?_h", "gpu_hw_other"),  # (`sinfo -R` cuts a reason at 20 characters)
    # the GPU and InfiniBand checks cloud images add (azurehpc-health-checks: check_gpu_ecc, check_gpu_xid,
    # check_ib_bw_gdr, check_ib_link_flapping)
    (r"\bcheck_gpu_ecc\b", "gpu_memory_ecc"),
    (r"\bcheck_gpu_\w+", "gpu_hw_other"),
    (r"\bcheck_ib_\w+", "network"),
    (r"\bcheck_(?:hw_(?:mcelog|cpuinfo|physmem|mem|swap)|dmi_)\w*", "host_hw"),
)


def node_reason_mode(reason: pl.Expr) -> pl.Expr:
    """The mode a node's reason names: the failed NHC check's (`NHC_CHECK_MODES`), else node_failure where it says
    the node itself failed (`NODE_LOST_REASON`), else null."""
    mode = pl.when(reason.str.contains(NODE_LOST_REASON)).then(pl.lit("node_failure"))
    for rx, m in reversed(NHC_CHECK_MODES):
        mode = pl.when(reason.str.contains(rx)).then(pl.lit(m)).otherwise(mode)
    return mode


def with_reason_modes(frame: pl.DataFrame) -> pl.DataFrame:
    """`frame` with `xid` (an Xid its `reason` names: `xid79`, `Xid 48`) and `failure_mode` filled where null:
    the Xid's mode, else node_failure for a reason that says the node failed."""
    code = pl.col("reason").str.extract(r"(?i)\bxid[\s:=_-]*(\d+)").cast(pl.Int32, strict=False)
    xid = frame.select(code).to_series()
    table = taxonomy.xid_frame(xid).select("xid", _xmode="failure_mode")
    frame = frame.with_columns(xid=xid).join(table, on="xid", how="left")
    mode = pl.coalesce("failure_mode", "_xmode", node_reason_mode(pl.col("reason")))
    return frame.with_columns(failure_mode=mode).drop("_xmode")
