"""Megatron-LM training logs: iteration lines, checkpoint save/load, run facts, NaN iterations.

An iteration line reports the mean over the log interval that ends at `iteration`: its `step_s` is
that mean (ms / 1000, or seconds in Megatron-DeepSpeed's `(s)` variant) and its `ts` (the printed
`[YYYY-MM-DD HH:MM:SS[.ffffff]]`, the node's local time) is the end of that step. A checkpoint row
sits at the line where the save or load began; `duration_s` is the `save-checkpoint` /
`load-checkpoint` timer where printed (the blocking time, max across ranks), else finish minus start.

This module also holds the helpers the other step-log collectors (torchtitan, deepspeed,
hf_trainer) share: launcher prefixes, local times, step-row merging, checkpoint pairing.
Fact keys: world_size, data_parallel_size, tensor_parallel_size, pipeline_parallel_size,
context_parallel_size, global_batch_size, micro_batch_size, seq_len, layers, hidden, ffn_hidden,
heads, kv_heads, num_experts, log_interval, save_interval, train_iters, checkpoint_dir,
params_shard_tp<t>_pp<p> (parameters on one model-parallel shard).
"""

from __future__ import annotations

import re

import polars as pl

from clusterlab.collectors._base import TABLE_COLUMNS, Context, Parsed

NAME = "megatron"
EXCLUSIVE = False

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
# `    save-checkpoint ....: (min, max)` or `....: max` (ms); before 2022 `time (ms) | save-checkpoint: t`.
_TIMER = r"(save|load)-checkpoint(?:-non-persistent)?(?: \.+)?: (?:\(([\d.]+), ([\d.]+)\)|([\d.]+))"
_PARAMS = (r"number of parameters on \(tensor, (?:gtp_weight_remat, )?pipeline\) model parallel rank "
           r"\(([\d, ]+)\): (\d+)")
_WORLD = (r"using world size: (\d+), data-parallel size: (\d+), .*tensor-model-parallel size: (\d+), "
          r"pipeline-model-parallel size: (\d+)")
_GBS = r"setting global batch size to (\d+)"
_RERUN = r"Unexpected result (?:tensor\()?([-+\w.]+)"
# print_datetime(): `[before the start of training step] datetime: 2026-11-24 08:01:40.123456 `
_MILESTONE = r"\[([a-z][\w ,-]+)\] datetime: (\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}(?:\.\d{1,6})?)"

PATTERN = "|".join([
    _ITER, r"saving checkpoint at iteration", r"scheduled an async checkpoint save",
    r"successfully (?:saved|loaded) (?:local )?checkpoint", r"loading (?:release )?(?:distributed )?checkpoint from",
    r"(?:save|load)-checkpoint(?:-non-persistent)?(?: \.{4}|: \d)", r"number of parameters on \(tensor",
    r"using world size: \d", r"setting global batch size to \d", _ARGS.removesuffix(r"(\S.*?)\s*$"),
    r"Unexpected result ", r"\] datetime: \d{4}-",
])

_HEAD = re.compile(rb"iteration\s+\d+\s*/\s*\d+\s*\| consumed samples|-{8,} arguments -{8,}|"
                   rb"number of parameters on \(tensor|saving checkpoint at iteration|using world size: \d")

# ---------------------------------------------------------------- shared step-log helpers

ANSI = r"\x1b\[[0-9;]*m"
# pdsh/deepspeed `host: `, then torchrun's `[rank3]:` / `[default3]:` or srun --label's `3: `.
_LAUNCHER = r"^(?:(?P<h>[A-Za-z][\w.-]*): +)?(?:\[(?:rank|default)(?P<r1>\d+)\]: ?|(?P<r2>\d+): +)?"
NUM = r"(-?(?:\d[\d,]*(?:\.\d*)?(?:[eE][-+]?\d+)?|nan|inf))"


def prepare(lines: pl.DataFrame, ctx: Context) -> pl.DataFrame:
    """`lines` plus `msg` (colour codes removed) and the `rank` / `host` a launcher prefix names."""
    df = lines.with_columns(msg=pl.col("text").str.replace_all(ANSI, ""))
    pre = pl.col("msg").str.extract_groups(_LAUNCHER)
    host = pre.struct.field("h")
    # NOTE: a `word: ` prefix is a host only when the inventory knows that host ("WARNING: ...").
    known = pl.when(host.is_in(sorted(ctx.known_hosts))).then(host) if ctx.known_hosts else None
    return df.with_columns(
        rank=pl.coalesce(pre.struct.field("r1"), pre.struct.field("r2")).cast(pl.Int32, strict=False),
        host=known if known is not None else pl.lit(None, pl.String),
    )


