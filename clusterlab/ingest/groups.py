"""Many small files of one structured format parsed in one call: a fleet's per-rank step files.

A 1,024-node job writes one step file per rank and attempt: tens of thousands of files of a few hundred lines.
Parsed one by one, each pays a fixed toll of polars calls (a few milliseconds) larger than its reading. Files
whose format is GROUPABLE (its parse reads no context and each row depends on its own line) and that are read
whole, small and clean are instead joined into one frame whose line numbers carry the file (`index x 2^32
+ line`), parsed once, and split back. Whatever the grouping, a file gets exactly the rows, counts and messages
that parsing it alone gives (tests/test_ingest_parallel.py holds this on the samples and a simulated fleet).
"""

from __future__ import annotations

import gzip
import zlib
from pathlib import Path
from types import ModuleType

import polars as pl

from clusterlab.collectors._base import Context
from clusterlab.ingest.group_rows import BASE, Item, numbered_lines, read_state, split_rows
from clusterlab.ingest.groups_text import parse_text_group, prefilter_groups, text_key
from clusterlab.ingest.heads import read_heads
from clusterlab.ingest.parse import (
    FilePlan,
    ParsedFile,
    finish,
    prepare,
    unparsed_warnings,
)
from clusterlab.ingest.reader import GZIP_MAGIC, MAX_LINE_BYTES, Unzipped

GROUP_BYTES = 32 << 20  # decompressed bytes parsed in one call at most
# the line-oriented collectors that recognise a trainer's (or its Slurm job's) output: one kind of text log
TRAINERS = frozenset({"torch", "megatron", "hf_trainer", "torchtitan", "deepspeed", "ft_launcher", "nan_guard",
                      "slurm"})


def structured_key(out: ParsedFile, ctx: Context, chosen: list[ModuleType]) -> tuple | None:
    """The group of a whole small file of a structured format (no over-long line possible, nothing read before):
    a GROUPABLE one, or one whose parse reads context and names it (`GROUP_CONTEXT(ctx)`, None: alone); None:
    parse it alone."""
    c = chosen[0] if len(chosen) == 1 else None
    if not (c is not None and c.PATTERN is None and out.plan.skip == 0 and out.plan.first == 1
            and out.plan.clock is None and out.plan.size <= MAX_LINE_BYTES and out.envelope is None):
        return None
    if getattr(c, "GROUPABLE", False):
        return ("structured", c.NAME)
    # NOTE: a dump whose parse reads its header, its zone or its run (sacct): files agreeing on all of it are
    # parsed in one call (12 ms a file alone, most of it polars calls per file)
    context = c.GROUP_CONTEXT(ctx) if hasattr(c, "GROUP_CONTEXT") else None
    return None if context is None else ("structured", c.NAME, context)


def read_whole(path: Path, raw: bytes | None = None, as_bytes: bool = False) -> tuple[str | bytes, bytes] | None:
    """(the file's text, its decompressed bytes), or None where the line-by-line reader must handle it (damaged
    gzip, long; in a structured format, bad UTF-8).

    `raw`: its content, where it was read already; `as_bytes`: the text as UTF-8 bytes, checked, not decoded (a
    structured format's native reader takes bytes). A text log's invalid bytes are replaced, as the line reader
    replaces them (no line break is ever part of a multi-byte sequence, so the lines are the same): one odd byte in
    a trainer's output must not cost its file the group."""
    try:
        raw = path.read_bytes() if raw is None else raw
        data = raw if isinstance(raw, Unzipped) else gzip.decompress(raw) if raw[:2] == GZIP_MAGIC else raw
        if len(data) > MAX_LINE_BYTES:
            return None
        if as_bytes and data.isascii():  # (ASCII is UTF-8: no decoding to find out)
            return data, data
        if as_bytes:
            data.decode("utf-8")
            return data, data
        try:
            return data.decode("utf-8"), data
        except UnicodeDecodeError:
            return data.decode("utf-8", errors="replace"), data
    except (OSError, EOFError, zlib.error, gzip.BadGzipFile, UnicodeDecodeError):
        return None


GROUP_FILES = True  # off: every file parsed alone (the tests compare the two)



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
        whole = read_whole(plan.task.path, raw, key[0] == "structured") if key is not None else None
        if whole is None:
            finish(out, ctx, chosen)
            continue
        text, data = whole
        # NOTE: what reading it line by line records, from its bytes (a replaced byte is not its character's size);
        # a file the group sends back alone is read again by `finish`, which sets all of it anew
        read_state(out, data)
        _, items = groups.setdefault(key, (chosen, []))
        items.append((out, ctx, text))
        held[key] = held.get(key, 0) + len(text)
        if held[key] >= GROUP_BYTES:
            _parse_or_alone(key, *groups.pop(key))
            del held[key]
    # text groups that differ only in the context their collectors' parse reads share one prefilter
    shared: dict[tuple, tuple[list[ModuleType], list[list[Item]]]] = {}
    for key, (chosen, items) in groups.items():
        if key[0] == "structured":
            _parse_or_alone(key, chosen, items)
        else:
            shared.setdefault((*key[:2], *key[3:]), (chosen, []))[1].append(items)
    for chosen, same in shared.values():
        for items, pre in zip(same, prefilter_groups(same, chosen), strict=True):
            for out, ctx, _ in parse_text_group(items, chosen, pre):
                finish(out, ctx, chosen)
    return outs


def _group_key(out: ParsedFile, ctx: Context, chosen: list[ModuleType]) -> tuple | None:
    key = structured_key(out, ctx, chosen)
    if key is not None:
        return key
    key = text_key(out, ctx, chosen)
    # NOTE: a trainer's output, whichever trainer's sniff knew it, joins the other trainers' (its kind keeps it apart
    # from NCCL and kernel logs, whose lines make the patterns' union slow): each group costs every collector's
    # parse a fixed ~10-30 ms of regex compilation, and the campaign corpus' 40 trainer logs made three groups
    return (*key[:3], "trainer", *key[4:]) if key is not None and key[3:4] and key[3] in TRAINERS else key



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
            got = c.parse(numbered_lines(items).select("line", "text"), items[0][1])
    except (pl.exceptions.PolarsError, ArithmeticError, ValueError, TypeError, KeyError, IndexError):
        return items  # parsed alone, each with its own safety net
    if got.warnings or got.refuse:  # a message of its own: not one the group can split
        return items
    bad = (got.unparsed_lines if got.unparsed_lines is not None else pl.Series("line", [], pl.Int64))
    if got.unparsed != len(bad):  # a count the group cannot split among its files
        return items
    bad_by_file = bad.to_frame("line").with_columns(_file=pl.col("line") // BASE, line=pl.col("line") % BASE)
    for i, (out, ctx, _) in enumerate(items):
        mine = bad_by_file.filter(pl.col("_file") == i)["line"] if bad_by_file.height else None
        out.result.unparsed += 0 if mine is None else len(mine)
        for w in unparsed_warnings(c, mine):
            msg = f"{ctx.path}:{w.removeprefix('line ')}"
            if msg not in out.result.messages and len(out.result.messages) < 50:
                out.result.messages.append(msg)
    # a record without a time takes the nearest stamped line of any table, as alone (`parse._rows`)
    stamped = [f.select("line", "ts").filter(pl.col("ts").is_not_null())
               for f in got.tables.values() if "ts" in f.columns] if len(got.tables) > 1 else []
    known = pl.concat(stamped).unique("line").sort("line") if stamped else None
    for table, frame in got.tables.items():
        if frame.height:
            split_rows(items, c, table, frame, known)
    return []


__all__ = ["GROUP_FILES", "parse_group", "parse_many"]
