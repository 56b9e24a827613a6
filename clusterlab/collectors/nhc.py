"""Node Health Check's own log (LBNL NHC: `/var/log/nhc.log`, azurehpc-health-checks' `health.log`) → its verdicts.

NHC logs the check that failed first, and why, on one line, led by the time in seconds since the epoch:

    [1705939176] - ERROR:  nhc:  Health check failed:  check_hw_ib:  No IB port mlx5_ib5:1 is ACTIVE (LinkUp 400
        Gb/sec).                                                                        (one line)

(run by hand it prints the same without the time: `ERROR:  nhc:  Health check failed:  check_...`). The check says
what failed, as in the note NHC leaves on a Slurm node (`_slurmlib.NHC_CHECK_MODES`): an InfiniBand or Ethernet check
the network, a file system check the storage, a GPU check the GPU; any other check only that the node failed
(`node_failure`). NHC's DEBUG and INFO lines, and a check that passed, give nothing.
"""

from __future__ import annotations

import polars as pl

from clusterlab.collectors._base import TABLE_COLUMNS, Context, Parsed, json_detail, search
from clusterlab.collectors._slurmlib import node_reason_mode

NAME = "nhc"
EXCLUSIVE = False

PATTERN = r"Health check failed:\s+check_\w+"
SNIFF_HINT = (b"health check failed:",)
_LINE = r"^(?:\[(\d{9,11})\] - )?.*?Health check failed:\s+(check_\w+):?\s*(.*)$"


def sniff(head: bytes, path: str) -> bool:
    """A failed NHC check in the head."""
    return search(head.decode("utf-8", "replace"), PATTERN)


def parse(lines: pl.DataFrame, ctx: Context) -> Parsed:
    """One event per failed check, its mode the check's."""
    out = Parsed()
    text = pl.col("text")
    check = text.str.extract(_LINE, 2)
    epoch = text.str.extract(_LINE, 1).cast(pl.Int64, strict=False)
    out.add("events", lines.select(
        pl.col("line").cast(pl.Int64),
        pl.from_epoch(epoch, time_unit="s").cast(TABLE_COLUMNS["events"]["ts"]).alias("ts"),
        pl.lit(ctx.host, pl.String).alias("host"), pl.lit("nhc_check_failed").alias("kind"),
        pl.coalesce(node_reason_mode(pl.format("NHC: {}", check)), pl.lit("node_failure")).alias("failure_mode"),
        pl.lit("error").alias("severity"), text.str.strip_chars().alias("text"),
        json_detail({"check": check, "message": text.str.extract(_LINE, 3).str.strip_chars().str.slice(0, 500)})
        .fill_null("{}").alias("detail"),
    ))
    return out
