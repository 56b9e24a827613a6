"""The time prefix of a kernel log line, in every spelling dmesg, journalctl and syslog print, and the host.

Split from `kernel` (one collector, two modules): `split_prefix` makes the prefix's groups columns, `timestamp` and
`host` read them, `boot_from_own_lines` dates raw dmesg lines by the boot time the file itself gives.
"""

from __future__ import annotations

import re

import polars as pl

from clusterlab.collectors._base import (
    YEAR_COLUMNS,
    Context,
    file_of_line,
    fraction,
    local_to_utc,
    offset_to_utc,
    syslog_time,
)

# The time prefix, for all the spellings at once (groups of the branches that did not match are null):
#   [ 12345.678901] msg                                    dmesg (seconds since boot)
#   [ 12345.678901 <    0.000049>] msg                     dmesg -d (and the delta since the line before)
#   [Wed Nov 25 10:00:01 2026] msg                         dmesg -T (local time; -d -T adds ` <delta>`)
#   [Nov25 10:00] msg / [  +0.000049] msg                  dmesg -H / -e: the minute, then deltas (local time)
#   [<    0.000049>] msg                                   dmesg --time-format delta (no time at all)
#   2026-11-25T10:00:01,123456+00:00 msg                   dmesg --time-format iso
#   2026-11-25T10:00:01[.123456]+0000 host kernel: msg     journalctl -k -o short-iso[-precise], RFC 3339 syslog
#   Nov 25 10:00:01[.123456] host kernel: [12345.6] msg    syslog, journalctl short[-precise] (local, no year)
#   10.0.0.7: kern: warning: [2026-11-25T10:00:01.1Z]: msg talosctl dmesg (UTC; the node first)
# An optional `kern  :err   : ` (dmesg -x) comes first. The weekday of dmesg -T is skipped: a
# parser that checks it would drop a line over a mismatch that says nothing about the time.
_DELTA = r"<[ \d.]+>"
PREFIX = (
    r"^(?:[a-z]+ *:[a-z]+ *: )?"
    # `grep -r` over /var/log names the file first (`messages:Jun 17 ...`, `kern.log.1:...`)
    r"(?:[\w.-]+:)?"
    rf"(?:\[ *(?P<up>\d+\.\d+)(?: {_DELTA})?\]"
    rf"|\[[A-Z][a-z]{{2}} (?P<ctime>[A-Z][a-z]{{2}} +\d{{1,2}} \d\d:\d\d:\d\d \d{{4}})(?: {_DELTA})?\]"
    r"|\[(?P<rel>[A-Z][a-z]{2} ?\d{1,2} \d\d:\d\d)\]"
    r"|\[ *(?P<reld>[+-]\d+\.\d+)\]"
    rf"|\[{_DELTA}\]"
    r"|(?P<iso>\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d)(?:[.,](?P<frac>\d+))?(?P<off>Z|[+-]\d\d:?\d\d)?"
    r"|(?P<bsd>[A-Z][a-z]{2} +\d{1,2} \d\d:\d\d:\d\d)(?:\.(?P<bfrac>\d+))?"
    # talosctl dmesg: `<node>: <facility>: <level>: [<UTC time>]: msg`
    r"|(?P<tnode>[\w.:-]+): [a-z]+: *[a-z]+: \[(?P<tiso>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(?P<tfrac>\d+))?Z\]:)"
    # NOTE: a program tag needs its [pid]: without one, `EDAC MC0:` after a dmesg-iso time would
    # read as host `EDAC`, program `MC0`.
    r"(?: (?P<host>[^\s\[\]]+) (?:(?P<kern>kernel)(?:\[\d+\])?|(?P<prog>[^\s\[\]:]+)\[\d+\]):)?"
    # syslog and journalctl short with the kernel's own seconds since boot: `kernel: [12345.6] msg`
    r" *(?:\[ *(?P<up2>\d+\.\d+)\] ?)?"
    r"(?P<msg>.*)$"
)

# What sniff() takes for a kernel log line: the dmesg spellings, or any time then `host kernel:`.
KERNEL_LINE = re.compile(
    r"^(?:[a-z]+ *:[a-z]+ *: )?"
    r"(?:\[ *\d+\.\d+(?: <[ \d.]+>)?\] |\[[A-Z][a-z]{2} [A-Z][a-z]{2} +\d{1,2} \d\d:\d\d:\d\d \d{4}(?: <[ \d.]+>)?\] "
    r"|\[[A-Z][a-z]{2} ?\d{1,2} \d\d:\d\d\] |\[ *[+-]\d+\.\d+\] |\[<[ \d.]+>\] "
    r"|\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d,\d{6}[+-]\d\d:\d\d "
    r"|(?:[\w.-]+:)?(?:\d{4}-\d\d-\d\dT\S+|[A-Z][a-z]{2} +\d{1,2} \d\d:\d\d:\d\d(?:\.\d+)?) \S+ kernel: "
    r"|[\w.:-]+: kern: *[a-z]+: \[\d{4}-\d\d-\d\dT[\d:.]+Z\]: )"
)

def split_prefix(lines: pl.DataFrame, ctx: Context) -> pl.DataFrame:
    """The batch with the time-prefix groups, host, program tag and message as columns, and the host the
    file belongs to (`file_host`: a column where many files are parsed together, see FILE_HOST_COLUMN)."""
    groups = pl.col("text").str.extract_groups(PREFIX).alias("_p")
    own = "file_host" if "file_host" in lines.columns else pl.lit(ctx.host, pl.String).alias("file_host")
    frame = lines.select("line", "text", own, *(c for c in YEAR_COLUMNS if c in lines.columns), groups).unnest("_p")
    return frame.with_columns(pl.coalesce("msg", "text").alias("msg"))


