"""Helpers the Slurm collectors (slurm, slurmctld, sacct, slurm_jobcomp) share.

Rule tables for classifying lines, Slurm's local ISO times, hostlists exploded into one row per
host, and the jobs table that sacct dumps and jobcomp records both fill.
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from clusterlab import hostlist
from clusterlab.collectors._base import TABLE_COLUMNS, Context, Parsed, classify, local_to_utc


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
