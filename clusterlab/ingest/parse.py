"""Parsing one evidence file into rows: no database, so that worker processes (or Spark executors) can run it.

`parse_file(plan)` reads the file the plan names from where the plan says (the whole file, or the bytes a grown
file gained), picks its collectors by sniffing, streams it in batches through them, fills times and hosts,
aligns the rows to the tables' columns and hands them back with the file's read state. Large results are
spilled to Arrow IPC files in the plan's spill folder, so a worker's memory stays bounded by FLUSH_ROWS.
The writer (`ingest.write`) stores what comes back; which rows a file gives never depends on who parsed it.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType

import polars as pl

from clusterlab.collectors._base import AT_EXIT, Context, Parsed
from clusterlab.ingest.bundle import FileTask
from clusterlab.ingest.documents import document_chunks, document_collector
from clusterlab.ingest.envelope import sniff_envelope, unwrap, unwrap_head
from clusterlab.ingest.heads import Head, HeadHints, _collectors, choose, last_sniffed
from clusterlab.ingest.prefilter import split
from clusterlab.ingest.reader import InputError, ReadState, iter_batches, read_head_checked
from clusterlab.tables import DATED_TABLES, TABLE_COLUMNS, evidence_schema

FLUSH_ROWS = 200_000  # matched lines buffered per collector before parse(); rows held before a spill
UNMATCHED_PER_FILE = 10_000  # trouble-looking lines no rule matched, kept per file for `clusterlab unmatched`
# What trouble looks like in a line no rule matched: worth a look, by template (Drain-style), in `unmatched`
TROUBLE = (r"(?i)\b(?:error|errors|fatal|fail|failed|failure|traceback|exception|warn|warning|timeout|"
           r"timed out|killed|abort|aborted|panic|segfault|oops|oom|not responding|unreachable|nan)\b")
BLOCK_LINES = 256  # a multi-line block (traceback, failure summary) starting this near a flush is held back
CRASH_BUDGET = 32  # collector failures isolated line by line per file before the rest of a batch is given up


@dataclass
class FileResult:
    display: str
    status: str  # ingested | appended | replaced | unchanged | skipped | error
    rows: dict[str, int] = field(default_factory=dict)
    unparsed: int = 0
    other_lines: int = 0
    unmatched: int = 0  # of those, kept in unmatched_lines (they look like trouble)
    skipped_why: str | None = None  # a file of a directory walk that is no evidence: why (not a problem)
    messages: list[str] = field(default_factory=list)  # one line each, "path[:line]: what"


@dataclass
class FilePlan:
    """What the writer decided about one file before it is parsed: its id, and where reading starts."""

    task: FileTask
    ctx: Context
    file_id: int
    whole_hash: str
    size: int
    status: str = "ingested"  # ingested | changed | appended
    # stored files this one may repeat (its path's earlier version, the log it was rotated from): rows equal to
    # theirs are not stored twice; `same_lines`: a rotated copy, whose lines keep their numbers
    earlier: tuple[int, ...] = ()
    same_lines: bool = False
    skip: int = 0  # decompressed bytes already read (a grown file)
    first: int = 1  # the line number reading starts at
    reopen_from: int | None = None  # a grown file's open last line: its rows from this line are re-read
    clock: pl.DataFrame | None = None  # the last stored (line, ts) before `first`: where the file's clock stood
    spill_dir: Path | None = None  # where results over FLUSH_ROWS rows go as Arrow IPC files
    where: str | None = None  # the resolved path the file is recorded under (None: resolved when recorded)


@dataclass(eq=False)  # compared by identity: the files of one chunk share one
class PackedRows:
    """The in-memory rows of a chunk's files: table -> Arrow IPC stream, one record batch each."""

    streams: dict[str, bytes]
    file_ids: frozenset[int]

    def table(self, name: str, keep: set[int] | None = None) -> pl.DataFrame | None:
        """The table's rows (of the files in `keep` only, where given), or None where the chunk has none."""
        data = self.streams.get(name)
        if data is None:
            return None
        # NOTE: read with polars, not pyarrow: importing pyarrow (and numpy) cost the writer 0.15-0.3 s of CPU in
        # every ingest with workers, in the one process whose work is not parallel
        rows = pl.read_ipc_stream(data)
        if keep is not None and not self.file_ids <= keep:
            rows = rows.filter(pl.col("file_id").is_in(sorted(keep)))
        return rows


