"""NaN and overflow guards of training loops that print no step line clusterlab reads.

Lightning (`terminate_on_nan`, `detect_nan_parameters`, EarlyStopping's `check_finite`, a progress bar's
`loss=nan`), MMEngine / MMCV (`CheckInvalidLossHook`, train lines whose total loss or grad norm is nan), NeMo's
zeroed non-finite gradients, DeiT / BEiT's MetricLogger (`grad_norm: 0.39 (nan)`), Keras's `- loss: nan`,
TensorFlow's NanTensorHook, autograd anomaly mode, torchtitan's RL loop: each such line is a `loss_divergence`
event, with the iteration where the line names one. Times are the loggers' own, in the node's local time
(`ctx.tz`): Python logging's `2026-11-24 08:10:00,123 - mmdet - INFO - `, MMEngine's year-less
`11/24 08:10:00 - mmengine - INFO - `, NeMo's `[NeMo W 2026-11-24 08:10:00 file:line]`, and the HF-style prefixes.
"""

from __future__ import annotations

import polars as pl

from clusterlab.collectors._base import Context, Parsed, file_of_line, search, year_of, yearless
from clusterlab.collectors._steplog import TS_FORMAT, local_time, prepare, step_result

NAME = "nan_guard"

# (kind, regex, severity); sources as noted
GUARDS: list[tuple[str, str, str]] = [
    # MMEngine / MMCV CheckInvalidLossHook: `runner.logger.info('loss become infinite or NaN!')` in its assert
    ("loss_nan", r"loss become infinite or NaN!", "error"),
    # Lightning: terminate_on_nan / detect_nan_parameters
    ("loss_nan", r"The loss returned in `training_step` is nan or inf", "error"),
    ("param_nonfinite", r"Detected nan and/or inf values in `[^`]+`", "error"),
    # Lightning EarlyStopping(check_finite=True): `Monitored metric train_loss = tensor(nan) is not finite.`
    ("loss_nan", r"Monitored metric \S+ = .*\b(?i:nan|inf)\b.* is not finite\. Previous best value was", "error"),
    # NeMo (ASR / audio models): non-finite gradients zeroed, the step goes on
    ("grad_norm_nonfinite", r"detected inf or nan values in gradients! Setting gradients to zero", "warning"),
    # torch.autograd anomaly detection (Lightning's `detect_anomaly=True`, torchtitan's debug option)
    ("grad_norm_nonfinite", r"Function '\w+' returned nan values in its \d+(?:st|nd|rd|th) output", "error"),
    # torchtitan's RL loop
    ("loss_nan", r"Loss is NaN/Inf; training diverged", "error"),
    # an MMEngine / MMCV train line whose total loss is not finite (`Epoch(train) [1][ 500/2931] ... loss: nan`)
    ("loss_nan", r"\b(?:Epoch|Iter)(?:\(train\))? *\[.*(?:^|[\s,])loss: (?i:nan|inf)(?:[\s,]|$)", "error"),
    # a tqdm bar's postfix (Lightning, NeMo 1.x, kohya): `1199/30000 [1:01:59<24:49:02, reduced_train_loss=nan, ...]`
    # (the key in any case: `Loss=nan]`)
    ("loss_nan", r"\d+/\d+ \[[^\]]*<[^\]]*[\s,]\w*(?i:loss)\w*=(?i:nan|inf)\b", "error"),
    # ... or its description (trlx, RL and GAN loops: `[losses/total_loss: nan | losses/policy_loss: nan]:  16%|█▋  |
    # 1044/6400 [1:16:09<1:07:04, 1.33it/s]`): a loss key, NaN, then the bar's percentage and count
    ("loss_nan", r"\w*loss\w*: (?i:nan|inf)\b.*\d+%\|.*\| *\d+/\d+ \[", "error"),
    # DeiT / BEiT / MAE's MetricLogger prints `name: value (global average)`: a non-finite value or average of the
    # loss or grad norm (`grad_norm: 0.3922 (nan)`); an average stays NaN for the rest of the epoch. timm's train
    # loop prints the same pair capitalised and padded (`Train: 3 [ 200/2502 (  8%)]  Loss:       nan (    nan)`)
    ("loss_nan", r"(?:^|\s)(?:\w+_)?(?:loss|Loss): +(?:(?i:nan|inf) +\(|\S+ +\( *(?i:nan|inf)\))", "error"),
    ("grad_norm_nonfinite", r"(?:^|\s)grad_norm: (?:(?i:nan|inf) \(|\S+ \((?i:nan|inf)\))", "error"),
    # Keras `model.fit`: `612/612 [====] - 52s 85ms/step - loss: nan - accuracy: ...` (Keras 3: any metric first)
    ("loss_nan", r"/(?:step|sample) - (?:.* - )?loss: (?i:nan|inf)\b", "error"),
    # ... Keras 1.x and tf.keras before 2.2 printed the epoch's seconds alone (`12800/12800 [====] - 3s - loss: nan`)
    ("loss_nan", r"\d+/\d+ \[=+\] - \d+s - (?:.* - )?loss: (?i:nan|inf)\b", "error"),
    # ... and its bar while the epoch runs (`1210/4480 [=====>....] - ETA: 9:02 - loss: nan - acc: 0.84`), drawn by
    # Keras or a PyTorch wrapper copying it; a value may run into the next print (`loss: nanEpoch 2/10`)
    ("loss_nan", r"\d+/\d+ \[[=>.]+\] - ETA: \S+ - (?:.* - )?loss: (?:nan|NaN|inf)(?:[^a-z]|$)", "error"),
    # verl's console logger: `step:42 - <key>:<value> - ...` with every value as `{:.3f}` (`critic/vf_loss:nan`); a
    # loss key's value not finite (an RL loop's `actor/pg_loss:0.000` is a value like any other)
    ("loss_nan", r"(?:^|[\s)\]])step:\d+ - (?:.* - )?[\w/.]*(?i:loss)[\w/.]*:-?(?i:nan|inf)(?: - |\s*$)", "error"),
    # wandb's closing `Run summary:` rows (`wandb: train loss nan`, `wandb:   train/loss nan`): a loss key's last
    # logged value, alone on its row
    ("loss_nan", r"(?m:^)wandb: +(?:[\w/.-]+[ /_.])*(?i:loss)\w* +(?i:nan|inf)[ \t\r]*(?m:$)", "error"),
    # a loop's own check raising (`ValueError: loss is nan`, `RuntimeError: Loss became NaN at step 120`): the
    # exception's message states the loss itself is not finite, traceback or not
    ("loss_nan", r"\w(?:Error|Exception): (?:.*\s)?(?i:loss)\b[^.;:]{0,30}?(?:\b(?:is|became|becomes|was) |= ?)"
                 r"(?i:nan|inf)\b", "error"),
    # detectron2's anomaly check (SimpleTrainer): `FloatingPointError: Loss became infinite or NaN at iteration=2137!`
    ("loss_nan", r"Loss became infinite or NaN at iteration=\d+", "error"),
    # Composer's console logger: `[batch=13/4800]:` then one tab-indented line per metric (`\t Train
    # loss/train/total: nan`); the loss's key is a path, its value alone on the line
    ("loss_nan", r"^\s*Train loss/train/[\w/.-]+: (?i:nan|inf)\s*$", "error"),
    # TensorFlow's NanTensorHook; the DeiT / MAE / timm loops' own stop
    ("loss_nan", r"Model diverged with loss = NaN|\bLoss is (?i:nan|inf), stopping training", "error"),
    # a TensorFlow Estimator's LoggingTensorHook: `INFO:tensorflow:loss = nan, step = 1200 (2.310 sec)`
    ("loss_nan", r"\bloss = (?i:nan|inf), step = \d+", "error"),
    # fairseq's fp16 optimizer at its floor (`FloatingPointError: Minimum loss scale reached (0.0001). Your loss is
    # probably exploding. ...`)
    ("loss_scale_min", r"Minimum loss scale reached \([\d.e-]+\)", "error"),
    # apex amp's dynamic scaler (`Gradient overflow.  Skipping step, loss scaler 0 reducing loss scale to 0.5`): it
    # starts at 2**16 and halves on each overflow, so a scale down to 1 or below (`0.00390625`, `8.1e-202`) is a run of
    # overflowing steps, gradients inf or nan at every scale; an overflow at a high scale is the scaler's routine
    ("loss_scale_min", r"Gradient overflow\. +Skipping step, loss scaler \d+ reducing loss scale to "
                       r"(?:0(?:\.\d+)?|1(?:\.0+)?|\d+(?:\.\d+)?e-\d+)\s*$", "error"),
    # a hand-written loop's line that starts with its bare step, then ` | `-separated fields (`130 | loss nan | lr
    # 3.0e-04 | 13689.57ms`)
    ("loss_nan", r"^\s*\d+ *\| *(?:[^|]*\| *)*?(?i:train_|training |avg_|mean_)?(?i:loss)[ :=]+(?i:nan|inf)\b",
     "error"),
    # a hand-written loop's progress line (nanoGPT's `iter 3010: loss nan, time ...`, `Epoch: [21][1391/1930] Loss
    # nan (10.95)`, `step: 100 total_loss: nan`, DLLogger's `Training Iteration: 1885  average_loss : nan  step_loss :
    # nan`): a counter, then the (total / train / step / average) loss, not a part of it (`loss_cls: nan` beside a
    # finite `loss:` is one term's); the whole may be named after the word too (`train iter: 100 loss_net: nan`), or
    # bracketed as a field's label (LION's loguru `| E6 iter[ 14/ 15] | [Loss] nan |`)
    ("loss_nan", r"(?i:\b(?:iter(?:ation)?|step|epoch|batch)\b).*?(?:^|[\s,|(\[\]])"
                 r"(?i:total_|train_|training |step_|average_|avg_|mean_)?"
                 r"(?i:loss)(?i:_(?:net|total|all|sum|avg|mean))?\]?(?: ?[:=] ?| )(?i:nan|inf)\b", "error"),
    # an epoch's summary of its mean training loss (`Mean Training loss : nan`, `Average Loss nan`): a counter-less
    # line, the mean stays NaN once one step's loss was
    ("loss_nan", r"\b(?:[Mm]ean|[Aa]verage|[Aa]vg) (?:[Tt]rain(?:ing)? |[Ee]poch )?[Ll]oss ?[:=]? ?(?i:nan|inf)\b",
     "error"),
]
_GUARDS = "|".join(rx for _, rx, _ in GUARDS)
# An MMEngine / MMCV train line whose grad norm is not finite (`... loss: 2.51  grad_norm: nan`): the loss prints
# finite, the update was not. NOTE: only after a finite grad norm: fp16's dynamic scaler searches down from 2**16
# at the start of a run, and its first intervals print NaN grad norms (routine); a NaN once training has settled is
# the loss's first sign of diverging. The finite lines are read for that, and make no row.
_MM_GRAD = r"\b(?:Epoch|Iter)(?:\(train\))? *\[.*(?:^|[\s,])grad_norm: "
_MM_GRAD_NAN = _MM_GRAD + r"(?i:nan|inf)(?:[\s,]|$)"
_MM_GRAD_OK = _MM_GRAD + r"\d"
# ... or is astronomically large (`loss: 59307.87, grad_norm: 3801898445783.27`): past anything a healthy model's
# gradients reach, clipped or not (they sit in the ones to thousands); the loss has left the model's range.
GRAD_EXPLODED = 1e6
PATTERN = _GUARDS + "|" + _MM_GRAD
# the head of such a log: its guards, or a train line of a loop that prints its loss
# (a NaN comes later in a long log): MMEngine / MMCV, MetricLogger, Keras and tqdm-with-loss progress lines
_HEAD = PATTERN + (r"| - mm\w+ - INFO - (?:Epoch|Iter)(?:\(train\))? *\[|Epoch: \[\d+\] +\[ *\d+/\d+\] +eta: "
                   r"|\d+/\d+ (?:\[[=>.]+\]|━+) .*/(?:step|sample) - |\d+/\d+ \[[^\]]*<[^\]]*[\s,]\w*(?i:loss)\w*="
                   r"|\biter \d+: loss [\d.]+, time [\d.]+ ?ms|\bloss = [\d.]+, step = \d+"
                   r"|Gradient overflow\. +Skipping step, loss scaler \d+ reducing loss scale to "
                   r"|\[batch=\d+/\d+\]:|Train loss/train/|\w*loss\w*: [\d.e+-]+\b.*\d+%\|.*\| *\d+/\d+ \["
                   r"|^\s*\d+ *\| *(?:[^|]*\| *)*?(?i:loss)[ :=]+[\d.]+ *\||\bstep \d+: train loss [\d.]+, val loss ")
