"""A training loop's own evaluation passes: where one starts and where it ends → events of no failure mode.

A trainer that evaluates every N steps does it inside its step clock: the step interval that holds the pass runs
long, and without a word for it the ledger would book the pass as a slowdown of the steps (lost GPU-time) when it
was work the job was asked for. The loops announce it in their own words:

    2026-10-12 14:35:15,311 | INFO | running held-out eval at step 500          (a script's own logger)
    2026-10-12 14:35:48,626 | INFO | eval step 500 | val_loss 1.9502 | ppl 7.03
    [INFO|trainer.py:4117] 2026-12-03 09:19:45,123 >> ***** Running Evaluation *****        (HF Trainer)
    {'eval_loss': 1.93, 'eval_runtime': 78.4, 'eval_samples_per_second': 104.5, 'epoch': 0.42}
    Starting validation ... / validation loss 2.01 ...

A start line (running / starting / beginning an eval, evaluation or validation) is an `eval_start`, a line that
reports an evaluation's loss, perplexity or accuracy (`val_loss`, `eval_loss`, `validation perplexity`) an
`eval_end`; `clusterlab.account.evals` pairs each end with the start before it in its file (after the engine
dated the lines that print no time), or takes the pass's own runtime where the end reports it (`detail`:
`runtime_s`; HF's start line continues a stamped line and has no time of its own). The time is the first
`YYYY-MM-DD HH:MM:SS[.,fff]` a line prints, in the node's local time (`ctx.tz`); a line without one takes its
neighbours' as any other.
"""

from __future__ import annotations

import polars as pl

from clusterlab.collectors._base import Context, Parsed, search
from clusterlab.collectors._steplog import TS_FORMAT, local_time

NAME = "evaluation"
EXCLUSIVE = False
# (a training log's own words; a line a collector of its format reads is read here too, for this only)
START = (
    r"(?i:\b(?:running|starting|start|begin(?:ning)?)\b[ \w-]{0,30}?\b(?:eval(?:uation)?|validation)\b)"
    r"(?:[^\w]|$)"
)
END = r"(?i:\b(?:eval|val(?:idation)?)[_ ](?:loss|ppl|perplexity|acc(?:uracy)?)\b)\W{0,3}\s*[:=]?\s*-?\d"
PATTERN = f"{START}|{END}"
SNIFF_HINT = (b"eval", b"validation", b"val_", b"val ")  # (Keras' `val_loss`, `val loss`: no "eval" in them)
_TS = r"(\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[.,]\d{1,9})?)"
# an end that times its own pass (HF Trainer's metrics: `'eval_runtime': 78.4371`): the span needs no start line
_RUNTIME = r"(?i:\b(?:eval|val(?:idation)?)_runtime)\W{0,3}\s*[:=]\s*(\d+(?:\.\d+)?)"


def sniff(head: bytes, path: str) -> bool:
    """An evaluation's line in the head (a training log is read by its trainer's collector, and so by this one, with
    no evaluation in its head)."""
    return search(head.decode("utf-8", "replace"), PATTERN)


def parse(lines: pl.DataFrame, ctx: Context) -> Parsed:
    """One `eval_start` or `eval_end` event per announcing line."""
    out = Parsed()
    text = pl.col("text")
    raw = text.str.extract(_TS, 1).str.replace("T", " ", literal=True)
    out.add(
        "events",
        lines.select(
            pl.col("line").cast(pl.Int64),
            local_time(raw, TS_FORMAT, ctx).alias("ts"),
            pl.lit(ctx.host, pl.String).alias("host"),
            pl.when(text.str.contains(END)).then(pl.lit("eval_end")).otherwise(pl.lit("eval_start")).alias("kind"),
            pl.lit(None, pl.String).alias("failure_mode"),
            pl.lit("info").alias("severity"),
            text.str.strip_chars().str.slice(0, 400).alias("text"),
            pl.when(text.str.contains(_RUNTIME))
            .then(pl.concat_str([pl.lit('{"runtime_s": '), text.str.extract(_RUNTIME, 1), pl.lit("}")]))
            .alias("detail"),
        ),
    )
    return out
