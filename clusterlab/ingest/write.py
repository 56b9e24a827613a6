"""Writing parsed files into DuckDB: many files per transaction, each file's rows and record together.

One writer (the process that holds the database) stores what the parsers hand back. Files are written in
batches: each batch is one transaction, so a file's rows and its `ingested_files` record commit together or
not at all, and a kill at any moment leaves whole files or none (the rerun reads the rest). Inserting a batch
costs one statement per table, not one per file: that is what makes a 20-line file cost little.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import duckdb
import polars as pl

from clusterlab import store
from clusterlab.ingest import training_health
from clusterlab.ingest.pack import UNMATCHED
from clusterlab.ingest.parse import FilePlan, PackedRows, ParsedFile
from clusterlab.store import ArrowStream
from clusterlab.tables import TABLE_COLUMNS, evidence_schema

if TYPE_CHECKING:
    import pyarrow as pa

# NOTE: pyarrow (a tenth of a second to import) is imported only where workers' rows or spilled parts come as Arrow:
# the rows parsed in this process go to DuckDB through the Arrow C stream interface (`store.ArrowStream`)

BATCH_FILES = 2048  # files per transaction at most ...
BATCH_ROWS = 1_000_000  # ... or rows (a batch of ~100k rows costs 1.5x as much a row: see _write_batch)

_RECORD = {
    "file_id": pl.Int64, "path": pl.String, "content_hash": pl.String, "raw_bytes": pl.Int64,
    "text_bytes": pl.Int64, "lines": pl.Int64, "last_line_open": pl.Boolean, "last_line_start": pl.Int64,
    "collectors": pl.List(pl.String), "run": pl.String, "attempt": pl.Int32, "host": pl.String,
    "rows": pl.Int64, "unparsed": pl.Int64, "other_lines": pl.Int64,
}


class Writer:
    """Collects parsed files and commits them in batches; `close()` commits what is left."""

    def __init__(self, con: duckdb.DuckDBPyConnection, batch_files: int = BATCH_FILES,
                 batch_rows: int = BATCH_ROWS) -> None:
        self.con, self.batch_files, self.batch_rows = con, batch_files, batch_rows
        self.pending: list[ParsedFile] = []
        self.pending_rows = 0
        self.spilled = False  # a pending file's rows wait in spill files
        self.stored: set[tuple] = set()  # (hash, run, attempt, host) of the files this writer stored

    def add(self, pf: ParsedFile) -> None:
        # NOTE: the batch is closed before a file, not after it, so that a worker's packed chunk is not cut in two
        # (a cut one is still right, each batch storing its own files' rows: it is read twice)
        if self.pending and (pf.packed is None or pf.packed is not self.pending[-1].packed) and self._full():
            self.commit()
        if not pf.ok:
            return
        key = _same_key(pf.plan)
        if key in self.stored:  # the same content for the same run, attempt and host: already read in this call
            _discard(pf)
            pf.result.status, pf.result.rows = "unchanged", {}
            pf.result.unparsed = pf.result.other_lines = pf.result.unmatched = 0
            pf.result.messages.clear()
            return
        self.stored.add(key)
        self.pending.append(pf)
        self.pending_rows += sum(pf.result.rows.values())
        self.spilled |= any(isinstance(p, Path) for parts in pf.tables.values() for p in parts)

    def _full(self) -> bool:
        # a spill waits on disk: stored with the next commit, not held back for a full batch
        return self.spilled or len(self.pending) >= self.batch_files or self.pending_rows >= self.batch_rows

    def close(self) -> None:
        self.commit()

    def commit(self) -> None:
        batch, self.pending, self.pending_rows, self.spilled = self.pending, [], 0, False
        if not batch:
            return
        con = self.con
        con.execute("BEGIN")
        try:
            _write_batch(con, batch)
            con.execute("COMMIT")
        except BaseException:
            con.execute("ROLLBACK")
            raise
        finally:
            for pf in batch:
                _discard(pf)


def _same_key(plan: FilePlan) -> tuple:
    return (plan.whole_hash, plan.ctx.run, plan.ctx.attempt, plan.ctx.host)


def _discard(pf: ParsedFile) -> None:
    for parts in pf.tables.values():
        for p in parts:
            if isinstance(p, Path):
                p.unlink(missing_ok=True)


def _write_batch(con: duckdb.DuckDBPyConnection, batch: list[ParsedFile]) -> None:
    for pf in batch:
        plan = pf.plan
        if plan.reopen_from is not None:
            # an open last line may have been completed since: its rows are read again
            for t in store.FILE_TABLES:
                con.execute(f"DELETE FROM {t} WHERE file_id = ? AND line >= ?", [plan.file_id, plan.reopen_from])
    packs: dict[int, tuple[PackedRows, set[int]]] = {}  # a worker's chunk, and which of its files this batch holds
    for pf in batch:
        if pf.packed is not None:
            packs.setdefault(id(pf.packed), (pf.packed, set()))[1].add(pf.plan.file_id)
    frames: dict[str, list[pl.DataFrame]] = {}
    spills: dict[str, list[Path]] = {}
    for pf in batch:  # (one pass over the batch, not one per table: a batch is thousands of files)
        for table, parts in pf.tables.items():
            for p in parts:
                (frames if isinstance(p, pl.DataFrame) else spills).setdefault(table, []).append(p)
        if pf.unmatched is not None:
            frames.setdefault(UNMATCHED, []).append(pf.unmatched)
    for table in (*TABLE_COLUMNS, UNMATCHED):
        # NOTE: one insert per table and batch: rechunked, as DuckDB reads an Arrow table of hundreds of one-file
        # chunks 3x slower; and whole, as an insert of less than a row group (122,880 rows) is written twice (its
        # rows go through the log at commit), where a large one goes straight to the database file
        mine = frames.get(table)
        packed = [rows for packed, keep in packs.values() if (rows := packed.table(table, keep)) is not None]
        parts = [*(mine or ()), *packed]
        if parts:
            # (by name: a column all null in one part may have another type there)
            _insert(con, table, ArrowStream(pl.concat(parts, how="diagonal_relaxed", rechunk=True)
                                            if len(parts) > 1 else parts[0].rechunk()))
        for spill in spills.get(table, ()):
            import pyarrow as pa

            with pa.memory_map(str(spill)) as src:
                _insert(con, table, pa.ipc.open_file(src).read_all())
    nccl = [pf.plan.file_id for pf in batch if "nccl" in pf.collectors]
    if nccl:
        _nccl_ranks_across_batches(con, nccl)
    for pf in batch:
        if pf.plan.earlier:
            _drop_repeats(con, pf)
    # NOTE: a new file without step rows has no loss spikes to derive or to delete: left out
    training_health.refresh_files(con, {pf.plan.file_id: pf.result.rows for pf in batch
                                        if pf.result.rows.get("steps") or pf.plan.status != "ingested"})
    _record(con, batch)


def _insert(con: duckdb.DuckDBPyConnection, table: str, rows: pa.Table | ArrowStream) -> None:
    # NOTE: read by a replacement scan of this local, not con.register(): a registered table stays alive to the
    # end of the transaction, and a big file's spilled parts (memory-mapped) then add up to its whole size in RSS
    _batch = rows  # noqa: F841 (read by name in the SQL)
    con.execute(f"INSERT INTO {table} BY NAME SELECT * FROM _batch")


_UNMATCHED_COLUMNS = ("run", "attempt", "host", "line", "text")  # an unmatched line's, as the store keeps it


def _drop_repeats(con: duckdb.DuckDBPyConnection, pf: ParsedFile) -> None:
    """Rows of a new file that its earlier versions or the log it was rotated from already stored: kept once.

    A row repeats an earlier one when every column but its file (and its line, where the lines moved: a
    rewritten file) is the same; a line printed twice in one file stays twice."""
    plan = pf.plan
    for table in store.FILE_TABLES:
        if not pf.result.rows.get(table) and table != UNMATCHED:
            continue
        stored = list(evidence_schema(table)) if table in TABLE_COLUMNS else list(_UNMATCHED_COLUMNS)
        columns = [c for c in stored if c != "file_id" and (plan.same_lines or c != "line")]
        same = " AND ".join(f"n.{c} IS NOT DISTINCT FROM o.{c}" for c in columns)
        # NOTE: numbered within each side, so that k copies of a row in the new file drop only as many as the
        # earlier files had
        n = con.execute(f"""
            DELETE FROM {table} WHERE file_id = $new AND rowid IN (
                SELECT n.rid FROM
                  (SELECT rowid AS rid, *, row_number() OVER (PARTITION BY {", ".join(columns)}) AS k
                   FROM {table} WHERE file_id = $new) n
                JOIN (SELECT *, row_number() OVER (PARTITION BY {", ".join(columns)}) AS k
                      FROM {table} WHERE list_contains($old, file_id)) o ON {same} AND n.k = o.k)""",
                        {"new": plan.file_id, "old": list(plan.earlier)}).fetchall()[0][0]
        if n and table in pf.result.rows:
            pf.result.rows[table] -= n


def _nccl_ranks_across_batches(con: duckdb.DuckDBPyConnection, file_ids: list[int]) -> None:
    """NCCL WARN events whose process's init line came in an earlier batch or read take its rank from there."""
    # NOTE: the collector maps (host, pid) to a rank within one batch; a log read in two parts (a
    # long one, or one that grew) must give the rows a single read gives.
    con.execute("""
        UPDATE events e SET rank = m.rank FROM (
            SELECT file_id, host, pid, arg_max(rank, nranks) AS rank FROM nccl_ranks
            WHERE list_contains($f, file_id) GROUP BY file_id, host, pid
        ) m
        WHERE e.file_id = m.file_id AND e.source = 'nccl' AND e.rank IS NULL AND e.host = m.host
          AND TRY_CAST(json_extract_string(e.detail, '$.pid') AS BIGINT) = m.pid
    """, {"f": file_ids})


