"""MosaicML Composer / LLM Foundry training logs: the console logger's metric blocks, checkpoint save and load.

Composer's ConsoleLogger prints one undated block per logged batch: a progress header (`[batch=N/M]:`, or
`[epoch=E][batch=n/total]:` where the duration is in epochs, `[token=N/M]:` in tokens) and one `\t Train
<metric>: <value>` line per metric (`time/batch`, `loss/train/total`, `throughput/batches_per_sec`, ...). A block is
a step row: its batch (`time/batch`, else the header's where it counts batches), loss, learning rate, FLOP/s per
device and `step_s`, the reciprocal of SpeedMonitor's windowed `batches_per_sec` (absent until its window has
filled, as after every launch). Blocks print no time: the engine dates them between the stamped lines around them
and its step clock (`clusterlab.ingest.step_clock`) spreads them by their step times.

The stamped lines are Python logging's (`2026-11-16 06:03:07,123: rank0[123][MainThread]: INFO: composer...: msg`,
the format Composer and LLM Foundry set, the node's local time). Composer prints no save start: a save runs right
after its batch ends (Event.BATCH_CHECKPOINT) and ends at `Checkpoint locally saved to .../ep0-baN...` (debug level);
the upload to an object store that follows is asynchronous and never stalls training. The save row sits on the
line of the last block before that line, its duration the stamp minus when batch N ended by the same clock the
engine uses (the stamp before plus the blocks' step times); the stamp itself is kept as a fact (`checkpoint_local`),
so that the blocks after it are dated from it. `Loading checkpoint from P` / `Trainer checkpoint loaded from P` are
a load (the batch from `ba<N>` in P). Fact keys: start_step, checkpoint_local, launch_phase.
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
    loss_events,
    op,
    prepare,
    seconds,
    segment,
    step_result,
)

NAME = "composer"
EXCLUSIVE = False

_TS = r"^(\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2},\d{3}): rank\d+\[\d+\]\[[^\]]*\]: [A-Z]+: "
_HEADER = r"^(?:\[epoch=\d+\])?\[(batch|token|sample)=(\d+)(?:/(\d+))?\]:\s*$"
_METRIC = r"^\t Train (time/batch|loss/train/total|throughput/batches_per_sec|throughput/device/flops_per_sec" \
          r"|lr-[\w.-]+/group0): " + NUM
_SAVED = r"composer\.callbacks\.checkpoint_saver: Checkpoint locally saved to (\S+)"
_LOAD = r"composer\.trainer\.trainer: Loading checkpoint from (\S+)"
_LOADED = r"composer\.utils\.checkpoint: Trainer checkpoint loaded from (\S+)"
_SEARCH = r"composer\.trainer\.trainer: Searching for a previous checkpoint to autoresume"
_START = r": [\w.]+: Starting training\.\.\.\s*$"
_BATCH_OF = r"(?:^|[/_-])ba(\d+)(?:[-_/.]|$)"  # Composer's `ep{epoch}-ba{batch}` checkpoint names

PATTERN = "|".join([
    r"^(?:\[epoch=\d+\])?\[(?:batch|token|sample)=\d+", r"^\t Train (?:time/batch|loss/train/total|throughput/"
    r"batches_per_sec|throughput/device/flops_per_sec|lr-)",
    r"checkpoint_saver: Checkpoint locally saved to ", r"trainer\.trainer: (?:Loading checkpoint from |Searching for "
    r"a previous checkpoint)", r"utils\.checkpoint: Trainer checkpoint loaded from ", r": Starting training\.\.\.",
])

_HEAD = (r"\]: [A-Z]+: (?:composer|llmfoundry)\.|^(?:\[epoch=\d+\])?\[batch=\d+(?:/\d+)?\]:\s*$"
         r"|^\t Train (?:time/batch|loss/train/total): ")


def sniff(head: bytes, path: str) -> bool:
    """A Composer / LLM Foundry log: its logging lines or the console logger's blocks."""
    return search(head, _HEAD)