@dataclass
class ParsedFile:
    plan: FilePlan
    result: FileResult
    state: ReadState = field(default_factory=ReadState)
    collectors: list[str] = field(default_factory=list)
    tables: dict[str, list[pl.DataFrame | Path]] = field(default_factory=dict)  # aligned rows, or spilled IPC
    unmatched: pl.DataFrame | None = None
    held_rows: int = 0  # rows held in memory (not spilled)
    packed: PackedRows | None = None  # in-memory rows shared with the rest of a worker's chunk (`ingest.pack`)
    sniffed: str | None = None  # a text log: the line-oriented collector whose sniff recognised it (what it is)
    envelope: str | None = None  # every line wears a container runtime's envelope (`ingest.envelope`): taken off

    @property
    def ok(self) -> bool:
        return self.result.status in ("ingested", "changed", "appended")


def parse_file(plan: FilePlan, collectors: list[ModuleType] | None = None) -> ParsedFile:
    """The rows of one file (or of what a grown file gained); errors become the result's messages."""
    out, ctx, chosen = prepare(plan, collectors)
    if chosen:
        finish(out, ctx, chosen)
    return out


def prepare(plan: FilePlan, collectors: list[ModuleType] | None = None, head: Head | None = None,
            present: HeadHints | None = None) -> tuple[ParsedFile, Context, list[ModuleType]]:
    """Sniff the file: its result so far, its context (with its header), and its collectors (none: done).

    `head`, `present`: the file's head and the hints in it, where `read_heads` read them."""
    task, res = plan.task, FileResult(plan.task.display, plan.status)
    out = ParsedFile(plan, res)
    try:
        if plan.size == 0:
            return _fail(out, f"{task.display}: empty file", task.explicit), plan.ctx, []
        if isinstance(head, OSError):
            raise head
        head, broken = head if head is not None else read_head_checked(task.path)
        if broken and not head.strip():
            return _fail(out, f"{task.display}: gzip {broken}: nothing in it could be read", True), plan.ctx, []
        if (env := sniff_envelope(head)) is not None:
            # NOTE: the collectors sniff (and read) what the program printed, not the runtime's prefix before it
            out.envelope, head, present = env, unwrap_head(head, env), None
        # a caller's own collectors may hint at what read_heads did not look for
        chosen = choose(head, task.display, list(collectors) if collectors is not None else list(_collectors()),
                        present if collectors is None else None)
        if not chosen:
            return _fail(out, f"{task.display}: no collector recognises this content "
                              f"({_describe(head)})", task.explicit or broken is not None), plan.ctx, []
    except OSError as e:
        res.status, res.rows = "error", {}
        res.messages.append(f"{task.display}: cannot read: {e.strerror or e}")
        return out, plan.ctx, []
    out.collectors = [c.NAME for c in chosen]
    out.sniffed = last_sniffed() if len(chosen) > 1 else None
    return out, dataclasses.replace(plan.ctx, header=first_line(head)), chosen


def first_line(head: bytes) -> str | None:
    """The head's first non-blank line (str.splitlines' lines); its first 4 KiB are decoded first, most heads
    need no more (a whole 64 KiB head split into lines costs more than many files' parse)."""
    for size in (4096, len(head)):
        lines = head[:size].decode("utf-8", "replace").splitlines()
        # a cut head's last piece may be cut short: only lines known to be whole count
        for ln in lines if size >= len(head) else lines[:-1]:
            if ln.strip():
                return ln
        if size >= len(head):
            break
    return None


def finish(out: ParsedFile, ctx: Context, chosen: list[ModuleType]) -> None:
    """Read and parse the prepared file line by line."""
    task, res = out.plan.task, out.result
    try:
        _parse_into(out, ctx, chosen)
        state = out.state
        if state.damage is not None and state.damage[0] < out.plan.first:
            raise InputError(task.display, f"{state.damage[1]}: nothing in it could be read")
        for ln in state.long_lines[:5]:
            res.messages.append(f"{task.display}:{ln}: line longer than 1 MiB skipped")
        if len(state.long_lines) > 5:
            res.messages.append(f"{task.display}: {len(state.long_lines) - 5} more over-long lines skipped")
        if state.damage is not None:
            last, why = state.damage
            res.messages.append(f"{task.display}:{last}: {why}: read up to this line, the rest is lost")
    except InputError as e:
        _drop(out)
        res.status, res.rows = "error", {}
        res.messages.append(str(e))
    except OSError as e:
        _drop(out)
        res.status, res.rows = "error", {}
        res.messages.append(f"{task.display}: cannot read: {e.strerror or e}")