def _record(con: duckdb.DuckDBPyConnection, batch: list[ParsedFile]) -> None:
    new = []
    for pf in batch:
        plan, res, st = pf.plan, pf.result, pf.state
        rows = sum(res.rows.values())
        if plan.status == "appended":
            con.execute(
                "UPDATE ingested_files SET content_hash = ?, raw_bytes = ?, text_bytes = ?, lines = ?, "
                "last_line_open = ?, last_line_start = ?, rows = rows + ?, unparsed = unparsed + ?, "
                "other_lines = other_lines + ?, ingested_at = now() WHERE file_id = ?",
                [plan.whole_hash, plan.size, st.text_bytes, st.lines, st.last_line_open, st.last_line_start,
                 rows, res.unparsed, res.other_lines, plan.file_id],
            )
            continue
        new.append((plan.file_id, plan.where or str(plan.task.path.resolve()), plan.whole_hash, plan.size,
                    st.text_bytes, st.lines, st.last_line_open, st.last_line_start, pf.collectors, plan.ctx.run,
                    plan.ctx.attempt, plan.ctx.host, rows, res.unparsed, res.other_lines))
    if new:
        # NOTE: built column by column: polars built a Series for each row's list of collectors when given rows
        # (0.1 ms a file, a tenth of the writer's time at a fleet's file count)
        columns = zip(*new, strict=True)  # (every record has every field)
        records = pl.DataFrame([pl.Series(name, col, dtype=_RECORD[name])
                                for name, col in zip(_RECORD, columns, strict=True)])
        con.register("_records", ArrowStream(records))
        try:
            con.execute("INSERT INTO ingested_files BY NAME SELECT *, now() AS ingested_at FROM _records")
        finally:
            con.unregister("_records")
