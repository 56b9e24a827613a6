"""`clusterlab ingest --engine spark`: the same parsing on Spark executors, into a Parquet lake.

The driver walks the paths and plans each file as `clusterlab.ingest.driver.ingest` does (bundle layout, inventory,
run.toml, one Context per file; the lake's `ingested_files` table is the manifest of content hashes, so a rerun
reads only new, grown or changed files). Executors parse the plans as the DuckDB path's workers do (the same
sniffing, line numbers, time filling and bad-input reporting) and write each partition's rows as one Parquet
file per table into a staging folder of the lake; only the files' results come back. The driver stores the
rows, and the files' records, with the DuckDB path's own writer into a scratch DuckDB that holds the lake's
rows of the runs the new files belong to, runs the pass the DuckDB path runs after every ingest (attempt
splitting, ranks' hosts, attempts) and replaces those runs' partitions in the lake; rows of new files without
a run are added beside the others.

The lake and its staging folder must be a path the driver and every executor see (a shared file system, or
an object store mounted as one). Evidence paths are either such paths too, or URLs (s3a://, gs://, abfss://,
hdfs://, file://) that Spark lists and reads (`clusterlab.scale.spark_sources`): executors get their bytes through
`binaryFiles`, keep them in a local file for the same parsing, and every row and message names the URL.
"""

from __future__ import annotations

import contextlib
import dataclasses
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

from clusterlab import store
from clusterlab.ingest import attempts
from clusterlab.ingest.driver import IngestSummary, note_nothing_found, plan_files, walk_tasks
from clusterlab.ingest.groups import parse_many
from clusterlab.ingest.parse import FilePlan, FileResult, ParsedFile
from clusterlab.ingest.pool import CHUNK_FILES
from clusterlab.ingest.write import Writer
from clusterlab.scale import lake, spark_sources

SLICES_PER_CORE = 4  # tasks per executor core: one big file holds back little of a stage
LAKE_TABLES = [*store.FILE_TABLES, "ingested_files"]  # tables whose rows belong to one evidence file
READ = ("ingested", "appended", "changed")


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

    A path (or `inventory_file`) given as a URL string (`s3a://bucket/campaign`, `file:///data/bundle`) is listed
    and read through Spark's Hadoop file systems; the others are read where they lie.

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
            roots = [p if spark_sources.is_url(p) else Path(p) for p in paths]
            inventory = inventory_file if spark_sources.is_url(inventory_file) or not inventory_file \
                else Path(inventory_file)
            summary = _ingest(spark, con, out, staging, work, roots, inventory, run, host, year, phases)
        finally:
            con.close()
        return summary
    finally:
        shutil.rmtree(work, ignore_errors=True)
        shutil.rmtree(staging, ignore_errors=True)
        with contextlib.suppress(OSError):
            (out / "_staging").rmdir()


def _ingest(spark, con: duckdb.DuckDBPyConnection, out: Path, staging: Path, work: Path, roots: list[Path | str],
            inventory_file: Path | str | None, run: str | None, host: str | None, year: int | None,
            phases: _Phases) -> IngestSummary:
    summary = IngestSummary()
    if (out / lake.MARKER).is_file():
        lake.attach(con, out)  # the manifest and the lake's rows, as views; its small tables, copied
    last = con.execute("SELECT coalesce(max(file_id), 0) FROM ingested_files").fetchall()[0][0]
    con.execute("DROP SEQUENCE file_ids")  # the new files' ids follow the lake's
    con.execute(f"CREATE SEQUENCE file_ids START {int(last) + 1}")
    tasks, remote = _walk(spark, con, work, roots, inventory_file, run, host, year, summary)
    decided = plan_files(con, tasks, None)
    plans = [d for d in decided if isinstance(d, FilePlan)]
    listing = spark_sources.read_listing(out) if remote else {}
    remote_results, drafts, known = spark_sources.plan(con, remote, listing, len(decided))
    drafted = {d.order: d for d in drafts}  # (a draft whose file vanished leaves `drafts`)
    touched = _touched(con, plans) | spark_sources.touched(drafts)
    phases.done("plan")
    _load(con, out, touched, loaded=set())
    phases.done("merge")
    parsed: dict[int, FileResult] = {}
    ids: list[int] = []
    hashed: list[tuple[str, int, int, str]] = []
    if plans or drafts:
        parts = _parse(spark, plans, drafts, known, staging, remote_results)
        phases.done("parse")
        order = {d.file_id: i for i, d in enumerate(decided) if isinstance(d, FilePlan)}
        ids, hashed = _store_ordered(con, parts, order, parsed, remote_results)
    summary.files += [parsed[d.file_id] if isinstance(d, FilePlan) else d for d in decided]
    summary.files += [remote_results.get(i) or _not_returned(drafted[i]) for i in range(len(decided), len(decided)
                                                                                      + len(remote))]
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
    if drafted:
        spark_sources.write_listing(out, listing, [d.listed.url for d in drafted.values()], hashed)
    phases.done("write")
    note_nothing_found(summary, roots)
    return summary


