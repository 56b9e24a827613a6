"""Many small text logs parsed in one call: a fleet's per-node kernel logs and per-node, per-attempt NCCL logs.

A text log goes through every line-oriented collector: the lines that match any PATTERN are picked out, and
each collector parses the ones that match its own. Parsed one file at a time, a kernel log of a few hundred
lines pays dozens of polars calls and regex compilations (tens of milliseconds), far more than reading it. Here
the whole, small, clean files of one kind are joined into one frame whose line numbers carry the file (`index x
FILE_LINE_BASE + line`), prefiltered once, parsed once per collector, and split back.

A collector takes part when it names the context its parse reads (`GROUP_CONTEXT(ctx)`: files group only where
those values are equal; the file's host may instead come as a `file_host` column, `FILE_HOST_COLUMN`), keeps the
rows of different files apart (`collectors._base.file_of_line`), and reports
its unread lines by number (`Parsed.unparsed_lines`), so that each file gets its own count. A file that gives
lines to any other collector is parsed alone; so is every file of a group in which a collector warns, refuses
or fails. Whatever the grouping, a file gets exactly the rows, counts and messages of parsing it alone
(tests/test_ingest_parallel.py holds this on the samples, a simulated fleet and adversarial small logs).
"""

from __future__ import annotations

import dataclasses
from types import ModuleType
from typing import NamedTuple

import polars as pl

from clusterlab.collectors._base import FILE_LINE_BASE, YEAR_COLUMNS, Context, Parsed, year_rows
from clusterlab.ingest.envelope import unwrap
from clusterlab.ingest.group_rows import file_slices, numbered_lines, split_rows
from clusterlab.ingest.parse import FLUSH_ROWS, TROUBLE, UNMATCHED_PER_FILE, ParsedFile, unparsed_warnings
from clusterlab.ingest.prefilter import split
from clusterlab.ingest.reader import MAX_LINE_BYTES

Item = tuple[ParsedFile, Context, str]


def text_key(out: ParsedFile, ctx: Context, chosen: list[ModuleType]) -> tuple | None:
    """The group a whole small text log may join (None: parse it alone)."""
    plan = out.plan
    if (not chosen or any(c.PATTERN is None for c in chosen) or plan.skip or plan.first != 1
            or plan.clock is not None or plan.size > MAX_LINE_BYTES):
        return None
    keys = tuple((c.NAME, c.GROUP_CONTEXT(ctx)) for c in chosen if hasattr(c, "GROUP_CONTEXT"))
    # NOTE: logs of one kind group apart from the others (NCCL with NCCL, trainers' with trainers'): the union of
    # the patterns scans a kind's lines at 100-400 MB/s, but falls to a few MB/s where NCCL INFO and trainer step
    # lines alternate (its lazy DFA keeps rebuilding: 0.94 s against 0.09 s for the patterns one by one on a
    # campaign's mixed group); which group a file joins changes none of its rows
    # NOTE: logs in a container runtime's envelope group with their own kind (their lines are unwrapped together)
    return ("text", tuple(c.NAME for c in chosen), keys, out.sniffed, out.envelope) if keys else None


class Prefiltered(NamedTuple):
    """A group's lines as `split` shares them out: each collector's, the matched ones, the rest, and the envelope's
    time of each line (None: no file wears one)."""

    sel: dict[str, pl.DataFrame]
    matched: pl.DataFrame
    lines: pl.DataFrame
    envelope: pl.DataFrame | None


def prefilter_groups(groups: list[list[Item]], chosen: list[ModuleType]) -> list[Prefiltered]:
    """Each group's lines prefiltered, those of all the groups in one `split`, each numbered as its own.

    NOTE: the groups may differ in what the collectors' parse reads of the context (`text_key`), which the prefilter
    does not read. A split's fixed cost is compiling its regexes (polars keeps ~32 compiled and a split uses more),
    ~0.1-0.2 s CPU whatever its lines: a campaign corpus' 196 kernel logs from 8 bundles, in 8 groups, spent 1.19 s
    in 8 splits of 1,700-3,600 lines each."""
    items = [it for g in groups for it in g]
    numbered, envelope = _unwrapped(numbered_lines(items), items)
    sel, matched, lines = split(numbered, chosen)
    assert lines is not None
    if len(groups) == 1:
        return [Prefiltered(sel, matched, lines, envelope)]
    out, start = [], 0
    for g in groups:
        end = start + len(g)

        def mine(f: pl.DataFrame, s: int = start, e: int = end) -> pl.DataFrame:
            if not f.height:
                return f
            got = f.filter(pl.col("line").is_between(s * FILE_LINE_BASE, e * FILE_LINE_BASE - 1))
            moved = pl.col("line") - s * FILE_LINE_BASE
            return got.with_columns(moved, *([pl.col("_file") - s] if "_file" in f.columns else []))
        out.append(Prefiltered({k: mine(v) for k, v in sel.items()}, mine(matched), mine(lines),
                               None if envelope is None else mine(envelope)))
        start = end
    return out