def parse(lines: pl.DataFrame, ctx: Context) -> Parsed:
    """Steps, checkpoints and facts from matched Composer lines."""
    df = prepare(lines, ctx, ts=_TS)
    f = file_of_line()
    # every block line belongs to the header before it (a block is printed whole, by one print())
    header = pl.when(pl.col("msg").str.contains(_HEADER)).then(pl.col("line"))
    df = df.with_columns(_block=header.forward_fill().over(f))
    restarts = df.filter(pl.col("msg").str.contains(_SEARCH) | pl.col("msg").str.contains(_LOAD))["line"]
    rows = _blocks(df)
    steps = segment(rows, restarts) if rows.height else rows.with_columns(_seg=pl.lit(0, pl.Int64))
    # NOTE: a launch's blocks before SpeedMonitor's window filled say no step time: the clock could only date them
    # at the stamp before, a batch or more early, and the next block's batches would be counted from there. Without
    # them, the first timed block counts its batches from that stamp (the engine's first row: its interval to the next)
    timed_later = pl.col("step_s").is_not_null().reverse().cum_max().reverse().over("_seg")
    steps = steps.filter(pl.col("step_s").is_not_null() | ~timed_later)
    steps = flag_nonfinite(steps)
    saves, marks = _saves(df, steps)
    loads = checkpoint_ops(df, [
        op(_LOAD, "load", "start", path=pl.col("msg").str.extract(_LOAD, 1),
           step=pl.col("msg").str.extract(_LOAD, 1).str.extract(_BATCH_OF, 1).cast(pl.Int64, strict=False)),
        op(_LOADED, "load", "finish", ok=pl.lit(True)),
    ])
    facts = pl.concat([marks, facts_from(df, [(_LOAD, {"start_step": 1})])
                       .with_columns(value=pl.when(pl.col("key") == "start_step")
                                     .then(pl.col("value").str.extract(_BATCH_OF, 1)).otherwise("value"))
                       .filter(pl.col("value").is_not_null())], how="diagonal_relaxed").sort("line", "key")
    started = df.filter(pl.col("msg").str.contains(_START)).select("line", "ts", "host", key=pl.lit("launch_phase"),
                                                                    value=pl.lit("starting training"))
    facts = pl.concat([facts, started], how="diagonal_relaxed").sort("line")
    used = df.filter(pl.col("_block").is_not_null() | pl.col("msg").str.contains(_SEARCH)).select("line")
    return step_result(lines, [used, loads, facts, saves], steps=steps,
                       checkpoints=pl.concat([checkpoint_rows(loads, missing_ok=None), saves],
                                             how="diagonal_relaxed").sort("line"),
                       facts=facts, events=loss_events(steps))


def _blocks(df: pl.DataFrame) -> pl.DataFrame:
    """One step row per console block, at its header's line."""
    metric = pl.col("msg").str.extract(_METRIC, 1)
    value = pl.col("msg").str.extract(_METRIC, 2).str.replace_all(",", "").cast(pl.Float64, strict=False)
    parts = df.filter(pl.col("_block").is_not_null()).with_columns(_m=metric, _v=value)

    def pick(name: str) -> pl.Expr:
        return pl.col("_v").filter(pl.col("_m") == name).first()

    unit = pl.col("msg").str.extract(_HEADER, 1)
    header_step = pl.when(unit == "batch").then(integer(_HEADER, 2))
    # NOTE: under `[epoch=E]` the header counts batches within the epoch: only `time/batch` is the global batch
    in_epoch = pl.col("msg").str.starts_with("[epoch=")
    blocks = parts.group_by("_block", maintain_order=True).agg(
        pl.col("line").first(), pl.col("host").first(), pl.col("rank").first(), pl.col("msg").first(),
        _batch=pick("time/batch"), loss=pick("loss/train/total"), _bps=pick("throughput/batches_per_sec"),
        _flops=pick("throughput/device/flops_per_sec"),
        lr=pl.col("_v").filter(pl.col("_m").str.starts_with("lr-")).first())
    return blocks.with_columns(
        step=pl.coalesce(pl.col("_batch").cast(pl.Int64), pl.when(~in_epoch).then(header_step)),
        step_s=pl.when(pl.col("_bps") > 0).then(1 / pl.col("_bps")),
        tflops=pl.col("_flops") * 1e-12, ts=pl.lit(None, pl.Datetime("us")), grad_norm=pl.lit(None, pl.Float64),
    ).filter(pl.col("step").is_not_null()).drop("_block", "_batch", "_bps", "_flops")


