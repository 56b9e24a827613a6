"""NVIDIA NVSentinel's logs (Kubernetes GPU fault handling) → the health events its monitors raised.

NVSentinel's services log in Go's slog JSON, one record a line. The fault-quarantine service logs each health event
a monitor sent it, whole, before it cordons the node:

    {"time":"2026-02-18T06:34:28.890474493Z","level":"INFO","msg":"Handling event for ruleset","module":
     "fault-quarantine",...,"event":{"CreatedAt":"...","HealthEvent":{"version":1,"agent":"gpu-health-monitor",
     "componentClass":"GPU","checkName":"GpuMemWatch","isFatal":true,"message":"GPU had an uncontained error
     (XID 95) Drain the GPU and reset it or reboot the node.","recommendedAction":15,"errorCode":
     ["DCGM_FR_UNCONTAINED_ERROR"],"entitiesImpacted":[{"entityType":"GPU","entityValue":"1"},{"entityType":"PCI",
     "entityValue":"0002:00:00.0"},...],"generatedTimestamp":{"seconds":1771396468},"nodeName":"10.0.15.233",...}}}
                                                                                        (one line)

The event's time is `generatedTimestamp`, when the monitor saw the fault (the record's `time` is when it was handled,
its fallback); its node is `nodeName`. The fault is what the monitor's message and DCGM's error code say: an Xid the
message names (`(XID 79)`, `Detected XID 31 for GPU 4`) means what NVIDIA's catalogue says (`taxonomy.xid`), else
the error code's family (`DCGM_FR_GPU_FALLEN_OFF_BUS`, the ECC and row-remap codes, NVLink, NVSwitch, PCIe). A healthy
event (`"isHealthy":true`, a recovery) and an event the monitor calls non-fatal with no such code are notices. The
services' other records (the rule evaluation, cordon and drain steps) give nothing.
"""

from __future__ import annotations

import polars as pl

from clusterlab import taxonomy
from clusterlab.collectors._base import TABLE_COLUMNS, Context, Parsed, json_detail, most_lines_match

NAME = "nvsentinel"
EXCLUSIVE = True
SNIFF_HINT = (b"\"healthevent\"",)

_RECORD = r'^\{"time":"\d{4}-\d\d-\d\dT[^"]+","level":"[A-Z]+","msg":"'
PATTERN = r'"HealthEvent":\{'
_QUOTED = r'((?:[^"\\]|\\.)*)'
_FIELDS = {
    "check": r'"checkName":"' + _QUOTED + '"',
    "component": r'"componentClass":"' + _QUOTED + '"',
    "fatal": r'"isFatal":(true|false)',
    "healthy": r'"isHealthy":(true|false)',
    "message": r'"HealthEvent":\{.*?"message":"' + _QUOTED + '"',
    "code": r'"errorCode":\["' + _QUOTED + '"',
    "gpu": r'"entityType":"GPU","entityValue":"(\d+)"',
    "pci": r'"entityType":"PCI","entityValue":"([0-9A-Fa-f:.]+)"',
    "node": r'"nodeName":"' + _QUOTED + '"',
    "seconds": r'"generatedTimestamp":\{"seconds":(\d+)',
    "logged": r'^\{"time":"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?)Z"',
}
_XID = r"\b(?i:xid)\s*(\d{1,3})\b"
# DCGM's failure codes (dcgm_errors.h) by family; a code not listed (throttling, temperature, power) is a notice
_CODE_MODES = [
    (r"FALLEN_OFF_BUS", "gpu_fell_off_bus"),
    (r"UNCONTAINED|_DBE|ECC|RETIRE|ROW_REMAP|SRAM", "gpu_memory_ecc"),
    (r"NVLINK|NVSWITCH", "nvlink_error"),
    (r"PCI", "pcie_error"),
]


def sniff(head: bytes, path: str) -> bool:
    """NVSentinel's slog JSON records, one of which carries a health event."""
    return b'"HealthEvent":{' in head and most_lines_match(head, _RECORD)


def parse(lines: pl.DataFrame, ctx: Context) -> Parsed:
    """One event per health event logged: the mode its Xid or DCGM code names, none for a recovery or a notice."""
    out = Parsed()
    text = pl.col("text")
    ev = lines.filter(text.str.contains(PATTERN)).with_columns(
        **{k: text.str.extract(rx, 1) for k, rx in _FIELDS.items()})
    if not ev.height:
        return out
    xid = pl.col("message").str.extract(_XID, 1).cast(pl.Int32, strict=False)
    code = pl.col("code").str.to_uppercase()
    by_code = pl.lit(None, pl.String)
    for rx, mode in reversed(_CODE_MODES):
        by_code = pl.when(code.str.contains(rx)).then(pl.lit(mode)).otherwise(by_code)
    xids = {x: m.failure_mode for x, m in taxonomy.XIDS.items()}
    by_xid = xid.replace_strict(xids, default="gpu_hw_other", return_dtype=pl.String)
    healthy = pl.col("healthy") == "true"
    mode = (pl.when(healthy).then(pl.lit(None, pl.String)).when(xid.is_not_null()).then(by_xid)
            .when(pl.col("fatal") == "true").then(pl.coalesce(by_code, pl.lit("gpu_hw_other")))
            .otherwise(by_code))
    seconds = pl.col("seconds").cast(pl.Int64, strict=False)
    logged = pl.col("logged").str.to_datetime("%Y-%m-%dT%H:%M:%S%.f", time_unit="us", strict=False)
    ts = pl.coalesce(pl.from_epoch(seconds * 1_000_000, time_unit="us"), logged)
    out.add("events", ev.with_columns(xid=xid, failure_mode=mode).select(
        pl.col("line").cast(pl.Int64), ts.cast(TABLE_COLUMNS["events"]["ts"]).alias("ts"),
        pl.coalesce(pl.col("node").replace("", None), pl.lit(ctx.host, pl.String)).alias("host"),
        pl.when(healthy).then(pl.lit("health_recovered")).otherwise(pl.lit("health_event")).alias("kind"),
        "failure_mode",
        pl.when(pl.col("failure_mode").is_null()).then(pl.lit("info"))
        .when(pl.col("fatal") == "true").then(pl.lit("critical")).otherwise(pl.lit("warning")).alias("severity"),
        "xid", pl.col("pci").alias("pci_bus"), text,
        json_detail({"check": pl.col("check"), "component": pl.col("component"), "code": pl.col("code"),
                     "gpu": pl.col("gpu").cast(pl.Int32, strict=False),
                     "message": pl.col("message").str.replace_all(r'\\"', '"').str.slice(0, 500)})
        .fill_null("{}").alias("detail"),
    ))
    return out
