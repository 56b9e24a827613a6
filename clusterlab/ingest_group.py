"""Many small files of one structured format parsed in one call: a fleet's per-rank step files.

A 1,024-node job writes one step file per rank and attempt: tens of thousands of files of a few hundred lines.
Parsed one by one, each pays a fixed toll of polars calls (a few milliseconds) larger than its reading. Files
whose format is GROUPABLE (its parse reads no context and each row depends on its own line) and that are read
whole, small and clean are instead joined into one frame whose line numbers carry the file (`index x 2^32
+ line`), parsed once, and split back. Whatever the grouping, a file gets exactly the rows, counts and messages
that parsing it alone gives (tests/test_ingest_parallel.py holds this on the samples and a simulated fleet).
"""

from __future__ import annotations

import datetime as dt
import gzip
import zlib
from pathlib import Path
from types import ModuleType

import polars as pl

from clusterlab.collectors._base import FILE_LINE_BASE, Context, evidence_schema
from clusterlab.ingest_group_text import parse_text_group, text_key
from clusterlab.ingest_parse import (
    FilePlan,
    ParsedFile,
    _fill_ts,
    _keep,
    finish,
    prepare,
    read_heads,
    unparsed_warnings,
)
from clusterlab.reader import GZIP_MAGIC, MAX_LINE_BYTES

BASE = FILE_LINE_BASE  # line numbers of a group: file index x BASE + the file's own line
GROUP_BYTES = 32 << 20  # decompressed bytes parsed in one call at most


def eligible(out: ParsedFile, chosen: list[ModuleType]) -> bool:
    """A whole small file of a GROUPABLE format (no over-long line possible, nothing read before)."""
    c = chosen[0] if len(chosen) == 1 else None
    return (c is not None and getattr(c, "GROUPABLE", False) and c.PATTERN is None and out.plan.skip == 0
            and out.plan.first == 1 and out.plan.clock is None and out.plan.size <= MAX_LINE_BYTES)


def read_whole(path: Path, raw: bytes | None = None, as_bytes: bool = False) -> str | bytes | None:
    """The file's text, or None where the line-by-line reader must handle it (damaged gzip, bad UTF-8, long).

    `raw`: its content, where it was read already; `as_bytes`: the text as UTF-8 (checked, not decoded)."""
    try:
        raw = path.read_bytes() if raw is None else raw
        data = gzip.decompress(raw) if raw[:2] == GZIP_MAGIC else raw
        if len(data) > MAX_LINE_BYTES:
            return None
        if as_bytes and data.isascii():  # (ASCII is UTF-8: no decoding to find out)
            return data
        text = data.decode("utf-8")
        return data if as_bytes else text
    except (OSError, EOFError, zlib.error, gzip.BadGzipFile, UnicodeDecodeError):
        return None


GROUP_FILES = True  # off: every file parsed alone (the tests compare the two)

Item = tuple[ParsedFile, Context, str | bytes]  # a file, its context, its text (UTF-8 bytes in structured groups)


def parse_many(plans: list[FilePlan], collectors: list[ModuleType] | None = None) -> list[ParsedFile]:
    """Every plan parsed, small files of a GROUPABLE format or small text logs together; results in order."""
    outs: list[ParsedFile] = []
    groups: dict[tuple, tuple[list[ModuleType], list[Item]]] = {}
    held: dict[tuple, int] = {}  # characters of text held per group
    for plan, head, present, raw in zip(plans, *read_heads(plans), strict=True):
        out, ctx, chosen = prepare(plan, collectors, head, present)
        outs.append(out)
        if not chosen:
            continue
        key = _group_key(out, ctx, chosen) if GROUP_FILES else None
        # NOTE: a structured group's text stays bytes: its native reader takes bytes (no decoding, no encoding)
        text = read_whole(plan.task.path, raw, key[0] == "structured") if key is not None else None
        if text is None:
            finish(out, ctx, chosen)
            continue
        _, items = groups.setdefault(key, (chosen, []))
        items.append((out, ctx, text))
        held[key] = held.get(key, 0) + len(text)
        if held[key] >= GROUP_BYTES:
            _parse_or_alone(key, *groups.pop(key))
            del held[key]
    for key, (chosen, items) in groups.items():
        _parse_or_alone(key, chosen, items)
    return outs


def _group_key(out: ParsedFile, ctx: Context, chosen: list[ModuleType]) -> tuple | None:
    if eligible(out, chosen):
        return ("structured", chosen[0].NAME)
    return text_key(out, ctx, chosen)


def _parse_or_alone(key: tuple, chosen: list[ModuleType], items: list[Item]) -> None:
    rest = parse_group(items, chosen[0]) if key[0] == "structured" else parse_text_group(items, chosen)
    for out, ctx, _ in rest:
        finish(out, ctx, chosen)


