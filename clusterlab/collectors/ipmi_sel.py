"""A node's BMC System Event Log as `ipmitool sel list` / `sel elist` print it → host hardware and PCIe events.

Each row is one record the BMC kept, in its own clock (the node's zone, `ctx.tz`; newer ipmitool prints the zone's
abbreviation after the time, `sel elist` the sensor's name):

      43 | 03/14/2025 | 19:52:08 | Critical Interrupt #0xa1 | Bus Fatal Error (Bus fatal:B3a/D01/F00) | Asserted
      3a | 12/14/22 | 23:09:44 CET | Memory #0x88 | Correctable ECC (CPU0_G1) | Asserted
      89 | 08/31/2016 | 06:20:30 | Processor #0xc9 | IERR | Asserted
      12 | Pre-Init |  0000000012 | System Event #0x83 | Timestamp Clock Sync | Asserted

What the sensor type and the event say decides: a PCIe bus's fatal or uncorrectable error, SERR or PERR is
`pcie_error` (the GPUs and NICs sit on that bus); an uncorrectable memory error, a processor's IERR or machine check,
a power supply's failure and a critical temperature are the host's hardware (`host_hw`); the BMC's watchdog resetting
or power-cycling the host took the node down (`node_failure`). Corrected errors, deasserted (cleared) conditions,
firmware progress, log-cleared and OEM records are notices of no mode.
"""

from __future__ import annotations

import polars as pl

from clusterlab.collectors._base import TABLE_COLUMNS, Context, Parsed, json_detail, local_to_utc, search

NAME = "ipmi_sel"
EXCLUSIVE = True
SNIFF_HINT = (b" | asserted", b" | deasserted")

_ROW = (r"^\s*(?P<id>[0-9a-fA-F]+) \| (?:(?P<date>\d\d/\d\d/(?:\d{4}|\d\d)) \| (?P<time>\d\d:\d\d:\d\d)(?: [A-Z]{2,5})?"
        r"|Pre-Init \| +\d+) \| (?P<sensor>[^|]+?) \| (?P<event>[^|]*?) \| (?P<dir>Asserted|Deasserted)\s*$")
PATTERN = r"\| (?:Asserted|Deasserted)\s*$"
# (sensor type, event, mode), the first that matches an asserted record decides
_MODES = [
    (r"^Critical Interrupt", r"Bus (?:Fatal|Uncorrectable) Error|PCI [SP]ERR|Bus Degraded", "pcie_error"),
    (r"^Memory", r"Uncorrectable ECC|Memory Device Disabled|Parity|Uncorrectable machine check", "host_hw"),
    (r"^Processor", r"IERR|Machine Check|Thermal Trip|FRB\d|Uncorrectable", "host_hw"),
    (r"^Power Supply", r"Failure detected|Predictive failure|Power Supply AC lost", "host_hw"),
    (r"^Temperature", r"Upper (?:Critical|Non-recoverable) going high", "host_hw"),
    (r"^Watchdog", r"Hard reset|Power cycle|Power down", "node_failure"),
]


def sniff(head: bytes, path: str) -> bool:
    """Rows of ipmitool's SEL listing in the head."""
    return search(head.decode("utf-8", "replace"), "(?m)" + _ROW)


def parse(lines: pl.DataFrame, ctx: Context) -> Parsed:
    """One event per SEL record: the mode its sensor and event name where asserted, a notice otherwise."""
    out = Parsed()
    rows = lines.with_columns(pl.col("text").str.extract_groups(_ROW).alias("r")).unnest("r")
    out.unparsed_lines = rows.filter(pl.col("sensor").is_null() & (pl.col("text").str.strip_chars() != ""))["line"]
    out.unparsed = len(out.unparsed_lines)
    rows = rows.filter(pl.col("sensor").is_not_null())
    if not rows.height:
        return out
    mode = pl.lit(None, pl.String)
    for sensor, event, m in reversed(_MODES):
        hit = pl.col("sensor").str.contains(sensor) & pl.col("event").str.contains(event)
        mode = pl.when(hit).then(pl.lit(m)).otherwise(mode)
    mode = pl.when(pl.col("dir") == "Asserted").then(mode)
    # NOTE: ipmitool prints a two-digit year where the BMC's clock gave one: this century's
    day = pl.col("date").str.replace(r"^(\d\d/\d\d/)(\d\d)$", "${1}20${2}")
    stamp = pl.concat_str([day, pl.lit(" "), pl.col("time")]).str.to_datetime("%m/%d/%Y %H:%M:%S", time_unit="us",
                                                                             strict=False)
    out.add("events", rows.with_columns(failure_mode=mode).select(
        pl.col("line").cast(pl.Int64), local_to_utc(stamp, ctx.tz).cast(TABLE_COLUMNS["events"]["ts"]).alias("ts"),
        pl.lit(ctx.host, pl.String).alias("host"), pl.lit("bmc_sel").alias("kind"), "failure_mode",
        pl.when(pl.col("failure_mode").is_null()).then(pl.lit("info"))
        .when(pl.col("failure_mode") == "host_hw").then(pl.lit("error")).otherwise(pl.lit("critical"))
        .alias("severity"),
        pl.col("text").str.strip_chars().alias("text"),
        json_detail({"record": pl.col("id"), "sensor": pl.col("sensor"), "event": pl.col("event"),
                     "direction": pl.col("dir")}).fill_null("{}").alias("detail"),
    ))
    return out
