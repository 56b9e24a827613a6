"""HuggingFace Trainer logs: the printed log dicts, checkpoint save/load, the run banner.

`{'loss': 1.2345, 'grad_norm': 0.5, 'learning_rate': 4.9e-05, 'epoch': 0.01}` (since 2025 the
values print as strings, `'loss': '1.234'`). A dict line has neither step nor time: its row keeps
`step` null and takes its time from the nearest line that has one (the engine). The final
`{'train_runtime': ..., ...}` dict becomes facts. `Saving model checkpoint to out/checkpoint-500`
gives step 500; the Trainer prints no line when a save completes, so `ok` stays unknown. Times of
`transformers` log lines (`[INFO|trainer.py:2314] 2026-11-24 08:10:00,123 >> ...` or the example
scripts' `11/24/2026 08:10:00 - INFO - ...`) are the node's local time (`ctx.tz`). Fact keys:
num_examples, num_epochs, micro_batch_size, global_batch_size, gradient_accumulation_steps,
train_iters, params_trainable, start_step, train_runtime_s, train_samples_per_second,
train_steps_per_second, train_loss.
"""

from __future__ import annotations

import polars as pl

from clusterlab.collectors._base import Context, Parsed, search
from clusterlab.collectors._steplog import (
    NUM,
    TS_FORMAT,
    checkpoint_ops,
    checkpoint_rows,
    facts_from,
    flag_nonfinite,
    local_time,
    loss_events,
    num,
    prepare,
    step_result,
)

NAME = "hf_trainer"
EXCLUSIVE = False

_LOSS_DICT = r"\{'loss': "
_END_DICT = r"\{'train_runtime': "
_SAVE = r"Saving model checkpoint to (\S+)"
_LOAD = r"Loading model from (\S*checkpoint-\d+)/?\.?\s*$"
_RESUME = r"Continuing training from global step (\d+)"
_BANNER = {
    "num_examples": r"  Num examples = ([\d,]+)", "num_epochs": r"  Num Epochs = ([\d,]+)",
    "micro_batch_size": r"  Instantaneous batch size per device = ([\d,]+)",
    "global_batch_size": r"  Total train batch size \(w\. parallel, distributed & accumulation\) = ([\d,]+)",
    "gradient_accumulation_steps": r"  Gradient Accumulation steps = ([\d,]+)",
    "train_iters": r"  Total optimization steps = ([\d,]+)",
    "params_trainable": r"  Number of trainable parameters = ([\d,]+)",
}
_END = {"train_runtime_s": "train_runtime", "train_samples_per_second": "train_samples_per_second",
        "train_steps_per_second": "train_steps_per_second", "train_loss": "train_loss"}
_TS_EXPLICIT = r"\[[A-Z]+\|[\w.]+:\d+\] (\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2},\d{3}) >> "
_TS_EXAMPLES = r"^(\d{2}/\d{2}/\d{4} \d{2}:\d{2}:\d{2}) - [A-Z]+ - "

PATTERN = "|".join([
    _LOSS_DICT, _END_DICT, r"Saving model checkpoint to ", r"Loading model from \S*checkpoint-\d",
    r"Continuing training from global step \d",
    r"  (?:Num examples|Num Epochs|Instantaneous batch size per device|Total train batch size \(w\. parallel[^)]*\)"
    r"|Gradient Accumulation steps|Total optimization steps|Number of trainable parameters) = \d",
])

_HEAD = (r"\{'loss': '?[-\d.naif]|\*\*\*\*\* Running training \*\*\*\*\*|"
         r"Saving model checkpoint to \S*checkpoint-\d")


def sniff(head: bytes, path: str) -> bool:
    """A HuggingFace Trainer log: its loss dicts, training banner or checkpoint lines."""
    return search(head, _HEAD)


def _value(key: str) -> str:
    """A regex for one value of a printed log dict, number or quoted number."""
    return f"'{key}': '?" + NUM + "'?[,}]"


def parse(lines: pl.DataFrame, ctx: Context) -> Parsed:
    """Steps, checkpoints, facts and NaN events from matched Trainer lines."""
    df = prepare(lines, ctx).with_columns(
        ts=pl.coalesce(local_time(pl.col("msg").str.extract(_TS_EXPLICIT, 1), TS_FORMAT, ctx),
                       local_time(pl.col("msg").str.extract(_TS_EXAMPLES, 1), "%m/%d/%Y %H:%M:%S", ctx)))
    rows = df.filter(pl.col("msg").str.contains(_LOSS_DICT)).with_columns(
        step=pl.lit(None, pl.Int64), loss=num(_value("loss")), grad_norm=num(_value("grad_norm")),
        lr=num(_value("learning_rate")))
    # NOTE: a dict cut short (a dying process's last write) is not trusted: it must close.
    steps = flag_nonfinite(rows.filter(pl.col("loss").is_not_null() & pl.col("msg").str.contains(r"\}\s*$")))
    ops = _checkpoint_ops(df)
    facts = _facts(df)
    return step_result(lines, [steps, ops, facts], steps=steps, checkpoints=checkpoint_rows(ops, missing_ok=None),
                       facts=facts, events=loss_events(steps))


def _checkpoint_ops(df: pl.DataFrame) -> pl.DataFrame:
    """`Saving model checkpoint to` and `Loading model from` lines (step from `checkpoint-N`)."""
    parts = []
    for pattern, action in ((_SAVE, "save"), (_LOAD, "load")):
        path = pl.col("msg").str.extract(pattern, 1)
        parts.append(checkpoint_ops(
            df, pattern, action, "start", path=path.str.strip_suffix("."),
            step=path.str.extract(r"checkpoint-(\d+)", 1).cast(pl.Int64, strict=False)))
    return pl.concat(parts).sort("line")


def _facts(df: pl.DataFrame) -> pl.DataFrame:
    """The `***** Running training *****` banner, a resume's step and the final train metrics."""
    banner = [facts_from(df, rx, {k: 1}) for k, rx in _BANNER.items()]
    end = df.filter(pl.col("msg").str.contains(_END_DICT))
    ending = [facts_from(end, _value(v), {k: 1}) for k, v in _END.items()]
    return pl.concat([*banner, facts_from(df, _RESUME, {"start_step": 1}), *ending]).sort("line", "key")
