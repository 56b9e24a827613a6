"""When a node booted, as saved beside its logs: a copy of `/proc/stat` (`btime <epoch>`), `who -b`, `uptime -s`.

Each becomes one `facts` row, key `boot_time`, its time (naive UTC) as `ts` and as the value (ISO 8601). The
ingest dates the raw `dmesg` lines of the same folder by it (`clusterlab.ingest.boot`), as it does with a file
named `boot_time`. `who -b` and `uptime -s` print local time (the node's timezone); `/proc/stat` epoch seconds.
"""

from __future__ import annotations

import re

import polars as pl

from clusterlab.collectors._base import Context, Parsed, local_to_utc

NAME = "boot_time"
PATTERN = None
EXCLUSIVE = True  # a file that says when its node booted says nothing else we read

_PROC_STAT = re.compile(rb"(?m)^cpu +\d+ \d+.*\n(?:.*\n)*?btime \d{9,10}\s*$")
_WHO_B = re.compile(rb"^\s*system boot\s+\d{4}-\d\d-\d\d \d\d:\d\d\s*$")
_UPTIME_S = re.compile(rb"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\s*$")


def sniff(head: bytes, path: str) -> bool:
    """A /proc/stat copy, `who -b`'s one line, or `uptime -s`'s one time in a file named for it."""
    # NOTE: a /proc/stat copy holds `btime`: the substring test spares the multi-line regex on every other head
    if b"btime" in head[:16384] and _PROC_STAT.search(head[:16384]):
        return True
    text = head.strip()
    if b"\n" in text:
        return False
    # NOTE: a file holding one time and nothing else is only `uptime -s` when its name says so
    name = path.rsplit("/", 1)[-1].lower()
    return bool(_WHO_B.match(text)) or (bool(_UPTIME_S.match(text)) and ("uptime" in name or "boot" in name))


def parse(lines: pl.DataFrame, ctx: Context) -> Parsed:
    """The boot time the file states, as a `facts` row."""
    out = Parsed()
    text = pl.col("text").str.strip_chars()
    epoch = text.str.extract(r"^btime (\d{9,10})$").cast(pl.Int64, strict=False)
    local = pl.coalesce(text.str.extract(r"^system boot\s+(\d{4}-\d\d-\d\d \d\d:\d\d)$") + ":00",
                        text.str.extract(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)$"))
    at = pl.coalesce(pl.from_epoch(epoch, time_unit="s").cast(pl.Datetime("us")),
                     local_to_utc(local.str.strptime(pl.Datetime("us"), "%Y-%m-%d %H:%M:%S", strict=False), ctx.tz))
    got = lines.select("line", at.alias("ts")).filter(pl.col("ts").is_not_null())
    if got.height:
        out.add("facts", got.select("line", "ts", host=pl.lit(ctx.host, pl.String), key=pl.lit("boot_time"),
                                    value=pl.col("ts").dt.strftime("%Y-%m-%dT%H:%M:%S")))
    return out
