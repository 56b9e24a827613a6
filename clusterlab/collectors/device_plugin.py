"""NVIDIA's Kubernetes device plugin: the Xids its health check saw → GPU events of the Xid's failure mode.

The plugin (github.com/NVIDIA/k8s-device-plugin) registers for the driver's critical Xid events through NVML and
marks a GPU unhealthy on one it does not ignore (13, 31, 43, 45, 68, 109 are the application's); on a node whose
kernel log was not kept, its own log is what says which Xid took the GPU away. Go's log prefix, or klog's:

    2020/08/10 19:09:42 XidCriticalError: Xid=48 on Device=GPU-7540a9b3-..., the device will go unhealthy.
    2020/08/10 19:09:42 'nvidia.com/gpu' device marked unhealthy: GPU-7540a9b3-...
    I0812 10:31:07.000211       1 health.go:159] XidCriticalError: Xid=79 on Device=GPU-...; marking device ...

Times are the node's local time (`ctx.tz`; klog's have no year: `ctx.year`).
"""

from __future__ import annotations

import polars as pl

from clusterlab import taxonomy
from clusterlab.collectors._base import Context, Parsed, json_detail, local_to_utc, search, yearless

NAME = "device_plugin"
EXCLUSIVE = False

PATTERN = r"XidCriticalError: Xid=\d+ on Device="
SNIFF_HINT = (b"xidcriticalerror: xid=",)

_XID = r"XidCriticalError: Xid=(\d+) on Device=(GPU-[0-9a-fA-F-]+|\S+?)[,;]?(?:\s|$)"
_GO_TS = r"^(\d{4}/\d\d/\d\d \d\d:\d\d:\d\d)"
_KLOG_TS = r"^[IWEF](\d{4} \d\d:\d\d:\d\d(?:\.\d+)?) "


def sniff(head: bytes, path: str) -> bool:
    """A plugin's Xid line in the head."""
    return search(head.decode("utf-8", "replace"), PATTERN)


def parse(lines: pl.DataFrame, ctx: Context) -> Parsed:
    """One event per Xid the plugin reports, of the mode the taxonomy gives that Xid."""
    out = Parsed()
    text = pl.col("text")
    f = lines.with_columns(xid=text.str.extract(_XID, 1).cast(pl.Int32, strict=False),
                           gpu=text.str.extract(_XID, 2)).filter(pl.col("xid").is_not_null())
    if not f.height:
        return out
    f = f.join(taxonomy.xid_frame(f["xid"]).select("xid", "failure_mode"), on="xid", how="left")
    go = text.str.extract(_GO_TS, 1).str.to_datetime("%Y/%m/%d %H:%M:%S", time_unit="us", strict=False)
    klog = yearless((pl.lit(f"{ctx.year}") + text.str.extract(_KLOG_TS, 1)).str.to_datetime(
        "%Y%m%d %H:%M:%S%.f", time_unit="us", strict=False), ctx)
    out.add("events", f.sort("line").select(
        pl.col("line").cast(pl.Int64), local_to_utc(pl.coalesce(go, klog), ctx.tz).alias("ts"),
        pl.lit(ctx.host, pl.String).alias("host"), pl.lit("xid").alias("kind"), "failure_mode",
        pl.when(pl.col("failure_mode").is_null()).then(pl.lit("warning")).otherwise(pl.lit("error")).alias("severity"),
        text.str.strip_chars().alias("text"),
        json_detail({"xid": pl.col("xid"), "gpu_uuid": pl.col("gpu"), "via": pl.lit("device_plugin")}).alias("detail"),
    ))
    return out
