"""DeepSpeed training logs: progress lines, checkpoint save/load, fp16 overflows, config facts.

`[2026-11-24 08:10:00,123] [INFO] [logging.py:96:log_dist] [Rank 0] step=10, skipped=0,
lr=[0.0001], mom=[(0.9, 0.999)]` (the node's local time, `ctx.tz`); the pipeline engine's
`steps: 10 loss: 7.1234 iter time (s): 0.456 samples/sec: 140.3` (printed, no time). Lines of one
step merge into one row. `skipped` is DeepSpeed's running count turned into skips since the
previous row; `step_s` is `iter time (s)` where printed, else the time since the previous progress
line over the steps between them. A save whose commit DeepSpeed does not print (newer releases)
keeps `ok` unknown. Fact keys: global_batch_size, micro_batch_size, gradient_accumulation_steps,
steps_per_print, data_parallel_size, deepspeed_version.
"""

from __future__ import annotations

import polars as pl

from clusterlab.collectors._base import Context, Parsed, file_of_line, search
from clusterlab.collectors._steplog import (
    GROUP_CONTEXT,  # noqa: F401  (the collector contract: what parse() reads of the context)
    NUM,
    Op,
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

NAME = "deepspeed"
EXCLUSIVE = False

_TS = r"\[(\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2},\d{3})\] \[[A-Z]+\] "
_PROGRESS = r"\] step=(\d+), skipped=(\d+), lr=\[([^\],]*)"
_PIPE = r"\bsteps: (\d+) loss: " + NUM + r" .*?iter time \(s\): ([\d.]+) samples/sec: ([\d.]+)"
_CREATE = r"\[Torch\] Checkpoint (\S+) is about to be saved!"
_SAVING = r"Saving model checkpoint: (\S+)"
_READY = r"\[Torch\] Checkpoint (\S+) is ready now!"
_FAILED = r"Failed saving model checkpoint to (\S+) with tag (\S+)"
_LOAD = r"\[Torch\] (?:Begin Load|Loading) checkpoint from (\S+?)(?:\.\.\.)?$"
_LOADED = r"\[Torch\] (?:End Load|Loaded) checkpoint from (\S+?)(?:\.\.\.|\.)?$"
# the engine's own load (`_load_checkpoint`): the model-states file of the tag it follows, before the ZeRO shards
_ENGINE_LOAD = r"\] rank: \d+ loading checkpoint: (\S+)"
# The launcher's map of every node's global ranks (launch.py, once a node): the only rank map a run with NCCL_DEBUG
# below INFO prints (`global_rank_mapping=defaultdict(<class 'list'>, {'n-01': [0, 1], 'n-02': [2, 3]})`)
_RANK_MAP = r"global_rank_mapping=defaultdict\(<class 'list'>, \{(.*)\}\)"
_OVERFLOW = r"OVERFLOW! Rank \d+ Skipping step|Overflow detected\. Skipping step"
_MIN_SCALE = r"Current loss scale already at minimum - cannot decrease scale anymore"
_VERSION = r"DeepSpeed info: version=([^,\s]+)"
# The config dump prints `  name <29 - len(name) dots> value`.
_CONFIG_KEYS = {"train_batch_size": "global_batch_size", "train_micro_batch_size_per_gpu": "micro_batch_size",
                "gradient_accumulation_steps": "gradient_accumulation_steps",
                "steps_per_print": "steps_per_print", "world_size": "data_parallel_size"}
_CONFIG = r"\] {2,}(" + "|".join(f"{k} \\.{{{max(29 - len(k), 0)}}}" for k in _CONFIG_KEYS) + r") (\S+)\s*$"

PATTERN = "|".join([
    r"\] step=\d+, skipped=\d+", r"\bsteps: \d+ loss: ", r"\[Torch\] Checkpoint \S+ is (?:about to be saved|ready now)",
    r"Saving model checkpoint: ", r"Failed saving model checkpoint to ",
    r"\[Torch\] (?:Begin Load|Loading|End Load|Loaded) checkpoint from ", _ENGINE_LOAD, _OVERFLOW, _MIN_SCALE,
    r"DeepSpeed info: version=", _RANK_MAP, _CONFIG.removeprefix(r"\] {2,}").removesuffix(r"(\S+)\s*$"),
])

_HEAD = (r"\[logging\.py:\d+:log_dist\]|DeepSpeed info: version=|\[Rank \d+\] step=\d+, skipped=|"
         r"\bsteps: \d+ loss: \S+ iter time \(s\)|\[(?:INFO|WARNING)\] \[(?:engine|config)\.py:\d+:|"
         # a HF Trainer / Accelerate run on DeepSpeed prints little else of DeepSpeed's own
         r"\[deeps(?:peed|cale)\] OVERFLOW! Rank \d+ Skipping step|" + _MIN_SCALE)


def sniff(head: bytes, path: str) -> bool:
    """A DeepSpeed log: its `log_dist` lines, version banner or progress lines."""
    return search(head, _HEAD)


def parse(lines: pl.DataFrame, ctx: Context) -> Parsed:
    """Steps, checkpoints, facts and overflow / NaN events from matched DeepSpeed lines."""
    df = prepare(lines, ctx, ts=_TS).with_columns(
        rank=pl.coalesce(pl.col("rank"), integer(r"\[Rank (\d+)\] ").cast(pl.Int32, strict=False)))
    rows = _step_lines(df)
    ops = _checkpoint_ops(df)
    ckpts = checkpoint_rows(ops, missing_ok=None)
    steps = _steps(segment(rows, ops.filter(pl.col("action") == "load")["line"]), ckpts)
    facts = pl.concat([facts_from(df, [(_VERSION, {"deepspeed_version": 1})]), _config_facts(df)]).sort("line")
    # NOTE: NaN events come from the unmerged rows so that they cite the line that printed the NaN.
    events = pl.concat([loss_events(flag_nonfinite(rows)), _scale_events(df)], how="diagonal_relaxed")
    out = step_result(lines, [rows, ops, facts, events], steps=steps,
                      checkpoints=ckpts, facts=facts, events=events)
    ranks = _rank_map(df)
    if ranks.height:
        out.add("nccl_ranks", ranks)
    return out


def _rank_map(df: pl.DataFrame) -> pl.DataFrame:
    """One row per (node, global rank) of the launcher's `global_rank_mapping` lines (each node prints the same)."""
    hit = df.filter(pl.col("msg").str.contains(_RANK_MAP))
    pairs = hit.select("line", "ts", entry=pl.col("msg").str.extract(_RANK_MAP, 1)
                       .str.extract_all(r"'[^']+': \[[\d, ]*\]")).explode("entry").drop_nulls("entry")
    pairs = pairs.with_columns(
        host=pl.col("entry").str.extract(r"^'([^']+)'", 1),
        rank=pl.col("entry").str.extract(r"\[([\d, ]*)\]", 1).str.extract_all(r"\d+"),
    ).explode("rank").drop_nulls("rank")
    pairs = pairs.with_columns(rank=pl.col("rank").cast(pl.Int32))
    # per file: logs parsed as one batch are each a launch of their own (clusterlab.ingest.groups_text)
    pairs = pairs.with_columns(_f=file_of_line(), nranks=pl.len().over("line").cast(pl.Int32))
    return pairs.unique(["_f", "host", "rank"], keep="first", maintain_order=True).select(
        "line", "ts", "host", pl.lit(None, pl.Int64).alias("pid"), "rank", "nranks",
        pl.lit(None, pl.Int32).alias("cuda_dev"), pl.lit(None, pl.String).alias("bus_id"),
        pl.lit(None, pl.String).alias("comm_id"))


def _step_lines(df: pl.DataFrame) -> pl.DataFrame:
    """`step=` progress lines and pipeline `steps:` lines, one row each (not yet merged)."""
    progress = df.filter(pl.col("msg").str.contains(_PROGRESS)).with_columns(
        step=integer(_PROGRESS), _skipped_total=integer(_PROGRESS, 2), lr=num(_PROGRESS, 3),
        loss=pl.lit(None, pl.Float64), step_s=pl.lit(None, pl.Float64))
    pipe = df.filter(pl.col("msg").str.contains(_PIPE)).with_columns(
        step=integer(_PIPE), _skipped_total=pl.lit(None, pl.Int64), lr=pl.lit(None, pl.Float64),
        loss=num(_PIPE, 2), step_s=num(_PIPE, 3))
    return pl.concat([progress, pipe]).with_columns(grad_norm=pl.lit(None, pl.Float64)).sort("line")


def _steps(rows: pl.DataFrame, saves: pl.DataFrame) -> pl.DataFrame:
    """Merged step rows with interval skips and step times (less the timed `saves` between two rows)."""
    steps = flag_nonfinite(merge_repeats(rows))
    prev = pl.col("_skipped_total").shift(1).over("_seg")
    first = pl.col("_skipped_total") == 0  # NOTE: a first row can only vouch for "none yet"
    skipped = pl.when(prev.is_not_null() & (pl.col("_skipped_total") >= prev)).then(pl.col("_skipped_total") - prev)
    steps = steps.with_columns(skipped=pl.coalesce(skipped, pl.when(first).then(0)).cast(pl.Int32, strict=False))
    return interval_step_s(steps, saves)


def _tag_step(text: pl.Expr) -> pl.Expr:
    """The step a DeepSpeed tag or checkpoint path names (`global_step100`).

    Lightning's DeepSpeedStrategy saves every checkpoint under the fixed tag `checkpoint`, inside the directory its
    ModelCheckpoint names (`epoch=0-step=1000.ckpt` by default): there the path's `step=` is the step."""
    return pl.coalesce(text.str.extract(r"global_step(\d+)", 1),
                       text.str.extract(r"[-_/]step=(\d+)[^/]*/checkpoint\b", 1)).cast(pl.Int64, strict=False)


def _op(pattern: str, action: str, phase: str, path: int | None, tag: int | None, ok: bool | None = None) -> Op:
    """Checkpoint lines matching `pattern` (`path`/`tag`: regex groups), step from the tag or the path."""
    path_text = pl.col("msg").str.extract(pattern, path) if path else pl.lit(None, pl.String)
    tag_text = pl.col("msg").str.extract(pattern, tag) if tag else pl.lit(None, pl.String)
    # the directory of the checkpoint: a file path's folder, as printed
    return op(pattern, action, phase, step=pl.coalesce(_tag_step(tag_text), _tag_step(path_text)),
              path=path_text.str.replace(r"/[^/]+\.pt$", ""), ok=pl.lit(ok, pl.Boolean))


def _checkpoint_ops(df: pl.DataFrame) -> pl.DataFrame:
    """Save and load lines; one save spans `about to be saved` .. `is ready now`."""
    return checkpoint_ops(df, [
        _op(_CREATE, "save", "start", None, 1), _op(_SAVING, "save", "info", 1, None),
        _op(_READY, "save", "finish", None, 1, ok=True), _op(_FAILED, "save", "finish", 1, 2, ok=False),
        _op(_LOAD, "load", "info", 1, None), _op(_LOADED, "load", "finish", 1, None, ok=True),
        _op(_ENGINE_LOAD, "load", "info", 1, None),
    ])


def _config_facts(df: pl.DataFrame) -> pl.DataFrame:
    """Batch sizes and data-parallel size from DeepSpeed's config dump."""
    hit = df.filter(pl.col("msg").str.contains(_CONFIG))
    return hit.select(
        "line", "ts", "host",
        pl.col("msg").str.extract(_CONFIG, 1).str.extract(r"^(\w+)", 1).replace_strict(_CONFIG_KEYS).alias("key"),
        pl.col("msg").str.extract(_CONFIG, 2).alias("value"))


def _scale_events(df: pl.DataFrame) -> pl.DataFrame:
    """fp16 overflows (a skipped step: routine, informational) and a loss scale that hit its floor.

    The scaler's search skips steps from 2**16 (or 2**32) down at the start of a run, and now and then later:
    routine. At its floor (`min_loss_scale`, 1 by default) it either raises `Current loss scale already at
    minimum` or, in ZeRO stage 1/2, goes on skipping every step (`Attempted loss scale: 1, reducing to 1`):
    the run is diverging.
    """
    hit = df.filter(pl.col("msg").str.contains(_OVERFLOW) | pl.col("msg").str.contains(_MIN_SCALE))
    scale = pl.col("msg").str.extract_groups(r"Attempted loss scale: ([\d.]+), (?:reducing to|but) ([\d.]+)?")
    tried = scale.struct.field("1").cast(pl.Float64, strict=False)
    next_scale = scale.struct.field("2").cast(pl.Float64, strict=False)
    # NOTE: not reduced is the floor at a scale of 1 (the default floor), or when it repeats: before 2023 a skip that
    # hysteresis (2 by default) absorbed printed `Attempted loss scale: 65536, reducing to 65536` once, then the next
    # overflow halved it; only a scale pinned at its floor is "reduced" to itself overflow after overflow.
    stuck = (next_scale >= tried).fill_null(False)
    pinned = (stuck & stuck.shift(1) & stuck.shift(2) & (tried == tried.shift(1)) & (tried == tried.shift(2))
              ).over(file_of_line())  # the overflows before, in the same file
    floor = pl.col("msg").str.contains(_MIN_SCALE) | (stuck & (tried <= 1.0)) | pinned.fill_null(False)
    return hit.sort("line").select(
        "line", "ts", "host",
        pl.coalesce("rank", integer(r"OVERFLOW! Rank (\d+)").cast(pl.Int32, strict=False)).alias("rank"),
        pl.when(floor).then(pl.lit("loss_scale_min")).otherwise(pl.lit("grad_overflow")).alias("kind"),
        pl.when(floor).then(pl.lit("loss_divergence")).alias("failure_mode"),
        pl.when(floor).then(pl.lit("error")).otherwise(pl.lit("info")).alias("severity"),
        pl.col("msg").str.strip_chars().alias("text"),
        pl.when(pl.col("msg").str.contains(_OVERFLOW)).then(
            pl.struct(tried.alias("loss_scale"), next_scale.alias("next_scale")).struct.json_encode()).alias("detail"),
    )