def _saves(df: pl.DataFrame, steps: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Save rows (on the line of the last block before each `Checkpoint locally saved`) and the save-end stamps as
    facts. A save's start is when its batch ended: the stamp before it plus the step times of the blocks since."""
    done = df.filter(pl.col("msg").str.contains(_SAVED)).with_columns(
        path=pl.col("msg").str.extract(_SAVED, 1), _f=file_of_line())
    done = done.with_columns(save_step=pl.col("path").str.extract(_BATCH_OF, 1).cast(pl.Int64, strict=False))
    marks = done.select("line", "ts", "host", key=pl.lit("checkpoint_local"), value="path")
    schema = {"line": pl.Int64, "ts": pl.Datetime("us"), "host": pl.String, "action": pl.String,
              "step": pl.Int64, "path": pl.String, "duration_s": pl.Float64, "ok": pl.Boolean}
    if not done.height or not steps.height:
        return pl.DataFrame(schema=schema), marks
    # the clock: every stamped line re-anchors it, every block since adds step_s x the batches since the one before
    stamps = df.filter(pl.col("ts").is_not_null()).select("line", _anchor="ts", _f=file_of_line()).sort("line")
    # as the engine's step clock counts a row's batches: since the row before in its file, for the first its interval
    # to the next (clusterlab.ingest.step_clock)
    back = pl.col("step") - pl.col("step").shift(1).over(file_of_line())
    ahead = pl.col("step").shift(-1).over(file_of_line()) - pl.col("step")
    n = pl.when(back >= 0).then(back).when(ahead > 0).then(ahead).otherwise(1)
    clock = (steps.sort("line").with_columns(_f=file_of_line(), _adds=pl.col("step_s").fill_null(0.0) * n)
             .join_asof(stamps, on="line", by="_f", strategy="backward", check_sortedness=False)
             .with_columns(_cum=pl.col("_adds").cum_sum().over("_f", "_anchor"))
             .with_columns(_end=pl.col("_anchor") + pl.duration(microseconds=(pl.col("_cum") * 1e6).round()
                                                                 .cast(pl.Int64)))
             .select("line", "_f", "_end", _last_step="step", _last_s="step_s"))
    got = done.sort("line").join_asof(clock.rename({"line": "_row"}), left_on="line", right_on="_row", by="_f",
                                      strategy="backward", check_sortedness=False)
    # batch N ended at the last block's end plus the batches from that block to N (a save interval need not be a
    # multiple of the console interval)
    ahead = (pl.col("save_step") - pl.col("_last_step")).clip(lower_bound=0) * pl.col("_last_s").fill_null(0.0)
    start = pl.col("_end") + pl.duration(microseconds=(ahead * 1e6).round().cast(pl.Int64))
    span = seconds(pl.col("ts") - start)
    rows = got.filter(pl.col("_row").is_not_null()).select(
        line="_row", ts=pl.lit(None, pl.Datetime("us")), host="host", action=pl.lit("save"), step="save_step",
        path="path", duration_s=pl.when(span >= 0).then(span), ok=pl.lit(True))
    return rows.select([pl.col(c).cast(t) for c, t in schema.items()]), marks

