"""`clusterlab ingest --engine spark`: the same parsing on Spark executors, into a Parquet lake.

The driver walks the paths and plans each file as `clusterlab.ingest.ingest` does (bundle layout, inventory,
run.toml, one Context per file; the lake's `ingested_files` table is the manifest of content hashes, so a rerun
reads only new, grown or changed files). Executors parse the plans as the DuckDB path's workers do (the same
sniffing, line numbers, time filling and bad-input reporting) and write each partition's rows as one Parquet
file per table into a staging folder of the lake; only the files' results come back. The driver stores the
rows, and the files' records, with the DuckDB path's own writer into a scratch DuckDB that holds the lake's
rows of the runs the new files belong to, runs the pass the DuckDB path runs after every ingest (attempt
splitting, ranks' hosts, attempts) and replaces those runs' partitions in the lake; rows of new files without
a run are added beside the others.

The lake and its staging folder must be a path the driver and every executor see (a shared file system, or
an object store mounted as one); the evidence paths too.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import tempfile
import time
import uuid
from collections.abc import Iterable, Iterator
from functools import partial
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

from clusterlab import attempts, lake, store
from clusterlab.ingest import IngestSummary, note_nothing_found, plan_files, walk_tasks
from clusterlab.ingest_group import parse_many
from clusterlab.ingest_parse import FilePlan, FileResult, ParsedFile
from clusterlab.ingest_pool import CHUNK_FILES
from clusterlab.ingest_write import Writer

SLICES_PER_CORE = 4  # tasks per executor core: one big file holds back little of a stage
LAKE_TABLES = [*store.FILE_TABLES, "ingested_files"]  # tables whose rows belong to one evidence file
READ = ("ingested", "appended", "replaced")


def spark_session(master: str | None = None, app: str = "clusterlab-ingest", conf: dict[str, str] | None = None):
    """A SparkSession (pyspark is imported here only: it is the optional extra `clusterlab[spark]`)."""
    try:
        from pyspark.sql import SparkSession
    except ImportError as e:
        raise RuntimeError("the spark engine needs pyspark: pip install 'clusterlab[spark]'") from e
    # NOTE: executors run this interpreter (its venv has clusterlab); a cluster sets its own in PYSPARK_PYTHON
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = SparkSession.builder.appName(app)
    for key, value in (conf or {}).items():
        builder = builder.config(key, value)
    # NOTE: under spark-submit (which sets the gateway's port) the master comes from its configuration
    if master or "PYSPARK_GATEWAY_PORT" not in os.environ:
        builder = builder.master(master or "local[*]")
    return builder.getOrCreate()


def _parsed(plans: Iterable[FilePlan], spill: Path) -> Iterator[ParsedFile]:
    """The plans parsed as the DuckDB path parses them (small files of one format together), a chunk at a time."""
    chunk: list[FilePlan] = []
    for plan in plans:
        plan.spill_dir = spill  # a file's rows past FLUSH_ROWS wait there (the lake's staging), not in memory
        chunk.append(plan)
        if len(chunk) >= CHUNK_FILES:
            yield from parse_many(chunk)
            chunk = []
    if chunk:
        yield from parse_many(chunk)


def _parse_partition(plans: Iterable[FilePlan], staging: str) -> Iterator[tuple[dict[str, str], list[ParsedFile]]]:
    """Parse one Spark partition's plans on an executor: their rows go to one Parquet file per table in
    `staging`; what comes back to the driver is each file's result and read state, without rows."""
    part = uuid.uuid4().hex
    writers: dict[str, pq.ParquetWriter] = {}
    files: dict[str, str] = {}
    parsed = []
    try:
        for pf in _parsed(plans, Path(staging)):
            parsed.append(pf)
            if not pf.ok or pf.plan.status == "appended":  # NOTE: a grown file's rows go with it (the writer
                continue  # deletes its re-read lines first), as do the messages of a file that failed
            pieces = {**pf.tables, "unmatched_lines": [pf.unmatched] if pf.unmatched is not None else []}
            for table, parts in pieces.items():
                for piece in parts:
                    rows = pa.ipc.open_file(pa.memory_map(str(piece))).read_all() if isinstance(piece, Path) \
                        else piece.to_arrow()
                    if table not in writers:
                        files[table] = str(Path(staging) / f"{table}-{part}.parquet")
                        writers[table] = pq.ParquetWriter(files[table], rows.schema)
                    writers[table].write_table(rows.cast(writers[table].schema))
                    if isinstance(piece, Path):
                        piece.unlink()
            pf.tables, pf.unmatched, pf.held_rows = {}, None, 0
    finally:
        for w in writers.values():
            w.close()
    yield files, parsed