def local_time(raw: pl.Expr, fmt: str, ctx: Context) -> pl.Expr:
    """Naive UTC from a timestamp string printed in the node's local time (`ctx.tz`)."""
    t = raw.str.replace(",", ".", literal=True).str.to_datetime(fmt, strict=False, time_unit="us")
    if ctx.tz in ("UTC", "Etc/UTC"):
        return t
    return (t.dt.replace_time_zone(ctx.tz, ambiguous="earliest", non_existent="null")
            .dt.convert_time_zone("UTC").dt.replace_time_zone(None))


def num(pattern: str, group: int = 1, col: str = "msg") -> pl.Expr:
    """The float a regex group captures (thousands separators dropped; nan/inf kept)."""
    return pl.col(col).str.extract(pattern, group).str.replace_all(",", "").cast(pl.Float64, strict=False)


def integer(pattern: str, group: int = 1, col: str = "msg") -> pl.Expr:
    """The integer a regex group captures."""
    return pl.col(col).str.extract(pattern, group).str.replace_all(",", "").cast(pl.Int64, strict=False)


def conform(frame: pl.DataFrame, table: str) -> pl.DataFrame:
    """`frame` reduced to the columns of `table`, with the table's types."""
    schema = TABLE_COLUMNS[table]
    return frame.select([pl.col(c).cast(t) for c, t in schema.items() if c in frame.columns])


def merge_repeats(steps: pl.DataFrame) -> pl.DataFrame:
    """One row per run of consecutive rows with the same step in one segment."""
    # Ranks repeating a line, or two line kinds reporting one step: keep the run's first line and
    # each column's first non-null value.
    steps = steps if "_seg" in steps.columns else steps.with_columns(_seg=pl.lit(0, pl.Int64))
    change = (pl.col("step") != pl.col("step").shift(1)) | (pl.col("_seg") != pl.col("_seg").shift(1))
    run = change.fill_null(True).cum_sum().alias("_run")
    cols = [c for c in steps.columns if c != "line"]
    return (steps.sort("line").with_columns(run).group_by("_run", maintain_order=True)
            .agg(pl.col("line").first(), *[pl.col(c).drop_nulls().first() for c in cols]).drop("_run"))


def segment(frame: pl.DataFrame, breaks: pl.Series) -> pl.DataFrame:
    """`frame` with `_seg`: how many restart markers (line numbers in `breaks`) precede each row."""
    marks = breaks.cast(pl.Int64).unique().sort()
    return frame.with_columns(_seg=marks.search_sorted(frame["line"], side="left").cast(pl.Int64))


def interval_step_s(steps: pl.DataFrame) -> pl.DataFrame:
    """Fill a missing `step_s` from the time between consecutive step rows of one segment."""
    # seconds between the two rows / steps between them: whatever ran in between is included
    prev_ts, prev_step = pl.col("ts").shift(1).over("_seg"), pl.col("step").shift(1).over("_seg")
    span = (pl.col("ts") - prev_ts).dt.total_microseconds() / 1e6
    derived = pl.when((pl.col("step") > prev_step) & (span >= 0)).then(span / (pl.col("step") - prev_step))
    return steps.with_columns(step_s=pl.coalesce(pl.col("step_s"), derived))


def flag_nonfinite(steps: pl.DataFrame) -> pl.DataFrame:
    """Store a NaN/inf loss or grad norm as null and count (at least) one NaN iteration in `nan`."""
    # The `loss_nan` event keeps the line's text; NaN itself never reaches the tables.
    nan = pl.col("nan") if "nan" in steps.columns else pl.lit(None, pl.Int32)
    bad = pl.col("loss").is_finite().not_().fill_null(False)
    return steps.with_columns(
        nan=pl.when(bad).then(pl.max_horizontal(nan.fill_null(0), pl.lit(1))).otherwise(nan).cast(pl.Int32),
        loss=pl.when(bad).then(None).otherwise(pl.col("loss")),
        grad_norm=pl.when(pl.col("grad_norm").is_finite()).then(pl.col("grad_norm")),
    )


def loss_events(steps: pl.DataFrame) -> pl.DataFrame:
    """A `loss_nan` event for each step row that counts NaN iterations (see `flag_nonfinite`)."""
    bad = steps.filter(pl.col("nan").fill_null(0) > 0)
    detail = pl.struct(pl.col("step"), pl.col("nan").alias("nan_iterations")).struct.json_encode()
    return bad.select(
        "line", "ts", "host", "rank", pl.lit("loss_nan").alias("kind"),
        pl.lit("loss_divergence").alias("failure_mode"), pl.lit("error").alias("severity"),
        pl.col("msg").str.strip_chars().alias("text"), detail.alias("detail"),
    )


