"""XLA's runtime (JAX, and TensorFlow / PyTorch-XLA on the same allocator): the device out of memory → cuda_oom;
a collective's NCCL call failing → the mode NCCL's result names.

    jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: Out of memory while trying to allocate 7406166528 bytes.
    jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: Out of memory allocating 20029400304 bytes.
    2019-06-13 01:17:08.886805: E external/.../local_client.cc:672] Execution of replica 0 failed: Resource exhausted:
        Out of memory while trying to allocate 5520758552 bytes.

followed, from jaxlib 0.4, by a `BufferAssignment OOM Debugging.` block. The allocator is the accelerator's (a GPU's
HBM under the BFC allocator, a TPU's): a job too big for it, as torch's `CUDA out of memory`. TensorFlow-style
log lines carry the node's local time (`ctx.tz`); the error line itself none.

XLA's GPU collectives call NCCL themselves and word its failure in one way, raised or only logged:

    2026-03-14 08:20:11.257981: W external/xla/xla/service/gpu/runtime/support.cc:58] Intercepted XLA runtime error:
    INTERNAL: external/xla/xla/service/gpu/nccl_utils.cc:275: NCCL operation ncclCommInitRank(&comm, nranks, id,
        rank) failed: unhandled cuda error
    ... Execution of replica 5 failed: INTERNAL: ... NCCL operation ncclAllReduce(...) failed: unhandled system error

the NCCL result string names the mode as NCCL's own return codes do: a CUDA error, a system or remote error (the
network: sockets, a peer that went away), invalid usage (the program), an internal error (no cause named).
"""

from __future__ import annotations

import polars as pl

from clusterlab.collectors._base import Context, Parsed, json_detail, local_to_utc, search

NAME = "xla"
EXCLUSIVE = False

_OOM = r"(?i:RESOURCE_EXHAUSTED|Resource exhausted): Out of memory (?:while trying to allocate|allocating) \d+ bytes"
# NCCL's result strings (ncclGetErrorString) as XLA quotes them after the failed call
_NCCL_RESULT = {"unhandled cuda error": "cuda_error", "unhandled system error": "network",
                "remote process exited or there was a network error": "network",
                "invalid usage": "user_code_error", "invalid argument": "user_code_error",
                "internal error": "unknown"}
_NCCL = r"NCCL operation \w+\(.*?\) failed: (" + "|".join(_NCCL_RESULT) + ")"
PATTERN = f"{_OOM}|{_NCCL}"
SNIFF_HINT = (b"resource_exhausted: out of memory", b"resource exhausted: out of memory", b"nccl operation")

_BYTES = r"Out of memory (?:while trying to allocate|allocating) (\d+) bytes"
_TF_TS = r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+): [IWEF] "


def sniff(head: bytes, path: str) -> bool:
    """XLA's out-of-memory error, or its failed NCCL operation, in the head."""
    return search(head.decode("utf-8", "replace"), PATTERN)


def parse(lines: pl.DataFrame, ctx: Context) -> Parsed:
    """One cuda_oom event per out-of-memory line, with the size it failed to allocate; one event per failed NCCL
    operation, its mode the one NCCL's result names."""
    out = Parsed()
    text = pl.col("text")
    result = text.str.extract(_NCCL, 1)
    is_oom = text.str.contains(_OOM)
    tried = text.str.extract(_BYTES, 1).cast(pl.Float64, strict=False) / 2**30
    stamp = text.str.extract(_TF_TS, 1).str.to_datetime("%Y-%m-%d %H:%M:%S%.f", time_unit="us", strict=False)
    out.add("events", lines.select(
        pl.col("line").cast(pl.Int64), local_to_utc(stamp, ctx.tz).alias("ts"),
        pl.lit(ctx.host, pl.String).alias("host"),
        pl.when(is_oom).then(pl.lit("xla_oom")).otherwise(pl.lit("xla_nccl_failed")).alias("kind"),
        pl.when(is_oom).then(pl.lit("cuda_oom")).otherwise(result.replace_strict(_NCCL_RESULT, default=None))
        .alias("failure_mode"), pl.lit("error").alias("severity"),
        text.str.strip_chars().alias("text"),
        pl.when(is_oom).then(json_detail({"tried_gib": tried.round(3)}))
        .otherwise(json_detail({"nccl_call": text.str.extract(r"NCCL operation (\w+)\(", 1),
                                "nccl_result": result})).alias("detail"),
    ).filter(pl.col("failure_mode").is_not_null()))
    return out
