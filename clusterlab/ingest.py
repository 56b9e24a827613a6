"""Ingestion: evidence files in, typed rows in DuckDB; one transaction per file, idempotent."""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType

import duckdb
import polars as pl

from clusterlab import attempts, bundle, inventory, store, training_health
from clusterlab.collectors import all_collectors
from clusterlab.collectors._base import TABLE_COLUMNS, Context, Parsed
from clusterlab.reader import InputError, ReadState, content_hash, iter_batches, read_head_checked
from clusterlab.store import evidence_schema

FLUSH_ROWS = 200_000  # matched lines buffered per collector before parse()
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
class IngestSummary:
    files: list[FileResult] = field(default_factory=list)
    inventory: dict[str, int] = field(default_factory=dict)
    runs: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # problems of the whole call, not of one file

    @property
    def rows(self) -> dict[str, int]:
        out: dict[str, int] = {t: 0 for t in TABLE_COLUMNS}
        for f in self.files:
            for t, n in f.rows.items():
                out[t] += n
        return out

    @property
    def errors(self) -> list[str]:
        return [m for f in self.files if f.status == "error" for m in f.messages]

    @property
    def problems(self) -> list[str]:
        """Every message worth a user's attention (errors and skipped lines)."""
        return [m for f in self.files for m in f.messages] + self.notes

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for f in self.files:
            out[f.status] = out.get(f.status, 0) + 1
        return out

    def to_dict(self) -> dict:
        return {
            "files": len(self.files),
            "by_status": self.counts(),
            "rows": self.rows,
            "unparsed_lines": sum(f.unparsed for f in self.files),
            "inventory": self.inventory,
            "runs": self.runs,
            "problems": self.problems,
            "skipped": self.skipped,
        }

    @property
    def skipped(self) -> list[str]:
        """Each file a directory walk skipped, and why ("no collector recognises this content (...)")."""
        return [f.skipped_why for f in self.files if f.status == "skipped" and f.skipped_why]


def ingest(
    con: duckdb.DuckDBPyConnection,
    paths: list[str | Path],
    inventory_file: str | Path | None = None,
    run: str | None = None,
    host: str | None = None,
    year: int | None = None,
    progress: Callable[[int, int, str], None] | None = None,
) -> IngestSummary:
    """Ingest files and directories; returns what was read, skipped and why."""
    summary = IngestSummary()
    roots = [Path(p) for p in paths]
    inv_files = [Path(inventory_file)] if inventory_file else []
    inv_files += [r / "inventory.toml" for r in roots if (r / "inventory.toml").is_file()]
    for f in dict.fromkeys(inv_files):
        try:
            for k, n in inventory.load_inventory(con, f).items():
                summary.inventory[k] = summary.inventory.get(k, 0) + n
        except InputError as e:
            summary.files.append(FileResult(str(f), "error", messages=[str(e)]))
    known = frozenset(r[0] for r in con.execute("SELECT host FROM nodes").fetchall())
    walked = bundle.walk(roots, known)
    for f in walked.inventories:
        if f not in inv_files:
            try:
                inventory.load_inventory(con, f)
            except InputError as e:
                summary.files.append(FileResult(str(f), "error", messages=[str(e)]))
    if walked.inventories:
        known = frozenset(r[0] for r in con.execute("SELECT host FROM nodes").fetchall())
        walked = bundle.walk(roots, known)
    for name, f in walked.runs.items():
        try:
            inventory.load_run(con, f, name)
            summary.runs.append(name)
        except InputError as e:
            summary.files.append(FileResult(str(f), "error", messages=[str(e)]))
    for disp, why in walked.unreadable:
        summary.files.append(FileResult(disp, "error", messages=[f"{disp}: {why}"]))

    zones = dict(con.execute(
        "SELECT n.host, coalesce(c.timezone, 'UTC') FROM nodes n JOIN clusters c USING (cluster)"
    ).fetchall())
    collectors = all_collectors()
    total = sum(t.path.stat().st_size for t in walked.files)
    done = 0
    for task in walked.files:
        if progress:
            progress(done, total, task.display)
        boot = walked.boot_times.get(task.path.parent)
        mtime = dt.datetime.fromtimestamp(task.path.stat().st_mtime, dt.UTC).replace(tzinfo=None)
        ctx = Context(
            path=task.display,
            host=task.host or host,
            run=task.run or run,
            attempt=task.attempt,
            year=year or mtime.year,
            mtime=None if year else mtime,
            tz=zones.get(task.host or host or "", "UTC"),
            boot_time=bundle.read_boot_time(boot) if boot else None,
            known_hosts=known,
        )
        summary.files.append(ingest_file(con, task, ctx, collectors))
        done += task.path.stat().st_size
    if progress:
        progress(total, total, "")
    attempts.refresh(con)
    _note_nothing_found(summary, roots)
    return summary


