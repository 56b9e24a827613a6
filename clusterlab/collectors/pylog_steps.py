"""Step lines of a self-written training script that logs with Python's `logging` (no framework's own format).

A plain `torchrun` + FSDP / DDP script usually prints its progress through a formatter that starts each record
with its time, then a level and a logger name, then the step and its numbers:

    2026-10-31T17:27:03.412Z INFO [train] step   1230/22400 | loss 2.4312 | lr 3.0e-04 | step_time 4.352s | ...
    2026-10-31 12:27:03,412 - INFO - train - Step 1230: loss=2.4312, step_time=4352ms, tokens/s=...
    [rank0]:2026-10-31T12:27:03+00:00 INFO step=1230 loss=2.4312 time=4.35s

The time leads the line (after torchrun's `[rankN]:` / srun's `N: ` prefix, or Ray's `(RayTrainWorker pid=N, ip=..) `
that the driver's output puts before each line a worker printed, never inside brackets: that is
DeepSpeed's and Megatron's shape, read by their own collectors). A `Z` or `+hh:mm` offset is honoured (a container
logging in UTC on a site whose other logs are local); a naive time is the job's processes' zone where it was measured
(`ctx.proc_tz`), else the node's local time (`ctx.tz`). A step line
names `step N` (or `step N/total`, `step=N`, `step: N`) and a loss; its `step_s` is the printed step time
(`step_time`, `time/step`, `iter_time`, `step_s`; `ms` or `s`), else the time since the previous step line over the
steps between them. Checkpoint lines of the same records: `saving checkpoint ...`, `checkpoint ... saved in X s`
(or `written in`), `checkpoint save failed`, `loading checkpoint ...` / `resuming from PATH` (the step the path
names, else the line's `step N`), `checkpoint ... loaded in X s`; a `starting training (loop) at step N` line starts
a new launch. Fact keys: start_step, train_iters.
"""

from __future__ import annotations

import polars as pl

from clusterlab.collectors._base import Context, Parsed, file_of_line, offset_to_utc, search
from clusterlab.collectors._steplog import (
    NUM,
    RAY_ACTOR,
    checkpoint_ops,
    checkpoint_rows,
    facts_from,
    flag_nonfinite,
    integer,
    interval_step_s,
    loss_events,
    merge_repeats,
    num,
    op,
    prepare,
    segment,
    step_result,
)

NAME = "pylog_steps"
EXCLUSIVE = False
SNIFF_HINT = (b"step",)

# the record's leading time: ISO date, `T` or a space, optional fraction (`.` or `,`), optional zone
_PRE = r"^(?:" + RAY_ACTOR + r")?(?:\[(?:rank|default)\d+\]: ?|\d+: +)?"
_TIME = r"(\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d)(?:[.,](\d{1,9}))?(Z|[+-]\d\d:?\d\d)?"
_LEAD = _PRE + _TIME + r"\b"
_STEP_AT = r"(?i)\bstep\b[ :=]*(\d+)(?:\s*/\s*(\d+))?"
_LOSS = r"(?i)\bloss\b[ :=]+" + NUM
_STEP_TIME = (r"(?i)\b(?:step[_ ]?time|time[_/ ]?(?:per[_ ])?step|iter(?:ation)?[_ ]?time|step_s|time)\b"
              r"(?:[ _(]*(ms|s)\)?)?[ :=]+" + NUM + r" *(ms|s)?\b")
_SAVE = r"(?i)\bsav(?:e|ing) (?:the |a )?checkpoint\b"
_SAVED = r"(?i)\bcheckpoint\b.*\b(?:saved|written) in ([\d.]+) ?s"
_SAVE_FAIL = r"(?i)\bcheckpoint save failed\b|\bfailed to save (?:the )?checkpoint\b"
_LOAD = r"(?i)\b(?:loading (?:the )?checkpoint(?: from)?|resuming from)\b +(\S+)"
_LOADED = r"(?i)\bcheckpoint\b.*\bloaded in ([\d.]+) ?s"
_START = r"(?i)\bstart(?:ing)? training(?: loop)? at step (\d+)"
_CKPT_STEP = r"(?i)step[_-]?0*(\d+)"
# a step line: the leading time, then `step N` and a loss somewhere after it
_STEPLINE = _LEAD + r".*" + r"(?i:\bstep\b)[ :=]*\d+.*(?i:\bloss\b)[ :=]+-?[\d.nNiI]"
PATTERN = _STEPLINE + "|" + _LEAD + ".*(?i:" + "|".join(
    p.removeprefix("(?i)") for p in (_SAVE, _SAVED, _SAVE_FAIL, _LOAD, _LOADED, _START)) + ")"


def GROUP_CONTEXT(ctx: Context) -> tuple:  # noqa: N802  (a collector's contract names are capitals)
    """What parse() reads of the context: the zone of times printed without one, the hosts a prefix may name."""
    return (ctx.tz, ctx.proc_tz, ctx.known_hosts)


def sniff(head: bytes, path: str) -> bool:
    """Records of a script's own logging whose step lines carry a leading time, a step number and a loss."""
    return search(head, "(?m)" + _STEPLINE)