def checkpoint_rows(ops: pl.DataFrame, missing_ok: bool | None) -> pl.DataFrame:
    """One checkpoint row per save/load operation, at its first line (see the comment below)."""
    # `ops`: `line`, `ts`, `host`, `action` (save | load), `phase` (start: a new operation; info:
    # part of the open one unless its step differs; finish; timer), `step`, `path`, `duration_s`
    # (printed by a finish or timer line) and `ok` (of a finish line). An operation that has no
    # finish line gets `ok = missing_ok`: False where the format always prints one.
    ops = ops.sort("line")
    prev_phase = pl.col("phase").shift(1).over("action")
    prev_step = pl.col("step").shift(1).over("action")
    closed = prev_phase.is_in(["finish", "timer"])
    opens = pl.col("phase").is_in(["start", "info"]) & (
        prev_phase.is_null() | prev_step.ne_missing(pl.col("step"))
        | (closed & ((pl.col("phase") == "start") | pl.col("step").is_null())))
    # A timer belongs to the operation before it, unless that one already had its timer (a
    # timer of a load that found no checkpoint): then it stands alone and is dropped.
    opens = opens | ((pl.col("phase") == "timer") & (prev_phase.is_null() | (prev_phase == "timer")))
    ops = ops.with_columns(_op=opens.cast(pl.Int64).cum_sum().over("action"))
    phase = pl.col("phase")
    groups = ops.group_by("action", "_op", maintain_order=True).agg(
        pl.col("line").first(), pl.col("ts").drop_nulls().first(), pl.col("host").drop_nulls().first(),
        pl.col("step").drop_nulls().first(), pl.col("path").drop_nulls().first(),
        pl.col("ts").filter(phase.is_in(["start", "info"])).drop_nulls().first().alias("_t0"),
        pl.col("ts").filter(phase == "finish").drop_nulls().last().alias("_t1"),
        pl.col("duration_s").filter(phase == "timer").max().alias("_timer"),
        pl.col("duration_s").filter(phase == "finish").drop_nulls().first().alias("_printed"),
        (phase == "finish").any().alias("_done"), pl.col("ok").filter(phase == "finish").first().alias("_ok"),
        (phase != "timer").any().alias("_real"),
    )
    span = (pl.col("_t1") - pl.col("_t0")).dt.total_microseconds() / 1e6
    return groups.filter("_real").with_columns(
        duration_s=pl.coalesce("_timer", "_printed", pl.when(span >= 0).then(span)),
        ok=pl.when("_done").then("_ok").otherwise(pl.lit(missing_ok, pl.Boolean)),
    ).sort("line")


def facts_from(df: pl.DataFrame, pattern: str, pairs: dict[str, int]) -> pl.DataFrame:
    """Facts `key = group` for each line matching `pattern` (`pairs`: key -> regex group)."""
    hit = df.filter(pl.col("msg").str.contains(pattern))
    frames = [hit.select("line", "ts", "host", pl.lit(k).alias("key"),
                         pl.col("msg").str.extract(pattern, g).str.replace_all(",", "").alias("value"))
              for k, g in pairs.items()]
    return pl.concat(frames).filter(pl.col("value").is_not_null()) if frames else hit.clear()


def used_lines(*frames: pl.DataFrame) -> int:
    """How many distinct lines the frames drew on."""
    lines = [f["line"] for f in frames if f.height]
    return pl.concat(lines).n_unique() if lines else 0


# ---------------------------------------------------------------- Megatron itself

_TS = r"\[(\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}(?:\.\d{1,6})?)\]"


def sniff(head: bytes, path: str) -> bool:
    """A Megatron-LM log: iteration lines, its argument dump or its checkpoint messages."""
    return _HEAD.search(head) is not None


def parse(lines: pl.DataFrame, ctx: Context) -> Parsed:
    """Steps, checkpoints, facts and NaN events from matched Megatron lines."""
    df = prepare(lines, ctx).with_columns(
        ts=local_time(pl.col("msg").str.extract(_TS, 1), "%Y-%m-%d %H:%M:%S%.f", ctx))
    out = Parsed()
    rows, bad_steps = _steps(df)
    ops = _checkpoint_ops(df)
    steps = merge_repeats(segment(rows, ops.filter(pl.col("action") == "load")["line"]))
    ckpt = checkpoint_rows(ops, missing_ok=False) if ops.height else ops
    facts = _facts(df, ctx)
    events = pl.concat([loss_events(steps), _rerun_events(df)], how="diagonal_relaxed")
    out.add("steps", conform(steps, "steps"))
    out.add("checkpoints", conform(ckpt, "checkpoints"))
    out.add("facts", conform(facts.filter(pl.col("value") != "None"), "facts"))
    out.add("events", conform(events, "events"))
    out.unparsed = lines.height - used_lines(rows, ops, facts, events)
    out.warnings += [f"line {n}: iteration line without a readable step time" for n in bad_steps["line"][:5]]
    return out