def _note_nothing_found(summary: IngestSummary, roots: list[Path]) -> None:
    """Say so when the paths held no evidence at all (an empty or wrong directory is not a success)."""
    read = {"ingested", "appended", "replaced", "unchanged"}
    if summary.problems or summary.inventory or summary.runs or any(f.status in read for f in summary.files):
        return
    where = ", ".join(str(r) for r in roots) or "the paths given"
    skipped = sum(f.status == "skipped" for f in summary.files)
    why = f"{skipped} files, none in a format clusterlab reads" if skipped else "no files"
    summary.notes.append(f"{where}: no evidence files found ({why})")


def _choose(head: bytes, path: str, collectors: list[ModuleType]) -> list[ModuleType]:
    """The collectors that read this file: one exclusive format, or every line-oriented one."""
    line_based = [c for c in collectors if not getattr(c, "EXCLUSIVE", False)]
    for c in collectors:
        if getattr(c, "EXCLUSIVE", False) and c.sniff(head, path):
            return [c]
    if any(c.sniff(head, path) for c in line_based):
        return line_based
    return []


def ingest_file(con: duckdb.DuckDBPyConnection, task: bundle.FileTask, ctx: Context,
                collectors: list[ModuleType]) -> FileResult:
    """Ingest one file in one transaction; a failure leaves the database as it was."""
    res = FileResult(task.display, "ingested")
    try:
        size = task.path.stat().st_size
        prev = con.execute(
            "SELECT file_id, content_hash, raw_bytes, text_bytes, lines, last_line_open, last_line_start "
            "FROM ingested_files WHERE path = ? ORDER BY file_id DESC LIMIT 1",
            [str(task.path.resolve())],
        ).fetchall()
        prev = prev[0] if prev else None
        whole, prefix = content_hash(task.path, prev[2] if prev and prev[2] <= size else None)
        same = con.execute(
            "SELECT count(*) FROM ingested_files WHERE content_hash = ? AND (path = ? OR ("
            "run IS NOT DISTINCT FROM ? AND attempt IS NOT DISTINCT FROM ? AND host IS NOT DISTINCT FROM ?))",
            [whole, str(task.path.resolve()), ctx.run, ctx.attempt, ctx.host],
        ).fetchall()[0][0]
        if same:
            res.status = "unchanged"
            return res
        if size == 0:
            return _fail(res, f"{task.display}: empty file", task.explicit)
        head, broken = read_head_checked(task.path)
        if broken and not head.strip():
            return _fail(res, f"{task.display}: gzip {broken}: nothing in it could be read", True)
        chosen = _choose(head, task.display, collectors)
        if not chosen:
            return _fail(res, f"{task.display}: no collector recognises this content "
                              f"({_describe(head)})", task.explicit or broken is not None)
        first_line = next((ln for ln in head.decode("utf-8", "replace").splitlines() if ln.strip()), None)
        ctx = dataclasses.replace(ctx, header=first_line)
        grown = prev is not None and prefix is not None and prefix == prev[1]
        con.execute("BEGIN")
        try:
            if grown:
                file_id = prev[0]
                # NOTE: an open last line may have been completed since: re-read it from its start.
                skip, first = (prev[6], prev[4]) if prev[5] else (prev[3], prev[4] + 1)
                if prev[5]:
                    for t in store.FILE_TABLES:
                        con.execute(f"DELETE FROM {t} WHERE file_id = ? AND line >= ?", [file_id, first])
                res.status = "appended"
            else:
                if prev is not None:
                    _delete_file(con, prev[0])
                    res.status = "replaced"
                file_id = con.execute("SELECT nextval('file_ids')").fetchall()[0][0]
                skip, first = 0, 1
            state = ReadState()
            clock = _stored_clock(con, file_id, first) if grown else None
            _parse_into(con, task, ctx, chosen, file_id, skip, first, state, res, clock)
            if any(c.NAME == "nccl" for c in chosen):
                _nccl_ranks_across_batches(con, file_id)
            training_health.refresh(con, file_id, res.rows)  # derived from all the file's step rows, not appended
            if state.damage is not None and state.damage[0] < first:
                raise InputError(task.display, f"{state.damage[1]}: nothing in it could be read")
            _record(con, file_id, task, ctx, whole, size, state, chosen, res, grown)
            con.execute("COMMIT")
        except BaseException:
            con.execute("ROLLBACK")
            raise
        for ln in state.long_lines[:5]:
            res.messages.append(f"{task.display}:{ln}: line longer than 1 MiB skipped")
        if len(state.long_lines) > 5:
            res.messages.append(f"{task.display}: {len(state.long_lines) - 5} more over-long lines skipped")
        if state.damage is not None:
            last, why = state.damage
            res.messages.append(f"{task.display}:{last}: {why}: read up to this line, the rest is lost")
    except InputError as e:
        res.status, res.rows = "error", {}
        res.messages.append(str(e))
    except OSError as e:
        res.status, res.rows = "error", {}
        res.messages.append(f"{task.display}: cannot read: {e.strerror or e}")
    return res