def parse_text_group(items: list[Item], chosen: list[ModuleType], pre: Prefiltered | None = None) -> list[Item]:
    """Parse the files together; returns the ones to parse alone (all of them, when the group fails).

    `pre`: their lines prefiltered already (`prefilter_groups`, with other groups')."""
    sel, matched, lines, envelope = pre if pre is not None else prefilter_groups([items], chosen)[0]
    alone: set[int] = set()
    for c in chosen:
        if not hasattr(c, "GROUP_CONTEXT") and sel[c.NAME].height:
            alone |= set(sel[c.NAME]["_file"].unique().to_list())
    # a file with this many matched lines is parsed in several batches alone: the same here is not worth it
    alone |= set(matched.group_by("_file").len().filter(pl.col("len") >= FLUSH_ROWS)["_file"].to_list())
    for _ in range(3):  # a file a collector warns about is parsed alone, and the rest again without it
        keep = [i for i in range(len(items)) if i not in alone]
        if not keep:
            return items
        if alone:
            mine = pl.col("_file").is_in(keep)
            lines, sel = lines.filter(mine), {k: v.filter(mine) for k, v in sel.items()}
        parsed, blamed = _parse_all(items, keep, chosen, sel)
        if parsed is not None:
            break
        if blamed is None:
            return items
        alone |= blamed
    else:
        return items
    _per_file(items, keep, lines, parsed)  # (lines: the lines no collector matched)
    stamped = [f.select("line", "ts").filter(pl.col("ts").is_not_null())
               for _, p in parsed for f in p.tables.values() if "ts" in f.columns]
    if envelope is not None:  # the runtime's time of each line dates the rows of lines that print none
        stamped.append(envelope)
    known = pl.concat(stamped).unique("line").sort("line") if stamped else None
    for c, got in parsed:
        for table, frame in got.tables.items():
            if frame.height:
                split_rows(items, c, table, frame, known)
    return [items[i] for i in sorted(alone)]


