"""Cloud Storage FUSE (gcsfuse) logs, its text and its JSON form (`--log-format`, the GKE CSI sidecar's) → I/O errors.

gcsfuse 1.x-3.x writes each record on one line, in one of two forms:

    time="03/11/2026 04:18:52.120991" severity=ERROR message="ReadFile: input/output error, fh.reader.ReadAt: ..."
    {"timestamp":{"seconds":1773207161,"nanos":405530021},"severity":"ERROR","message":"fuse: *fuseops.FlushFileOp
        error: input/output error"}                                          (one line)

(the JSON form before 2.0: `{"name":"root","levelname":"ERROR","severity":"ERROR","message":"...",
"timestampSeconds":N,"timestampNanos":N}`). The text form's time is the node's local time (`ctx.tz`), the JSON
form's seconds since the epoch. What a training job feels is a file operation the mount answered with EIO: gcsfuse
logs the operation that failed (`ReadFile: input/output error, <why>`, `*fuseops.ReadFileOp error: input/output
error`) at ERROR: `filesystem_io`. Other ERROR records are no fault of the storage: an operation the caller
cancelled (`interrupted system call ... context canceled`), one FUSE does not implement, a name that does not
exist. INFO, DEBUG and TRACE records (the mount banner, fuse_debug's op trace) are read and give nothing.
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
)

NAME = "gcsfuse"
EXCLUSIVE = True
SNIFF_HINT = (b"severity",)

_QUOTED = r'((?:[^"\\]|\\.)*)'
_TEXT = r'^time="(\d\d/\d\d/\d{4} \d\d:\d\d:\d\d(?:\.\d+)?)" severity=([A-Z]+) message="' + _QUOTED + '"'
_JSON = r'^\{.*"severity":"([A-Z]+)".*"message":"' + _QUOTED + '"'
_JSON_SECONDS = r'"(?:timestamp":\{"seconds|timestampSeconds)":(\d+)'
_JSON_NANOS = r'"(?:nanos|timestampNanos)":(\d+)'
_LINE = rf"{_TEXT}|{_JSON}"
# the operation answered EIO (or the mount gone under it): the storage failed the caller
_IO = r"(?i)input/output error|transport endpoint is not connected"
PATTERN = r'severity(?:=|":")(?:ERROR|CRITICAL)\b.*(?i:input/output error|transport endpoint is not connected)'


def sniff(head: bytes, path: str) -> bool:
    """A gcsfuse log: most of its first lines are gcsfuse records, text or JSON."""
    return most_lines_match(head, _LINE)


def parse(lines: pl.DataFrame, ctx: Context) -> Parsed:
    """One filesystem_io event per operation the mount failed with an I/O error."""
    out = Parsed()
    text = pl.col("text")
    frame = lines.with_columns(
        sev=pl.coalesce(text.str.extract(_TEXT, 2), text.str.extract(_JSON, 1)),
        msg=pl.coalesce(text.str.extract(_TEXT, 3), text.str.extract(_JSON, 2)).str.replace_all(r'\\"', '"'),
        local=text.str.extract(_TEXT, 1).str.to_datetime("%m/%d/%Y %H:%M:%S%.f", time_unit="us", strict=False),
        secs=text.str.extract(_JSON_SECONDS, 1).cast(pl.Int64, strict=False),
        nanos=text.str.extract(_JSON_NANOS, 1).cast(pl.Int64, strict=False),
    )
    out.unparsed_lines = frame.filter(pl.col("msg").is_null())["line"]
    out.unparsed = len(out.unparsed_lines)
    frame = frame.filter(pl.col("msg").is_not_null() & pl.col("msg").str.contains(_IO))
    if not frame.height:
        return out
    # NOTE: before 2.0 'timestampNanos' could hold the whole time in nanoseconds: only a fraction of a second is added
    micros = pl.col("secs") * 1_000_000 + pl.when(pl.col("nanos") < 1_000_000_000).then(pl.col("nanos") // 1000) \
        .otherwise(0).fill_null(0)
    ts = pl.coalesce(local_to_utc(pl.col("local"), ctx.tz), pl.from_epoch(micros, time_unit="us"))
    out.add("events", frame.select(
        pl.col("line").cast(pl.Int64), ts.cast(TABLE_COLUMNS["events"]["ts"]).alias("ts"),
        pl.lit(ctx.host, pl.String).alias("host"), pl.lit("gcsfuse_io_error").alias("kind"),
        pl.lit("filesystem_io").alias("failure_mode"), pl.lit("error").alias("severity"),
        pl.lit(None, pl.Int32).alias("xid"), pl.lit(None, pl.String).alias("pci_bus"), "text",
        json_detail({"severity": pl.col("sev"), "operation": pl.col("msg").str.extract(r"(\w+(?:Op)?)(?::| error:)", 1),
                     "message": pl.col("msg").str.slice(0, 500)}).fill_null("{}").alias("detail"),
    ))
    return out