_BAR_PLACEHOLDER = r"\d+/\d+ \[[^\]]*<[^\]]*[\s,]loss=(?i:nan)\b"
_BAR_TRAIN_FINITE = r"[\s,]\w*train\w*loss\w*=-?\d"
_BAR_OTHER_NONFINITE = r"[\s,](?:\w+loss\w*|loss\w+)=(?i:nan|inf)\b"
_GUARD_STEP = r"\bIter(?:\(train\))? *\[ *(\d+)/"  # MMEngine / MMCV by iteration: the global step
# NOTE: Rust's fast regex engine (a lazy DFA) gives up on a Unicode word boundary (`\b`) at the first non-ASCII
# character: on a head holding one (a curly quote, a progress bar, a cut-off character) `_HEAD` costs 50 ms and
# more. Without its `\b`s it matches wherever `_HEAD` does (and a little more) at DFA speed, under a millisecond:
# asked first, it rules out nearly every head; `_HEAD` itself decides the rest.
_HEAD_LOOSE = _HEAD.replace(r"\b", "")
# Every `_HEAD` match holds one of these (ASCII case aside): "loss" in any case but for `(?i:loss)`, where a long s
# (U+017F) is an `s` too. A head without one is no such log, and its sniff is skipped.
SNIFF_HINT = (b"loss", "lo\u017f".encode(), "los\u017f".encode(), b"nan", b"grad_norm", b"monitored metric",
              b" - info - ", b"epoch: [", b"/step - ", b"/sample - ")