def _drop(out: ParsedFile) -> None:
    for parts in out.tables.values():
        for p in parts:
            if isinstance(p, Path):
                p.unlink(missing_ok=True)
    out.tables, out.unmatched = {}, None


def _fail(out: ParsedFile, message: str, explicit: bool) -> ParsedFile:
    # Inside a directory walk, files that are not evidence (READMEs, scripts) are expected.
    res = out.result
    res.status = "error" if explicit else "skipped"
    if explicit:
        res.messages.append(message)
    else:
        res.skipped_why = message
    return out


def _describe(head: bytes) -> str:
    if not head.strip():
        return "only whitespace"
    # NOTE: counted in characters, not bytes: a log of UTF-8 text (a tqdm bar's blocks, a CJK message) is text
    text = head[:4096].decode("utf-8", "replace")
    printable = sum(ch.isprintable() or ch in "\t\n\r" for ch in text)
    if printable < 0.9 * len(text):
        return "binary data"
    first = head.split(b"\n", 1)[0][:60].decode("utf-8", "replace")
    return f"first line {first!r}"


def _parse_safely(c: ModuleType, batch: pl.DataFrame, ctx: Context) -> Parsed:
    """`c.parse(batch)`; where it fails, the lines it fails on are isolated, reported and left out."""
    # NOTE: a safety net, not a parser: collectors read bad values as null themselves. A failure
    # left in one must cost the user one line of the file, named, never the file or the ingest.
    try:
        return c.parse(batch, ctx)
    except (pl.exceptions.PolarsError, ArithmeticError, ValueError, TypeError, KeyError, IndexError) as e:
        first_error = e
    out, pending, budget = Parsed(), [batch], CRASH_BUDGET
    while pending:
        part = pending.pop()
        try:
            got = c.parse(part, ctx)
        except (pl.exceptions.PolarsError, ArithmeticError, ValueError, TypeError, KeyError, IndexError) as e:
            budget -= 1
            if part.height > 1 and budget > 0:
                half = part.height // 2
                pending += [part.slice(half), part.slice(0, half)]
                continue
            lo, hi = int(part["line"].min()), int(part["line"].max())
            where = f"line {lo}" if lo == hi else f"lines {lo}-{hi}"
            out.warnings.append(f"{where}: not read ({c.NAME}: {type(e).__name__}: {str(e).splitlines()[0][:120]})")
            out.unparsed += part.height
            continue
        for t, frame in got.tables.items():
            out.add(t, frame)
        if got.unparsed_lines is not None:
            out.unparsed_lines = (got.unparsed_lines if out.unparsed_lines is None
                                  else pl.concat([out.unparsed_lines, got.unparsed_lines]).sort())
        out.unparsed += got.unparsed
        out.warnings += got.warnings
        out.refuse = out.refuse or got.refuse
    if not out.warnings:  # every half read: the failure needed the lines together
        out.warnings.append(f"not read whole ({c.NAME}: {type(first_error).__name__}), read in parts")
    return out


