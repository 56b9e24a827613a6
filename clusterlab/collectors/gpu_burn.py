"""gpu-burn's verdict on each GPU it stressed (a burn-in or a health check before a job) → gpu_hw_other events.

gpu-burn (wilicc/gpu-burn) multiplies matrices on every GPU for a while, compares the results and ends with one
line per GPU:

    Tested 8 GPUs:
            GPU 0: OK
            GPU 3: FAULTY

A GPU that computed wrong results under load (`FAULTY`; its progress lines count the errors, `errors: 0 - 2113
(WARNING!)- 0`) is a hardware fault of that GPU whose kind the tool does not say (`gpu_hw_other`); an `OK` GPU
gives nothing. The lines carry no time; the host is the file's.
"""

from __future__ import annotations

import polars as pl

from clusterlab.collectors._base import Context, Parsed, json_detail, search

NAME = "gpu_burn"
EXCLUSIVE = False
SNIFF_HINT = (b": faulty",)

PATTERN = r"^\s*GPU \d+: FAULTY\s*$"


def sniff(head: bytes, path: str) -> bool:
    """A GPU gpu-burn found faulty in the head."""
    return search(head.decode("utf-8", "replace"), "(?m)" + PATTERN)


def parse(lines: pl.DataFrame, ctx: Context) -> Parsed:
    """One event per GPU gpu-burn found faulty."""
    out = Parsed()
    gpu = pl.col("text").str.extract(r"GPU (\d+): FAULTY", 1).cast(pl.Int32, strict=False)
    out.add("events", lines.select(
        pl.col("line").cast(pl.Int64), pl.lit(None, pl.Datetime("us")).alias("ts"),
        pl.lit(ctx.host, pl.String).alias("host"), pl.lit("gpu_burn_faulty").alias("kind"),
        pl.lit("gpu_hw_other").alias("failure_mode"), pl.lit("error").alias("severity"),
        pl.col("text").str.strip_chars().alias("text"), json_detail({"gpu": gpu}).fill_null("{}").alias("detail"),
    ))
    return out