def _events(df: pl.DataFrame) -> pl.DataFrame:
    """Loss-divergence events for the lines of `df` (`prepare`d) that match one of `GUARDS`, `_MM_GRAD_NAN` after a
    finite grad norm, or an MMEngine / MMCV grad norm of `GRAD_EXPLODED` or more."""
    # NOTE: a finite grad norm earlier in the same file (many small logs may be parsed as one batch)
    settled = pl.col("msg").str.contains(_MM_GRAD_OK).cum_sum().shift(1, fill_value=0).over(file_of_line()) > 0
    mm_nan = pl.col("msg").str.contains(_MM_GRAD_NAN) & settled
    norm = pl.col("msg").str.extract(_MM_GRAD + r"(\d[\d.]*(?:[eE][-+]?\d+)?)", 1).cast(pl.Float64, strict=False)
    huge = (norm >= GRAD_EXPLODED).fill_null(False)
    # NOTE: a bar's bare `loss=nan` beside a finite train loss and no other non-finite loss is Lightning's running
    # mean of what `training_step` returned, a placeholder where the module logs its own loss (NeMo's
    # `loss=nan, ..., reduced_train_loss=3.870`): the run's loss is the one it logs
    placeholder = (pl.col("msg").str.contains(_BAR_PLACEHOLDER) & pl.col("msg").str.contains(_BAR_TRAIN_FINITE)
                   & ~pl.col("msg").str.contains(_BAR_OTHER_NONFINITE))
    hit = df.sort("line").filter((pl.col("msg").str.contains(_GUARDS) & ~placeholder) | mm_nan | huge)
    kind = (pl.when(pl.col("msg").str.contains(_MM_GRAD_NAN)).then(pl.lit("grad_norm_nonfinite"))
            .when(huge).then(pl.lit("grad_norm_exploded")))
    severity = (pl.when(pl.col("msg").str.contains(_MM_GRAD_NAN)).then(pl.lit("warning"))
                .when(huge).then(pl.lit("error")))
    for k, rx, sev in reversed(GUARDS):
        match = pl.col("msg").str.contains(rx)
        kind = pl.when(match).then(pl.lit(k)).otherwise(kind)
        severity = pl.when(match).then(pl.lit(sev)).otherwise(severity)
    step = pl.col("msg").str.extract(_GUARD_STEP, 1).cast(pl.Int64, strict=False)
    return hit.select(
        "line", "ts", "host", "rank", kind.alias("kind"), pl.lit("loss_divergence").alias("failure_mode"),
        severity.alias("severity"), pl.col("msg").str.strip_chars().alias("text"),
        pl.when(step.is_not_null()).then(pl.struct(step.alias("step")).struct.json_encode()).alias("detail"),
    )