def ingest(spark, lake_dir: str | os.PathLike, paths: list[str | os.PathLike],
           inventory_file: str | os.PathLike | None = None, run: str | None = None, host: str | None = None,
           year: int | None = None, timings: dict[str, float] | None = None) -> IngestSummary:
    """Ingest files and directories into the Parquet lake at `lake_dir` on Spark (idempotent).

    `timings`, when given, receives the seconds of each phase: plan (walk, hashes), parse (the Spark stage),
    merge (rows into the driver's store), refresh (attempts) and write (Parquet)."""
    out = Path(lake_dir)
    lake.check_target(out)
    out.mkdir(parents=True, exist_ok=True)
    with lake.writing(out):
        return _ingest_locked(spark, out, paths, inventory_file, run, host, year, _Phases(timings))


class _Phases:
    """Seconds per phase, added up into `into` (when there is one)."""

    def __init__(self, into: dict[str, float] | None) -> None:
        self.into, self.since = into, time.perf_counter()

    def done(self, phase: str) -> None:
        now = time.perf_counter()
        if self.into is not None:
            self.into[phase] = self.into.get(phase, 0.0) + now - self.since
        self.since = now


def _ingest_locked(spark, out: Path, paths, inventory_file, run, host, year, phases: _Phases) -> IngestSummary:
    work = Path(tempfile.mkdtemp(prefix="clusterlab-spark-"))
    staging = out / "_staging" / uuid.uuid4().hex
    staging.mkdir(parents=True)
    try:
        con = store.connect(work / "driver.duckdb")  # on disk: the runs recomputed may not fit in memory
        try:
            summary = _ingest(spark, con, out, staging, [Path(p) for p in paths],
                              Path(inventory_file) if inventory_file else None, run, host, year, phases)
        finally:
            con.close()
        return summary
    finally:
        shutil.rmtree(work, ignore_errors=True)
        shutil.rmtree(staging, ignore_errors=True)
        with contextlib.suppress(OSError):
            (out / "_staging").rmdir()


def _ingest(spark, con: duckdb.DuckDBPyConnection, out: Path, staging: Path, roots: list[Path],
            inventory_file: Path | None, run: str | None, host: str | None, year: int | None,
            phases: _Phases) -> IngestSummary:
    summary = IngestSummary()
    if (out / lake.MARKER).is_file():
        lake.attach(con, out)  # the manifest and the lake's rows, as views; its small tables, copied
    last = con.execute("SELECT coalesce(max(file_id), 0) FROM ingested_files").fetchall()[0][0]
    con.execute("DROP SEQUENCE file_ids")  # the new files' ids follow the lake's
    con.execute(f"CREATE SEQUENCE file_ids START {int(last) + 1}")
    tasks = walk_tasks(con, roots, inventory_file, run, host, year, summary)
    decided = plan_files(con, tasks, None)
    plans = [d for d in decided if isinstance(d, FilePlan)]
    touched = _touched(con, plans)
    phases.done("plan")
    _load(con, out, touched, loaded=set())
    phases.done("merge")
    parsed: dict[int, FileResult] = {}
    ids: list[int] = []
    if plans:
        slices = max(1, min(len(plans), spark.sparkContext.defaultParallelism * SLICES_PER_CORE))
        parse = partial(_parse_partition, staging=str(staging))
        parts = spark.sparkContext.parallelize(plans, slices).mapPartitions(parse).collect()
        phases.done("parse")
        ids = _store(con, parts, parsed)
    summary.files += [parsed[d.file_id] if isinstance(d, FilePlan) else d for d in decided]
    if ids:
        if con.execute("SELECT count(*) FROM jobs WHERE list_contains(?, file_id)", [ids]).fetchall()[0][0]:
            # NOTE: a scheduler record adds hosts to the attempts of any run whose lines name its job
            everything = _runs(con, out) | {None}
            _load(con, out, everything, loaded=touched)
            touched = everything
        phases.done("merge")
        attempts.refresh(con)
        phases.done("refresh")
        _write_rows(con, out, touched, ids)
    _write_small(con, out)
    phases.done("write")
    note_nothing_found(summary, roots)
    return summary


