"""Megatron-LM training logs: iteration lines, checkpoint save/load, run facts, NaN iterations.

An iteration line reports the mean over the log interval that ends at `iteration`: its `step_s` is
that mean (ms / 1000, or seconds in Megatron-DeepSpeed's `(s)` variant) and its `ts` (the printed
`[YYYY-MM-DD HH:MM:SS[.ffffff]]`, the node's local time) is the end of that step. A checkpoint row
sits at the line where the save or load began; `duration_s` is the `save-checkpoint` /
`load-checkpoint` timer where printed (the blocking time, max across ranks), else finish minus start.
NeMo, which trains through Megatron-core, prints its own step lines: NeMo 2's progress printer and NeMo 1.x's
Lightning bar (`global_step=`, `reduced_train_loss=`, `train_step_timing in s=`), step rows without a time.

Fact keys: world_size, data_parallel_size, tensor_parallel_size, pipeline_parallel_size,
context_parallel_size, global_batch_size, micro_batch_size, seq_len, layers, hidden, ffn_hidden,
heads, kv_heads, num_experts, log_interval, save_interval, train_iters, checkpoint_dir,
params_shard_tp<t>_pp<p> (parameters on one model-parallel shard).
"""

from __future__ import annotations

import polars as pl

from clusterlab.collectors._base import Context, Parsed, file_of_line, search
from clusterlab.collectors._steplog import (
    GROUP_CONTEXT,  # noqa: F401  (the collector contract: what parse() reads of the context)
    NUM,
    TS_FORMAT,
    Op,
    checkpoint_ops,
    checkpoint_rows,
    facts_from,
    flag_nonfinite,
    integer,
    local_time,
    loss_events,
    merge_repeats,
    num,
    op,
    prepare,
    segment,
    step_result,
)

NAME = "megatron"
EXCLUSIVE = False
WARNINGS_PER_FILE = True  # its warnings are each file's own (five a file): a group hands them to their files

# Megatron prints its arguments as `  name <48 - len(name) dots> value`; matching the exact dot
# count keeps DeepSpeed's config dump (29 - len dots) and other tables out.
_ARG_KEYS = {
    "world_size": "world_size", "data_parallel_size": "data_parallel_size",
    "tensor_model_parallel_size": "tensor_parallel_size",
    "pipeline_model_parallel_size": "pipeline_parallel_size",
    "context_parallel_size": "context_parallel_size", "global_batch_size": "global_batch_size",
    "micro_batch_size": "micro_batch_size", "seq_length": "seq_len", "num_layers": "layers",
    "hidden_size": "hidden", "ffn_hidden_size": "ffn_hidden", "num_attention_heads": "heads",
    "num_query_groups": "kv_heads", "num_experts": "num_experts", "log_interval": "log_interval",
    "save_interval": "save_interval", "train_iters": "train_iters", "save": "checkpoint_dir",
}
_ARGS = r"\b(" + "|".join(f"{k} \\.{{{48 - len(k)}}}" for k in _ARG_KEYS) + r") (\S.*?)\s*$"

_ITER = r"iteration\s+(\d+)\s*/\s*\d+\s*\| consumed samples:"
_SAVE = r"saving checkpoint at iteration\s+(\d+) to (\S+)"
_ASYNC = r"scheduled an async checkpoint save at iteration\s+(\d+) to (\S+)"
_SAVED = r"successfully saved (?:local )?checkpoint (?:from|at) iteration\s+(\d+)(?: to (\S+))?"
_LOAD = r"loading (?:release )?(?:distributed )?checkpoint from (\S+)(?: at iteration (\d+))?"
_LOADED = r"successfully loaded checkpoint from (\S+) \[[^\]]*\] at iteration (\d+)"
# NeMo 2's checkpoint callback, once per save: `Global Checkpoint Save : Rank: 0 : Iteration: 50 : Start time:
# 1744408121.151s : Save duration: 4.389s` (the blocking time of the save; Megatron's own save lines need not appear)
_NEMO_SAVE = r"Global Checkpoint Save : Rank: ?\d+ : Iteration: (\d+) : Start time: [\d.]+s : Save duration: ([\d.]+)s"
# A launch that found no checkpoint to resume from trains from step 0: a load of step 0 from that directory (NeMo's
# exp_manager; Megatron's `WARNING: could not find the metadata file DIR/latest_checkpointed_iteration.txt`)
_SCRATCH = (r"(?:no checkpoints found in checkpoint_dir or no checkpoint folder at checkpoint_dir :?\s*(\S+?)\.? "
            r"Training from scratch|could not find the metadata file (\S+)/latest_checkpointed_iteration\.txt)")