_TS_EXPLICIT = r"\[[A-Z]+\|[\w.]+:\d+\] (\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2},\d{3}) >> "
_TS_EXAMPLES = r"^(\d{2}/\d{2}/\d{4} \d{2}:\d{2}:\d{2}) - [A-Z]+ - "
_TS_LOGGING = r"^(\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2},\d{3}) - [\w.]+ - [A-Z]+ - "
_TS_MMENGINE = r"^(\d{2}/\d{2} \d{2}:\d{2}:\d{2}) - [\w.]+ - [A-Z]+ - "
_TS_NEMO = r"^\[NeMo [DIWEC] (\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}) "  # NeMo's logger: `[NeMo W <time> file:line]`


FILE_YEAR_COLUMNS = True  # parsed with other files, the lines carry their file's year context (`_base.yearless`)


def GROUP_CONTEXT(ctx: Context) -> tuple:  # noqa: N802  (a collector's contract names are capitals)
    """What parse() reads of the context: logs agreeing on it may be parsed together (clusterlab.ingest.groups_text)."""
    return (ctx.tz, ctx.known_hosts)  # (a file's year comes with its lines: FILE_YEAR_COLUMNS)


def sniff(head: bytes, path: str) -> bool:
    """A guard's line, or a train line of a loop it reads (its NaN may come long after the head)."""
    text = head.decode("utf-8", "replace")
    return search(text, _HEAD_LOOSE) and search(text, _HEAD)


def parse(lines: pl.DataFrame, ctx: Context) -> Parsed:
    """Loss-divergence events from the guard lines of one batch."""
    mmengine = pl.concat_str([year_of(ctx), pl.lit("/"), pl.col("msg").str.extract(_TS_MMENGINE, 1)])
    df = prepare(lines, ctx).with_columns(
        ts=pl.coalesce(local_time(pl.col("msg").str.extract(_TS_EXPLICIT, 1), TS_FORMAT, ctx),
                       local_time(pl.col("msg").str.extract(_TS_EXAMPLES, 1), "%m/%d/%Y %H:%M:%S", ctx),
                       local_time(pl.col("msg").str.extract(_TS_LOGGING, 1), TS_FORMAT, ctx),
                       yearless(local_time(mmengine, "%Y/%m/%d %H:%M:%S", ctx), ctx),
                       local_time(pl.col("msg").str.extract(_TS_NEMO, 1), "%Y-%m-%d %H:%M:%S", ctx)))
    events = _events(df)
    return step_result(lines, [events, df.filter(pl.col("msg").str.contains(_MM_GRAD_OK))], events=events)