def _steps(df: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Iteration lines as step rows (not yet merged), and the iteration lines that could not be read."""
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
        skipped=integer(r"number of skipped\s+iterations:\s*(\d+)\s*\|").cast(pl.Int32),
        nan=integer(r"number of nan iterations:\s*(\d+)\s*\|").cast(pl.Int32),
    )
    ok = pl.col("step").is_not_null() & pl.col("step_s").is_not_null()
    return flag_nonfinite(rows.filter(ok)), rows.filter(~ok).select("line")


def _op(df: pl.DataFrame, pattern: str, action: str, phase: str, step: int | None, path: int | None,
        ok: bool | None = None) -> pl.DataFrame:
    """Checkpoint operation lines matching `pattern` (`step`/`path`: regex groups)."""
    hit = df.filter(pl.col("msg").str.contains(pattern))
    return hit.select(
        "line", "ts", "host", pl.lit(action).alias("action"), pl.lit(phase).alias("phase"),
        (integer(pattern, step) if step else pl.lit(None, pl.Int64)).alias("step"),
        (pl.col("msg").str.extract(pattern, path) if path else pl.lit(None, pl.String)).alias("path"),
        pl.lit(None, pl.Float64).alias("duration_s"), pl.lit(ok, pl.Boolean).alias("ok"),
    )


def _checkpoint_ops(df: pl.DataFrame) -> pl.DataFrame:
    """The save/load lines and checkpoint timer lines, in the form `checkpoint_rows` takes."""
    timers = df.filter(pl.col("msg").str.contains(_TIMER)).select(
        "line", "ts", "host", pl.col("msg").str.extract(_TIMER, 1).alias("action"),
        pl.lit("timer").alias("phase"), pl.lit(None, pl.Int64).alias("step"), pl.lit(None, pl.String).alias("path"),
        (pl.coalesce(num(_TIMER, 3), num(_TIMER, 4)) / 1000).alias("duration_s"), pl.lit(None, pl.Boolean).alias("ok"),
    )
    parts = [
        _op(df, _SAVE, "save", "start", 1, 2), _op(df, _ASYNC, "save", "info", 1, 2),
        _op(df, _SAVED, "save", "finish", 1, 2, ok=True),
        _op(df, _LOAD, "load", "start", 2, 1),
        _op(df, _LOADED, "load", "finish", 2, 1, ok=True), timers,
    ]
    return pl.concat(parts).sort("line")


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
    world = facts_from(df, _WORLD, {"world_size": 1, "data_parallel_size": 2,
                                    "tensor_parallel_size": 3, "pipeline_parallel_size": 4})
    gbs = facts_from(df, _GBS, {"global_batch_size": 1})
    return pl.concat([args, params, world, gbs, _milestones(df, ctx)]).sort("line", "key")


def _milestones(df: pl.DataFrame, ctx: Context) -> pl.DataFrame:
    """Megatron's dated milestones (`[before the start of training step] datetime: ...`) as facts."""
    # The end of start-up is one of them: the time they print is what they are for.
    hit = df.filter(pl.col("msg").str.contains(_MILESTONE))
    return hit.select(
        "line", local_time(pl.col("msg").str.extract(_MILESTONE, 2), "%Y-%m-%d %H:%M:%S%.f", ctx).alias("ts"),
        "host", pl.lit("milestone").alias("key"), pl.col("msg").str.extract(_MILESTONE, 1).alias("value"),
    )


def _rerun_events(df: pl.DataFrame) -> pl.DataFrame:
    """Megatron's result validation (NaN/Inf/spiky loss or grad norm) as loss-divergence events."""
    hit = df.filter(pl.col("msg").str.contains(_RERUN))
    result = pl.col("msg").str.extract(_RERUN, 1).str.to_lowercase()
    nonfinite = result.str.contains(r"^[-+]?(?:nan|inf)")
    where = pl.col("msg").str.extract_groups(r"Rank (\d+), node (\S+?), device \d+, iteration #?(\d+)")
    step = pl.coalesce(where.struct.field("3"), pl.col("msg").str.extract(r"at iteration #(\d+)", 1))
    return hit.select(
        "line", "ts",
        pl.coalesce(where.struct.field("2"), pl.col("host")).alias("host"),
        pl.coalesce(where.struct.field("1").cast(pl.Int32, strict=False),
                    integer(r"on rank (\d+)").cast(pl.Int32), pl.col("rank")).alias("rank"),
        pl.when(nonfinite).then(pl.lit("loss_nan")).otherwise(pl.lit("loss_spike")).alias("kind"),
        pl.lit("loss_divergence").alias("failure_mode"), pl.lit("error").alias("severity"),
        pl.col("msg").str.strip_chars().alias("text"),
        pl.struct(step.cast(pl.Int64, strict=False).alias("step"), result.alias("result"))
        .struct.json_encode().alias("detail"),
    )