def parse(lines: pl.DataFrame, ctx: Context) -> Parsed:
    """Steps, checkpoint operations, facts and NaN events from the matched records."""
    df = prepare(lines, ctx)
    g = pl.col("msg").str.extract_groups(_LEAD)
    naive = g.struct.field("1").str.replace("T", " ").str.to_datetime("%Y-%m-%d %H:%M:%S", strict=False,
                                                                        time_unit="us")
    frac = g.struct.field("2").str.slice(0, 6).str.pad_end(6, "0").cast(pl.Int64, strict=False).fill_null(0)
    zone = g.struct.field("3").replace("Z", "+00:00")
    # a record without a zone: the zone the job's processes print in (a container in UTC), else the node's
    df = df.with_columns(ts=offset_to_utc(naive + pl.duration(microseconds=frac), zone, ctx.proc_tz or ctx.tz))
    df = df.filter(pl.col("ts").is_not_null())
    rows, bad = _steps(df)
    # NOTE: save/load wording is common to every framework's logs: read only in files whose step lines are ours
    ours = file_of_line().is_in(rows.select(file_of_line()).to_series().unique().implode())
    foreign = df.filter(~ours).select("line")  # another framework's lines: not unparsed here
    df = df.filter(ours)
    ops = _ops(df, rows)
    facts = facts_from(df, [(_START, {"start_step": 1}), (_STEP_AT, {"train_iters": 2}, pl.col("msg").str.contains(
        _LOSS))]).unique(subset=["key", "value"], keep="first", maintain_order=True)
    restarts = pl.concat([ops.filter(pl.col("action") == "load")["line"],
                          df.filter(pl.col("msg").str.contains(_START))["line"]])
    ckpts = checkpoint_rows(ops, missing_ok=None)
    steps = interval_step_s(merge_repeats(segment(rows, restarts)), ckpts)
    out = step_result(lines, [rows, ops, facts, foreign], steps=steps,
                      checkpoints=ckpts,
                      facts=facts, events=loss_events(steps))
    out.warnings += [f"line {n}: step line without a readable loss" for n in bad["line"][:5]]
    return out


def _steps(df: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    hit = df.filter(pl.col("msg").str.contains(_STEPLINE))
    unit = pl.coalesce(pl.col("msg").str.extract(_STEP_TIME, 3), pl.col("msg").str.extract(_STEP_TIME, 1))
    t = num(_STEP_TIME, 2)
    rows = hit.with_columns(
        step=integer(_STEP_AT),
        step_s=pl.when(unit.str.to_lowercase() == "ms").then(t / 1000).otherwise(t),
        loss=num(_LOSS),
        grad_norm=num(r"(?i)\bgrad[_ ]?norm\b[ :=]+" + NUM),
        lr=num(r"(?i)\blr\b[ :=]+" + NUM),
    )
    ok = pl.col("step").is_not_null() & pl.col("loss").is_not_null()
    return flag_nonfinite(rows.filter(ok)), rows.filter(~ok).select("line")


def _ops(df: pl.DataFrame, steps: pl.DataFrame) -> pl.DataFrame:
    """Save/load lines; a save line that names no step takes the last step logged before it."""
    path = pl.col("msg").str.extract(_LOAD, 1)
    named = integer(_CKPT_STEP)
    ops = checkpoint_ops(df, [
        op(_SAVE, "save", "start", ~pl.col("msg").str.contains(_SAVE_FAIL), step=named),
        op(_SAVED, "save", "finish", step=named, duration_s=num(_SAVED), ok=pl.lit(True)),
        # NOTE: a failed save never ended: no finish (its time after the start is the failure's, not a save's)
        op(_SAVE_FAIL, "save", "info"),
        # NOTE: a path that names no step (Ray Train's `checkpoint_000003`: an index, a `latest` link) leaves it to
        # the line: `resuming from PATH (step 1000)`
        op(_LOAD, "load", "start", path=path, step=pl.coalesce(
            path.str.extract(_CKPT_STEP, 1), pl.col("msg").str.extract(_LOAD + r".*?\bstep\b[ :=]*(\d+)", 2))
            .cast(pl.Int64, strict=False)),
        op(_LOADED, "load", "finish", step=named, duration_s=num(_LOADED), ok=pl.lit(True)),
    ])
    logged = steps.select("line", pl.col("step").alias("_logged"), _f=file_of_line()).sort("line")
    ops = ops.with_columns(_f=file_of_line()).join_asof(logged, on="line", by="_f", strategy="backward",
                                                        check_sortedness=False).drop("_f")
    fill = (pl.col("action") == "save") & (pl.col("phase") == "start")
    ops = ops.with_columns(step=pl.when(fill).then(pl.coalesce("step", "_logged")).otherwise("step")).drop("_logged")
    # a failure line belongs to the save open before it (its step)
    opened = pl.when(fill).then(pl.col("step")).forward_fill().over(file_of_line())
    info = (pl.col("action") == "save") & (pl.col("phase") == "info")
    return ops.with_columns(step=pl.when(info).then(pl.coalesce("step", opened)).otherwise("step"))