def _parse_into(out: ParsedFile, ctx: Context, chosen: list[ModuleType]) -> None:
    plan, res = out.plan, out.result
    patterns = {c.NAME: c.PATTERN for c in chosen}
    # a collector without a PATTERN reads every line: then no line is filtered out
    filtered = all(p is not None for p in patterns.values())
    pending: dict[str, list[pl.DataFrame]] = {c.NAME: [] for c in chosen}
    pending_rows = 0
    clock = plan.clock  # last known (line, ts) of the file, carried between flushes (and from a read before)
    envelope_stamps: list[pl.DataFrame] = []  # the envelope's time of each line read since the last flush

    def flush(final: bool) -> None:
        nonlocal pending_rows, clock
        parsed: list[tuple[str, Parsed]] = []
        pending_rows = 0
        for c in chosen:
            if pending[c.NAME]:
                batch = pl.concat(pending[c.NAME])
                batch, held = (batch, None) if final else hold_open_block(batch, getattr(c, "BLOCK_START", None))
                pending[c.NAME] = [held] if held is not None else []
                pending_rows += held.height if held is not None else 0
                if batch.height:
                    parsed.append((c.NAME, _parse_safely(c, batch, ctx)))
        for _, p in parsed:
            if p.refuse:
                line, _, why = p.refuse.removeprefix("line ").partition(": ")
                raise InputError(ctx.path, why, int(line) if line.isdigit() else None)
        held_from = min((int(f[0]["line"].min()) for f in pending.values() if f), default=None)
        stamps = pl.concat(envelope_stamps) if envelope_stamps else None
        clock = _rows(out, parsed, chosen, ctx, clock, held_from, stamps)
        # the held-back lines keep their envelope times for the next flush
        envelope_stamps[:] = [stamps.filter(pl.col("line") >= held_from)] if stamps is not None and held_from else []

    if out.envelope is None and (doc := document_collector(plan.task.path, chosen)) is not None:
        # NOTE: a JSON document is streamed whole, whatever its line length (`ingest.documents`)
        for parsed in document_chunks(plan.task.path, plan.skip, plan.first, out.state, ctx, doc):
            clock = _rows(out, [(doc.NAME, parsed)], chosen, ctx, clock)
        return
    unmatched: list[pl.DataFrame] = []
    for frame in iter_batches(plan.task.path, plan.task.display, plan.skip, plan.first, out.state):
        stamps = None
        if out.envelope is not None:
            frame, stamps = unwrap(frame, out.envelope)
        if not filtered:
            matched, rest, sel = frame, None, {c.NAME: frame for c in chosen}
        else:
            # NOTE: each PATTERN runs once, on the lines holding a literal it needs (`ingest.prefilter`); the
            # trouble regex runs on the unmatched lines only, and only while the file's sample is not full
            sel, matched, rest = split(frame, chosen, rest=res.unmatched < UNMATCHED_PER_FILE)
        res.other_lines += frame.height - matched.height
        if stamps is not None:  # only the lines a collector reads can give rows (memory stays bounded by those)
            envelope_stamps.append(stamps.join(matched.select("line"), on="line", how="semi"))
        if rest is not None and rest.height:
            trouble = rest.filter(pl.col("text").str.contains(TROUBLE)).head(UNMATCHED_PER_FILE - res.unmatched)
            if trouble.height:
                res.unmatched += trouble.height
                unmatched.append(trouble)
        for c in chosen:
            if sel[c.NAME].height:
                pending[c.NAME].append(sel[c.NAME])
                pending_rows += sel[c.NAME].height
        if pending_rows >= FLUSH_ROWS:
            flush(final=False)
    flush(final=True)
    if unmatched:
        out.unmatched = pl.concat(unmatched).select(
            file_id=pl.lit(plan.file_id, pl.Int64), run=pl.lit(ctx.run, pl.String),
            attempt=pl.lit(ctx.attempt, pl.Int32), host=pl.lit(ctx.host, pl.String),
            line=pl.col("line").cast(pl.Int64), text=pl.col("text").str.slice(0, 2000))


def hold_open_block(batch: pl.DataFrame, block_start: str | None) -> tuple[pl.DataFrame, pl.DataFrame | None]:
    """Split off the batch's tail from the first multi-line block that starts in its last lines.

    A traceback or a torchrun failure summary cut by a flush would be parsed as two halves; the
    held-back tail goes to the front of the next batch instead, so the block is parsed whole.
    """
    if block_start is None or batch.height <= BLOCK_LINES:
        return batch, None
    tail = batch.tail(BLOCK_LINES)
    starts = tail.with_row_index("_i").filter(pl.col("text").str.contains(block_start))["_i"]
    if not starts.len():
        return batch, None
    cut = batch.height - BLOCK_LINES + int(starts[0])
    return batch.head(cut), batch.slice(cut)