def _fail(res: FileResult, message: str, explicit: bool) -> FileResult:
    # Inside a directory walk, files that are not evidence (READMEs, scripts) are expected.
    res.status = "error" if explicit else "skipped"
    if explicit:
        res.messages.append(message)
    else:
        res.skipped_why = message
    return res


def _describe(head: bytes) -> str:
    if not head.strip():
        return "only whitespace"
    printable = sum(32 <= b < 127 or b in (9, 10, 13) for b in head[:4096])
    if printable < 0.9 * min(len(head), 4096):
        return "binary data"
    first = head.split(b"\n", 1)[0][:60].decode("utf-8", "replace")
    return f"first line {first!r}"


def _delete_file(con: duckdb.DuckDBPyConnection, file_id: int) -> None:
    for t in store.FILE_TABLES:
        con.execute(f"DELETE FROM {t} WHERE file_id = ?", [file_id])
    con.execute("DELETE FROM ingested_files WHERE file_id = ?", [file_id])


def _stored_clock(con: duckdb.DuckDBPyConnection, file_id: int, before: int) -> pl.DataFrame | None:
    """The last stored (line, ts) of a file before line `before`: where its clock stood when a read ended."""
    # NOTE: a stored time is the line's own or the earlier stamp it took, so the last one is the
    # clock a clean read would have at that line: appended lines without a time of their own take it.
    union = " UNION ALL ".join(f"SELECT line, ts FROM {t} WHERE file_id = $f AND line < $b AND ts IS NOT NULL"
                               for t in TABLE_COLUMNS)
    got = con.execute(f"SELECT line, ts FROM ({union}) ORDER BY line DESC LIMIT 1", {"f": file_id, "b": before})
    row = got.fetchall()
    if not row:
        return None
    return pl.DataFrame({"line": [row[0][0]], "ts": [row[0][1]]}, schema={"line": pl.Int64, "ts": pl.Datetime("us")})


def _nccl_ranks_across_batches(con: duckdb.DuckDBPyConnection, file_id: int) -> None:
    """NCCL WARN events whose process's init line came in an earlier batch or read take its rank from there."""
    # NOTE: the collector maps (host, pid) to a rank within one batch; a log read in two parts (a
    # long one, or one that grew) must give the rows a single read gives.
    con.execute("""
        UPDATE events e SET rank = m.rank FROM (
            SELECT host, pid, arg_max(rank, nranks) AS rank FROM nccl_ranks WHERE file_id = $f GROUP BY host, pid
        ) m
        WHERE e.file_id = $f AND e.source = 'nccl' AND e.rank IS NULL AND e.host = m.host
          AND TRY_CAST(json_extract_string(e.detail, '$.pid') AS BIGINT) = m.pid
    """, {"f": file_id})


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
        out.unparsed += got.unparsed
        out.warnings += got.warnings
        out.refuse = out.refuse or got.refuse
    if not out.warnings:  # every half read: the failure needed the lines together
        out.warnings.append(f"not read whole ({c.NAME}: {type(first_error).__name__}), read in parts")
    return out


