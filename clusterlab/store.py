"""The DuckDB schema, its migrations, and opening a database."""

from __future__ import annotations

import os
import re
from pathlib import Path

import duckdb
import polars as pl

from clusterlab.collectors._base import TABLE_COLUMNS

DEFAULT_DB = "clusterlab.duckdb"

_DUCK_TYPES = {
    pl.Int64: "BIGINT",
    pl.Int32: "INTEGER",
    pl.Float64: "DOUBLE",
    pl.String: "VARCHAR",
    pl.Boolean: "BOOLEAN",
    pl.Datetime("us"): "TIMESTAMP",
}

# Every evidence table starts with these; `line` comes from the collector.
EVIDENCE_PREFIX = {"file_id": pl.Int64, "source": pl.String, "run": pl.String, "attempt": pl.Int32}


def evidence_schema(table: str) -> dict[str, pl.DataType]:
    """Column name → polars type of an evidence table, in storage order."""
    return {**EVIDENCE_PREFIX, **TABLE_COLUMNS[table]}


def _create_evidence(table: str) -> str:
    cols = ", ".join(f"{c} {_DUCK_TYPES[t]}" for c, t in evidence_schema(table).items())
    return f"CREATE TABLE {table} ({cols})"


_V1 = [
    "CREATE TABLE schema_version (version INTEGER, applied_at TIMESTAMP DEFAULT current_timestamp)",
    """CREATE TABLE providers (provider VARCHAR PRIMARY KEY, usd_per_gpu_hour DOUBLE, notes VARCHAR)""",
    """CREATE TABLE clusters (cluster VARCHAR PRIMARY KEY, provider VARCHAR, gpu VARCHAR,
        gpus_per_node INTEGER, interconnect VARCHAR, contracted_nodes INTEGER, contract_start DATE,
        timezone VARCHAR, nodes_expr VARCHAR)""",
    "CREATE TABLE nodes (host VARCHAR PRIMARY KEY, cluster VARCHAR)",
    """CREATE TABLE runs (run VARCHAR PRIMARY KEY, cluster VARCHAR, gpus INTEGER,
        tokens_per_step BIGINT, flops_per_token DOUBLE, params BIGINT, layers INTEGER,
        hidden INTEGER, seq_len INTEGER, checkpoint_dir VARCHAR, launcher VARCHAR,
        launch_command VARCHAR, run_toml VARCHAR)""",
    """CREATE TABLE attempts (run VARCHAR, attempt INTEGER, start_ts TIMESTAMP, end_ts TIMESTAMP,
        first_step_ts TIMESTAMP, first_step BIGINT, last_step BIGINT, hosts VARCHAR[],
        n_hosts INTEGER, PRIMARY KEY (run, attempt))""",
    """CREATE TABLE ingested_files (file_id BIGINT PRIMARY KEY, path VARCHAR, content_hash VARCHAR,
        raw_bytes BIGINT, text_bytes BIGINT, lines BIGINT, last_line_open BOOLEAN,
        last_line_start BIGINT, collectors VARCHAR[], run VARCHAR, attempt INTEGER, host VARCHAR,
        rows BIGINT, unparsed BIGINT, other_lines BIGINT, ingested_at TIMESTAMP)""",
    "CREATE SEQUENCE file_ids START 1",
    *(_create_evidence(t) for t in TABLE_COLUMNS),
    # The fleet as analyses want it: a host absent from the inventory is kept, under `unknown`.
    """CREATE VIEW inventory AS
        SELECT h.host, coalesce(n.cluster, 'unknown') AS cluster,
               coalesce(c.provider, 'unknown') AS provider, c.gpu, c.gpus_per_node,
               p.usd_per_gpu_hour
        FROM (SELECT host FROM nodes UNION SELECT DISTINCT host FROM events WHERE host IS NOT NULL
              UNION SELECT DISTINCT host FROM rank_steps WHERE host IS NOT NULL) h
        LEFT JOIN nodes n USING (host) LEFT JOIN clusters c ON c.cluster = n.cluster
        LEFT JOIN providers p ON p.provider = c.provider""",
]

_V2 = [
    """CREATE TABLE annotations (incident_id VARCHAR NOT NULL, failure_mode VARCHAR, host VARCHAR,
        blame VARCHAR, note VARCHAR, ticket VARCHAR, status VARCHAR, author VARCHAR,
        annotated_at TIMESTAMP DEFAULT current_timestamp)""",
]

# The relaunch driver's audit trail: one row per execution (or refused repeat) of a relaunch plan.
_V3 = [
    "CREATE SEQUENCE relaunch_ids START 1",
    """CREATE TABLE relaunches (relaunch_id BIGINT PRIMARY KEY DEFAULT nextval('relaunch_ids'),
        incident_id VARCHAR NOT NULL, run VARCHAR, backend VARCHAR, plan_json VARCHAR, command VARCHAR[],
        commands_json VARCHAR, started_at TIMESTAMP, finished_at TIMESTAMP, job_id VARCHAR, result VARCHAR,
        detail VARCHAR)""",
]

# When a node was handed over, where the inventory says (`delivered` in inventory.toml): late nodes.
_V4 = ["ALTER TABLE nodes ADD COLUMN delivered DATE"]