def _rows(out: ParsedFile, parsed: list[tuple[str, Parsed]], chosen: list[ModuleType], ctx: Context,
          clock: pl.DataFrame | None, held_from: int | None = None,
          envelope: pl.DataFrame | None = None) -> pl.DataFrame | None:
    """Fill times and hosts, align to the schema and keep the rows; returns the file's clock.

    The clock is the last stamped line, and every stamp from `held_from` on: lines held back for
    the next batch still take the time of the line just before them, not of a later one. `envelope`: the
    runtime's time of each line (`ingest.envelope`), a stamp for the rows of lines that print none.
    """
    res, file_id = out.result, out.plan.file_id
    stamped = [
        f.select("line", "ts").filter(pl.col("ts").is_not_null())
        for _, p in parsed for t, f in p.tables.items() if "ts" in f.columns
    ]
    if clock is not None:
        stamped.append(clock)
    if envelope is not None:
        stamped.append(envelope)
    known = pl.concat(stamped).unique("line").sort("line") if stamped else None
    fill_host = {c.NAME: getattr(c, "FILL_HOST", True) for c in chosen}
    by_name = {c.NAME: c for c in chosen}
    for name, p in parsed:
        res.unparsed += p.unparsed
        for w in p.warnings[:20] + unparsed_warnings(by_name[name], p.unparsed_lines):
            msg = f"{ctx.path}:{w.removeprefix('line ')}" if w.startswith("line ") else f"{ctx.path}: {w}"
            # a collector warns once per batch; the user needs to hear it once per file
            if msg not in res.messages and len(res.messages) < 50:
                res.messages.append(msg)
        for table, frame in p.tables.items():
            if not frame.height:
                continue
            if table != "jobs":  # a scheduler record without times has none: a neighbour's is wrong
                frame = _fill_ts(frame, known, table)
            schema = evidence_schema(table)
            frame = frame.with_columns(
                file_id=pl.lit(file_id, pl.Int64), source=pl.lit(name),
                run=pl.lit(ctx.run, pl.String), attempt=pl.lit(ctx.attempt, pl.Int32),
            )
            if "host" in schema and fill_host[name]:
                frame = frame.with_columns(pl.col("host").fill_null(pl.lit(ctx.host, pl.String))
                                           if "host" in frame.columns else pl.lit(ctx.host, pl.String).alias("host"))
            _keep(out, table, _aligned(frame, schema, ctx, res))
    if known is None or not known.height:
        return clock
    if held_from is None:
        return known.tail(1)
    return pl.concat([known.filter(pl.col("line") < held_from).tail(1), known.filter(pl.col("line") >= held_from)])


# The longest a step, a save or its parts can take: a month (a value beyond is a damaged number, not a time)
MAX_DURATION_S = 30 * 86400.0


def unparsed_warnings(c: ModuleType, lines: pl.Series | None) -> list[str]:
    """A GROUPABLE collector's unread lines as its warnings: the first three of a batch (none where the collector
    names no warning: its unread lines are counted only)."""
    if lines is None or not len(lines) or not hasattr(c, "UNPARSED_WARNING"):
        return []
    return [f"line {n}: {c.UNPARSED_WARNING}" for n in lines.head(3).to_list()]


def _keep(out: ParsedFile, table: str, frame: pl.DataFrame) -> None:
    """Hold a table's rows; past FLUSH_ROWS rows held, write them to the spill folder (Arrow IPC)."""
    out.tables.setdefault(table, []).append(frame)
    out.result.rows[table] = out.result.rows.get(table, 0) + frame.height
    out.held_rows += frame.height
    if out.held_rows < FLUSH_ROWS or out.plan.spill_dir is None:
        return
    for t, parts in out.tables.items():
        frames = [p for p in parts if isinstance(p, pl.DataFrame)]
        if frames:
            spill = out.plan.spill_dir / f"{out.plan.file_id}-{t}-{len(parts)}.arrow"
            pl.concat(frames).write_ipc(spill, compression="uncompressed")
            out.tables[t] = [p for p in parts if isinstance(p, Path)] + [spill]
    out.held_rows = 0


def aligned_rows(frame: pl.DataFrame, schema: dict[str, pl.DataType], keep: tuple[str, ...] = ()
                 ) -> tuple[pl.DataFrame, dict[str, pl.Series]]:
    """`frame` in the table's columns and types (and the `keep` columns), and per column the rows whose value it
    could not hold, left empty."""
    cols = [c for c in schema if c in frame.columns]
    out = frame.select([
        (pl.col(c).cast(t, strict=False) if c in frame.columns else pl.lit(None, t).alias(c))
        for c, t in schema.items()
    ] + [pl.col(k) for k in keep])
    # NOTE: only a column whose type changed can lose a value to the cast; most collectors give the types
    lost = {c: frame[c].is_not_null() & out[c].is_null() for c in cols if frame.schema[c] != schema[c]}
    # NOTE: a duration (`step_s`, `duration_s`, ...) outside [0, MAX_DURATION_S] or not finite is a damaged line's
    # number (a flipped digit's 5.6e64 s), not a time: the ledger makes times of it, which they cannot hold
    for c in (c for c in cols if c.endswith("_s") and schema[c].is_float()):
        absurd = ~out[c].is_between(0.0, MAX_DURATION_S).fill_null(True)
        if absurd.any():
            out = out.with_columns(pl.when(absurd).then(None).otherwise(pl.col(c)).alias(c))
            lost[c] = lost[c] | absurd if c in lost else absurd
    return out, lost