# NeMo's exp_manager resuming: `Resuming training from checkpoint: DIR/NAME--step=2750-consumed_samples=...-last`
# (the step is in the checkpoint's name)
_NEMO_RESUME = r"Resuming training from checkpoint: (\S+)"
# `    save-checkpoint ....: (min, max)` or `....: max` (ms); before 2022 `time (ms) | save-checkpoint: t`.
_TIMER = r"(save|load)-checkpoint(?:-non-persistent)?(?: \.+)?: (?:\(([\d.]+), ([\d.]+)\)|([\d.]+))"
_PARAMS = (r"number of parameters on \(tensor, (?:gtp_weight_remat, )?pipeline\) model parallel rank "
           r"\(([\d, ]+)\): (\d+)")
_WORLD = (r"using world size: (\d+), data-parallel size: (\d+), .*tensor-model-parallel size: (\d+), "
          r"pipeline-model-parallel size: (\d+)")
_GBS = r"setting global batch size to (\d+)"
_RERUN = r"Unexpected result (?:tensor\()?([-+\w.]+)"
# Megatron-core's NaN checks before the re-run machine (2024): `AssertionError: Rank 13: found NaN in local grad
# norm in backward pass before ... collective. Device: 5, node: gpu-017` (and `... forward loss calculation.`)
_NAN_ASSERT = r"Rank (\d+): found (NaN|Inf) in local (grad norm|forward loss)[^.]*\.(?: Device: (\d+), node: (\S+))?"
# The re-run state machine's verdict after re-running the iteration: not reproducible on the same GPU
# (transient) or reproducible there but not on another GPU (persistent) flags the first GPU as potentially
# faulty (its docstring: "subjected to standard diagnostic test suites"); reproducible on another GPU is a
# correct result, so a real NaN of the run.
_VERDICT = (r"Rank (\d+), node (\S+?), device (\d+), iteration #?(-?\d+): "
            r"(Possible transient error|Possible persistent error|Correct result \(but possible Application error\))")
# NeMo 2's progress printer: `Training epoch 0, iteration 9/99 | lr: 1.5e-05 | ... | global_step: 9 |
# reduced_train_loss: 10.37 | train_step_timing in s: 0.8`
_NEMO = r"\bTraining epoch \d+, iteration (\d+)/\d+ \|"
# NeMo 1.x under Lightning: the tqdm bar's postfix, its states joined by carriage returns on one line (the last is
# the newest): `Epoch 0: :   0%|  | 41/300000 [03:32<431:22:10, reduced_train_loss=8.412, global_step=40.00, ...]`
_NEMO_BAR = r"(?s:.*)\d+/\d+ \[[^\]]*<([^\]]*[\s,]reduced_train_loss=[^\]]*)\]"
# print_datetime(): `[before the start of training step] datetime: 2026-11-24 08:01:40.123456 `
_MILESTONE = r"\[([a-z][\w ,-]+)\] datetime: (\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}(?:\.\d{1,6})?)"