def timestamp(ctx: Context) -> pl.Expr:
    """Naive UTC time of each line from whichever prefix it has (null: none, or raw without boot time)."""
    dtype = pl.Datetime("us")
    micros = (pl.col("up").cast(pl.Float64, strict=False) * 1e6).round().cast(pl.Int64, strict=False)
    boot = pl.lit(ctx.boot_time, dtype) if ctx.boot_time is not None else pl.lit(None, dtype)
    raw = boot + pl.duration(microseconds=micros)
    ctime = local_to_utc(pl.col("ctime").str.replace_all(" +", " ")
                         .str.strptime(dtype, "%b %d %H:%M:%S %Y", strict=False), ctx.tz)
    bsd = local_to_utc(syslog_time(pl.col("bsd"), ctx) + _fraction(), ctx.tz)
    # dmesg -H prints the minute only when it changes and a delta since the previous message otherwise;
    # the lines between are not all at hand (only the ones PATTERN selects), so a delta line takes its
    # minute: the time to the minute, never a later one.
    minute = local_to_utc(syslog_time(pl.col("rel").str.replace(r"^([A-Z][a-z]{2}) ?", "$1 ")
                                      .str.replace(r"$", ":00"), ctx), ctx.tz)
    rel = pl.when(pl.col("reld").is_not_null()).then(minute.forward_fill().over(file_of_line())).otherwise(minute)
    return pl.coalesce(raw, ctime, _iso(ctx), bsd, rel).alias("ts")


def dated(lines: pl.DataFrame, ctx: Context) -> pl.DataFrame:
    """`lines` with `ts`, the time of their syslog, journal or dmesg prefix: what a line another program logged to
    the node's log (a cloud agent, a FUSE daemon) has of a time."""
    return lines.with_columns(split_prefix(lines, ctx).select(timestamp(ctx)))


def boot_from_own_lines(frame: pl.DataFrame) -> pl.DataFrame:
    """Raw dmesg lines dated by the boot time the file itself gives: a line stamped with both a wall time and
    the seconds since boot (syslog's `kernel: [12345.6]`), or a `dmesg -T` line repeating a raw line's message.

    The file's boot time is the median of these estimates; raw lines after a reboot (their seconds since boot
    go back) are another boot and stay undated, unless that boot has estimates of its own."""
    raw = pl.col("up").is_not_null() & pl.col("ts").is_null()
    if not frame.select(raw.any()).item():
        return frame
    dtype = pl.Datetime("us")
    up = pl.coalesce("up", "up2").cast(pl.Float64, strict=False)
    # NOTE: a boot is a run of lines whose seconds since boot never go back (a file of two `dmesg` outputs,
    # or a syslog across a reboot); the lines without any such clock belong to the boot around them.
    frame = frame.with_columns(_up=up).with_columns(
        _boot=(pl.col("_up").forward_fill().diff().over(file_of_line()) < 0).fill_null(False).cum_sum()
        .over(file_of_line()))
    micros = (pl.col("_up") * 1e6).round().cast(pl.Int64)
    own = frame.filter(pl.col("ts").is_not_null() & pl.col("up2").is_not_null()).select(
        _f=file_of_line(), _boot="_boot", _est=pl.col("ts") - pl.duration(microseconds=micros))
    # a raw line and a wall-clock line of the same message (the same Xid, pid and address): the same event
    stamped = frame.filter(pl.col("ts").is_not_null() & (pl.col("msg").str.len_chars() >= 20)).select(
        "msg", _f=file_of_line(), _t="ts")
    pairs = frame.filter(raw).select("_boot", "msg", "_up", _f=file_of_line()).join(
        stamped, on=["_f", "msg"]).select(
        "_f", "_boot", _est=pl.col("_t") - pl.duration(microseconds=(pl.col("_up") * 1e6).round().cast(pl.Int64)))
    est = pl.concat([own, pairs]).group_by("_f", "_boot").agg(_at=pl.col("_est").cast(dtype).median())
    if not est.height:
        return frame.drop("_up", "_boot")
    got = frame.with_columns(_f=file_of_line()).join(est, on=["_f", "_boot"], how="left", maintain_order="left")
    ts = pl.when(raw).then(pl.col("_at").cast(dtype) + pl.duration(microseconds=micros)).otherwise(pl.col("ts"))
    return got.with_columns(ts=ts).drop("_up", "_boot", "_f", "_at")


def _fraction() -> pl.Expr:
    """The fraction of a second that an ISO or syslog time printed, as a duration."""
    return fraction(pl.coalesce("frac", "bfrac", "tfrac"))


def _iso(ctx: Context) -> pl.Expr:
    """ISO 8601 times: any fraction (`.` or `,`), offset `Z`, `+hh:mm`, `+hhmm` or none (local time)."""
    base = (pl.coalesce("iso", "tiso").str.replace(" ", "T")
            .str.strptime(pl.Datetime("us"), "%Y-%m-%dT%H:%M:%S", strict=False))
    off = pl.when(pl.col("tiso").is_not_null()).then(pl.lit("Z")).otherwise(pl.col("off"))
    return offset_to_utc(base + _fraction(), off, ctx.tz)


def host(ctx: Context) -> pl.Expr:
    """The journal / syslog host of the line; a FQDN whose first label is a known node becomes that node."""
    host = pl.when(pl.col("kern").is_not_null()).then(pl.col("host")).otherwise(pl.col("tnode"))
    short = host.str.split(".").list.first()
    node = short == pl.col("file_host")
    if ctx.known_hosts:
        node = node | short.is_in(sorted(ctx.known_hosts))
    return pl.when(node.fill_null(False)).then(short).otherwise(host).alias("host")