def _aligned(frame: pl.DataFrame, schema: dict[str, pl.DataType], ctx: Context, res: FileResult) -> pl.DataFrame:
    """`frame` in the table's columns and types; a value its column cannot hold is left empty and reported."""
    out, lost = aligned_rows(frame, schema)
    if not lost:
        return out
    changed = list(lost)
    flagged = pl.DataFrame(lost).with_columns(_line=frame["line"]).filter(pl.any_horizontal(changed)).head(5)
    for row in flagged.iter_rows(named=True):
        msg = f"{ctx.path}:{row['_line']}: {', '.join(c for c in changed if row[c])} out of range, left empty"
        if msg not in res.messages and len(res.messages) < 50:
            res.messages.append(msg)
    return out


def _fill_ts(frame: pl.DataFrame, known: pl.DataFrame | None, table: str, by: str | None = None) -> pl.DataFrame:
    """Date the lines without a time of their own, and say how (tables.DATING).

    The line's time lies between the stamped lines around it: `ts_lo`, `ts_hi`. The point `ts` is the nearest
    earlier stamp, but an exception (`AT_EXIT`) takes the next one: a traceback is printed as its process dies, and the
    next stamped line is that death (torchrun's `failed (exitcode: 1)`), while the line before may be a step
    record minutes older. Where there is no earlier stamp, only evidence events take the next one (srun's error
    lines come just before slurmstepd's stamped one); rank maps and facts stay without a time, since the next
    stamp may be the failure forty minutes later. A checkpoint load prefers the next stamp: it starts a new
    launch, and the line before it belongs to the crashed one."""
    if "ts" not in frame.columns or not frame["ts"].null_count():
        return frame
    dated = table in DATED_TABLES
    if known is None or not known.height:
        return frame.with_columns(dated=pl.when(pl.col("ts").is_null()).then(pl.lit("undated"))) if dated else frame
    frame = frame.with_columns(pl.col("line").cast(pl.Int64)).sort("line")
    k = known.rename({"ts": "_ts"}).with_columns(pl.col("line").cast(pl.Int64))
    load = (pl.col("action") == "load").fill_null(False) if "action" in frame.columns else pl.lit(False)
    # NOTE: `by`: many files' rows at once (`ingest.groups`), each taking only its own file's stamps; both sides
    # are sorted by line here, which polars cannot check with groups
    k = k.sort("line")
    both = (frame.join_asof(k, on="line", by=by, strategy="backward", check_sortedness=by is None)
            .join_asof(k.rename({"_ts": "_next"}), on="line", by=by, strategy="forward", check_sortedness=by is None))
    later = pl.col("_next") if table == "events" else pl.lit(None, pl.Datetime("us"))
    error = pl.col(AT_EXIT).fill_null(False) if AT_EXIT in frame.columns else pl.lit(False)
    own = pl.col("ts").is_not_null()
    both = both.with_columns(
        pl.when(load | error)
        .then(pl.col("ts").fill_null(pl.col("_next")).fill_null(pl.col("_ts")))
        .otherwise(pl.col("ts").fill_null(pl.col("_ts")).fill_null(later))
        .alias("ts"),
        *([pl.when(~own).then(pl.col("_ts")).alias("ts_lo"), pl.when(~own).then(pl.col("_next")).alias("ts_hi"),
           pl.when(own).then(None)
           .when(pl.col("_ts").is_not_null() & pl.col("_next").is_not_null()).then(pl.lit("between"))
           .when(pl.col("_ts").is_not_null()).then(pl.lit("after"))
           .when(pl.col("_next").is_not_null()).then(pl.lit("before"))
           .otherwise(pl.lit("undated")).alias("dated")] if dated else []),
    )
    return both.drop("_ts", "_next")


__all__ = ["TABLE_COLUMNS", "FilePlan", "FileResult", "ParsedFile", "finish", "hold_open_block",
           "parse_file", "prepare"]
