"""A clusterlab store as a hive-partitioned Parquet lake: writing it, and attaching it to a DuckDB connection.

Layout of a lake directory (what Spark, Trino or pandas read as Hive-style tables):

    _lake.json                         marker: format, schema version, each table's partition columns
    <table>/run=<run>/source=<source>/part-*.parquet    tables with a run and a source (the evidence tables)
    <table>/run=<run>/part-*.parquet                    tables with a run (ingested_files: the manifest, ...)
    <table>/date=<day>/part-*.parquet                   tables without a run, by the day of their time column
    <table>/part-*.parquet                              small tables with neither (providers, clusters, nodes)

A row without a run goes to `run=__HIVE_DEFAULT_PARTITION__` (read back as NULL, in Hive's, Spark's and
DuckDB's convention); other values are percent-encoded in the directory name. Partition columns are not
stored inside the files; a reader takes them from the directory names.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import urllib.parse
import uuid
from collections.abc import Iterable, Iterator
from pathlib import Path

import duckdb

from clusterlab import store

MARKER = "_lake.json"
LOCK = "_writer.lock"
FORMAT = "clusterlab-lake"
NULL_DIR = "__HIVE_DEFAULT_PARTITION__"
# Tables of a store a lake leaves out: the version is the marker's; the relaunch claims are locks of one database.
NOT_EXPORTED = frozenset({"schema_version", "relaunch_claims"})
# Tables an attached lake shows as views (big, only ever written by ingest); the others are copied in (small,
# and some written by reading commands: annotations, relaunches).
VIEWED = frozenset(store.FILE_TABLES) | {"ingested_files"}
DATE_COLUMNS = {"annotations": "annotated_at"}  # the time whose day partitions a table without a run


class LakeError(ValueError):
    """A directory that is not a clusterlab lake, or one this clusterlab cannot read."""


def store_tables(con: duckdb.DuckDBPyConnection) -> list[str]:
    """The base tables of the store behind `con` that a lake holds, in creation order."""
    rows = con.execute("SELECT table_name FROM duckdb_tables() WHERE database_name = current_database() "
                       "AND schema_name = 'main' AND NOT temporary ORDER BY table_oid").fetchall()
    return [r[0] for r in rows if r[0] not in NOT_EXPORTED]


def columns(con: duckdb.DuckDBPyConnection, table: str) -> list[tuple[str, str]]:
    """(name, DuckDB type) of a store table's columns, in storage order."""
    return con.execute("SELECT column_name, data_type FROM duckdb_columns() WHERE database_name = current_database() "
                       "AND schema_name = 'main' AND table_name = ? ORDER BY column_index", [table]).fetchall()


def partition_columns(con: duckdb.DuckDBPyConnection, table: str) -> list[str]:
    """The columns a table is partitioned by in a lake (see the module's docstring)."""
    names = [c for c, _ in columns(con, table)]
    if "run" in names:
        return ["run", "source"] if "source" in names else ["run"]
    return ["date"] if table in DATE_COLUMNS else []


def read_marker(lake: Path) -> dict:
    """The lake's marker; LakeError when `lake` is no clusterlab lake or a newer one."""
    path = Path(lake) / MARKER
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        why = f"not a clusterlab lake (no {MARKER}; `clusterlab export --parquet` writes one)"
        raise LakeError(f"{lake}: {why}") from None
    except (OSError, ValueError) as e:
        raise LakeError(f"{path}: cannot read: {e}") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT or not isinstance(doc.get("tables"), dict):
        raise LakeError(f"{path}: not a clusterlab lake marker")
    if int(doc.get("schema_version", 0)) > store.SCHEMA_VERSION:
        raise LakeError(f"{lake}: lake schema version {doc['schema_version']} is newer than this clusterlab "
                        f"({store.SCHEMA_VERSION})")
    return doc


def write_marker(con: duckdb.DuckDBPyConnection, lake: Path) -> None:
    doc = {"format": FORMAT, "schema_version": store.SCHEMA_VERSION,
           "tables": {t: partition_columns(con, t) for t in store_tables(con)}}
    tmp = Path(lake) / f".{MARKER}.{uuid.uuid4().hex}"
    tmp.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
    os.replace(tmp, Path(lake) / MARKER)


def check_target(lake: Path) -> None:
    """A lake may be written into an absent or empty directory, or over a lake."""
    if lake.exists() and not lake.is_dir():
        raise LakeError(f"{lake}: not a directory")
    if lake.is_dir() and any(p.name != LOCK for p in lake.iterdir()) and not (lake / MARKER).is_file():
        raise LakeError(f"{lake}: not empty and not a clusterlab lake; refusing to write into it")


@contextlib.contextmanager
def writing(lake: Path) -> Iterator[None]:
    """Hold the lake's writer lock (a file naming this process) while the block runs: one writer at a time."""
    lock = Path(lake) / LOCK
    try:
        fd = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
    except FileExistsError:
        holder = lock.read_text(encoding="utf-8", errors="replace").strip()[:80]
        raise LakeError(f"{lake}: another clusterlab is writing this lake ({holder}); if it is gone, "
                        f"remove {lock}") from None
    with os.fdopen(fd, "w") as f:
        f.write(f"pid {os.getpid()} on {socket.gethostname()}\n")
    try:
        yield
    finally:
        lock.unlink(missing_ok=True)


def sql_path(path: Path) -> str:
    """A path as an SQL string literal."""
    return "'" + str(path).replace("'", "''") + "'"


