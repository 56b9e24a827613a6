"""gpud (github.com/leptonai/gpud), a GPU node's health daemon: the Xids and lost GPUs it reports → GPU events.

gpud reads the kernel's Xid lines and NVML itself. What a user keeps of it is its components' states (`gpud status`,
or the JSON of its `/v1/states` endpoint), each unhealthy one with its reason, and its own log of failed NVML calls:

    XID 79(GPU has fallen off the bus) detected on PCI:0000:3d:00
    "reason": "XID 74 (NVLINK Error) detected on PCI:0000:04:00",
    failed to get remapped rows for GPU-4e1a...: failed to get device remapped rows: ERROR_GPU_IS_LOST

An Xid means what NVIDIA's catalogue says (`taxonomy.xid`). An NVML call that fails with ERROR_GPU_IS_LOST (pynvml's
`NVMLError_GPUIsLost`) found the GPU gone from the bus. (gpud's `scan` quotes the kernel's Xid lines themselves: the
kernel collector reads those.) The states carry no time of their own here.
"""

from __future__ import annotations

import polars as pl

from clusterlab import taxonomy
from clusterlab.collectors._base import Context, Parsed, json_detail, search

NAME = "gpud"
EXCLUSIVE = False

# the Xid's name in NVIDIA's catalogue, which may hold parentheses of its own ("DBE (Double Bit Error) ECC Error")
_XID = r"\bXID (\d{1,3}) ?\((?:[^()\n]|\([^()\n]*\)){0,80}\) detected on PCI:([0-9A-Fa-f:.]+)"
_LOST = r"\bERROR_GPU_IS_LOST\b|\bNVMLError_GPUIsLost\b"
PATTERN = f"{_XID}|{_LOST}"
SNIFF_HINT = (b") detected on pci:", b"error_gpu_is_lost", b"nvmlerror_gpuislost")


def sniff(head: bytes, path: str) -> bool:
    """gpud's Xid reason, or an NVML call that found its GPU lost, in the head."""
    return search(head.decode("utf-8", "replace"), PATTERN)


def parse(lines: pl.DataFrame, ctx: Context) -> Parsed:
    """One event per Xid reason (of the Xid's mode) and per NVML call that found its GPU lost (fallen off the bus)."""
    out = Parsed()
    text = pl.col("text")
    f = lines.with_columns(xid=text.str.extract(_XID, 1).cast(pl.Int32, strict=False), bus=text.str.extract(_XID, 2),
                           lost=text.str.contains(_LOST)).filter(pl.col("xid").is_not_null() | pl.col("lost"))
    if not f.height:
        return out
    table = taxonomy.xid_frame(f["xid"]).select("xid", _mode="failure_mode", _root="root_cause")
    f = f.join(table, on="xid", how="left").with_columns(
        failure_mode=pl.when(pl.col("xid").is_not_null()).then(pl.col("_mode")).otherwise(pl.lit("gpu_fell_off_bus")))
    named = pl.col("xid").is_not_null() & (pl.col("failure_mode").is_null() | ~pl.col("_root").fill_null(True))
    out.add("events", f.sort("line").select(
        pl.col("line").cast(pl.Int64), pl.lit(None, pl.Datetime("us")).alias("ts"),
        pl.lit(ctx.host, pl.String).alias("host"),
        pl.when(pl.col("xid").is_not_null()).then(pl.lit("xid")).otherwise(pl.lit("gpu_lost")).alias("kind"),
        "failure_mode",
        pl.when(named).then(pl.lit("warning")).when(pl.col("xid").is_null()).then(pl.lit("critical"))
        .otherwise(pl.lit("error")).alias("severity"),
        text.str.strip_chars().str.slice(0, 500).alias("text"),
        json_detail({"xid": pl.col("xid"), "pci_bus": pl.col("bus"), "via": pl.lit("gpud")}).alias("detail"),
    ))
    return out