# The relaunch driver's claims: one row per incident whose launch stands or is under way. Its primary key is
# what lets exactly one of two executions running at once launch (relaunch/execute.py).
_V5 = [
    """CREATE TABLE relaunch_claims (incident_id VARCHAR PRIMARY KEY, relaunch_id BIGINT NOT NULL,
        claimed_at TIMESTAMP DEFAULT current_timestamp)""",
    """INSERT INTO relaunch_claims (incident_id, relaunch_id)
        SELECT incident_id, min(relaunch_id) FROM relaunches
        WHERE result NOT IN ('failed', 'refused', 'repeat') GROUP BY incident_id""",
]

# Lines that look like trouble (error, fatal, Traceback, timeout, ...) but that no collector's rule matched,
# kept (up to UNMATCHED_PER_FILE a file) so that `clusterlab unmatched` can show what was not understood.
_V6 = ["""CREATE TABLE unmatched_lines (file_id BIGINT, run VARCHAR, attempt INTEGER, host VARCHAR, line BIGINT,
        text VARCHAR)"""]

# Who holds a relaunch claim: a process killed between its claim and its record leaves the claim behind,
# and only the process id and host tell a dead holder from a launch still under way.
_V7 = ["ALTER TABLE relaunch_claims ADD COLUMN pid INTEGER", "ALTER TABLE relaunch_claims ADD COLUMN host VARCHAR"]

# Index i holds the statements that take a database from version i to version i + 1.
MIGRATIONS: list[list[str]] = [_V1, _V2, _V3, _V4, _V5, _V6, _V7]
# tables whose rows belong to one ingested file (deleted with it, cut when it is re-read from a line)
FILE_TABLES = [*TABLE_COLUMNS, "unmatched_lines"]
SCHEMA_VERSION = len(MIGRATIONS)


def db_path(path: str | os.PathLike | None = None) -> str:
    """The database path: explicit, else $CLUSTERLAB_DB, else ./clusterlab.duckdb."""
    return str(path or os.environ.get("CLUSTERLAB_DB") or DEFAULT_DB)


def current_version(con: duckdb.DuckDBPyConnection) -> int:
    has = con.execute(
        "SELECT count(*) FROM information_schema.tables WHERE table_name = 'schema_version'"
    ).fetchall()[0][0]
    if not has:
        return 0
    return con.execute("SELECT coalesce(max(version), 0) FROM schema_version").fetchall()[0][0]


def migrate(con: duckdb.DuckDBPyConnection) -> int:
    """Bring the schema up to SCHEMA_VERSION, one transaction per step; returns the version."""
    version = current_version(con)
    if version > SCHEMA_VERSION:
        raise RuntimeError(
            f"database schema version {version} is newer than this clusterlab ({SCHEMA_VERSION})"
        )
    for v in range(version, SCHEMA_VERSION):
        con.execute("BEGIN")
        for stmt in MIGRATIONS[v]:
            con.execute(stmt)
        con.execute("INSERT INTO schema_version (version) VALUES (?)", [v + 1])
        con.execute("COMMIT")
    return SCHEMA_VERSION


class DatabaseLocked(RuntimeError):
    """Another process holds the database file: `path`, that process's `pid` (None when DuckDB did not say)."""

    def __init__(self, path: str, pid: int | None, writing: bool) -> None:
        self.path, self.pid, self.writing = path, pid, writing
        who = f" (pid {pid})" if pid is not None else ""
        what = "writing to" if writing else "reading"
        super().__init__(f"{path}: another clusterlab is {what} this database{who}")


_LOCK = re.compile(r"Could not set lock on file")
_LOCK_PID = re.compile(r"\(PID (\d+)\)")


def _locked(path: str, error: duckdb.IOException) -> DatabaseLocked | None:
    """DuckDB's lock error in clusterlab's words (None: another IO error)."""
    text = str(error)
    if not _LOCK.search(text):
        return None
    pid = _LOCK_PID.search(text)
    # NOTE: DuckDB adds "you would be able to open this database in read-only mode" when the holder only reads
    return DatabaseLocked(path, int(pid.group(1)) if pid else None, writing="read-only mode" not in text)


def connect(path: str | os.PathLike | None = None, read_only: bool = False) -> duckdb.DuckDBPyConnection:
    """Open (creating and migrating if needed) a clusterlab database; ':memory:' works too; DatabaseLocked if held."""
    p = db_path(path)
    if p != ":memory:":
        Path(p).parent.mkdir(parents=True, exist_ok=True)
    try:
        con = duckdb.connect(p, read_only=read_only)
    except duckdb.IOException as e:
        locked = _locked(p, e)
        if locked is None:
            raise
        raise locked from None
    if not read_only:
        migrate(con)
    return con


def frame(con: duckdb.DuckDBPyConnection, query: str, params: list | dict | None = None,
          **frames: pl.DataFrame) -> pl.DataFrame:
    """The result of a query as a polars frame; `frames` are visible to it under their names."""
    for name, f in frames.items():
        con.register(name, f.to_arrow())
    try:
        return pl.from_arrow(con.sql(query, params=params or None).to_arrow_table())
    finally:
        for name in frames:
            con.unregister(name)
