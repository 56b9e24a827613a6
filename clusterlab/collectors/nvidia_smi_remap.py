"""`nvidia-smi --query-remapped-rows=... --format=csv` → one event per GPU whose row remapper needs something.

The query (`nvidia-smi --help-query-remapped-rows`) prints a header of the fields asked for, then one line per GPU:

    gpu_bus_id, remapped_rows.correctable, remapped_rows.uncorrectable, remapped_rows.pending, remapped_rows.failure
    00000000:3A:00.0, 1, 4, Yes, No

(`gpu_uuid` may name the GPU instead of, or beside, its bus; a loop prints the header again). The states mean what
`nvidia-smi -q`'s `Remapped Rows` section means (the nvidia_smi collector, after NVIDIA's GPU memory error
management guide): a remapping failure is memory that cannot be repaired (`gpu_memory_ecc`, critical: replace the
GPU); a pending remap waits for a GPU reset (`gpu_memory_ecc`, error); rows remapped for uncorrectable errors with
nothing pending are history (a warning, no mode); all zero and No is a healthy GPU (no event). The host is the
bundle's; the query prints no time.
"""

from __future__ import annotations

import polars as pl

from clusterlab.collectors._base import TABLE_COLUMNS, Context, Parsed, json_detail

NAME = "nvidia_smi_remap"
EXCLUSIVE = True
SNIFF_HINT = (b"remapped_rows.",)
PATTERN = None
GROUPABLE = False

_FIELDS = ["gpu_bus_id", "remapped_rows.correctable", "remapped_rows.uncorrectable", "remapped_rows.pending",
           "remapped_rows.failure"]
_YES = ["yes", "1", "true"]


def _header(line: str) -> list[str] | None:
    """The query's field names where `line` is its header."""
    fields = [f.strip().lower() for f in line.split(",")]
    return fields if any(f.startswith("remapped_rows.") for f in fields) else None


def sniff(head: bytes, path: str) -> bool:
    """A remapped-rows query: its header is the first non-blank line."""
    first = next((ln for ln in head.decode("utf-8", "replace").splitlines() if ln.strip()), "")
    return _header(first) is not None


def parse(lines: pl.DataFrame, ctx: Context) -> Parsed:
    """One event per GPU line that shows a failure, a pending remap or remapped rows."""
    out = Parsed()
    fields, rows, unread = _FIELDS, [], []
    for line, text in lines.select("line", "text").iter_rows():
        if not text.strip():
            continue
        head = _header(text)
        if head is not None:
            fields = head
            continue
        values = [v.strip() for v in text.split(",")]
        if len(values) != len(fields):
            unread.append(line)
            continue
        rows.append({"line": line, **dict(zip(fields, values, strict=True))})
    out.unparsed_lines = pl.Series("line", unread, pl.Int64)
    out.unparsed = len(unread)
    if not rows:
        return out
    g = pl.DataFrame(rows, infer_schema_length=None).with_columns(
        [pl.lit(None, pl.String).alias(f) for f in [*_FIELDS, "gpu_uuid"] if f not in {k for r in rows for k in r}])
    num = {f: pl.col(f).cast(pl.Int64, strict=False) for f in ("remapped_rows.correctable",
                                                                 "remapped_rows.uncorrectable")}
    failed = pl.col("remapped_rows.failure").str.to_lowercase().is_in(_YES)
    pending = pl.col("remapped_rows.pending").str.to_lowercase().is_in(_YES)
    history = num["remapped_rows.uncorrectable"].fill_null(0) > 0
    kind = (pl.when(failed).then(pl.lit("row_remap_failure")).when(pending).then(pl.lit("row_remap_pending"))
            .when(history).then(pl.lit("ecc_history")))
    gpu = pl.coalesce(pl.col("gpu_bus_id"), pl.col("gpu_uuid"))
    bus = pl.col("gpu_bus_id").str.to_lowercase().str.extract_groups(
        r"^(?P<dom>[0-9a-f]{4,8}):(?P<b>[0-9a-f]{2}):(?P<d>[0-9a-f]{2})")
    out.add("events", g.with_columns(kind=kind).filter(pl.col("kind").is_not_null()).select(
        pl.col("line").cast(pl.Int64), pl.lit(None, TABLE_COLUMNS["events"]["ts"]).alias("ts"),
        pl.lit(ctx.host, pl.String).alias("host"), "kind",
        pl.when(failed | pending).then(pl.lit("gpu_memory_ecc")).otherwise(pl.lit(None, pl.String))
        .alias("failure_mode"),
        pl.when(failed).then(pl.lit("critical")).when(pending).then(pl.lit("error")).otherwise(pl.lit("warning"))
        .alias("severity"),
        pl.lit(None, pl.Int32).alias("xid"),
        # `0000:3a:00`, the kernel collector's spelling
        pl.concat_str([bus.struct.field("dom").str.slice(-4), bus.struct.field("b"), bus.struct.field("d")],
                      separator=":").alias("pci_bus"),
        pl.format("nvidia-smi --query-remapped-rows: GPU {}: {}", gpu, pl.col("kind")).alias("text"),
        json_detail({"gpu": gpu, "correctable": num["remapped_rows.correctable"],
                     "uncorrectable": num["remapped_rows.uncorrectable"],
                     "pending": pending, "failure": failed,
                     "action": pl.when(failed).then(pl.lit("drain node")).when(pending).then(pl.lit("reset GPU"))})
        .fill_null("{}").alias("detail"),
    ))
    return out