def _parse_into(con, task, ctx, chosen, file_id, skip, first, state, res, clock=None) -> None:
    patterns = {c.NAME: c.PATTERN for c in chosen}
    combined = None if any(p is None for p in patterns.values()) else "|".join(f"(?:{p})" for p in patterns.values())
    pending: dict[str, list[pl.DataFrame]] = {c.NAME: [] for c in chosen}
    pending_rows = 0
    # `clock`: last known (line, ts) of the file, carried between flushes (and from a read before)

    def flush(final: bool) -> None:
        nonlocal pending_rows, clock
        parsed: list[tuple[str, Parsed]] = []
        pending_rows = 0
        for c in chosen:
            if pending[c.NAME]:
                batch = pl.concat(pending[c.NAME])
                batch, held = (batch, None) if final else _hold_open_block(batch, getattr(c, "BLOCK_START", None))
                pending[c.NAME] = [held] if held is not None else []
                pending_rows += held.height if held is not None else 0
                if batch.height:
                    parsed.append((c.NAME, _parse_safely(c, batch, ctx)))
        for _, p in parsed:
            if p.refuse:
                line, _, why = p.refuse.removeprefix("line ").partition(": ")
                raise InputError(ctx.path, why, int(line) if line.isdigit() else None)
        held_from = min((int(f[0]["line"].min()) for f in pending.values() if f), default=None)
        clock = _write(con, parsed, chosen, ctx, file_id, clock, res, held_from)

    for frame in iter_batches(task.path, task.display, skip, first, state):
        matched = frame if combined is None else frame.filter(pl.col("text").str.contains(combined))
        res.other_lines += frame.height - matched.height
        if combined is not None and frame.height > matched.height:
            _keep_unmatched(con, frame.filter(~pl.col("text").str.contains(combined)), ctx, file_id, res)
        for c in chosen:
            sel = matched if c.PATTERN is None or len(chosen) == 1 else matched.filter(
                pl.col("text").str.contains(c.PATTERN))
            if sel.height:
                pending[c.NAME].append(sel)
                pending_rows += sel.height
        if pending_rows >= FLUSH_ROWS:
            flush(final=False)
    flush(final=True)


def _keep_unmatched(con, other: pl.DataFrame, ctx: Context, file_id: int, res: FileResult) -> None:
    """Store the lines no rule matched that look like trouble, up to UNMATCHED_PER_FILE a file (one filter
    over the whole batch; the rest of the noise is only counted)."""
    room = UNMATCHED_PER_FILE - res.unmatched
    if room <= 0:
        return
    trouble = other.filter(pl.col("text").str.contains(TROUBLE)).head(room)
    if not trouble.height:
        return
    res.unmatched += trouble.height
    rows = trouble.select(file_id=pl.lit(file_id, pl.Int64), run=pl.lit(ctx.run, pl.String),
                          attempt=pl.lit(ctx.attempt, pl.Int32), host=pl.lit(ctx.host, pl.String),
                          line=pl.col("line").cast(pl.Int64), text=pl.col("text").str.slice(0, 2000))
    con.register("_unmatched", rows.to_arrow())
    try:
        con.execute("INSERT INTO unmatched_lines BY NAME SELECT * FROM _unmatched")
    finally:
        con.unregister("_unmatched")


def _hold_open_block(batch: pl.DataFrame, block_start: str | None) -> tuple[pl.DataFrame, pl.DataFrame | None]:
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


def _write(con, parsed: list[tuple[str, Parsed]], chosen: list[ModuleType], ctx: Context, file_id: int,
           clock: pl.DataFrame | None, res: FileResult, held_from: int | None = None) -> pl.DataFrame | None:
    """Fill times and hosts, align to the schema and insert; returns the file's clock.

    The clock is the last stamped line, and every stamp from `held_from` on: lines held back for
    the next batch still take the time of the line just before them, not of a later one.
    """
    stamped = [
        f.select("line", "ts").filter(pl.col("ts").is_not_null())
        for _, p in parsed for t, f in p.tables.items() if "ts" in f.columns
    ]
    if clock is not None:
        stamped.append(clock)
    known = pl.concat(stamped).unique("line").sort("line") if stamped else None
    fill_host = {c.NAME: getattr(c, "FILL_HOST", True) for c in chosen}
    for name, p in parsed:
        res.unparsed += p.unparsed
        for w in p.warnings[:20]:
            msg = f"{ctx.path}:{w.removeprefix('line ')}" if w.startswith("line ") else f"{ctx.path}: {w}"
            # a collector warns once per batch; the user needs to hear it once per file
            if msg not in res.messages and len(res.messages) < 50:
                res.messages.append(msg)
        for table, frame in p.tables.items():
            if not frame.height:
                continue
            if table != "jobs":  # a scheduler record without times has none: a neighbour's is wrong
                frame = _fill_ts(frame, known, table)
            frame = _roll_year_back(frame, ctx.mtime)
            schema = evidence_schema(table)
            frame = frame.with_columns(
                file_id=pl.lit(file_id, pl.Int64), source=pl.lit(name),
                run=pl.lit(ctx.run, pl.String), attempt=pl.lit(ctx.attempt, pl.Int32),
            )
            if "host" in schema and fill_host[name]:
                frame = frame.with_columns(pl.col("host").fill_null(pl.lit(ctx.host, pl.String))
                                           if "host" in frame.columns else pl.lit(ctx.host, pl.String).alias("host"))
            aligned = _aligned(frame, schema, ctx, res).to_arrow()
            con.register("_batch", aligned)
            con.execute(f"INSERT INTO {table} BY NAME SELECT * FROM _batch")
            con.unregister("_batch")
            res.rows[table] = res.rows.get(table, 0) + frame.height
    if known is None or not known.height:
        return clock
    if held_from is None:
        return known.tail(1)
    return pl.concat([known.filter(pl.col("line") < held_from).tail(1), known.filter(pl.col("line") >= held_from)])


