"""BlobFuse2 logs (Azure Blob Storage mounted with FUSE; the blob CSI driver's mounts on AKS) → I/O errors.

BlobFuse2 writes one record a line, to syslog (its default) or to its own file (`logging: type: base`):

    Mar 11 05:40:12 nd-h100-v5-03 blobfuse2[6612]: [/mnt/blob/data] LOG_ERR [block_cache.go (1050)]:
        BlockCache::download : Failed to read 212=>shards/train-00412.tar from offset 0 [bad file descriptor]
    Wed Oct  9 06:03:58 UTC 2024 : blobfuse2[3214717] : [/mnt/blob] LOG_ERR [libfuse_handler.go (792)]:
        Libfuse::libfuse_write : error writing file iter_0020000/mp_rank_00/model_optim_rng.pt, handle: 162696 [...]

(each one line): the time (syslog's, or Go's UnixDate with its zone), the process, the mount point in brackets, the
level (LOG_CRIT, LOG_ERR, LOG_WARNING, LOG_INFO, LOG_DEBUG, LOG_TRACE), the source file and line, and the
component's message. What a training job feels is a read, write or flush the mount failed, in the FUSE layer
(`Libfuse::libfuse_read : error reading file ...`) or the caches and the storage below it (`BlockCache::download :
Failed to read ...`, `BlockCache::upload : Failed to stage ...`, `AzStorage::... : Failed to ...` of a blob): each
LOG_ERR record of one is `filesystem_io`. Other LOG_ERR records (a configuration error at mount time, a name that
does not exist) and the start-up lines BlobFuse2 logs at LOG_CRIT whatever its level give nothing.
"""

from __future__ import annotations

import polars as pl

from clusterlab.collectors._base import (
    TABLE_COLUMNS,
    Context,
    Parsed,
    json_detail,
    local_to_utc,
    most_lines_match,
    syslog_time,
    year_context,
)

NAME = "blobfuse2"
EXCLUSIVE = True
SNIFF_HINT = (b"blobfuse2[",)

_SYSLOG = r"(?P<stamp>[A-Z][a-z]{2} +\d+ \d\d:\d\d:\d\d) (?P<host>\S+) blobfuse2\[\d+\]: "
_BASE = (r"[A-Z][a-z]{2} (?P<mon>[A-Z][a-z]{2}) +(?P<day>\d+) (?P<clock>\d\d:\d\d:\d\d) (?P<zone>[A-Z]+) "
         r"(?P<year>\d{4}) : blobfuse2\[\d+\] : ")
_RECORD = (r"\[(?P<mount>[^\]]*)\] (?P<level>LOG_[A-Z]+) \[(?P<src>[\w.]+) \((?P<srcline>\d+)\)\]: "
           r"(?P<msg>.*)$")
_LINE = rf"^(?:{_SYSLOG}|{_BASE}){_RECORD}"
# a data-path operation failed: the FUSE call, or the cache / storage request under it
_IO = (r"(?i)error (?:reading|writing|flushing|syncing|truncating) file|failed to (?:read|write|stage|upload|download"
       r"|commit|flush|get block list)\b")
PATTERN = r"blobfuse2\[\d+\]:? :? ?\[[^\]]*\] LOG_(?:ERR|CRIT) "


def GROUP_CONTEXT(ctx: Context) -> tuple:  # noqa: N802  (a collector's contract names are capitals)
    """What parse() reads of the context: the zone and the year (syslog prints none), the host."""
    return ctx.tz, ctx.host, year_context(ctx)


def sniff(head: bytes, path: str) -> bool:
    """A BlobFuse2 log: most of its first lines are BlobFuse2 records."""
    return most_lines_match(head, _LINE)


def parse(lines: pl.DataFrame, ctx: Context) -> Parsed:
    """One filesystem_io event per LOG_ERR record of a failed read, write or flush."""
    out = Parsed()
    frame = lines.select("line", "text", pl.col("text").str.extract_groups(_LINE).alias("_g")).unnest("_g")
    out.unparsed_lines = frame.filter(pl.col("msg").is_null())["line"]
    out.unparsed = len(out.unparsed_lines)
    frame = frame.filter((pl.col("level") == "LOG_ERR") & pl.col("msg").str.contains(_IO))
    if not frame.height:
        return out
    base = pl.concat_str([pl.col("year"), pl.col("mon"), pl.col("day"), pl.col("clock")], separator=" ") \
        .str.strptime(pl.Datetime("us"), "%Y %b %d %H:%M:%S", strict=False)
    ts = pl.coalesce(local_to_utc(syslog_time(pl.col("stamp"), ctx), ctx.tz),
                     pl.when(pl.col("zone") == "UTC").then(base).otherwise(local_to_utc(base, ctx.tz)))
    out.add("events", frame.select(
        pl.col("line").cast(pl.Int64), ts.cast(TABLE_COLUMNS["events"]["ts"]).alias("ts"),
        pl.coalesce(pl.col("host"), pl.lit(ctx.host, pl.String)).alias("host"),
        pl.lit("blobfuse_io_error").alias("kind"), pl.lit("filesystem_io").alias("failure_mode"),
        pl.lit("error").alias("severity"), pl.lit(None, pl.Int32).alias("xid"),
        pl.lit(None, pl.String).alias("pci_bus"), "text",
        json_detail({"level": pl.col("level"), "mount": pl.col("mount"),
                     "source": pl.concat_str([pl.col("src"), pl.col("srcline")], separator=":"),
                     "message": pl.col("msg").str.slice(0, 500)}).fill_null("{}").alias("detail"),
    ))
    return out