def _store(con: duckdb.DuckDBPyConnection, parts: list[tuple[dict[str, str], list[ParsedFile]]],
           parsed: dict[int, FileResult]) -> list[int]:
    """Store the parsed files with the DuckDB path's writer; the ids of the files stored."""
    # NOTE: a partition's rows are inserted before the writer records its files: the loss spikes and NCCL
    # ranks it derives from a file's rows at its commit find them there
    staged: list[int] = []
    writer = Writer(con)
    try:
        for files, pfs in parts:  # in the plans' order: a copy of a file is the later one
            for table, path in files.items():
                con.execute(f"INSERT INTO main.{table} BY NAME SELECT * FROM read_parquet(?)", [path])
            for pf in pfs:
                if pf.ok and pf.plan.status != "appended":
                    staged.append(pf.plan.file_id)
                writer.add(pf)
                parsed[pf.plan.file_id] = pf.result
    finally:
        writer.close()
    dropped = [i for i in staged if parsed[i].status not in READ]  # copies found by the writer
    if dropped:
        for table in store.FILE_TABLES:
            con.execute(f"DELETE FROM main.{table} WHERE list_contains(?, file_id)", [dropped])
    return [i for i, res in parsed.items() if res.status in READ]


def _touched(con: duckdb.DuckDBPyConnection, plans: list[FilePlan]) -> set[str | None]:
    """The runs whose partitions this ingest replaces (None: rows without a run).

    A new file adds rows to its run; a file read again or replaced changes the rows of the run it had. New
    files without a run only add rows (kept beside the others), so rows without a run are replaced only when
    such a file changed."""
    runs: set[str | None] = {p.ctx.run for p in plans if p.ctx.run is not None}
    before = [p.prev_id if p.status == "replaced" else p.file_id for p in plans if p.status != "ingested"]
    if before:
        runs |= {r[0] for r in con.execute("SELECT DISTINCT run FROM ingested_files WHERE list_contains(?, file_id)",
                                           [before]).fetchall()}
    return runs


def _runs(con: duckdb.DuckDBPyConnection, out: Path) -> set[str | None]:
    """Every run the lake or this ingest holds rows of."""
    select = lake.scan(con, out, "ingested_files") if (out / lake.MARKER).is_file() else None
    held = {r[0] for r in con.execute(f"SELECT DISTINCT run FROM ({select})").fetchall()} if select else set()
    return (held | {r[0] for r in con.execute("SELECT DISTINCT run FROM main.ingested_files").fetchall()}) - {None}


def _where(runs: set[str | None]) -> tuple[str, dict]:
    return ("(list_contains($runs, run) OR ($null AND run IS NULL))",
            {"runs": sorted(r for r in runs if r is not None), "null": None in runs})


def _load(con: duckdb.DuckDBPyConnection, out: Path, runs: set[str | None], loaded: set[str | None]) -> None:
    """Copy the lake's rows of `runs` (less those of the runs `loaded` before) into the scratch store's own
    tables, with every scheduler record the first time (the attempts pass joins them); drops the lake's views."""
    views = {r[0] for r in con.execute("SELECT view_name FROM duckdb_views() WHERE temporary").fetchall()}
    for view in views & set(LAKE_TABLES):
        con.execute(f"DROP VIEW temp.{view}")
    if not (out / lake.MARKER).is_file():
        return
    mine, params = _where(runs - loaded)
    for table in LAKE_TABLES:
        select = lake.scan(con, out, table)
        if select is None or (table == "jobs" and loaded):
            continue
        where, args = ("true", {}) if table == "jobs" else (mine, params)
        con.execute(f"INSERT INTO main.{table} SELECT * FROM ({select}) WHERE {where}", args)


def _write_rows(con: duckdb.DuckDBPyConnection, out: Path, touched: set[str | None], ids: list[int]) -> None:
    """Replace the touched runs' partitions of every file table and of attempts; add the other new rows."""
    mine, params = _where(touched)
    for table in [*LAKE_TABLES, "attempts"]:
        rows, args = (mine, params) if table == "attempts" else (f"({mine} OR list_contains($ids, file_id))",
                                                                 params | {"ids": ids})
        con.execute(f"CREATE OR REPLACE TEMP TABLE _rows AS SELECT * FROM main.{table} WHERE {rows}", args)
        lake.write_table(con, out, table, "SELECT * FROM _rows", touched)
        con.execute("DROP TABLE _rows")


def _write_small(con: duckdb.DuckDBPyConnection, out: Path) -> None:
    """The lake's small tables (providers, clusters, nodes, runs, ...), whole where they changed, and its marker."""
    for table in lake.store_tables(con):
        if table in LAKE_TABLES or table == "attempts":
            continue
        held = lake.scan(con, out, table) if (out / lake.MARKER).is_file() else None
        mine = f'SELECT * FROM main."{table}"'
        if held is not None and not con.execute(
                f"SELECT count(*) FROM (({mine} EXCEPT ALL {held}) UNION ALL ({held} EXCEPT ALL {mine}))"
        ).fetchall()[0][0]:
            continue  # NOTE: a rerun that changed nothing leaves the lake's files as they were
        if held is not None or con.execute(f"SELECT count(*) FROM ({mine})").fetchall()[0][0]:
            lake.write_table(con, out, table, mine)
    lake.write_marker(con, out)
