"""torchtitan training logs: step lines (ANSI-coloured), checkpoint save/load, model size.

`[titan] 2026-11-24 08:10:00,123 - root - INFO - step: 10  loss:  7.8999  grad_norm: 1.2  memory:
23.11GiB(29.20%)  tps: 6,519  tflops: 377.44  mfu: 38.16%` (older: `wps:`, no grad_norm / tflops;
older still, no `[titan]`). The time is the node's local time (`ctx.tz`). torchtitan prints no step
time: `step_s` is the time since the previous step line over the steps between them, so it
includes whatever ran in between (a checkpoint save, an evaluation). A save line names no step:
it takes the last step logged before it. Fact keys: model, params, gpu_name, start_step,
tokens_per_step, seq_len, global_batch_size, micro_batch_size, gradient_accumulation_steps,
train_iters.
"""

from __future__ import annotations

import polars as pl

from clusterlab.collectors._base import Context, Parsed, file_of_line, search
from clusterlab.collectors._steplog import (
    GROUP_CONTEXT,  # noqa: F401  (the collector contract: what parse() reads of the context)
    NUM,
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

NAME = "torchtitan"
EXCLUSIVE = False

_TS = r"(\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2},\d{3}) - \S+ - [A-Z]+ - "
_STEP = r" - [A-Z]+ - (?:\x1b\[[0-9;]*m)?step: *\d"
_SAVE = r"(Saving|Staging) the checkpoint(?: \(or staging if async is enabled\))?\.\s*$"
_LAST = r"Saving a (?:full|model only|model weights only) checkpoint (?:in \S+ )?at last step, step (\d+)"
_LAST_DONE = r"Last step checkpoint completed in ([\d.]+)s"
_DONE = r"Finished (saving|staging|loading) the checkpoint( \(or staging if async is enabled\))? ?in ([\d.]+) seconds"
_LOAD = r"Loading the checkpoint (?:at step (\d+)|from (\S+?))\.?$"
_SIZE = r"Model (\S+) (\S+) size: ([\d,]+) total parameters"
_START = r"Training starts at step (\d+)"
_INIT = r"Trainer is initialized with |Training starts at step \d+, with "
# Batch and length facts from `Trainer is initialized with ...` / `Training starts at step 1, with`.
_BATCH = {"tokens_per_step": r"(\d+) tokens per train step", "seq_len": r"maximum context length (\d+)",
          "global_batch_size": r"global batch size (\d+)", "micro_batch_size": r"local batch size (\d+)",
          "gradient_accumulation_steps": r"gradient accumulation steps (\d+)", "train_iters": r"total steps (\d+)"}
_GPU = r"\b[A-Z]+ capacity: (.+?)(?: \(\d+\))? with [\d.]+ ?GiB memory"

PATTERN = "|".join([
    _STEP, r"(?:Saving|Staging|Loading) the checkpoint", r"Finished (?:saving|staging|loading) the checkpoint",
    r"checkpoint (?:in \S+ )?at last step, step \d", r"Last step checkpoint completed in ",
    r"size: [\d,]+ total parameters", r"Training starts at step \d", r"Trainer is initialized with \d",
    r"[A-Z] capacity: .* with [\d.]+ ?GiB memory",
])

_HEAD = r"\[titan\] \d{4}-|- root - INFO - (?:\x1b\[[0-9;]*m)?step: *\d|torchtitan version"


def sniff(head: bytes, path: str) -> bool:
    """A torchtitan log: `[titan]` log lines or its step lines."""
    return search(head, _HEAD)


def parse(lines: pl.DataFrame, ctx: Context) -> Parsed:
    """Steps, checkpoints, facts and NaN events from matched torchtitan lines."""
    df = prepare(lines, ctx, ts=_TS)
    rows, bad = _steps(df)
    ops = _checkpoint_ops(df, rows)
    facts = _facts(df)
    restarts = pl.concat([ops.filter(pl.col("action") == "load")["line"],
                          df.filter(pl.col("msg").str.contains(_START))["line"]])
    ckpts = checkpoint_rows(ops, missing_ok=False)
    steps = interval_step_s(merge_repeats(segment(rows, restarts)), ckpts)
    out = step_result(lines, [rows, ops, facts], steps=steps, checkpoints=ckpts,
                      facts=facts, events=loss_events(steps))
    out.warnings += [f"line {n}: step line without a readable loss" for n in bad["line"][:5]]
    return out


def _steps(df: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Step lines as step rows (validation lines excluded), and those that could not be read."""
    hit = df.filter(pl.col("msg").str.contains(r" - [A-Z]+ - step: *\d"))
    rows = hit.with_columns(
        step=integer(r"step: *(\d+)"),
        step_s=pl.lit(None, pl.Float64),
        loss=num(r"\bloss: *" + NUM + r"(?:\s|$)"),
        grad_norm=num(r"\bgrad_norm: *" + NUM + r"(?:\s|$)"),
        tflops=num(r"\btflops: *([\d,.]+)(?:\s|$)"),
    )
    ok = pl.col("step").is_not_null() & pl.col("loss").is_not_null()
    return flag_nonfinite(rows.filter(ok)), rows.filter(~ok).select("line")


def _checkpoint_ops(df: pl.DataFrame, steps: pl.DataFrame) -> pl.DataFrame:
    """Save/load lines; a save without a step takes the last step logged before it."""
    verb = pl.col("msg").str.extract(_DONE, 1)
    path = pl.col("msg").str.extract(_LOAD, 2)
    load_step = pl.coalesce(integer(_LOAD), path.str.extract(r"step-(\d+)", 1).cast(pl.Int64, strict=False))
    done = num(_DONE, 3)
    ops = checkpoint_ops(df, [
        op(_SAVE, "save", "start"),
        op(_LAST, "save", "start", step=integer(_LAST)),
        op(_LAST_DONE, "save", "finish", duration_s=num(_LAST_DONE), ok=pl.lit(True)),
        # NOTE: "staging" (async) ends before the checkpoint is durable: ok stays unknown.
        op(_DONE, "save", "finish", verb.is_in(["saving", "staging"]), duration_s=done,
           ok=pl.when(verb == "saving").then(True)),
        op(_LOAD, "load", "start", path=path, step=load_step),
        op(_DONE, "load", "finish", verb == "loading", duration_s=done, ok=pl.lit(True)),
    ])
    # NOTE: the step logged before it in its own file (`by`: files parsed together); both sorted by line
    logged = steps.select("line", pl.col("step").alias("_logged"), _f=file_of_line()).sort("line")
    ops = ops.with_columns(_f=file_of_line()).join_asof(logged, on="line", by="_f", strategy="backward",
                                                        check_sortedness=False).drop("_f")
    fill = (pl.col("action") == "save") & pl.col("phase").is_in(["start", "info"])
    return ops.with_columns(step=pl.when(fill).then(pl.coalesce("step", "_logged")).otherwise("step")).drop("_logged")


def _facts(df: pl.DataFrame) -> pl.DataFrame:
    """Model name and size, GPU model, and the step a (re)start begins at."""
    model = df.filter(pl.col("msg").str.contains(_SIZE)).select(
        "line", "ts", "host", pl.lit("model").alias("key"),
        pl.format("{} {}", pl.col("msg").str.extract(_SIZE, 1), pl.col("msg").str.extract(_SIZE, 2)).alias("value"))
    init = pl.col("msg").str.contains(_INIT)
    said = facts_from(df, [(_SIZE, {"params": 3}), (_GPU, {"gpu_name": 1}), (_START, {"start_step": 1}),
                           *((rx, {k: 1}, init) for k, rx in _BATCH.items())])
    return pl.concat([model, said]).sort("line", "key")
