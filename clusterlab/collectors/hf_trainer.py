"""HuggingFace Trainer logs: the printed log dicts, checkpoint save/load, the run banner.

`{'loss': 1.2345, 'grad_norm': 0.5, 'learning_rate': 4.9e-05, 'epoch': 0.01}` (since 2025 the
values print as strings, `'loss': '1.234'`). A dict line has neither step nor time. tqdm's progress bar has
both (`100/5625 [01:02<57:01,  1.61it/s]`: the step, and the time since the bar began, which is the last
stamped line before its first state), its updates joined by carriage returns on one physical line: the
line's last state is a step record dated by the bar, and a dict takes the bar's step on its line or before
it; without a bar, its epoch times the steps per epoch of the banner, rounded to `logging_steps`, and its
time from the nearest stamped line (the engine). The final `{'train_runtime': ..., ...}` dict becomes
facts. `Saving model checkpoint to out/checkpoint-500` gives step 500 and starts the save; the files it
writes into that folder (`Model weights saved in out/checkpoint-500/model.safetensors`) end it. Times of
`transformers` log lines (`[INFO|trainer.py:2314] 2026-11-24 08:10:00,123 >> ...` or the example
scripts' `11/24/2026 08:10:00 - INFO - ...`) are the node's local time (`ctx.tz`). Fact keys:
num_examples, num_epochs, micro_batch_size, global_batch_size, gradient_accumulation_steps,
train_iters, params_trainable, start_step, train_runtime_s, train_samples_per_second,
train_steps_per_second, train_loss.
"""

from __future__ import annotations

import polars as pl

from clusterlab.collectors._base import Context, Parsed, file_of_line, search
from clusterlab.collectors._steplog import (
    GROUP_CONTEXT,  # noqa: F401  (the collector contract: what parse() reads of the context)
    NUM,
    TS_FORMAT,
    checkpoint_ops,
    checkpoint_rows,
    facts_from,
    flag_nonfinite,
    local_time,
    loss_events,
    num,
    op,
    prepare,
    step_result,
)

NAME = "hf_trainer"
EXCLUSIVE = False

_LOSS_DICT = r"\{'loss': "
_END_DICT = r"\{'train_runtime': "
_SAVE = r"Saving model checkpoint to (\S+)"
# what a save writes into its checkpoint folder, each file as it is written (the last one ends the save); under
# FSDP, accelerate writes the optimizer state after the model ("Optimizer state saved in .../optimizer_0"), often
# most of the save's time
_SAVED_FILE = (r"(?:Model weights|Configuration|Model config \w+|tokenizer config file|Special tokens file"
               r"|chat template|Optimizer state) saved in ")
_SAVED = _SAVED_FILE + r"(\S*checkpoint-\d+)/"
# NOTE: the final `trainer.save_model()` writes into the output folder, no `checkpoint-N`: its files end the save that
# `Saving model checkpoint to <that folder>` began (the job's last work before it exits), not a save of their own
_SAVED_OUT = _SAVED_FILE + r"(\S+)/[^/\s]+\s*$"
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
# (behind torchrun --tee's `[default0]:` / PyTorch's `[rank0]:` prefixes, as a multi-node console prints it)
_TS_EXAMPLES = r"^(?:\[\w+\]:)*(\d{2}/\d{2}/\d{4} \d{2}:\d{2}:\d{2}) - [A-Z]+ - "

# tqdm's progress bar, as the Trainer draws it on stderr: `100/5625 [01:02<57:01,  1.61it/s]`, step and the time
# since the bar began (`h:mm:ss` past an hour). Its updates are joined by carriage returns on one physical line:
# the line's last state is the newest.
_BAR = r"(\d+)/(\d+) \[(?:(\d+):)?(\d+):(\d\d)<"
_BAR_LAST = r"(?s:.*\D)?" + _BAR  # greedy: the last bar state on the line, its step whole
_ARGS_LOGGING = r"logging_steps=(\d+)"

