"""A group's lines and rows: numbering many files' lines as one frame, and handing the rows parsed from it back to
each file as parsing it alone would have (shared by `groups`, for structured formats, and `groups_text`)."""

from __future__ import annotations

from types import ModuleType

import polars as pl

from clusterlab.collectors._base import FILE_LINE_BASE, Context
from clusterlab.ingest.parse import ParsedFile, _fill_ts, _keep, aligned_rows
from clusterlab.tables import evidence_schema

BASE = FILE_LINE_BASE  # line numbers of a group: file index x BASE + the file's own line
Item = tuple[ParsedFile, Context, str | bytes]  # a file, its context, its text (UTF-8 bytes in structured groups)


def numbered_lines(items: list[Item]) -> pl.DataFrame:
    """(`_file`, `line`, `text`) of every file, numbered as the line reader numbers them."""
    texts = [_str(t) for _, _, t in items]
    texts = [t[:-1] if t.endswith("\n") else t for t in texts]
    lines = (pl.DataFrame({"_file": range(len(items)), "text": texts}, schema={"_file": pl.Int64, "text": pl.String})
             .with_columns(pl.col("text").str.split("\n")).explode("text")
             .with_columns(line=(pl.col("_file") * BASE) + pl.int_range(1, pl.len() + 1).over("_file")))
    if any("\r" in t for t in texts):
        lines = lines.with_columns(pl.col("text").str.strip_suffix("\r"))
    return lines


def _str(text: str | bytes) -> str:
    return text.decode("utf-8") if isinstance(text, bytes) else text


def read_state(out: ParsedFile, text: str | bytes) -> None:
    """What reading the whole file line by line would have recorded."""
    st = out.state
    data = text if isinstance(text, bytes) else text.encode("utf-8") if not text.isascii() else None
    if data is None:  # ASCII text: its characters are its bytes (no copy)
        size, nl, cut = len(text), text.count("\n"), text.rfind("\n")
    else:
        size, nl, cut = len(data), data.count(b"\n"), data.rfind(b"\n")
    st.text_bytes = size
    closed = size > 0 and cut + 1 == size  # it ends with a line break
    st.lines, st.last_line_open = nl + (not closed), not closed
    st.last_line_start = size if closed else cut + 1


def split_rows(items: list[Item], c: ModuleType, table: str, frame: pl.DataFrame,
                known: pl.DataFrame | None = None) -> None:
    """The group's rows of one table, filled and aligned as each file's own parse would, handed to each file.

    `known`: the stamped (line, ts) of every table the files gave (a text file's lines take the time of any
    collector's line before them); by default the table's own."""
    # NOTE: all in a few calls over the whole group: per-file calls are the toll grouping exists to avoid
    ctxs = [ctx for _, ctx, _ in items]
    meta = pl.DataFrame(
        {"_file": range(len(items)), "_fid": [out.plan.file_id for out, _, _ in items],
         "_run": [x.run for x in ctxs], "_attempt": [x.attempt for x in ctxs], "_host": [x.host for x in ctxs]},
        schema={"_file": pl.Int64, "_fid": pl.Int64, "_run": pl.String, "_attempt": pl.Int32, "_host": pl.String})
    frame = frame.with_columns(_file=pl.col("line") // BASE, line=pl.col("line") % BASE)
    if table != "jobs" and "ts" in frame.columns and frame["ts"].null_count():
        # NOTE: rare (records without a time): each file's own stamped rows fill them, as when parsed alone
        stamps = (frame.select("_file", "line", "ts") if known is None else known.select(
            _file=pl.col("line") // BASE, line=pl.col("line") % BASE, ts="ts"))
        frame = _fill_ts(frame, stamps.filter(pl.col("ts").is_not_null()), table, by="_file")
    frame = frame.join(meta, on="_file", how="left", maintain_order="left")
    schema = evidence_schema(table)
    frame = frame.with_columns(file_id=pl.col("_fid"), source=pl.lit(c.NAME), run=pl.col("_run"),
                               attempt=pl.col("_attempt"))
    if "host" in schema and getattr(c, "FILL_HOST", True):
        frame = frame.with_columns(pl.col("host").fill_null(pl.col("_host")) if "host" in frame.columns
                                   else pl.col("_host").alias("host"))
    aligned, lost = aligned_rows(frame, schema, keep=("_file",))
    _report_lost(items, frame, lost)
    files = aligned["_file"]
    if files.is_sorted():
        # NOTE: each file's rows are one run: handed out as slices of the group's frame, not copied apart (the
        # worker packs them into one again)
        aligned = aligned.drop("_file")
        runs = files.rle()
        offset = 0
        for i, n in zip(runs.struct.field("value").to_list(), runs.struct.field("len").to_list(), strict=True):
            _keep(items[int(i)][0], table, aligned.slice(offset, n))
            offset += n
        return
    for (i,), part in aligned.partition_by("_file", maintain_order=True, include_key=False, as_dict=True).items():
        _keep(items[int(i)][0], table, part)


def file_slices(frame: pl.DataFrame) -> dict[int, pl.DataFrame]:
    """`frame`'s rows by `_file` (dropped), each file's rows a slice of it: sorted by `_file` first where needed.

    NOTE: a slice costs microseconds where a partition (or a filter) costs a fifth of a millisecond a file."""
    if not frame["_file"].is_sorted():
        frame = frame.sort("_file", maintain_order=True)
    runs = frame["_file"].rle()
    body, out, offset = frame.drop("_file"), {}, 0
    for i, n in zip(runs.struct.field("value").to_list(), runs.struct.field("len").to_list(), strict=True):
        out[int(i)] = body.slice(offset, n)
        offset += n
    return out


def _report_lost(items: list[Item], frame: pl.DataFrame, lost: dict[str, pl.Series]) -> None:
    """Values a column could not hold (`aligned_rows`), reported per file as `_aligned` reports them (five a file)."""
    if not lost:
        return
    changed = list(lost)
    flags = pl.DataFrame(lost).with_columns(_line=frame["line"], _file=frame["_file"])
    flagged = flags.filter(pl.any_horizontal(changed)).group_by("_file", maintain_order=True).head(5)
    for row in flagged.iter_rows(named=True):
        out, ctx, _ = items[row["_file"]]
        msg = f"{ctx.path}:{row['_line']}: {', '.join(k for k in changed if row[k])} out of range, left empty"
        if msg not in out.result.messages and len(out.result.messages) < 50:
            out.result.messages.append(msg)