def _walk(spark, con: duckdb.DuckDBPyConnection, work: Path, roots: list[Path | str], inventory_file, run, host,
          year, summary: IngestSummary) -> tuple[list, list]:
    """The local files' (task, context), and the URL files' (task, context, listing), URLs named in both."""
    urls = [r for r in roots if isinstance(r, str)]
    if not urls and not isinstance(inventory_file, str):
        return walk_tasks(con, [Path(r) for r in roots], inventory_file, run, host, year, summary), []
    found = spark_sources.mirror(spark, urls, work / "mirror")
    if isinstance(inventory_file, str):
        try:
            local = spark_sources.copy_file(spark, inventory_file, work / "inventory" / "inventory.toml")
            found.alias(local, inventory_file)
            inventory_file = local
        except OSError as e:
            summary.files.append(FileResult(inventory_file, "error", messages=[str(e)]))
            inventory_file = None
    walked = walk_tasks(con, [r for r in roots if not isinstance(r, str)] + found.roots, inventory_file, run, host,
                        year, summary)
    summary.files[:] = [found.result(f) for f in summary.files] + found.errors
    local, remote = [], []
    for task, ctx in walked:
        listed = found.files.get(task.path)
        if listed is None:
            local.append((task, ctx))
        else:
            remote.append((dataclasses.replace(task, display=listed.url), dataclasses.replace(ctx, path=listed.url),
                           listed))
    return local, remote


def _with_side(part: tuple[dict[str, str], list[ParsedFile]]) -> tuple[dict[str, str], list[ParsedFile], dict]:
    return (*part, {})


def _parse_remote(pairs: Iterable[tuple[str, bytes]], shared, staging: str) -> Iterator[tuple]:
    """Parse one partition of URL files on an executor, from local copies of their bytes (see spark_sources)."""
    drafts, known = shared.value
    with tempfile.TemporaryDirectory(prefix="clusterlab-objstore-") as spill:
        got = spark_sources.Spilled(drafts, known, Path(spill), Path(staging))
        for files, parsed in _parse_partition(got.plans(pairs), staging):
            yield files, parsed, got.side()


def _parse(spark, plans: list[FilePlan], drafts: list[spark_sources.Draft], known: spark_sources.Known,
           staging: Path, remote_results: dict[int, FileResult]) -> list[tuple[dict, list[ParsedFile], dict]]:
    """The Spark stage: local plans and URL drafts parsed on the executors; each partition's staged rows,
    parsed files and (for URL files) what else the executor decided."""
    from py4j.protocol import Py4JJavaError

    sc = spark.sparkContext
    slices = max(1, min(len(plans) + len(drafts), sc.defaultParallelism * SLICES_PER_CORE))
    for retry in (True, False):
        rdds = []
        if plans:
            rdds.append(sc.parallelize(plans, min(slices, len(plans)))
                        .mapPartitions(partial(_parse_partition, staging=str(staging))).map(_with_side))
        if drafts:
            shared = sc.broadcast(({d.listed.key: d for d in drafts}, known))
            rdds.append(spark_sources.read(spark, drafts, slices)
                        .mapPartitions(partial(_parse_remote, shared=shared, staging=str(staging))))
        if not rdds:
            return []
        try:
            return (rdds[0] if len(rdds) == 1 else sc.union(rdds)).collect()
        except Py4JJavaError:
            gone = spark_sources.vanished(spark, drafts) if retry and drafts else []
            if not gone:
                raise
            # NOTE: a file deleted between the listing and the read fails the whole stage: it is reported, the
            # stage run again without it
            for d in gone:
                remote_results[d.order] = FileResult(d.task.display, "error", messages=[
                    f"{d.task.display}: cannot read: gone since it was listed"])
            drafts[:] = [d for d in drafts if d not in gone]
    raise AssertionError("unreachable")


def _store_ordered(con: duckdb.DuckDBPyConnection, parts: list[tuple[dict, list[ParsedFile], dict]],
                   order: dict[int, int], parsed: dict[int, FileResult],
                   remote_results: dict[int, FileResult]) -> tuple[list[int], list[tuple[str, int, int, str]]]:
    """Store every partition's rows, then its files in the call's order (the later copy of a file is the one
    dropped); URL files' results go to `remote_results`. The ids stored, and the URL files hashed as listed."""
    ranked: list[tuple[int, bool, ParsedFile]] = []  # (place in the call, a URL file?, parsed)
    hashed: list[tuple[str, int, int, str]] = []
    for _, pfs, side in parts:
        if side:
            ranked += [(side["order"][str(pf.plan.task.path)], True, pf) for pf in pfs]
            remote_results.update(side["unchanged"])
            hashed += side["hashed"]
        else:
            ranked += [(order[pf.plan.file_id], False, pf) for pf in pfs]
    ranked.sort(key=lambda item: item[0])
    ids = _store(con, [(files, []) for files, _, _ in parts] + [({}, [pf for *_, pf in ranked])], parsed)
    for rank, remote, pf in ranked:
        if remote:  # recorded under its URL (FilePlan.where), read from the executor's copy
            remote_results[rank] = pf.result
    return ids, hashed


def _not_returned(draft: spark_sources.Draft) -> FileResult:
    url = draft.task.display
    return FileResult(url, "error", messages=[f"{url}: cannot read: Spark's binaryFiles returned no bytes for it"])


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

    A new file adds rows to its run; a file read again, changed or rotated also touches the runs of its earlier
    versions (their rows are loaded, so that a changed file's rows are stored once). New files without a run
    only add rows (kept beside the others), so rows without a run are replaced only when such a file changed."""
    runs: set[str | None] = {p.ctx.run for p in plans if p.ctx.run is not None}
    before = [i for p in plans for i in (p.file_id,) * (p.status == "appended") + p.earlier]
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