PATTERN = "|".join([
    _LOSS_DICT, _END_DICT, r"\d/\d+ \[\d+:\d\d", _ARGS_LOGGING,
    r"Saving model checkpoint to ", r"Loading model from \S*checkpoint-\d", _SAVED_FILE + r"\S+/",
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
    df = _bar_clock(df)
    dicts = pl.col("msg").str.contains(_LOSS_DICT)
    # a loss dict has no step: the bar's step on its line, else the bar's last step before it, else its epoch
    # times the steps per epoch (the banner), rounded to the logging interval (the printed arguments)
    rows = df.filter(dicts | (pl.col("bar_step").is_not_null() & pl.col("ts").is_null())).with_columns(
        step=pl.coalesce("bar_step", pl.when(dicts).then(pl.coalesce("last_bar_step", "epoch_step"))),
        loss=num(_value("loss")), grad_norm=num(_value("grad_norm")), lr=num(_value("learning_rate")),
        ts=pl.when(pl.col("bar_step").is_not_null()).then("bar_ts").otherwise("ts"))
    # NOTE: a dict cut short (a dying process's last write) is not trusted: it must close.
    closed = pl.col("loss").is_not_null() & pl.col("msg").str.contains(r"\}\s*$")
    steps = flag_nonfinite(rows.filter(closed | (~dicts & pl.col("ts").is_not_null())))
    ops = _checkpoint_ops(df)
    facts = _facts(df)
    # NOTE: a file the Trainer writes outside any save (the tokenizer's files at start-up) is understood, not unread
    outside = df.filter(pl.col("msg").str.contains(_SAVED_FILE)).select("line")
    return step_result(lines, [steps, ops, facts, outside], steps=steps,
                       checkpoints=checkpoint_rows(ops, missing_ok=None),
                       facts=facts, events=loss_events(steps))


def _bar_clock(df: pl.DataFrame) -> pl.DataFrame:
    """`bar_step`, `bar_ts`: the step of the line's last progress-bar state and when it was drawn (the bar's start,
    the last stamped line before its first state, plus the elapsed time it shows); `last_bar_step`, the newest
    bar step at or before the line; `epoch_step`, a loss dict's step from its epoch where the banner gives the
    steps per epoch. The bar's clock is whole seconds: a record's end is known to a second, as stamped lines'."""
    bar = pl.col("msg").str.extract_groups(_BAR_LAST)
    h, m, sec = (bar.struct.field(str(i)).cast(pl.Int64, strict=False) for i in (3, 4, 5))
    f = file_of_line()  # NOTE: every relation below is within one file (files parsed together)
    # NOTE: the training bar counts to the banner's optimization steps; another bar on the console (the evaluation
    # loop's `16/16 [01:18<00:00]`, a dataset map) is no step record and no restart of the training bar's clock
    steps_total = _banner_number("train_iters")
    steps_total = pl.coalesce(steps_total.forward_fill().over(f), steps_total.drop_nulls().first().over(f))
    train_bar = steps_total.is_null() | (bar.struct.field("2").cast(pl.Float64, strict=False) == steps_total)
    df = df.with_columns(bar_step=pl.when(train_bar).then(bar.struct.field("1").cast(pl.Int64, strict=False)),
                         _elapsed=pl.when(train_bar).then(h.fill_null(0) * 3600 + m * 60 + sec))
    # a new bar where the elapsed time goes back (a relaunch draws its own); it began at the last stamped line
    new_bar = (pl.col("_elapsed") < pl.col("_elapsed").forward_fill().shift(1).over(f)).fill_null(True)
    df = df.with_columns(_new=new_bar, _prev_ts=pl.col("ts").forward_fill().shift(1).over(f).fill_null(pl.col("ts")))
    df = df.with_columns(_bar=pl.when(pl.col("_elapsed").is_not_null()).then(pl.col("_new")).cum_sum().forward_fill()
                         .over(f))
    start = pl.when(pl.col("_elapsed").is_not_null()).then(pl.col("_prev_ts")).first().over(f, "_bar")
    # NOTE: a step ends when the bar first shows it: the same count drawn again (tqdm's close after the final save,
    # a refresh) is no step record, and dated by it the last step would hold the save
    again = (pl.col("bar_step") == pl.col("bar_step").forward_fill().shift(1).over(f, "_bar")).fill_null(False)
    df = df.with_columns(bar_ts=start + pl.duration(seconds=pl.col("_elapsed")),
                         bar_step=pl.when(~again).then(pl.col("bar_step")))
    # the steps per epoch: the file's last banner's; the logging interval: the file's first printed one
    total = _banner_number("train_iters").drop_nulls().last().over(f)
    epochs = _banner_number("num_epochs").drop_nulls().last().over(f)
    every = pl.col("msg").str.extract(_ARGS_LOGGING, 1).cast(pl.Float64).drop_nulls().first().over(f)
    per_epoch = pl.when(epochs != 0).then(total / epochs)
    est = pl.when(per_epoch != 0).then(num(_value("epoch")) * per_epoch)
    # NOTE: times the reciprocal, as polars divides a column by a number (see `_steplog.seconds`)
    est = pl.when(every != 0).then((est * (1 / every)).round() * every).otherwise(est)
    launch = pl.col("msg").str.contains(_BANNER["num_examples"]).cum_sum()  # each launch prints its banner
    return df.with_columns(last_bar_step=pl.col("bar_step").forward_fill().over(f, launch),
                           epoch_step=est.round().cast(pl.Int64, strict=False)
                           ).drop("_elapsed", "_new", "_prev_ts", "_bar")


def _banner_number(key: str) -> pl.Expr:
    """The number a banner line prints (null on other lines)."""
    return pl.col("msg").str.extract(_BANNER[key], 1).str.replace_all(",", "").cast(pl.Float64)


def _checkpoint_ops(df: pl.DataFrame) -> pl.DataFrame:
    """`Saving model checkpoint to` and `Loading model from` lines (step from `checkpoint-N`), and the files the
    save wrote into that checkpoint (`Model weights saved in .../checkpoint-N/model.safetensors`): the last one
    ends it, which gives the save its duration."""
    ops = []
    for pattern, action, phase in ((_SAVE, "save", "start"), (_LOAD, "load", "start"), (_SAVED, "save", "finish")):
        path = pl.col("msg").str.extract(pattern, 1)
        # NOTE: a file written into the checkpoint ends the save as far as the log shows, but does not say the save
        # completed (the Trainer writes its trainer_state.json last, silently): `ok` stays unknown
        ops.append(op(pattern, action, phase, path=path.str.strip_suffix("."),
                      step=path.str.extract(r"checkpoint-(\d+)", 1).cast(pl.Int64, strict=False)))
    out_dir = pl.col("msg").str.extract(_SAVED_OUT, 1)
    began = pl.col("msg").str.extract(_SAVE, 1).str.strip_suffix(".").str.strip_suffix("/").forward_fill() \
        .over(file_of_line())
    ops.append(op(_SAVED_OUT, "save", "finish", where=~out_dir.str.contains(r"checkpoint-\d+$") & (out_dir == began),
                  path=out_dir))
    return checkpoint_ops(df, ops)


def _facts(df: pl.DataFrame) -> pl.DataFrame:
    """The `***** Running training *****` banner, a resume's step and the final train metrics."""
    end = pl.col("msg").str.contains(_END_DICT)
    return facts_from(df, [*((rx, {k: 1}) for k, rx in _BANNER.items()), (_RESUME, {"start_step": 1}),
                           *((_value(v), {k: 1}, end) for k, v in _END.items())]).sort("line", "key")
