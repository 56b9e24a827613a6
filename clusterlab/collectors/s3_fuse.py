"""S3 buckets mounted as filesystems (Mountpoint for Amazon S3, s3fs-fuse): a file operation the mount failed because
S3 did → filesystem_io events.

Both daemons log to syslog (the journal) by default; Mountpoint also to its own files (`--log-directory`):

    Nov  7 03:12:44 gpu-c21 mount-s3[51277]: [WARN] ThreadId(12) fsync{req=882113 ino=41 fh=17 ...}:
        mountpoint_s3_fs::fuse: fsync failed with errno 5: put failed: put request failed: Client error: ...
    2026-03-02T10:00:01.123456Z  WARN write{req=52 ino=49 fh=3 offset=512 length=512}: mountpoint_s3::fuse: write
        failed: upload error: out of order write; expected offset 0 but got 512        (Mountpoint's own file)
    Feb 14 17:00:17 ip-10-1-2-3 s3fs[22616]: curl.cpp:RequestPerform(2459): HTTP response code 500, returning EIO.

A Mountpoint operation that failed for S3's sake (a request S3 failed, timed out or throttled; `errno 5`, EIO, to
the caller) is the storage failing the job: `filesystem_io`. One it refused for the caller's (a write out of order
or over an existing object, which Mountpoint does not support; a key the role may not read; a name that is not
there) is a notice of no mode: the training code did something the mount cannot do. s3fs answering EIO for an
HTTP 5xx from S3 is the storage; its 4xx (EPERM, ENOENT) are the caller's. The line's time is its syslog or file
prefix (`_kernel_time`), its host the node's.
"""

from __future__ import annotations

import polars as pl

from clusterlab.collectors import _kernel_time
from clusterlab.collectors._base import Context, Parsed, json_detail, search

NAME = "s3_fuse"
EXCLUSIVE = False

_MOUNTPOINT = r"mountpoint_s3(?:_fs)?::fuse: (\w+) failed(?: with errno (\d+))?: "
_S3FS = r"\bRequestPerform\(\d+\): HTTP response code (\d{3}), returning (E[A-Z]+)"
PATTERN = f"{_MOUNTPOINT}|{_S3FS}"
SNIFF_HINT = (b"mountpoint_s3", b"returning eio")
# what Mountpoint refuses for the caller's sake, not S3's: its write semantics, permissions, names
_CALLERS = (r"out of order write|not supported|[Ff]orbidden|AccessDenied|not authorized|InvalidAccessKeyId"
            r"|NoSuchBucket|[Nn]ot permitted|already exists|[Nn]o such (?:file|key)|NotFound|[Ii]s a directory"
            r"|[Rr]ead-only|inode \d+ is not a|unable to unwrap file handle")


def sniff(head: bytes, path: str) -> bool:
    """A Mountpoint or s3fs operation failure in the head."""
    return search(head.decode("utf-8", "replace"), PATTERN)


def parse(lines: pl.DataFrame, ctx: Context) -> Parsed:
    """One event per failed operation: filesystem_io where S3 failed it, no mode where the caller's request did."""
    out = Parsed()
    text = pl.col("text")
    lines = _kernel_time.dated(lines, ctx)
    op = text.str.extract(_MOUNTPOINT, 1)
    errno = text.str.extract(_MOUNTPOINT, 2).cast(pl.Int32, strict=False)
    http = text.str.extract(_S3FS, 1).cast(pl.Int32, strict=False)
    storage = (pl.when(op.is_not_null()).then(~text.str.contains(_CALLERS) & errno.fill_null(5).is_in([5, 110]))
               .otherwise(http >= 500))
    out.add("events", lines.select(
        pl.col("line").cast(pl.Int64), "ts", pl.lit(ctx.host, pl.String).alias("host"),
        pl.when(storage).then(pl.lit("s3_mount_io_error")).otherwise(pl.lit("s3_mount_refused")).alias("kind"),
        pl.when(storage).then(pl.lit("filesystem_io")).alias("failure_mode"),
        pl.when(storage).then(pl.lit("error")).otherwise(pl.lit("info")).alias("severity"),
        text.str.strip_chars().alias("text"),
        json_detail({"operation": op, "errno": errno, "http_status": http,
                     "errno_name": text.str.extract(_S3FS, 2)}).fill_null("{}").alias("detail"),
    ))
    return out
