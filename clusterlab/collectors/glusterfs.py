"""GlusterFS logs (a FUSE mount's `/var/log/glusterfs/<mount>.log`, gfapi, bricks) → shared-filesystem errors.

Every GlusterFS daemon and client writes one line format:

    [2026-03-02 10:11:12.345678 +0000] W [MSGID: 114031] [client-rpc-fops_v2.c:2561:client4_0_lookup_cbk]
        0-gv0-client-1: remote operation failed [Stale file handle]        (one line)
    [2026-03-02 10:11:12.351002] W [fuse-bridge.c:1054:fuse_entry_cbk] 0-glusterfs-fuse: 88213: LOOKUP()
        /data => -1 (Stale file handle)                                  (one line)

a time (UTC unless the log says otherwise: GlusterFS logs in UTC by default and newer releases print the offset),
a level letter (T D I N W E C A: trace to alert), an optional message id, the source file, line and function, the
translator (`0-<volume>-<xlator>`) and the message. Only what a training job feels is read: a stale file handle
(the file or directory the job held changed under it), the mount losing its bricks (`Transport endpoint is not
connected`, a brick that stopped answering pings, `All subvolumes are down`), I/O errors, split-brain and a read-only
volume when quorum is lost. Each is `filesystem_io`; its severity is the line's level (W: warning, E and above: error).
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

NAME = "glusterfs"
FILE_HOST_COLUMN = True  # parsed with other files, the lines carry their file's host (ctx.host) as `file_host`
EXCLUSIVE = True
SNIFF_HINT = (b".c:",)

# NOTE: the opening bracket is optional: pasted excerpts lose it; the level is separated by one or more spaces
_LINE = (r"^\[?(?P<date>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)(?:\.(?P<frac>\d+))?(?: (?P<off>[+-]\d{4}))?\] +"
         r"(?P<level>[TDINWECA]) (?:\[MSGID: (?P<msgid>\d+)\] )?\[(?P<src>[\w.-]+\.c):(?P<srcline>\d+):(?P<func>\w+)\] "
         r"(?P<xlator>[^\s:]+): (?P<msg>.*)$")
_STALE = r"Stale file handle"
_GONE = (r"Transport endpoint is not connected|All subvolumes are down|has not responded in the last \d+ seconds"
         r"|disconnected from \S+|Connection refused")
_IO = r"Input/output error|split-brain|Read-only file system|[Cc]lient-quorum is not met"
_READ = "|".join([_STALE, _GONE, _IO])
PATTERN = rf"^\[?\d{{4}}-\d\d-\d\d \d\d:\d\d:\d\d[^\]]*\] +[WECA] .*(?:{_READ})"


@dataclass(frozen=True)
class _Rule:
    regex: str
    kind: str


# the first rule that matches the message names the kind
RULES = [_Rule(_STALE, "gluster_stale_file_handle"), _Rule(_GONE, "gluster_disconnected"),
         _Rule(_IO, "gluster_io_error")]


def GROUP_CONTEXT(ctx: Context) -> tuple:  # noqa: N802  (a collector's contract names are capitals)
    """What parse() reads of the context (each line is read on its own, its time in UTC or its printed offset, its
    host the file's: `file_host`): any GlusterFS logs may be parsed together."""
    return ()


def sniff(head: bytes, path: str) -> bool:
    """A GlusterFS log: most of its first lines are in GlusterFS's line format."""
    return most_lines_match(head, _LINE)


def parse(lines: pl.DataFrame, ctx: Context) -> Parsed:
    """One event per stale handle, lost brick or I/O error line of the batch."""
    out = Parsed()
    frame = read_line_format(lines, ctx, _LINE, out)
    if not frame.height:
        return out
    frame = _classify(frame)
    local = pl.col("date").str.strptime(pl.Datetime("us"), "%Y-%m-%d %H:%M:%S", strict=False) + fraction(pl.col("frac"))
    # NOTE: without a printed offset the time is UTC (GlusterFS's default), not the node's zone
    ts = offset_to_utc(local, pl.col("off"), "UTC")
    out.add("events", frame.filter(pl.col("kind").is_not_null()).select(
        pl.col("line").cast(pl.Int64), ts.cast(TABLE_COLUMNS["events"]["ts"]).alias("ts"),
        "host", "kind", pl.lit("filesystem_io").alias("failure_mode"),
        pl.when(pl.col("level") == "W").then(pl.lit("warning")).otherwise(pl.lit("error")).alias("severity"),
        pl.lit(None, pl.Int32).alias("xid"), pl.lit(None, pl.String).alias("pci_bus"), "text",
        json_detail({"level": pl.col("level"), "msgid": pl.col("msgid").cast(pl.Int64, strict=False),
                     "source": pl.concat_str([pl.col("src"), pl.col("srcline")], separator=":"),
                     "function": pl.col("func"), "xlator": pl.col("xlator"),
                     "message": pl.col("msg").str.slice(0, 500)}).fill_null("{}").alias("detail"),
    ))
    return out


def _classify(frame: pl.DataFrame) -> pl.DataFrame:
    """The frame with `kind`: the first rule whose regex matches the message (null: none)."""
    return classify(frame, RULES, col="msg", index="_rule").drop("_rule")