PATTERN = "|".join([
    _ITER, r"saving checkpoint at iteration", r"scheduled an async checkpoint save",
    r"successfully (?:saved|loaded) (?:local )?checkpoint", r"loading (?:release )?(?:distributed )?checkpoint from",
    r"(?:save|load)-checkpoint(?:-non-persistent)?(?: \.{4}|: \d)", r"number of parameters on \(tensor",
    r"using world size: \d", r"setting global batch size to \d", _ARGS.removesuffix(r"(\S.*?)\s*$"),
    r"Unexpected result ", r"\] datetime: \d{4}-", r"found (?:NaN|Inf) in local (?:grad norm|forward loss)",
    r"iteration #?-?\d+: (?:Possible (?:transient|persistent) error|Correct result \(but possible)",
    r"Training epoch \d+, iteration \d+/\d+ \|", r"[\s,]reduced_train_loss=", r"Global Checkpoint Save : ",
    r"Training from scratch|could not find the metadata file|Resuming training from checkpoint: ",
])

_HEAD = (r"iteration\s+\d+\s*/\s*\d+\s*\| consumed samples|-{8,} arguments -{8,}|"
         r"number of parameters on \(tensor|saving checkpoint at iteration|using world size: \d|"
         r"Training epoch \d+, iteration \d+/\d+ \| .*reduced_train_loss: |"
         r"\d+/\d+ \[[^\]]*<[^\]]*, reduced_train_loss=|"
         r"Unexpected result \S+ \(message='found NaN|found NaN in local (?:grad norm|forward loss)")

_TS = r"\[(\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}(?:\.\d{1,6})?)\]"


def sniff(head: bytes, path: str) -> bool:
    """A Megatron-LM log: iteration lines, its argument dump or its checkpoint messages."""
    return search(head, _HEAD)


def parse(lines: pl.DataFrame, ctx: Context) -> Parsed:
    """Steps, checkpoints, facts and NaN events from matched Megatron lines."""
    df = prepare(lines, ctx, ts=_TS)
    rows, bad_steps = _steps(df)
    ops = _checkpoint_ops(df)
    steps = merge_repeats(segment(rows, ops.filter(pl.col("action") == "load")["line"]))
    ckpt = checkpoint_rows(ops, missing_ok=False) if ops.height else ops
    facts = _facts(df, ctx)
    events = pl.concat([loss_events(steps), _rerun_events(df), _assert_events(df), _verdict_events(df)],
                       how="diagonal_relaxed")
    out = step_result(lines, [rows, ops, facts, events], steps=steps, checkpoints=ckpt,
                      facts=facts.filter(pl.col("value") != "None"), events=events)
    first = bad_steps.filter(pl.int_range(pl.len()).over(file_of_line()) < 5)  # five a file, parsed alone or not
    out.warnings += [f"line {n}: iteration line without a readable step time" for n in first["line"]]
    return out