def _unwrapped(lines: pl.DataFrame, items: list[Item]) -> tuple[pl.DataFrame, pl.DataFrame | None]:
    """The group's lines with the envelope taken off the files that wear one (`ingest.envelope`), as parsing each
    alone does, and the envelope's time of their lines (None: no file wears one)."""
    kinds = {i: out.envelope for i, (out, _, _) in enumerate(items) if out.envelope is not None}
    if not kinds:
        return lines, None
    parts, stamps = [lines.filter(~pl.col("_file").is_in(list(kinds)))], []
    for kind in sorted(set(kinds.values())):
        sub = lines.filter(pl.col("_file").is_in([i for i, k in kinds.items() if k == kind]))
        text, when = unwrap(sub.select("line", "text"), kind)
        parts.append(text.with_columns(_file=pl.col("line") // FILE_LINE_BASE).select(lines.columns))
        stamps.append(when)
    return pl.concat(parts).sort("line"), pl.concat(stamps)


def _parse_all(items: list[Item], keep: list[int], chosen: list[ModuleType], sel: dict[str, pl.DataFrame]
               ) -> tuple[list[tuple[ModuleType, Parsed]] | None, set[int] | None]:
    """Each collector's parse of its lines of the group, or the files its warnings name (None: not one)."""
    ctx = items[keep[0]][1]  # the group's files agree on everything the collectors read (text_key)
    parsed: list[tuple[ModuleType, Parsed]] = []
    blamed: set[int] = set()
    for c in chosen:
        batch = sel[c.NAME]
        if not batch.height:
            continue
        if getattr(c, "FILE_HOST_COLUMN", False):
            hosts = pl.DataFrame({"_file": range(len(items)), "file_host": [x.host for _, x, _ in items]},
                                 schema={"_file": pl.Int64, "file_host": pl.String})
            batch = batch.join(hosts, on="_file", how="left", maintain_order="left")
        mine = ctx
        if getattr(c, "FILE_YEAR_COLUMNS", False):
            # NOTE: files whose yearless stamps take different years (their bundles' eras, their write days) share
            # the group: a campaign corpus' 196 kernel logs from 8 bundles were 8 groups, one parse each
            batch = batch.join(year_rows([x for _, x, _ in items]), on="_file", how="left", maintain_order="left")
            mine = dataclasses.replace(ctx, year_columns=True)
        extra = [k for k in ("file_host", *YEAR_COLUMNS) if k in batch.columns]
        try:
            got = c.parse(batch.select("line", "text", *extra), mine)
        except (pl.exceptions.PolarsError, ArithmeticError, ValueError, TypeError, KeyError, IndexError):
            return None, None  # parsed alone, each with its own safety net
        unread = 0 if got.unparsed_lines is None else len(got.unparsed_lines)
        if got.unparsed != unread:  # a count the group cannot split
            return None, None
        per_file = getattr(c, "WARNINGS_PER_FILE", False)
        for why in [*got.warnings, *([got.refuse] if got.refuse else [])]:
            line = why.removeprefix("line ").split(":", 1)[0]
            if not (why.startswith("line ") and line.isdigit()):
                return None, None
            if not per_file or why is got.refuse:  # (a warning it gives each file as alone is that file's message)
                blamed.add(int(line) // FILE_LINE_BASE)
        parsed.append((c, got))
    return (None, blamed) if blamed else (parsed, None)


def _per_file(items: list[Item], keep: list[int], lines: pl.DataFrame,
              parsed: list[tuple[ModuleType, Parsed]]) -> None:
    """Each file's other lines, kept trouble lines, unread lines and their warnings."""
    rest = lines
    others = dict(rest.group_by("_file").len().iter_rows())
    trouble = (rest.filter(pl.col("text").str.contains(TROUBLE))
               .filter(pl.int_range(pl.len()).over("_file") < UNMATCHED_PER_FILE))
    # NOTE: every per-file frame comes from one call over the group, split once: a select or a filter per file is
    # a fifth of a millisecond each, the fixed cost of a small file
    by_file = _unmatched_by_file(items, keep, trouble) if trouble.height else {}
    unread = {c.NAME: {i: v["line"] for i, v in file_slices(p.unparsed_lines.to_frame("line").select(
                  _file=pl.col("line") // FILE_LINE_BASE, line=pl.col("line") % FILE_LINE_BASE)).items()}
              for c, p in parsed if p.unparsed_lines is not None and len(p.unparsed_lines)}
    warned = {c.NAME: _warnings_by_file(p.warnings) for c, p in parsed if p.warnings}
    for i in keep:
        out, ctx, _ = items[i]
        res = out.result
        res.other_lines += others.get(i, 0)
        if i in by_file:
            out.unmatched = by_file[i]
            res.unmatched += out.unmatched.height
        # as `parse._rows` has them for a file alone: each collector's warnings (20 a parse), then its unread lines'
        for c, _ in parsed:
            got = unread[c.NAME].get(i) if c.NAME in unread else None
            res.unparsed += 0 if got is None else len(got)
            for w in warned.get(c.NAME, {}).get(i, [])[:20] + unparsed_warnings(c, got):
                msg = f"{ctx.path}:{w.removeprefix('line ')}"
                if msg not in res.messages and len(res.messages) < 50:
                    res.messages.append(msg)


def _unmatched_by_file(items: list[Item], keep: list[int], trouble: pl.DataFrame) -> dict[int, pl.DataFrame]:
    """The kept trouble lines of the group's files as each file's `unmatched` rows, by the file's index."""
    mine = sorted(set(trouble["_file"].unique().to_list()) & set(keep))
    meta = pl.DataFrame({"_file": mine, "file_id": [items[i][0].plan.file_id for i in mine],
                         "run": [items[i][1].run for i in mine], "attempt": [items[i][1].attempt for i in mine],
                         "host": [items[i][1].host for i in mine]},
                        schema={"_file": pl.Int64, "file_id": pl.Int64, "run": pl.String, "attempt": pl.Int32,
                                "host": pl.String})
    rows = trouble.join(meta, on="_file", how="inner", maintain_order="left").select(
        "_file", "file_id", "run", "attempt", "host", line=(pl.col("line") % FILE_LINE_BASE).cast(pl.Int64),
        text=pl.col("text").str.slice(0, 2000))
    return file_slices(rows)


def _warnings_by_file(warnings: list[str]) -> dict[int, list[str]]:
    """A WARNINGS_PER_FILE collector's `line N: ...` warnings of a group, each renumbered in its own file."""
    out: dict[int, list[str]] = {}
    for w in warnings:
        line, _, why = w.removeprefix("line ").partition(":")
        out.setdefault(int(line) // FILE_LINE_BASE, []).append(f"line {int(line) % FILE_LINE_BASE}:{why}")
    return out


__all__ = ["Prefiltered", "parse_text_group", "prefilter_groups", "text_key"]
