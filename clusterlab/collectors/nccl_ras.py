"""NCCL RAS reports (`ncclras`, NCCL 2.24+, text format) → one event per communicator group that RAS finds wrong.

The report's communicator table has one row a group of communicators, its last two columns the status and the
errors RAS found (comma-separated):

    Group     Comms     Nodes     Ranks     Ranks     Ranks    Status  Errors
        #  in group  per comm  per node  per comm  in group
        0         1         4         8        32        32   RUNNING  MISMATCH

What the errors mean:
- `MISMATCH`: the ranks of a communicator have launched different numbers of a collective: some wait in a
  collective the others never reach, the hang a watchdog later reports as a timeout (nccl_timeout, error).
- `INCOMPLETE`: RAS has no data from some ranks or processes (dead, or not answering): the cause is not named
  (unknown, error).
- `ERROR`: ranks report asynchronous NCCL errors (unknown, error).
- `OK`: nothing (no event).
The report names no host and no time of its own: its events are undated, on the file's host.
"""

from __future__ import annotations

import re

import polars as pl

from clusterlab.collectors._base import TABLE_COLUMNS, Context, Parsed, json_detail

NAME = "nccl_ras"
FILE_HOST_COLUMN = True  # parsed with other files, the lines carry their file's host (ctx.host) as `file_host`
EXCLUSIVE = False  # a report is often pasted with the trainer's own lines (a watchdog timeout after it)
SNIFF_HINT = (b"communicators",)

_ROW = (r"^\s*(?P<group>\d+)\s+(?P<comms>\d+)\s+(?P<nodes>\d+)\s+\d+\s+(?P<ranks>\d+)\s+\d+\s+"
        r"(?P<status>RUNNING|INIT|FINALIZE|ABORT|NOCOMM|UNKNOWN)\s+(?P<errors>[A-Z]+(?:,[A-Z]+)*)\s*$")
PATTERN = _ROW
_HEADER = re.compile(r"^Group\s+Comms\s+Nodes\s+Ranks\s+Ranks\s+Ranks\s+Status\s+Errors\s*$", re.M)
# the failure mode of each error RAS names, the first of a row's errors in this order deciding
_ERRORS = {"MISMATCH": "nccl_timeout", "ERROR": "unknown", "INCOMPLETE": "unknown"}


def GROUP_CONTEXT(ctx: Context) -> tuple:  # noqa: N802  (a collector's contract names are capitals)
    """Nothing of the context is read but the host (`file_host`): any RAS reports may be parsed together."""
    return ()


def sniff(head: bytes, path: str) -> bool:
    """A RAS report: its communicator table's header line and at least one row under it."""
    text = head.decode("utf-8", "replace")
    return _HEADER.search(text) is not None and re.search(_ROW, text, re.M) is not None


def parse(lines: pl.DataFrame, ctx: Context) -> Parsed:
    """One event per table row whose errors are not `OK`."""
    out = Parsed()
    own = pl.col("file_host") if "file_host" in lines.columns else pl.lit(ctx.host, pl.String)
    rows = lines.select("line", own.alias("host"), pl.col("text").str.extract_groups(_ROW).alias("_r")).unnest("_r")
    errors = pl.col("errors").str.split(",")
    mode = pl.lit(None, pl.String)
    for name, m in reversed(_ERRORS.items()):  # the first in _ERRORS's order wins
        mode = pl.when(errors.list.contains(name)).then(pl.lit(m)).otherwise(mode)
    bad = rows.filter(pl.col("errors").is_not_null() & (pl.col("errors") != "OK"))
    out.unparsed_lines = rows.filter(pl.col("errors").is_null())["line"]
    out.unparsed = len(out.unparsed_lines)
    if not bad.height:
        return out
    out.add("events", bad.select(
        pl.col("line").cast(pl.Int64), pl.lit(None, TABLE_COLUMNS["events"]["ts"]).alias("ts"), "host",
        pl.format("nccl_ras_{}", pl.col("errors").str.split(",").list.first().str.to_lowercase()).alias("kind"),
        mode.alias("failure_mode"), pl.lit("error").alias("severity"), pl.lit(None, pl.Int32).alias("xid"),
        pl.lit(None, pl.String).alias("pci_bus"),
        pl.format("NCCL RAS: communicator group {} ({} comms, {} ranks on {} nodes): {}, errors {}", "group",
                  "comms", "ranks", "nodes", "status", "errors").alias("text"),
        json_detail({"group": pl.col("group").cast(pl.Int32), "comms": pl.col("comms").cast(pl.Int32),
                     "ranks": pl.col("ranks").cast(pl.Int32), "nodes": pl.col("nodes").cast(pl.Int32),
                     "status": pl.col("status"), "errors": pl.col("errors")}).fill_null("{}").alias("detail"),
    ))
    return out