def _steps(df: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Iteration lines (and NeMo 2's progress lines) as step rows (not yet merged), and the lines that could not
    be read."""
    it = df.filter(pl.col("msg").str.contains(_ITER))
    elapsed = pl.col("msg").str.extract_groups(r"elapsed time per iteration ?\((ms|s)\):\s*([\d.]+)\s*\|")
    scale = pl.when(elapsed.struct.field("1") == "ms").then(1e-3).otherwise(1.0)
    lm_loss = num(r"\|\s*lm loss:\s*" + NUM + r"\s*\|")
    any_loss = num(r"\|\s*(?:[\w-]+ )?loss:\s*" + NUM + r"\s*\|")
    rows = it.with_columns(
        step=integer(_ITER),
        step_s=elapsed.struct.field("2").cast(pl.Float64, strict=False) * scale,
        tflops=num(r"(?:throughput per GPU \(TFLOP/s/GPU\)|TFLOPs):\s*([\d.]+)\s*\|"),
        lr=num(r"learning rate:\s*" + NUM + r"\s*\|"),
        loss=pl.coalesce(lm_loss, any_loss),
        grad_norm=num(r"\|\s*(?:total )?grad norm:\s*" + NUM + r"\s*\|"),
        skipped=integer(r"number of skipped\s+iterations:\s*(\d+)\s*\|").cast(pl.Int32, strict=False),
        nan=integer(r"number of nan iterations:\s*(\d+)\s*\|").cast(pl.Int32, strict=False),
        _scale=num(r"\|\s*loss scale:\s*" + NUM + r"\s*\|"),
    )
    ok = pl.col("step").is_not_null() & pl.col("step_s").is_not_null()
    rows = _hidden_nan(rows)
    nemo = _nemo_rows(df)
    good = pl.concat([rows.filter(ok), nemo.filter(pl.col("step").is_not_null())], how="diagonal_relaxed")
    bad = pl.concat([rows.filter(~ok).select("line"), nemo.filter(pl.col("step").is_null()).select("line")])
    return flag_nonfinite(good.sort("line")), bad.sort("line")


def _hidden_nan(rows: pl.DataFrame) -> pl.DataFrame:
    """Mark what an iteration line says of a NaN without printing one (`nan` / `_kind` / `_why`, see `loss_events`).

    - no loss at all where earlier lines printed one, and no iteration skipped: Megatron prints a loss only when
      its average is > 0 (>= 0 since 2024), so a NaN average leaves the field out and counts no NaN iteration
      (the rows of bigscience-workshop/Megatron-DeepSpeed#396, deepspeedai/Megatron-DeepSpeed#434);
    - iterations skipped at a loss scale of 1 or less: bf16 has no scaler (its scale prints 1.0) and skips only
      a non-finite update; fp16 at its floor (`--min-loss-scale`, 1 by default) skips every overflow from then
      on. Skips at a higher fp16 scale are the scaler's search (many at the start of a run): no event.
    """
    printed = pl.col("loss").is_not_null()
    seen = printed.cast(pl.Int32).cum_sum().shift(1, fill_value=0).over(file_of_line()) > 0
    skipped = pl.col("skipped").fill_null(0)
    # NOTE: only a whole line: the counters come after the loss, a line cut short has neither
    hidden = ~printed & seen & (skipped == 0) & pl.col("nan").is_not_null()
    # NOTE: where NaN iterations are counted, that is the event (a `loss_nan`): its detail stays as it was
    floor = (skipped > 0) & (pl.col("_scale") <= 1.0).fill_null(False) & (pl.col("nan").fill_null(0) == 0)
    return rows.with_columns(
        nan=pl.when(hidden).then(pl.max_horizontal(pl.col("nan").fill_null(0), pl.lit(1)))
        .otherwise(pl.col("nan")).cast(pl.Int32),
        _kind=pl.when(floor & ~hidden).then(pl.lit("skipped_iterations")),
        _why=pl.when(hidden).then(pl.lit("no loss printed: Megatron leaves out a NaN average"))
        .when(floor).then(pl.format("{} iterations skipped at loss scale {}", "skipped", "_scale")),
    )


def _nemo_rows(df: pl.DataFrame) -> pl.DataFrame:
    """NeMo 2's progress-printer lines (`Training epoch E, iteration I/T | key: value ...`) and NeMo 1.x's progress
    bar (`..., reduced_train_loss=8.41, global_step=40.00, ...]`) as step rows."""
    printer = df.filter(pl.col("msg").str.contains(_NEMO))
    bar = df.filter(pl.col("msg").str.contains(_NEMO_BAR)).with_columns(_post=pl.col("msg").str.extract(_NEMO_BAR, 1))

    def field(key: str) -> pl.Expr:
        return num(r"\| " + key + r": " + NUM + r"(?:\s*\||\s*$)")

    def post(key: str) -> pl.Expr:
        return num(r"(?:^|[\s,])" + key + r"=" + NUM + r"(?:,|$)", col="_post")

    return pl.concat([printer.with_columns(
        step=pl.coalesce(field("global_step"), integer(_NEMO).cast(pl.Float64)).cast(pl.Int64, strict=False),
        loss=field("reduced_train_loss"), lr=field("lr"), step_s=field(r"train_step_timing in s"),
        grad_norm=field("grad_norm"),
    ), bar.with_columns(
        step=post("global_step").cast(pl.Int64, strict=False), loss=post("reduced_train_loss"), lr=post("lr"),
        step_s=post(r"train_step_timing in s"), grad_norm=post("grad_norm"),
    ).drop("_post")], how="diagonal_relaxed").sort("line")


def _op(pattern: str, action: str, phase: str, step: int | None, path: int | None, ok: bool | None = None) -> Op:
    """Checkpoint operation lines matching `pattern` (`step`/`path`: regex groups)."""
    return op(pattern, action, phase, ok=pl.lit(ok, pl.Boolean),
              step=integer(pattern, step) if step else pl.lit(None, pl.Int64),
              path=pl.col("msg").str.extract(pattern, path) if path else pl.lit(None, pl.String))


def _checkpoint_ops(df: pl.DataFrame) -> pl.DataFrame:
    """The save/load lines and checkpoint timer lines, in the form `checkpoint_rows` takes."""
    timers = op(_TIMER, pl.col("msg").str.extract(_TIMER, 1), "timer",
                duration_s=pl.coalesce(num(_TIMER, 3), num(_TIMER, 4)) * (1 / 1000))  # (see `seconds`)
    return checkpoint_ops(df, [
        _op(_SAVE, "save", "start", 1, 2), _op(_ASYNC, "save", "info", 1, 2),
        _op(_SAVED, "save", "finish", 1, 2, ok=True),
        _op(_LOAD, "load", "start", 2, 1),
        _op(_LOADED, "load", "finish", 2, 1, ok=True), timers,
        op(_NEMO_SAVE, "save", "finish", ok=pl.lit(True), step=integer(_NEMO_SAVE, 1), duration_s=num(_NEMO_SAVE, 2)),
        op(_NEMO_RESUME, "load", "finish", ok=pl.lit(True), step=integer(r"Resuming training from checkpoint: \S*?"
                                                                           r"\bstep=(\d+)", 1),
           path=pl.col("msg").str.extract(_NEMO_RESUME, 1)),
        op(_SCRATCH, "load", "finish", ok=pl.lit(True), step=pl.lit(0, pl.Int64),
           path=pl.coalesce(pl.col("msg").str.extract(_SCRATCH, 1), pl.col("msg").str.extract(_SCRATCH, 2))),
    ])


def _facts(df: pl.DataFrame, ctx: Context) -> pl.DataFrame:
    """Run facts: parallel sizes, batch, model shape, parameters per model-parallel shard."""
    args = df.filter(pl.col("msg").str.contains(_ARGS)).select(
        "line", "ts", "host",
        pl.col("msg").str.extract(_ARGS, 1).str.extract(r"^(\w+)", 1).replace_strict(_ARG_KEYS).alias("key"),
        pl.col("msg").str.extract(_ARGS, 2).alias("value"),
    )
    ranks = pl.col("msg").str.extract(_PARAMS, 1).str.split(",").list.eval(pl.element().str.strip_chars())
    params = df.filter(pl.col("msg").str.contains(_PARAMS)).select(
        "line", "ts", "host",
        pl.format("params_shard_tp{}_pp{}", ranks.list.first(), ranks.list.last()).alias("key"),
        pl.col("msg").str.extract(_PARAMS, 2).alias("value"),
    )
    said = facts_from(df, [(_WORLD, {"world_size": 1, "data_parallel_size": 2, "tensor_parallel_size": 3,
                                     "pipeline_parallel_size": 4}), (_GBS, {"global_batch_size": 1})])
    return pl.concat([args, params, said, _milestones(df, ctx)]).sort("line", "key")


def _milestones(df: pl.DataFrame, ctx: Context) -> pl.DataFrame:
    """Megatron's dated milestones (`[before the start of training step] datetime: ...`) as facts."""
    # The end of start-up is one of them: the time they print is what they are for.
    hit = df.filter(pl.col("msg").str.contains(_MILESTONE))
    return hit.select(
        "line", local_time(pl.col("msg").str.extract(_MILESTONE, 2), TS_FORMAT, ctx).alias("ts"),
        "host", pl.lit("milestone").alias("key"), pl.col("msg").str.extract(_MILESTONE, 1).alias("value"),
    )


def _rerun_events(df: pl.DataFrame) -> pl.DataFrame:
    """Megatron's result validation (NaN/Inf/spiky loss or grad norm) as loss-divergence events."""
    hit = df.filter(pl.col("msg").str.contains(_RERUN))
    result = pl.col("msg").str.extract(_RERUN, 1).str.to_lowercase()
    nonfinite = result.str.contains(r"^[-+]?(?:nan|inf)")
    # NOTE: a check before the first step prints `iteration -1` (NeMo 2): no step, rather than a wrong one
    where = pl.col("msg").str.extract_groups(r"Rank (\d+), node (\S+?), device \d+, iteration #?(-?\d+)")
    step = pl.coalesce(where.struct.field("3"), pl.col("msg").str.extract(r"at iteration #(\d+)", 1))
    step = pl.when(step.cast(pl.Int64, strict=False) >= 0).then(step)
    return hit.select(
        "line", "ts",
        pl.coalesce(where.struct.field("2"), pl.col("host")).alias("host"),
        pl.coalesce(where.struct.field("1").cast(pl.Int32, strict=False),
                    integer(r"on rank (\d+)").cast(pl.Int32, strict=False), pl.col("rank")).alias("rank"),
        pl.when(nonfinite).then(pl.lit("loss_nan")).otherwise(pl.lit("loss_spike")).alias("kind"),
        pl.lit("loss_divergence").alias("failure_mode"), pl.lit("error").alias("severity"),
        pl.col("msg").str.strip_chars().alias("text"),
        pl.struct(step.cast(pl.Int64, strict=False).alias("step"), result.alias("result"))
        .struct.json_encode().alias("detail"),
    )


def _assert_events(df: pl.DataFrame) -> pl.DataFrame:
    """Megatron-core's NaN assertions before the re-run machine, with the rank and node they name."""
    hit = df.filter(pl.col("msg").str.contains(_NAN_ASSERT))
    g = pl.col("msg").str.extract_groups(_NAN_ASSERT)
    return hit.select(
        "line", "ts", pl.coalesce(g.struct.field("5"), pl.col("host")).alias("host"),
        pl.coalesce(g.struct.field("1").cast(pl.Int32, strict=False), pl.col("rank")).alias("rank"),
        pl.when(g.struct.field("3") == "grad norm").then(pl.lit("grad_norm_nonfinite")).otherwise(pl.lit("loss_nan"))
        .alias("kind"),
        pl.lit("loss_divergence").alias("failure_mode"), pl.lit("error").alias("severity"),
        pl.col("msg").str.strip_chars().alias("text"),
        pl.struct(g.struct.field("2").str.to_lowercase().alias("result"), g.struct.field("3").alias("check"),
                  g.struct.field("4").cast(pl.Int32, strict=False).alias("device"))
        .struct.json_encode().alias("detail"),
    )


def _verdict_events(df: pl.DataFrame) -> pl.DataFrame:
    """The re-run state machine's verdicts: a suspect GPU (transient / persistent error) or a real NaN."""
    hit = df.filter(pl.col("msg").str.contains(_VERDICT))
    g = pl.col("msg").str.extract_groups(_VERDICT)
    gpu = g.struct.field("5").str.starts_with("Possible")
    step = g.struct.field("4").cast(pl.Int64, strict=False)
    return hit.select(
        "line", "ts", pl.coalesce(g.struct.field("2"), pl.col("host")).alias("host"),
        g.struct.field("1").cast(pl.Int32, strict=False).alias("rank"),
        pl.when(gpu).then(pl.lit("rerun_suspect_gpu")).otherwise(pl.lit("rerun_confirmed")).alias("kind"),
        pl.when(gpu).then(pl.lit("gpu_hw_other")).otherwise(pl.lit("loss_divergence")).alias("failure_mode"),
        pl.lit("error").alias("severity"), pl.col("msg").str.strip_chars().alias("text"),
        pl.struct(pl.when(step >= 0).then(step).alias("step"),
                  g.struct.field("3").cast(pl.Int32, strict=False).alias("device"),
                  g.struct.field("5").alias("verdict")).struct.json_encode().alias("detail"),
    )