def parse_group(items: list[Item], c: ModuleType) -> list[Item]:
    """Parse the files together; returns the ones to parse alone (all of them, when the group fails)."""
    try:
        # clean files in one read without splitting lines (step records); else line by line
        got = c.parse_whole([t for _, _, t in items], BASE) if hasattr(c, "parse_whole") else None
        if got is None:
            got = c.parse(_numbered_lines(items).select("line", "text"), items[0][1])
    except (pl.exceptions.PolarsError, ArithmeticError, ValueError, TypeError, KeyError, IndexError):
        return items  # parsed alone, each with its own safety net
    if got.warnings or got.refuse:  # a message of its own: not one the group can split
        return items
    for out, _, text in items:
        _read_state(out, text)
    bad = (got.unparsed_lines if got.unparsed_lines is not None else pl.Series("line", [], pl.Int64))
    bad_by_file = bad.to_frame("line").with_columns(_file=pl.col("line") // BASE, line=pl.col("line") % BASE)
    for i, (out, ctx, _) in enumerate(items):
        mine = bad_by_file.filter(pl.col("_file") == i)["line"] if bad_by_file.height else None
        out.result.unparsed += 0 if mine is None else len(mine)
        for w in unparsed_warnings(c, mine):
            msg = f"{ctx.path}:{w.removeprefix('line ')}"
            if msg not in out.result.messages and len(out.result.messages) < 50:
                out.result.messages.append(msg)
    for table, frame in got.tables.items():
        if frame.height:
            _split_rows(items, c, table, frame)
    return []


def _numbered_lines(items: list[Item]) -> pl.DataFrame:
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


def _read_state(out: ParsedFile, text: str | bytes) -> None:
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


def _split_rows(items: list[Item], c: ModuleType, table: str, frame: pl.DataFrame,
                known: pl.DataFrame | None = None) -> None:
    """The group's rows of one table, filled and aligned as each file's own parse would, handed to each file.

    `known`: the stamped (line, ts) of every table the files gave (a text file's lines take the time of any
    collector's line before them); by default the table's own."""
    # NOTE: all in a few calls over the whole group: per-file calls are the toll grouping exists to avoid
    ctxs = [ctx for _, ctx, _ in items]
    meta = pl.DataFrame(
        {"_file": range(len(items)), "_fid": [out.plan.file_id for out, _, _ in items],
         "_run": [x.run for x in ctxs], "_attempt": [x.attempt for x in ctxs], "_host": [x.host for x in ctxs],
         "_late": [x.mtime + dt.timedelta(days=2) if x.mtime else None for x in ctxs]},
        schema={"_file": pl.Int64, "_fid": pl.Int64, "_run": pl.String, "_attempt": pl.Int32, "_host": pl.String,
                "_late": pl.Datetime("us")})
    frame = frame.with_columns(_file=pl.col("line") // BASE, line=pl.col("line") % BASE)
    if table != "jobs" and "ts" in frame.columns and frame["ts"].null_count():
        # NOTE: rare (records without a time): each file's own stamped rows fill them, as when parsed alone
        stamps = (frame.select("_file", "line", "ts") if known is None else known.select(
            _file=pl.col("line") // BASE, line=pl.col("line") % BASE, ts="ts"))
        frame = _fill_ts(frame, stamps.filter(pl.col("ts").is_not_null()), table, by="_file")
    frame = frame.join(meta, on="_file", how="left", maintain_order="left")
    if "ts" in frame.columns:  # formats without a year: a line is not newer than its file (see _roll_year_back)
        frame = frame.with_columns(pl.when(pl.col("ts") > pl.col("_late")).then(pl.col("ts").dt.offset_by("-1y"))
                                   .otherwise(pl.col("ts")).alias("ts"))
    schema = evidence_schema(table)
    frame = frame.with_columns(file_id=pl.col("_fid"), source=pl.lit(c.NAME), run=pl.col("_run"),
                               attempt=pl.col("_attempt"))
    if "host" in schema and getattr(c, "FILL_HOST", True):
        frame = frame.with_columns(pl.col("host").fill_null(pl.col("_host")) if "host" in frame.columns
                                   else pl.col("_host").alias("host"))
    aligned = frame.select([
        (pl.col(k).cast(t, strict=False) if k in frame.columns else pl.lit(None, t).alias(k))
        for k, t in schema.items()
    ] + [pl.col("_file")])
    _report_lost(items, frame, aligned, schema)
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


def _report_lost(items: list[Item], frame: pl.DataFrame, aligned: pl.DataFrame,
                 schema: dict[str, pl.DataType]) -> None:
    """Values a column could not hold, reported per file as `_aligned` reports them (five a file)."""
    changed = [k for k in schema if k in frame.columns and frame.schema[k] != schema[k]]
    if not changed:
        return
    lost = pl.DataFrame({k: frame[k].is_not_null() & aligned[k].is_null() for k in changed}).with_columns(
        _line=frame["line"], _file=frame["_file"])
    flagged = lost.filter(pl.any_horizontal(changed)).group_by("_file", maintain_order=True).head(5)
    for row in flagged.iter_rows(named=True):
        out, ctx, _ = items[row["_file"]]
        msg = f"{ctx.path}:{row['_line']}: {', '.join(k for k in changed if row[k])} out of range, left empty"
        if msg not in out.result.messages and len(out.result.messages) < 50:
            out.result.messages.append(msg)


__all__ = ["GROUP_FILES", "parse_group", "parse_many"]
