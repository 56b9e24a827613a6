"""When a node booted, as saved beside its logs: a copy of `/proc/stat` (`btime <epoch>`), `who -b`, `uptime -s`,
`last -x reboot` (its `still running` row is the running boot, to the minute, its year from `wtmp begins`).

Each becomes one `facts` row, key `boot_time`, its time (naive UTC) as `ts` and as the value (ISO 8601). The
ingest dates the raw `dmesg` lines of the same folder by it (`clusterlab.ingest.boot`), as it does with a file
named `boot_time`. `who -b` and `uptime -s` print local time (the node's timezone); `/proc/stat` epoch seconds.
"""

from __future__ import annotations

import re

import polars as pl

from clusterlab.collectors._base import Context, Parsed, local_to_utc, yearless

NAME = "boot_time"
PATTERN = None
EXCLUSIVE = True  # a file that says when its node booted says nothing else we read

_PROC_STAT = re.compile(rb"(?m)^cpu +\d+ \d+.*\n(?:.*\n)*?btime \d{9,10}\s*$")
_WHO_B = re.compile(rb"^\s*system boot\s+\d{4}-\d\d-\d\d \d\d:\d\d\s*$")
_UPTIME_S = re.compile(rb"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\s*$")
# `last -x reboot`: "reboot   system boot  5.15.0-126-gener Tue Nov 24 22:34   still running" (no year; wtmp's first
# record's is on the `wtmp begins Sun Nov  1 00:00:04 2026` line at the end)
_LAST = re.compile(rb"(?m)^reboot +system boot +\S+ +\w{3} \w{3} [ \d]\d \d\d:\d\d +still running")
_LAST_ROW = r"^reboot +system boot +\S+ +\w{3} (\w{3}) +(\d{1,2}) (\d\d:\d\d) +still running"
_WTMP_YEAR = r"^wtmp begins \w{3} (\w{3}) +(\d{1,2}) \d\d:\d\d:\d\d (\d{4})"
_MONTHS = {m: i for i, m in enumerate(("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov",
                                       "Dec"), 1)}


def sniff(head: bytes, path: str) -> bool:
    """A /proc/stat copy, `who -b`'s one line, or `uptime -s`'s one time in a file named for it."""
    # NOTE: a /proc/stat copy holds `btime`: the substring test spares the multi-line regex on every other head
    if b"btime" in head[:16384] and _PROC_STAT.search(head[:16384]):
        return True
    if b"system boot" in head[:16384] and _LAST.search(head[:16384]):
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
    got = pl.concat([lines.select("line", at.alias("ts")), _last_reboot(lines, ctx)]).filter(pl.col("ts").is_not_null())
    if got.height:
        out.add("facts", got.select("line", "ts", host=pl.lit(ctx.host, pl.String), key=pl.lit("boot_time"),
                                    value=pl.col("ts").dt.strftime("%Y-%m-%dT%H:%M:%S")))
    return out


def _last_reboot(lines: pl.DataFrame, ctx: Context) -> pl.DataFrame:
    """The running boot of a `last -x reboot` output: its `still running` row, in the year wtmp began (the next
    year where the row's month and day come before wtmp's first), else the file's year."""
    text = pl.col("text").str.strip_chars()
    row = lines.select("line", text.str.extract_groups(_LAST_ROW).alias("m")).unnest("m").filter(
        pl.col("1").is_not_null())
    if not row.height:
        return pl.DataFrame(schema={"line": lines.schema["line"], "ts": pl.Datetime("us")})
    begins = lines.select(text.str.extract_groups(_WTMP_YEAR).alias("w")).unnest("w").drop_nulls()
    month = pl.col("1").replace_strict(_MONTHS, default=None, return_dtype=pl.Int32)
    if begins.height:
        w_month, w_day, w_year = _MONTHS.get(begins["1"][0], 1), int(begins["2"][0]), int(begins["3"][0])
        year = (pl.when((month < w_month) | ((month == w_month) & (pl.col("2").cast(pl.Int32) < w_day)))
                .then(w_year + 1).otherwise(w_year))
    else:
        year = pl.lit(ctx.year)
    stamp = pl.format("{} {} {} {}:00", year, pl.col("1"), pl.col("2"), pl.col("3")).str.strptime(
        pl.Datetime("us"), "%Y %b %d %H:%M:%S", strict=False)
    at = local_to_utc(stamp, ctx.tz) if begins.height else local_to_utc(yearless(stamp, ctx), ctx.tz)
    return row.select("line", at.alias("ts"))
