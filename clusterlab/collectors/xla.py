"""XLA's runtime (JAX, and TensorFlow / PyTorch-XLA on the same allocator): the device out of memory → cuda_oom.

    jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: Out of memory while trying to allocate 7406166528 bytes.
    jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: Out of memory allocating 20029400304 bytes.
    2019-06-13 01:17:08.886805: E external/.../local_client.cc:672] Execution of replica 0 failed: Resource exhausted:
        Out of memory while trying to allocate 5520758552 bytes.

followed, from jaxlib 0.4, by a `BufferAssignment OOM Debugging.` block. The allocator is the accelerator's (a GPU's
HBM under the BFC allocator, a TPU's): a job too big for it, as torch's `CUDA out of memory`. TensorFlow-style
log lines carry the node's local time (`ctx.tz`); the error line itself none.
"""

from __future__ import annotations

import polars as pl

from clusterlab.collectors._base import Context, Parsed, json_detail, local_to_utc, search

NAME = "xla"
EXCLUSIVE = False

PATTERN = r"(?i:RESOURCE_EXHAUSTED|Resource exhausted): Out of memory (?:while trying to allocate|allocating) \d+ bytes"
SNIFF_HINT = (b"resource_exhausted: out of memory", b"resource exhausted: out of memory")

_BYTES = r"Out of memory (?:while trying to allocate|allocating) (\d+) bytes"
_TF_TS = r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+): [IWEF] "


def sniff(head: bytes, path: str) -> bool:
    """XLA's out-of-memory error in the head."""
    return search(head.decode("utf-8", "replace"), PATTERN)


def parse(lines: pl.DataFrame, ctx: Context) -> Parsed:
    """One cuda_oom event per out-of-memory line, with the size it failed to allocate."""
    out = Parsed()
    text = pl.col("text")
    tried = text.str.extract(_BYTES, 1).cast(pl.Float64, strict=False) / 2**30
    stamp = text.str.extract(_TF_TS, 1).str.to_datetime("%Y-%m-%d %H:%M:%S%.f", time_unit="us", strict=False)
    out.add("events", lines.select(
        pl.col("line").cast(pl.Int64), local_to_utc(stamp, ctx.tz).alias("ts"),
        pl.lit(ctx.host, pl.String).alias("host"), pl.lit("xla_oom").alias("kind"),
        pl.lit("cuda_oom").alias("failure_mode"), pl.lit("error").alias("severity"),
        text.str.strip_chars().alias("text"), json_detail({"tried_gib": tried.round(3)}).alias("detail"),
    ))
    return out
