"""IBM Storage Scale (GPFS) daemon log, `/var/adm/ras/mmfs.log.latest` (and its rotated `mmfs.log.*`).

    2026-10-31_16:30:57.045-0500: [E] Lost membership in cluster lakeshore-scale.gpfs. Unmounting file systems.
    Mon Jun 25 22:23:36.298 2018: [N] Close connection to 192.168.10.109 c5n109. Attempting reconnect.

A time (4.2 and later: `YYYY-MM-DD_HH:MM:SS.fff` and the node's UTC offset; older releases: `Mon Jun 25 22:23:36.298
2018` in the node's local time, `ctx.tz`), a severity in brackets (`[I]` info, `[N]` notice, `[W]` warning, `[E]`
error, `[X]` critical, `[A]` alert, `[D]` detail) and the message. Only what a training job feels is read: the node
losing the cluster (lease expired, expelled, lost membership or quorum: its file systems are unmounted under the
job, whose I/O then fails with a stale handle), a failed disk, a daemon that panicked or shut down abnormally, and
long waiters / deadlock notices (I/O that hangs). Each is `filesystem_io` on the node whose log says it.
Informational lines (recovering another node, reconnects, mounts, `mmfsd ready`) are not events.
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from clusterlab.collectors._base import (
    TABLE_COLUMNS,
    Context,
    Parsed,
    classify,
    fraction,
    json_detail,
    most_lines_match,
    offset_to_utc,
    read_line_format,
)

NAME = "gpfs_mmfs"
FILE_HOST_COLUMN = True  # parsed with other files, the lines carry their file's host (ctx.host) as `file_host`
EXCLUSIVE = True
# the level after the stamp (`: [I] `): a bare `: [` is in every line of a log that torchrun --tee prefixes with
# `[rank0]:`, whose every file then paid this sniff (0.3 ms); in lower case, as hints are matched (ASCII case-blind)
SNIFF_HINT = tuple(f": [{level}] ".encode() for level in "inwexad")

_NEW = r"(?P<date>\d{4}-\d\d-\d\d)_(?P<clock>\d\d:\d\d:\d\d)(?:\.(?P<frac>\d+))?(?P<off>[+-]\d{4})?"
_OLD = r"(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) (?P<odate>\w{3} +\d{1,2} \d\d:\d\d:\d\d)(?:\.(?P<ofrac>\d+))? (?P<year>\d{4})"
_LINE = rf"^(?:{_NEW}|{_OLD}): +\[(?P<level>[INWEXAD])\] (?P<msg>.*)$"
_LOST = (r"Lost membership in cluster|[Ll]ease period expired|[Ll]ease (?:has )?expired"
         r"|[Tt]his node (?:has been|was|is being) expelled|[Qq]uorum (?:loss|lost)|Unable to contact any quorum nodes"
         r"|Unmounting file systems?\b.*(?:expel|SGPanic)")
_DISK = r"Disk failure|disk .* (?:is|was) (?:down|unavailable)|No space left on device"
_DAEMON = r"shutting down abnormally|SGPanic|Signal \d+ at location|mmfsd .*(?:died|crashed)"
_WAIT = r"Deadlock detected|[Ll]ong waiters?\b"
PATTERN = (r"^(?:\d{4}-\d\d-\d\d_\d\d:\d\d:\d\d|(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) \w{3} +\d).*: +\[[NWEXA]\] .*(?:"
           + "|".join([_LOST, _DISK, _DAEMON, _WAIT]) + ")")


@dataclass(frozen=True)
class _Rule:
    regex: str
    kind: str


RULES = [_Rule(_LOST, "gpfs_lost_cluster"), _Rule(_DISK, "gpfs_disk_failure"), _Rule(_DAEMON, "gpfs_daemon_failure"),
         _Rule(_WAIT, "gpfs_long_waiters")]


def GROUP_CONTEXT(ctx: Context) -> tuple:  # noqa: N802  (a collector's contract names are capitals)
    """What parse() reads of the context: the zone of the older format's stamps (the newer prints its offset)."""
    return (ctx.tz,)


def sniff(head: bytes, path: str) -> bool:
    """A GPFS log: most of its first lines are in mmfs.log's line format."""
    return most_lines_match(head, _LINE)


def parse(lines: pl.DataFrame, ctx: Context) -> Parsed:
    """One event per line that says the node lost the cluster, a disk failed, the daemon failed or I/O waits long."""
    out = Parsed()
    frame = read_line_format(lines, ctx, _LINE, out)
    if not frame.height:
        return out
    frame = classify(frame, RULES, col="msg", index="_rule").drop("_rule")
    new = (pl.concat_str([pl.col("date"), pl.col("clock")], separator=" ")
           .str.strptime(pl.Datetime("us"), "%Y-%m-%d %H:%M:%S", strict=False) + fraction(pl.col("frac")))
    old = (pl.concat_str([pl.col("year"), pl.col("odate").str.replace_all(" +", " ")], separator=" ")
           .str.strptime(pl.Datetime("us"), "%Y %b %d %H:%M:%S", strict=False) + fraction(pl.col("ofrac")))
    ts = pl.when(pl.col("date").is_not_null()).then(offset_to_utc(new, pl.col("off"), ctx.tz)).otherwise(
        offset_to_utc(old, pl.lit(None, pl.String), ctx.tz))
    severity = pl.when(pl.col("kind") == "gpfs_long_waiters").then(pl.lit("warning")).when(
        pl.col("level").is_in(["E", "X", "A"])).then(pl.lit("error")).otherwise(pl.lit("warning"))
    out.add("events", frame.filter(pl.col("kind").is_not_null()).select(
        pl.col("line").cast(pl.Int64), ts.cast(TABLE_COLUMNS["events"]["ts"]).alias("ts"),
        "host", "kind", pl.lit("filesystem_io").alias("failure_mode"), severity.alias("severity"),
        pl.lit(None, pl.Int32).alias("xid"), pl.lit(None, pl.String).alias("pci_bus"), "text",
        json_detail({"level": pl.col("level"), "message": pl.col("msg").str.slice(0, 500)}).fill_null("{}")
        .alias("detail"),
    ))
    return out