def _aligned(frame: pl.DataFrame, schema: dict[str, pl.DataType], ctx: Context, res: FileResult) -> pl.DataFrame:
    """`frame` in the table's columns and types; a value its column cannot hold is left empty and reported."""
    cols = [c for c in schema if c in frame.columns]
    out = frame.select([
        (pl.col(c).cast(t, strict=False) if c in frame.columns else pl.lit(None, t).alias(c))
        for c, t in schema.items()
    ])
    if not cols:
        return out
    lost = pl.DataFrame({c: frame[c].is_not_null() & out[c].is_null() for c in cols})
    flagged = lost.with_columns(_line=frame["line"]).filter(pl.any_horizontal(cols)).head(5)
    for row in flagged.iter_rows(named=True):
        msg = f"{ctx.path}:{row['_line']}: {', '.join(c for c in cols if row[c])} out of range, left empty"
        if msg not in res.messages and len(res.messages) < 50:
            res.messages.append(msg)
    return out


def _fill_ts(frame: pl.DataFrame, known: pl.DataFrame | None, table: str) -> pl.DataFrame:
    """Lines without a time of their own take the nearest earlier stamped line's.

    Where there is none, only evidence events take the next stamped line's (an upper bound: srun's
    error lines come just before slurmstepd's stamped one); rank maps and facts stay without a time,
    since the next stamp may be the failure forty minutes later. A checkpoint load prefers the next
    stamp: it starts a new launch, and the line before it belongs to the crashed one."""
    if "ts" not in frame.columns or known is None or not frame["ts"].null_count():
        return frame
    frame = frame.with_columns(pl.col("line").cast(pl.Int64)).sort("line")
    k = known.rename({"ts": "_ts"}).with_columns(pl.col("line").cast(pl.Int64))
    load = (pl.col("action") == "load").fill_null(False) if "action" in frame.columns else pl.lit(False)
    both = (frame.join_asof(k, on="line", strategy="backward")
            .join_asof(k.rename({"_ts": "_next"}), on="line", strategy="forward"))
    later = pl.col("_next") if table == "events" else pl.lit(None, pl.Datetime("us"))
    return both.with_columns(
        pl.when(load)
        .then(pl.col("ts").fill_null(pl.col("_next")).fill_null(pl.col("_ts")))
        .otherwise(pl.col("ts").fill_null(pl.col("_ts")).fill_null(later))
        .alias("ts")
    ).drop("_ts", "_next")


def _roll_year_back(frame: pl.DataFrame, mtime: dt.datetime | None) -> pl.DataFrame:
    """Formats without a year got the file's mtime year; a line can't be newer than its file, so
    December lines in a file last written in January belong to the year before."""
    if mtime is None or "ts" not in frame.columns:
        return frame
    late = pl.col("ts") > pl.lit(mtime + dt.timedelta(days=2))
    return frame.with_columns(pl.when(late).then(pl.col("ts").dt.offset_by("-1y")).otherwise(pl.col("ts")).alias("ts"))


def _record(con, file_id, task, ctx, whole, size, state: ReadState, chosen, res, grown) -> None:
    rows = sum(res.rows.values())
    if grown:
        con.execute(
            "UPDATE ingested_files SET content_hash = ?, raw_bytes = ?, text_bytes = ?, lines = ?, "
            "last_line_open = ?, last_line_start = ?, rows = rows + ?, unparsed = unparsed + ?, "
            "other_lines = other_lines + ?, ingested_at = now() WHERE file_id = ?",
            [whole, size, state.text_bytes, state.lines, state.last_line_open, state.last_line_start,
             rows, res.unparsed, res.other_lines, file_id],
        )
        return
    con.execute(
        "INSERT INTO ingested_files VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, now())",
        [file_id, str(task.path.resolve()), whole, size, state.text_bytes, state.lines,
         state.last_line_open, state.last_line_start, [c.NAME for c in chosen], ctx.run, ctx.attempt,
         ctx.host, rows, res.unparsed, res.other_lines],
    )