def _partition_value(dirname: str) -> str | None:
    """The value a `key=value` directory name stands for (None: the Hive default partition)."""
    value = dirname.partition("=")[2]
    return None if value == NULL_DIR else urllib.parse.unquote(value)


def write_table(con: duckdb.DuckDBPyConnection, lake: Path, table: str, select: str,
                replace_runs: Iterable[str | None] | None = None) -> int:
    """Write the rows of `select` (the table's columns) as the lake's `table`; returns the rows written.

    `replace_runs` None: the whole table is replaced. Otherwise the partitions of those runs are replaced
    and the other rows of `select` are added beside what the lake holds (new files in their partitions).
    """
    parts = partition_columns(con, table)
    dest = Path(lake) / table
    tmp = Path(lake) / "_tmp" / uuid.uuid4().hex
    date = f", CAST({DATE_COLUMNS[table]} AS DATE) AS date" if "date" in parts else ""
    query = f"SELECT *{date} FROM ({select})"
    n = con.execute(f"SELECT count(*) FROM ({query})").fetchall()[0][0]
    tmp.mkdir(parents=True)
    try:
        # NOTE: a unique file name per write: added files never overwrite the ones a partition holds
        name = f"part-{uuid.uuid4().hex[:12]}"
        if n and parts:
            con.execute(f"COPY ({query}) TO {sql_path(tmp)} (FORMAT parquet, COMPRESSION zstd, PARTITION_BY "
                        f"({', '.join(parts)}), FILENAME_PATTERN '{name}-{{i}}', OVERWRITE_OR_IGNORE true)")
        elif n:
            con.execute(f"COPY ({query}) TO {sql_path(tmp / (name + '.parquet'))} (FORMAT parquet, COMPRESSION zstd)")
        if replace_runs is None or "run" not in parts:
            if dest.exists():
                shutil.rmtree(dest)
            tmp.rename(dest)
            return n
        replace = set(replace_runs)
        dest.mkdir(exist_ok=True)
        for old in dest.glob("run=*"):
            if _partition_value(old.name) in replace:
                shutil.rmtree(old)
        for new in tmp.glob("run=*"):
            _merge_dir(new, dest / new.name)
        return n
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        with contextlib.suppress(OSError):
            (Path(lake) / "_tmp").rmdir()


def _merge_dir(src: Path, dst: Path) -> None:
    """Move the files under `src` into `dst`, keeping what `dst` holds (file names are unique)."""
    if not dst.exists():
        src.rename(dst)
        return
    for p in src.iterdir():
        if p.is_dir():
            _merge_dir(p, dst / p.name)
        else:
            p.rename(dst / p.name)


def export(con: duckdb.DuckDBPyConnection, lake: str | os.PathLike) -> dict[str, int]:
    """Write every table of the store behind `con` as a lake at `lake`; returns rows per table."""
    lake = Path(lake)
    check_target(lake)
    lake.mkdir(parents=True, exist_ok=True)
    with writing(lake):
        # NOTE: unqualified names: a store that reads a lake itself exports the lake's rows (its views come first)
        out = {t: write_table(con, lake, t, f'SELECT * FROM "{t}"') for t in store_tables(con)}
        write_marker(con, lake)
    return out


def files_of(lake: Path, table: str) -> list[Path]:
    return sorted((Path(lake) / table).rglob("*.parquet"))


def scan(con: duckdb.DuckDBPyConnection, lake: Path, table: str) -> str | None:
    """A SELECT of a lake table in the store's columns and types (None: the lake holds no rows of it)."""
    if not files_of(lake, table):
        return None
    parts = read_marker(lake)["tables"].get(table, [])
    # NOTE: partition values are text (a run named `42` stays a string), never guessed
    hive = ", ".join(f"'{p}': 'VARCHAR'" for p in parts)
    glob = sql_path(Path(lake).resolve() / table / "**" / "*.parquet")
    source = (f"read_parquet({glob}, hive_partitioning = true, union_by_name = true"
              + (f", hive_types = {{{hive}}})" if hive else ")"))
    # a lake written before a column was added (the dating columns of issue 28) lacks it: empty, as a migration
    # would leave it in a database
    present = {r[0] for r in con.execute(f"DESCRIBE SELECT * FROM {source}").fetchall()}
    cols = ", ".join(f'CAST("{c}" AS {t}) AS "{c}"' if c in present else f'NULL::{t} AS "{c}"'
                     for c, t in columns(con, table))
    return f"SELECT {cols} FROM {source}"


def attach(con: duckdb.DuckDBPyConnection, lake: str | os.PathLike) -> dict[str, str]:
    """Make the lake at `lake` the store behind `con`: how each table was attached ('view' or 'copied')."""
    # NOTE: the big tables are temporary views over the Parquet files (a file database is left untouched,
    # its own tables shadowed); the small ones are copied into the database when it holds none of them,
    # so that what reading commands write (annotations, relaunches) has a table to go to.
    lake = Path(lake)
    read_marker(lake)
    read_only = con.execute("SELECT readonly FROM duckdb_databases() WHERE database_name = current_database()"
                            ).fetchall()[0][0]
    how: dict[str, str] = {}
    for table in store_tables(con):
        select = scan(con, lake, table)
        if select is None:
            continue
        if table in VIEWED or read_only:
            con.execute(f'CREATE OR REPLACE TEMP VIEW "{table}" AS {select}')
            how[table] = "view"
        elif not con.execute(f'SELECT count(*) FROM main."{table}"').fetchall()[0][0]:
            con.execute(f'INSERT INTO main."{table}" {select}')
            how[table] = "copied"
    return how
